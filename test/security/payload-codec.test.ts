import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { defaultPayloadConverter, type Payload } from '@temporalio/common';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { bundleWorkflowCode, Worker } from '@temporalio/worker';
import { connectionSettings, describeConnection } from '../../worker/config.js';
import { workflowsPath } from '../../worker/create-worker.js';
import {
  AesGcmPayloadCodec,
  ENCRYPTED_ENCODING,
  failureConverterPath,
  parsePayloadKeys,
  payloadCodec,
  payloadKeyId,
  PayloadKeyError,
  readPayloadKeys,
  workerDataConverter,
} from '../../worker/payload-codec.js';
import { fakeCluster } from '../helpers/fake-cluster.js';
import { archiveHistories, readArchivedHistories } from '../helpers/history-archive.js';
import { scanHistory } from '../helpers/secret-scan.js';
import { spawnCli } from '../helpers/spawn-cli.js';
import { freshPrivateKey } from '../helpers/ssh-key.js';
import { startDevServer, uniqueTaskQueue, temporalVars } from '../helpers/temporal-env.js';
import { PATCH } from '../../workflows/patches.js';
import { tempDir } from '../helpers/temp-dir.js';

/**
 * Payload encryption for a shared Temporal server (--payload-key-file / SKEWLESS_PAYLOAD_KEY_FILE):
 * the codec alone, then a real upgrade on the real dev server whose raw history shows only
 * binary/encrypted payloads, read back in full by the CLI with the key, refused in one line without it.
 */

const scratch = tempDir('codec');
const keyText = randomBytes(32).toString('base64'); // what `openssl rand -base64 32` prints
const otherKeyText = randomBytes(32).toString('hex');
const keyFile = join(scratch, 'payload.key');
const otherKeyFile = join(scratch, 'other.key');
writeFileSync(keyFile, `# skewless payload key\n${keyText}\n`, { mode: 0o600 });
writeFileSync(otherKeyFile, `${otherKeyText}\n`, { mode: 0o600 });
const [key] = parsePayloadKeys(`${keyText}\n`, 'test');
const keyForms = [keyText, Buffer.from(keyText, 'base64').toString('hex'), Buffer.from(keyText, 'base64').toString('latin1')];

const text = (b: Uint8Array | null | undefined): string => Buffer.from(b ?? new Uint8Array()).toString('utf8');

async function rejectsWith(p: Promise<unknown>, message: RegExp): Promise<string> {
  const err = await p.then(
    () => assert.fail('expected a PayloadKeyError'),
    (e: unknown) => e,
  );
  assert.ok(err instanceof PayloadKeyError, String(err));
  assert.match(err.message, message);
  assert.ok(!err.message.includes('\n'), 'one line');
  for (const form of keyForms) assert.ok(!err.message.includes(form), 'no key in the message');
  return err.message;
}

after(() => rmSync(scratch, { recursive: true, force: true }));

