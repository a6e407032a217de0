import assert from 'node:assert/strict';
import { chmodSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { parseOptions } from '../../client/cli-support.js';
import { TEMPORAL_OPTIONS } from '../../client/temporal-connection.js';
import {
  ConfigError,
  connectionOptions,
  connectionSettings,
  describeConnection,
  redactSecrets,
  workerConfig,
} from '../../worker/config.js';
import { tempDir } from '../helpers/temp-dir.js';

const PEM = (what: string) => `-----BEGIN ${what}-----\nMIIBfake\n-----END ${what}-----\n`;
const dir = tempDir('tls');
const file = (name: string, content: string) => {
  const path = join(dir, name);
  writeFileSync(path, content);
  return path;
};
const cert = file('client.crt', PEM('CERTIFICATE'));
const key = file('client.key', PEM('PRIVATE KEY') + 'SECRET-KEY-MATERIAL\n');
const ca = file('ca.crt', PEM('CERTIFICATE'));
const settings = (flags: Parameters<typeof connectionSettings>[0], env: NodeJS.ProcessEnv = {}) => connectionSettings(flags, env);
const configError = (fn: () => unknown, message: RegExp) =>
  assert.throws(fn, (err: Error) => err instanceof ConfigError && message.test(err.message) && !err.message.includes('\n'));

describe("connection settings: flags, then the temporal CLI's variables", () => {
  it('defaults to the local dev server without TLS', () => {
    assert.deepEqual(settings({}), { address: '127.0.0.1:7233', namespace: 'default', tls: false });
  });

  const precedence: [
    string,
    Parameters<typeof connectionSettings>[0],
    NodeJS.ProcessEnv,
    Partial<ReturnType<typeof connectionSettings>>,
  ][] = [
    [
      'env address and namespace',
      {},
      { TEMPORAL_ADDRESS: 'temporal.example:7233', TEMPORAL_NAMESPACE: 'ops' },
      { address: 'temporal.example:7233', namespace: 'ops' },
    ],
    [
      'flags beat env',
      { address: 'a.example:1', namespace: 'flag-ns' },
      { TEMPORAL_ADDRESS: 'b.example:2', TEMPORAL_NAMESPACE: 'env-ns' },
      { address: 'a.example:1', namespace: 'flag-ns' },
    ],
    ['an empty variable counts as unset', {}, { TEMPORAL_ADDRESS: '', TEMPORAL_API_KEY: '' }, { address: '127.0.0.1:7233', tls: false }],
    ['IPv6 literal', { address: '[::1]:7233' }, {}, { address: '[::1]:7233' }],
    ['TEMPORAL_TLS=true turns TLS on alone', {}, { TEMPORAL_TLS: 'true' }, { tls: {} }],
    ['an API key turns TLS on', {}, { TEMPORAL_API_KEY: 'k-123456' }, { tls: {}, apiKey: 'k-123456' }],
    ['--tls=false with an API key keeps it off', { tls: false }, { TEMPORAL_API_KEY: 'k-123456' }, { tls: false, apiKey: 'k-123456' }],
    ['--tls beats TEMPORAL_TLS=false', { tls: true }, { TEMPORAL_TLS: 'false' }, { tls: {} }],
    ['a server name turns TLS on', { 'tls-server-name': 'frontend.internal' }, {}, { tls: { serverName: 'frontend.internal' } }],
  ];
  for (const [name, flags, env, expected] of precedence) {
    it(name, () => {
      const s = settings(flags, env);
      for (const [k, v] of Object.entries(expected)) assert.deepEqual(s[k as keyof typeof s], v, k);
    });
  }

  it('reads the cert, key and CA paths from flags, else TEMPORAL_TLS_CERT/KEY/CA, else the envconfig names', () => {
    const fromFlags = settings(
      { 'tls-cert-path': cert, 'tls-key-path': key, 'tls-ca-path': ca },
      { TEMPORAL_TLS_CERT: '/env/c', TEMPORAL_TLS_KEY: '/env/k', TEMPORAL_TLS_CA: '/env/ca' },
    );
    assert.deepEqual(fromFlags.tls, {
      cert: { value: cert, source: '--tls-cert-path' },
      key: { value: key, source: '--tls-key-path' },
      ca: { value: ca, source: '--tls-ca-path' },
    });
    const fromEnv = settings(
      {},
      { TEMPORAL_TLS_CERT: cert, TEMPORAL_TLS_KEY: key, TEMPORAL_TLS_CA: ca, TEMPORAL_TLS_CLIENT_CERT_PATH: '/other' },
    );
    assert.deepEqual(fromEnv.tls, {
      cert: { value: cert, source: 'TEMPORAL_TLS_CERT' },
      key: { value: key, source: 'TEMPORAL_TLS_KEY' },
      ca: { value: ca, source: 'TEMPORAL_TLS_CA' },
    });
    const envconfig = settings(
      {},
      { TEMPORAL_TLS_CLIENT_CERT_PATH: cert, TEMPORAL_TLS_CLIENT_KEY_PATH: key, TEMPORAL_TLS_SERVER_CA_CERT_PATH: ca },
    );
    assert.equal(envconfig.tls && envconfig.tls.cert?.source, 'TEMPORAL_TLS_CLIENT_CERT_PATH');
  });

  const invalid: [string, Parameters<typeof connectionSettings>[0], NodeJS.ProcessEnv, RegExp][] = [
    ['address without port', { address: 'temporal.example' }, {}, /address must be HOST:PORT, got "temporal\.example"/],
    ['port out of range', {}, { TEMPORAL_ADDRESS: 'h:70000' }, /HOST:PORT/],
    ['address with a scheme', { address: 'http://h:7233' }, {}, /HOST:PORT/],
    ['bad namespace', { namespace: 'a b' }, {}, /invalid Temporal namespace "a b"/],
    ['TEMPORAL_TLS not a boolean', {}, { TEMPORAL_TLS: 'yes' }, /TEMPORAL_TLS must be true or false, got "yes"/],
    ['cert without key', { 'tls-cert-path': cert }, {}, /--tls-cert-path needs the client key too/],
    ['key without cert', {}, { TEMPORAL_TLS_KEY: key }, /TEMPORAL_TLS_KEY needs the client certificate too/],
    ['TLS files with TLS off', { tls: false, 'tls-ca-path': ca }, {}, /TLS is off \(--tls=false\) but --tls-ca-path is set/],
    [
      'TLS files with TEMPORAL_TLS=false',
      { 'tls-server-name': 'x.example' },
      { TEMPORAL_TLS: 'false' },
      /TLS is off \(TEMPORAL_TLS=false\)/,
    ],
  ];
  for (const [name, flags, env, message] of invalid) it(`refuses ${name}`, () => configError(() => settings(flags, env), message));

  it('never puts the API key in an error or a description', () => {
    assert.throws(
      () => settings({ 'api-key': 'abc\nSECRET' }),
      (err: Error) => err instanceof ConfigError && !err.message.includes('SECRET') && /--api-key must be one line/.test(err.message),
    );
    const s = settings({}, { TEMPORAL_API_KEY: 'tk_live_SECRET' });
    assert.doesNotMatch(describeConnection(s), /SECRET/);
    assert.match(describeConnection(s), /API key set/);
    assert.equal(redactSecrets('rejected tk_live_SECRET twice: tk_live_SECRET', s), 'rejected <api key> twice: <api key>');
  });
});

describe('connection options: TLS files read at startup', () => {
  it("reads the PEM files into the SDK's TLS config", () => {
    const o = connectionOptions(
      settings({
        'tls-cert-path': cert,
        'tls-key-path': key,
        'tls-ca-path': ca,
        'tls-server-name': 'frontend.internal',
        'api-key': 'k-123456',
      }),
    );
    assert.equal(o.address, '127.0.0.1:7233');
    assert.equal(o.apiKey, 'k-123456');
    assert.ok(o.tls);
    assert.equal(o.tls.serverNameOverride, 'frontend.internal');
    assert.equal(o.tls.clientCertPair?.crt.toString(), PEM('CERTIFICATE'));
    assert.match(o.tls.clientCertPair?.key.toString() ?? '', /SECRET-KEY-MATERIAL/);
    assert.equal(o.tls.serverRootCACertificate?.toString(), PEM('CERTIFICATE'));
    assert.deepEqual(connectionOptions(settings({})), { address: '127.0.0.1:7233', tls: false });
  });

  it('names an unreadable file and its source in one line, never its content', () => {
    configError(
      () => connectionOptions(settings({ 'tls-cert-path': cert, 'tls-key-path': join(dir, 'missing.key') })),
      /cannot read the TLS client key .*missing\.key \(--tls-key-path\): ENOENT/,
    );
    configError(
      () => connectionOptions(settings({}, { TEMPORAL_TLS_CA: dir })),
      /cannot read the TLS CA certificate .* \(TEMPORAL_TLS_CA\): EISDIR/,
    );
    const notPem = file('not-pem.key', 'SECRET-KEY-MATERIAL');
    assert.throws(
      () => connectionOptions(settings({ 'tls-cert-path': cert, 'tls-key-path': notPem })),
      (err: Error) => /is not PEM/.test(err.message) && !err.message.includes('SECRET'),
    );
    if (process.getuid?.() !== 0) {
      const locked = file('locked.key', PEM('PRIVATE KEY'));
      chmodSync(locked, 0o000);
      configError(() => connectionOptions(settings({ 'tls-cert-path': cert, 'tls-key-path': locked })), /EACCES/);
    }
  });
});

describe('connection flags on the command line', () => {
  it("takes --tls, --no-tls and the temporal CLI's --tls=false", () => {
    assert.equal(parseOptions(['--tls'], TEMPORAL_OPTIONS).values.tls, true);
    assert.equal(parseOptions(['--tls=false'], TEMPORAL_OPTIONS).values.tls, false);
    assert.equal(parseOptions(['--tls=true'], TEMPORAL_OPTIONS).values.tls, true);
    assert.equal(parseOptions(['--no-tls'], TEMPORAL_OPTIONS).values.tls, false);
    assert.equal(parseOptions([], TEMPORAL_OPTIONS).values.tls, undefined);
    assert.throws(() => parseOptions(['--tls=maybe'], TEMPORAL_OPTIONS), /does not take an argument/);
  });

  it('worker settings: --task-queue and --clusters-dir beat SKEWLESS_TASK_QUEUE and SKEWLESS_CLUSTERS_DIR', () => {
    assert.deepEqual(workerConfig({}, {}), { taskQueue: 'skewless' });
    assert.deepEqual(workerConfig({}, { SKEWLESS_TASK_QUEUE: 'site-a', SKEWLESS_CLUSTERS_DIR: '/etc/skewless' }), {
      taskQueue: 'site-a',
      clustersDir: '/etc/skewless',
    });
    assert.deepEqual(
      workerConfig({ 'task-queue': 'q', 'clusters-dir': '/d' }, { SKEWLESS_TASK_QUEUE: 'site-a', SKEWLESS_CLUSTERS_DIR: '/etc/skewless' }),
      { taskQueue: 'q', clustersDir: '/d' },
    );
    configError(() => workerConfig({ 'task-queue': 'bad queue' }, {}), /invalid task queue/);
  });
});
