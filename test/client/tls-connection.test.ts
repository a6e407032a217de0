import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import tls from 'node:tls';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { proceedSmokeSignal } from '../../workflows/messages.js';
import { toolchainSmokeWorkflow } from '../../workflows/index.js';
import { repoRoot } from '../helpers/run-cli.js';
import { hasOpenssl, makePki } from '../helpers/pki.js';
import { freshPrivateKey } from '../helpers/ssh-key.js';
import { startDevServer, uniqueTaskQueue } from '../helpers/temporal-env.js';
import { tempDir } from '../helpers/temp-dir.js';

/**
 * `temporal server start-dev` has no TLS flags, so the dev server sits behind a TLS terminator
 * that demands a client certificate from the test CA (mutual TLS) and names itself temporal.test.
 */
describe('TLS: the CLI and the worker through a mutual-TLS front of the dev server', { skip: !hasOpenssl && 'no openssl CLI' }, () => {
  let env: TestWorkflowEnvironment;
  let front: tls.Server;
  let address: string;
  let pki: ReturnType<typeof makePki>;
  before(async () => {
    pki = makePki(tempDir('pki'), 'temporal.test');
    env = await startDevServer();
    const [host, port] = env.address.split(':') as [string, string];
    front = tls.createServer(
      {
        key: readFileSync(pki.serverKey),
        cert: readFileSync(pki.serverCert),
        ca: readFileSync(pki.ca),
        requestCert: true,
        rejectUnauthorized: true,
        ALPNProtocols: ['h2'],
      },
      (socket) => {
        const upstream = net.connect(Number(port), host);
        socket.pipe(upstream).pipe(socket);
        socket.on('error', () => upstream.destroy());
        upstream.on('error', () => socket.destroy());
      },
    );
    front.on('tlsClientError', () => undefined); // the refused handshakes below are the point
    await new Promise<void>((r) => front.listen(0, '127.0.0.1', r));
    address = `127.0.0.1:${(front.address() as net.AddressInfo).port}`;
  });
  after(async () => {
    front?.close();
    await env?.teardown();
  });

  const cleanEnv = () =>
    Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('TEMPORAL_') && !k.startsWith('SKEWLESS_')));
  // Asynchronous: the TLS front runs in this process's event loop.
  const cli = (args: string[], vars: NodeJS.ProcessEnv = {}) =>
    new Promise<{ status: number | null; stderr: string }>((resolve) => {
      const child = spawn(process.execPath, [join(repoRoot, 'bin', 'skewless.js'), ...args], { env: { ...cleanEnv(), ...vars } });
      let stderr = '';
      child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
      child.on('close', (status) => resolve({ status, stderr }));
    });
  const tlsEnv = () => ({
    TEMPORAL_ADDRESS: address,
    TEMPORAL_NAMESPACE: env.namespace ?? 'default',
    TEMPORAL_TLS_CA: pki.ca,
    TEMPORAL_TLS_CERT: pki.clientCert,
    TEMPORAL_TLS_KEY: pki.clientKey,
    TEMPORAL_TLS_SERVER_NAME: 'temporal.test',
  });

  it('connects with the CA, client certificate and server name from flags or from the environment', async () => {
    const flags = await cli([
      'history',
      'nope',
      '--address',
      address,
      '--tls-ca-path',
      pki.ca,
      '--tls-cert-path',
      pki.clientCert,
      '--tls-key-path',
      pki.clientKey,
      '--tls-server-name',
      'temporal.test',
    ]);
    assert.equal(flags.status, 2, flags.stderr);
    assert.equal(flags.stderr, 'skewless: no upgrade of nope found\n', 'an answer from the server, through TLS');
    const vars = await cli(['history', 'nope'], tlsEnv());
    assert.equal(vars.stderr, 'skewless: no upgrade of nope found\n');
  });

  it("is refused without the client certificate, or without the CA that signed the server's (exit 3)", async () => {
    const { TEMPORAL_TLS_CERT: _c, TEMPORAL_TLS_KEY: _k, ...noClientCert } = tlsEnv();
    const { TEMPORAL_TLS_CA: _ca, ...noCa } = tlsEnv();
    for (const vars of [noClientCert, noCa]) {
      const r = await cli(['history', 'nope'], vars);
      assert.equal(r.status, 3, r.stderr);
      assert.match(r.stderr, new RegExp(`^skewless: cannot reach Temporal at ${address}: .*\\n$`));
    }
  });

  it('the worker connects through TLS from the environment, runs a workflow, and stops on SIGTERM', async () => {
    const dir = tempDir('clusters');
    for (const f of ['kubeconfig', 'known_hosts']) writeFileSync(join(dir, f), 'x');
    writeFileSync(join(dir, 'id_ed25519'), freshPrivateKey()); // the worker parses the key at start-up
    mkdirSync(join(dir, 'conf'));
    writeFileSync(
      join(dir, 'conf', 'lab.yaml'),
      `name: lab\nkubeconfig: ${dir}/kubeconfig\nssh: {user: u, privateKeyPath: ${dir}/id_ed25519, knownHostsPath: ${dir}/known_hosts}\nsnapshots: {dir: ${dir}}\n`,
    );
    const taskQueue = uniqueTaskQueue('tls-worker');
    const worker = spawn(
      process.execPath,
      [join(repoRoot, 'bin', 'skewless.js'), 'worker', '--clusters-dir', join(dir, 'conf'), '--task-queue', taskQueue],
      { env: { ...cleanEnv(), ...tlsEnv() } },
    );
    let stderr = '';
    worker.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const exited = new Promise<number | null>((r) => worker.on('exit', (code) => r(code)));
    try {
      for (let i = 0; i < 300 && !stderr.includes('skewless worker: task queue'); i++) await new Promise((r) => setTimeout(r, 100));
      assert.match(stderr, /TLS with client certificate, own CA, server name temporal\.test; clusters lab/);
      const handle = await env.client.workflow.start(toolchainSmokeWorkflow, {
        taskQueue,
        workflowId: `tls/${taskQueue}`,
        args: [{ from: '1.32.4', to: '1.33', available: ['1.32.4', '1.33.7'] }],
      });
      await handle.signal(proceedSmokeSignal, { by: 'tls test' });
      assert.deepEqual((await handle.result()).hops, ['1.33.7']);
    } finally {
      worker.kill('SIGTERM');
    }
    assert.equal(await exited, 0, stderr);
  });
});