describe('the AES-256-GCM payload codec', () => {
  it('round-trips every kind of payload, hiding the plaintext, with a fresh IV each time', async () => {
    const codec = new AesGcmPayloadCodec([key!]);
    const plain: Payload[] = [
      defaultPayloadConverter.toPayload({ cluster: 'prod-eu', to: '1.34', note: 'PLAINTEXT-MARKER' }),
      defaultPayloadConverter.toPayload(undefined),
      defaultPayloadConverter.toPayload(new Uint8Array(randomBytes(100_000))),
      defaultPayloadConverter.toPayload('PLAINTEXT-MARKER'),
    ];
    const sealed = await codec.encode(plain);
    for (const p of sealed) {
      assert.equal(text(p.metadata?.encoding), ENCRYPTED_ENCODING);
      assert.equal(text(p.metadata?.['encryption-key-id']), key!.id);
      assert.ok(!Buffer.from(p.data!).includes('PLAINTEXT-MARKER'));
      assert.ok(!Buffer.from(p.data!).includes('json/plain'), 'the inner metadata is encrypted too');
    }
    assert.deepEqual(await codec.decode(sealed), plain);
    const again = await codec.encode(plain.slice(0, 1));
    assert.notDeepEqual(again[0]!.data, sealed[0]!.data, 'a new IV per payload');
    assert.deepEqual(await codec.decode([plain[0]!]), [plain[0]], 'a plain payload passes through decode');
  });

  it('reads keys as base64 or hex, one per line; the first encrypts, all decrypt (rotation)', async () => {
    const old = new AesGcmPayloadCodec(readPayloadKeys(otherKeyFile, 'test'));
    const rotated = new AesGcmPayloadCodec(parsePayloadKeys(`# new\n${keyText}\n\n# old\n${otherKeyText}\n`, 'test'));
    const fromOld = await old.encode([defaultPayloadConverter.toPayload('before rotation')]);
    assert.equal(defaultPayloadConverter.fromPayload((await rotated.decode(fromOld))[0]!), 'before rotation');
    assert.equal(text((await rotated.encode([defaultPayloadConverter.toPayload('x')]))[0]!.metadata?.['encryption-key-id']), key!.id);
    assert.match(key!.id, /^[0-9a-f]{16}$/);
    assert.equal(payloadKeyId(Buffer.from(otherKeyText, 'hex')), old.encrypting!.id);
  });

  it('refuses a wrong, missing, altered or malformed key in one line that names no secret', async () => {
    const sealed = await new AesGcmPayloadCodec([key!]).encode([defaultPayloadConverter.toPayload({ secret: 'PLAINTEXT-MARKER' })]);
    await rejectsWith(
      new AesGcmPayloadCodec(readPayloadKeys(otherKeyFile, 'SKEWLESS_PAYLOAD_KEY_FILE'), 'the payload key file other.key').decode(sealed),
      new RegExp(`encrypted with key ${key!.id}, which the payload key file other.key does not hold \\(it holds [0-9a-f]{16}\\)`),
    );
    await rejectsWith(
      new AesGcmPayloadCodec().decode(sealed),
      /payloads are encrypted \(key [0-9a-f]{16}\): give the key file with --payload-key-file or SKEWLESS_PAYLOAD_KEY_FILE/,
    );
    const altered = { ...sealed[0]!, data: Buffer.from(sealed[0]!.data!).map((b, i) => (i === 20 ? b ^ 1 : b)) };
    await rejectsWith(new AesGcmPayloadCodec([key!]).decode([altered]), /does not authenticate: it was altered or is corrupt/);
    const otherKey = parsePayloadKeys(otherKeyText, 't')[0]!;
    const relabelled = { ...sealed[0]!, metadata: { ...sealed[0]!.metadata, 'encryption-key-id': new TextEncoder().encode(otherKey.id) } };
    await rejectsWith(new AesGcmPayloadCodec([key!, otherKey]).decode([relabelled]), /does not authenticate/);

    const bad = join(scratch, 'bad.key');
    writeFileSync(bad, `${keyText}\nnot-a-key-SECRETISH\n`);
    assert.throws(
      () => readPayloadKeys(bad, '--payload-key-file'),
      (e: Error) =>
        e instanceof PayloadKeyError &&
        /bad\.key \(--payload-key-file\), line 2: not a 256-bit key/.test(e.message) &&
        !e.message.includes('SECRETISH'),
    );
    writeFileSync(bad, randomBytes(16).toString('base64'));
    assert.throws(() => readPayloadKeys(bad, 'x'), /line 1: not a 256-bit key/);
    writeFileSync(bad, '# nothing\n');
    assert.throws(() => readPayloadKeys(bad, 'x'), /holds no key \(openssl rand -base64 32 > FILE makes one\)/);
    assert.throws(
      () => readPayloadKeys(join(scratch, 'missing.key'), '--payload-key-file'),
      /cannot read the payload key file .*missing\.key \(--payload-key-file\): ENOENT/,
    );
  });

  it('is set by --payload-key-file, else SKEWLESS_PAYLOAD_KEY_FILE, and described without the key', () => {
    const s = connectionSettings({ 'payload-key-file': keyFile }, { SKEWLESS_PAYLOAD_KEY_FILE: otherKeyFile });
    assert.deepEqual(s.payloadKeyFile, { value: keyFile, source: '--payload-key-file' });
    assert.deepEqual(connectionSettings({}, { SKEWLESS_PAYLOAD_KEY_FILE: otherKeyFile }).payloadKeyFile, {
      value: otherKeyFile,
      source: 'SKEWLESS_PAYLOAD_KEY_FILE',
    });
    assert.equal(connectionSettings({}, {}).payloadKeyFile, undefined);
    assert.match(describeConnection(s), /payloads encrypted with the keys in .*payload\.key/);
    assert.equal(payloadCodec(s).encrypting?.id, key!.id);
    assert.equal(payloadCodec({}).encrypting, undefined);
    assert.equal(workerDataConverter(payloadCodec({})).failureConverterPath, undefined, 'without a key, failures stay as they are');
    assert.equal(workerDataConverter(payloadCodec(s)).failureConverterPath, failureConverterPath);
  });
});

describe('an upgrade with encrypted payloads on the real dev server', () => {
  let env: TestWorkflowEnvironment;
  let worker: Worker;
  let running: Promise<void>;
  const taskQueue = uniqueTaskQueue('codec');
  const dir = tempDir('codec-run');
  const outputs: string[] = [];
  before(async () => {
    env = await startDevServer();
    // An encrypting worker's bundle carries the failure converter that moves messages into payloads.
    const workflowBundle = await bundleWorkflowCode({
      workflowsPath,
      failureConverterPath,
      logger: {
        log: () => undefined,
        trace: () => undefined,
        debug: () => undefined,
        info: () => undefined,
        warn: () => undefined,
        error: (m) => console.error(m),
      },
    });
    worker = await Worker.create({
      connection: env.nativeConnection,
      namespace: env.namespace ?? 'default',
      taskQueue,
      workflowBundle,
      activities: fakeCluster({ blockDrainOf: 'w2' }).acts,
      dataConverter: workerDataConverter(payloadCodec({ payloadKeyFile: { value: keyFile, source: 'test' } })),
    });
    running = worker.run();
  });
  after(async () => {
    worker?.shutdown();
    await running;
    await env?.teardown();
    rmSync(dir, { recursive: true, force: true });
  });

  const cleanEnv = () =>
    Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('TEMPORAL_') && !k.startsWith('SKEWLESS_')));
  // Asynchronous: the worker runs in this process.
  const cli = async (args: string[], withKey: string | null = keyFile) => {
    const r = await spawnCli(args, {
      ...cleanEnv(),
      ...temporalVars(env),
      SKEWLESS_TASK_QUEUE: taskQueue,
      ...(withKey ? { SKEWLESS_PAYLOAD_KEY_FILE: withKey } : {}),
    }).exited;
    outputs.push(r.stdout, r.stderr);
    return r;
  };
  const oneLine = (r: { code: number | null; stderr: string }, code: number, message: RegExp) => {
    assert.equal(r.code, code, r.stderr);
    assert.equal(r.stderr.trim().split('\n').length, 1, r.stderr);
    assert.match(r.stderr, message);
  };

  it(
    'runs; the CLI with the key reads status, watch and history; the raw history holds only ciphertext',
    { timeout: 240_000 },
    async () => {
      const start = await cli(['upgrade', '--cluster', 'enc', '--to', '1.33', '--detach', '--acknowledge', 'default/zz-marker-ack']);
      assert.equal(start.code, 0, start.stderr);
      let status = await cli(['status', 'enc', '--output', 'json']);
      for (let i = 0; i < 150 && JSON.parse(status.stdout || '{}').nodes?.w2?.phase !== 'blocked'; i++) {
        await new Promise((r) => setTimeout(r, 200));
        status = await cli(['status', 'enc', '--output', 'json']);
      }
      assert.equal(status.code, 0, status.stderr);
      assert.equal(JSON.parse(status.stdout).nodes.w2.phase, 'blocked', status.stdout);
      const resolved = await cli(['resolve', 'enc', '--node', 'w2', '--action', 'abort', '--by', 'dana-marker-42']);
      assert.equal(resolved.code, 0, resolved.stderr);
      const watch = await cli(['watch', 'enc']);
      assert.equal(watch.code, 1, `aborted: ${watch.stderr}`);
      assert.match(watch.stdout, /resolved by dana-marker-42: abort/);
      const history = await cli(['history', 'enc']);
      assert.equal(history.code, 0, history.stderr);
      assert.match(history.stdout, /drain of w2 blocked/, 'a failure message, decrypted from its encoded attributes');
      assert.match(history.stdout, /dana-marker-42/);

      // What the server holds, read without the codec.
      const raw = join(dir, 'raw');
      const archived = await archiveHistories(env.client, 'codec-raw', { dir: raw, namespace: env.namespace ?? 'default' });
      assert.ok(archived.histories >= 3, `${archived.histories} histories (the upgrade and its node workflows)`);
      let encrypted = 0;
      for (const h of readArchivedHistories(raw)) {
        // Temporal's own identity field names who acted (--by) in plain text, by design (docs/security.md); nothing else may.
        const json = JSON.stringify(h.history, (key, value: unknown) => (key === 'identity' ? undefined : value));
        for (const marker of ['zz-marker-ack', 'dana-marker-42', 'drain of w2 blocked', ...keyForms])
          assert.ok(!json.includes(marker), `${h.workflowId}: ${marker.slice(0, 20)} in plain text`);
        const { stats } = scanHistory(h);
        encrypted += stats.encrypted;
        // Every payload is ciphertext, except search attributes (the server indexes them) and headers.
        const walk = (v: unknown, path: string): void => {
          if (typeof v !== 'object' || v === null) return;
          const o = v as Record<string, unknown>;
          const meta = o.metadata as Record<string, string> | undefined;
          if (typeof meta?.encoding === 'string') {
            const encoding = Buffer.from(meta.encoding, 'base64').toString();
            const data = Buffer.from(String(o.data ?? ''), 'base64');
            if (/markerRecordedEventAttributes\.details\.patch-data\./.test(path)) {
              // A patched() marker: the SDK writes it without the codec; it holds the patch id and nothing else.
              const marker = JSON.parse(data.toString()) as Record<string, unknown>;
              assert.ok((Object.values(PATCH) as unknown[]).includes(marker.id), `${path}: ${data.toString()}`);
              assert.deepEqual(
                Object.keys(marker).filter((k) => k !== 'id' && k !== 'deprecated'),
                [],
                `${path}: ${data.toString()}`,
              );
              return;
            }
            if (!/searchAttributes|header/.test(path)) assert.equal(encoding, ENCRYPTED_ENCODING, `${h.workflowId} ${path}`);
            if (encoding === ENCRYPTED_ENCODING)
              for (const m of ['zz-marker-ack', 'dana-marker-42', 'drain of w2']) assert.ok(!data.includes(m), `${path} holds ${m}`);
            return;
          }
          for (const [k, child] of Object.entries(o)) walk(child, `${path}.${k}`);
          if (typeof o.message === 'string' && 'encodedAttributes' in o)
            assert.equal(o.message, 'Encoded failure', `${path}: the failure's message is in its encrypted attributes`);
        };
        walk(h.history, '');
      }
      assert.ok(encrypted > 20, `${encrypted} encrypted payloads`);
      assert.ok(outputs.join('').includes('drain of w2 blocked'), 'the CLI did see the plaintext');
    },
  );

  it('without the key, or with the wrong one, the CLI says so in one line (exit 2)', { timeout: 120_000 }, async () => {
    oneLine(
      await cli(['status', 'enc'], null),
      2,
      /^skewless: payloads are encrypted \(key [0-9a-f]{16}\): give the key file with --payload-key-file or SKEWLESS_PAYLOAD_KEY_FILE$/m,
    );
    oneLine(
      await cli(['history', 'enc'], otherKeyFile),
      2,
      new RegExp(
        `^skewless: a payload is encrypted with key ${key!.id}, which the payload key file .*other\\.key \\(SKEWLESS_PAYLOAD_KEY_FILE\\) does not hold`,
      ),
    );
    oneLine(
      await cli(['status', 'enc', '--payload-key-file', join(dir, 'missing.key')]),
      2,
      /cannot read the payload key file .*missing\.key \(--payload-key-file\): ENOENT/,
    );
    const bad = join(dir, 'bad.key');
    writeFileSync(bad, 'hunter2-SECRETISH\n');
    const r = await cli(['status', 'enc'], bad);
    oneLine(r, 2, /line 1: not a 256-bit key/);
    assert.ok(!r.stderr.includes('SECRETISH'));
  });

  it('the worker process logs which key encrypts, never the key', { timeout: 120_000 }, async () => {
    const clusters = join(dir, 'clusters');
    mkdirSync(clusters);
    for (const f of ['kubeconfig', 'known_hosts']) writeFileSync(join(dir, f), 'x');
    writeFileSync(join(dir, 'id_ed25519'), freshPrivateKey(), { mode: 0o600 }); // the worker parses the key at start-up
    writeFileSync(
      join(clusters, 'lab.yaml'),
      [
        'name: lab',
        `kubeconfig: ${dir}/kubeconfig`,
        'ssh:',
        '  user: skewless',
        `  privateKeyPath: ${dir}/id_ed25519`,
        `  knownHostsPath: ${dir}/known_hosts`,
        'snapshots:',
        `  dir: ${dir}/snapshots`,
        '',
      ].join('\n'),
    );
    const w = spawnCli(
      ['worker', '--clusters-dir', clusters, '--task-queue', uniqueTaskQueue('codec-worker'), '--payload-key-file', keyFile],
      { ...cleanEnv(), ...temporalVars(env) },
    );
    for (let i = 0; i < 300 && !w.stderr().includes('skewless worker: task queue'); i++) await new Promise((r) => setTimeout(r, 100));
    w.child.kill('SIGTERM');
    const done = await w.exited;
    outputs.push(done.stdout, done.stderr);
    assert.match(done.stderr, new RegExp(`payloads encrypted with key ${key!.id}`), done.stderr);
    for (const form of keyForms) assert.ok(!outputs.join('\n').includes(form), 'the key is in no output of the CLI or the worker');
  });
});
