import assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { closeSync, mkdirSync, openSync, readFileSync, writeFileSync } from 'node:fs';
import { createConnection, createServer, type Socket } from 'node:net';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { proceedSmokeSignal } from '../../workflows/messages.js';
import { toolchainSmokeWorkflow } from '../../workflows/index.js';
import { freePort } from '../../tooling/free-port.js';
import { workflowBuildId } from '../../tooling/build-info.js';
import { workerDeploymentName } from '../../contracts/worker-deployment.js';
import { decodeVersioningBehavior } from '@temporalio/common';
import { repoRoot } from '../helpers/run-cli.js';
import { freshPrivateKey } from '../helpers/ssh-key.js';
import { startDevServer, uniqueTaskQueue, temporalVars } from '../helpers/temporal-env.js';
import { tempDir } from '../helpers/temp-dir.js';

const oneLine = (stderr: string, message: RegExp) => {
  assert.equal(stderr.trim().split('\n').length, 1, stderr);
  assert.match(stderr, /^skewless: /);
  assert.match(stderr, message);
};

/** A clusters directory with one well-formed configuration (its files exist; nothing dials them). */
function clustersDir(yaml?: (dir: string) => string): string {
  const dir = tempDir('clusters');
  for (const f of ['kubeconfig', 'known_hosts']) writeFileSync(join(dir, f), 'x');
  writeFileSync(join(dir, 'id_ed25519'), freshPrivateKey()); // the worker parses the key at start-up
  const config =
    yaml?.(dir) ??
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
    ].join('\n');
  mkdirSync(join(dir, 'conf'));
  writeFileSync(join(dir, 'conf', 'lab.yaml'), config);
  return join(dir, 'conf');
}

// The plain environment, so a TEMPORAL_* variable of the machine running the tests changes nothing.
const cleanEnv = () =>
  Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('TEMPORAL_') && !k.startsWith('SKEWLESS_')));
/** The real executable, synchronously: fine here, as no worker runs in this process. */
const cli = (args: string[], env: NodeJS.ProcessEnv = {}) => {
  const r = spawnSync(process.execPath, [join(repoRoot, 'bin', 'skewless.js'), ...args], {
    encoding: 'utf8',
    env: { ...cleanEnv(), ...env },
    timeout: 60_000,
  });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
};

describe('connection options against the real dev server (TLS off)', () => {
  let env: TestWorkflowEnvironment;
  before(async () => {
    env = await startDevServer();
  });
  after(async () => {
    await env?.teardown();
  });

  it('connects with --address, or with TEMPORAL_ADDRESS and TEMPORAL_TLS=false; the flag beats the variable', () => {
    // "no upgrade of nope" can only come back from the server: the connection worked.
    for (const [args, vars] of [
      [['--address', env.address], {}],
      [['--tls=false'], { ...temporalVars(env), TEMPORAL_TLS: 'false' }],
      [['--address', env.address, '--namespace', 'default'], { TEMPORAL_ADDRESS: '127.0.0.1:1', TEMPORAL_NAMESPACE: 'nowhere' }],
      [['--tls=false', '--address', env.address], { TEMPORAL_API_KEY: 'dev-key-123' }],
    ] as [string[], NodeJS.ProcessEnv][]) {
      const r = cli(['history', 'nope', ...args], vars);
      assert.equal(r.code, 2, `${args.join(' ')}: ${r.stderr}`);
      oneLine(r.stderr, /no upgrade of nope found/);
    }
  });

  it('TLS against a plaintext server, or a closed port, is "unreachable" (exit 3), and the API key is never shown', async () => {
    const tls = cli(['status', 'nope', '--address', env.address, '--tls']);
    assert.equal(tls.code, 3, tls.stderr);
    oneLine(tls.stderr, new RegExp(`cannot reach Temporal at ${env.address}`));
    const closed = `127.0.0.1:${await freePort()}`;
    const secret = 'tk_SECRET_4711';
    for (const [args, vars] of [
      [['--address', closed], { TEMPORAL_API_KEY: secret }],
      [['--address', closed, '--api-key', secret, '--tls=false'], {}],
    ] as [string[], NodeJS.ProcessEnv][]) {
      const r = cli(['status', 'nope', ...args], vars);
      assert.equal(r.code, 3, r.stderr);
      oneLine(r.stderr, /cannot reach Temporal/);
      assert.ok(!(r.stdout + r.stderr).includes(secret));
    }
  });

  it('an unreadable TLS file or bad setting is one line and exit 2, before any connection', () => {
    const dir = tempDir('tls');
    writeFileSync(join(dir, 'c.pem'), '-----BEGIN CERTIFICATE-----\n-----END CERTIFICATE-----\n');
    const cases: [string[], NodeJS.ProcessEnv, RegExp][] = [
      [
        ['--tls-cert-path', join(dir, 'c.pem'), '--tls-key-path', join(dir, 'nope.key')],
        {},
        /cannot read the TLS client key .*nope\.key \(--tls-key-path\): ENOENT/,
      ],
      [
        [],
        { TEMPORAL_TLS_CERT: join(dir, 'c.pem'), TEMPORAL_TLS_KEY: join(dir, 'c.pem'), TEMPORAL_TLS_CA: join(dir, 'ca.pem') },
        /cannot read the TLS CA certificate .*\(TEMPORAL_TLS_CA\): ENOENT/,
      ],
      [['--address', 'no-port'], {}, /must be HOST:PORT/],
      [['--tls-cert-path', join(dir, 'c.pem')], {}, /needs the client key too/],
    ];
    for (const [args, vars, message] of cases) {
      for (const command of [
        ['status', 'lab'],
        ['history', 'lab'],
        ['plan', '--cluster', 'lab', '--to', '1.33'],
      ]) {
        const r = cli([...command, ...args], { ...temporalVars(env), ...vars });
        assert.equal(r.code, 2, `${command[0]}: ${r.stderr}`);
        oneLine(r.stderr, message);
      }
    }
  });
});

describe('skewless worker', () => {
  let env: TestWorkflowEnvironment;
  const children: ChildProcess[] = [];
  before(async () => {
    env = await startDevServer();
  });
  after(async () => {
    for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
    await env?.teardown();
  });

  it('refuses a bad clusters directory in one line with exit 2, before connecting', () => {
    const cases: [string[], RegExp][] = [
      [[], /--clusters-dir DIR \(or SKEWLESS_CLUSTERS_DIR\) is required/],
      [['--clusters-dir', '/nonexistent/clusters'], /cannot read clusters directory \/nonexistent\/clusters: ENOENT/],
      [['--clusters-dir', tempDir('empty')], /no cluster configuration \(<cluster>\.yaml\) in /],
      [['--clusters-dir', clustersDir(() => 'name: lab\nkubeconfig: relative/path\n')], /lab\.yaml: kubeconfig must be an absolute path/],
      [
        [
          '--clusters-dir',
          clustersDir(
            (d) =>
              `name: other\nkubeconfig: ${d}/kubeconfig\nssh: {user: u, privateKeyPath: ${d}/id_ed25519, knownHostsPath: ${d}/known_hosts}\nsnapshots: {dir: /tmp}\n`,
          ),
        ],
        /name is other, expected lab/,
      ],
      [
        [
          '--clusters-dir',
          clustersDir(
            (d) =>
              `name: lab\nkubeconfig: ${d}/missing\nssh: {user: u, privateKeyPath: ${d}/id_ed25519, knownHostsPath: ${d}/known_hosts}\nsnapshots: {dir: /tmp}\n`,
          ),
        ],
        /kubeconfig .*missing is not readable: ENOENT/,
      ],
      [['--clusters-dir', clustersDir(() => ': : not yaml [')], /lab\.yaml: not valid YAML/],
      [
        [
          '--clusters-dir',
          clustersDir(
            (d) =>
              `name: lab\nkubeconfig: ${d}/kubeconfig\nssh: {user: u, privateKeyPath: ${d}/id_ed25519, knownHostsPath: ${d}/known_hosts}\nsnapshots: {dir: /tmp}\nnodes: {"../worker-1": {port: 2201}}\n`,
          ),
        ],
        /lab\.yaml: nodes: "\.\.\/worker-1" is not a node name/,
      ],
      // The alert gate's block (issue 21): a bad matcher, a URL that is not http(s) (its password never shown).
      ...[
        [
          'alerts: {prometheusUrl: "http://prom:9090", matchers: [NodeDown]}',
          /lab\.yaml: alerts\.matchers\[0\] "NodeDown" is not a matcher/,
        ],
        [
          'alerts: {prometheusUrl: "ftp://ops:hunter2@prom/"}',
          /lab\.yaml: alerts\.prometheusUrl must be http\(s\), got ftp: \(e\.g\. http:\/\/prometheus\.monitoring:9090\)/,
        ],
      ].map(([alerts, message]): [string[], RegExp] => [
        [
          '--clusters-dir',
          clustersDir(
            (d) =>
              `name: lab\nkubeconfig: ${d}/kubeconfig\nssh: {user: u, privateKeyPath: ${d}/id_ed25519, knownHostsPath: ${d}/known_hosts}\nsnapshots: {dir: /tmp}\n${alerts as string}\n`,
          ),
        ],
        message as RegExp,
      ]),
    ];
    for (const [args, message] of cases) {
      const r = cli(['worker', ...args, '--address', env.address]);
      assert.equal(r.code, 2, `${args.join(' ')}: ${r.stderr}`);
      oneLine(r.stderr, message);
      assert.ok(!r.stderr.includes('hunter2'), r.stderr);
    }
  });

  it('exits 3 when Temporal is unreachable', async () => {
    const r = cli(['worker', '--clusters-dir', clustersDir(), '--address', `127.0.0.1:${await freePort()}`]);
    assert.equal(r.code, 3, r.stderr);
    assert.match(r.stderr, /^skewless: cannot reach Temporal at 127\.0\.0\.1:\d+/m);
  });

  it('runs workflows from its task queue until SIGTERM, then stops gracefully with exit 0', async () => {
    const taskQueue = uniqueTaskQueue('worker-cli');
    const child = spawn(
      process.execPath,
      [join(repoRoot, 'bin', 'skewless.js'), 'worker', '--clusters-dir', clustersDir(), '--task-queue', taskQueue],
      {
        env: { ...cleanEnv(), ...temporalVars(env) },
      },
    );
    children.push(child);
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const exited = new Promise<number | null>((r) => child.on('exit', (code) => r(code)));
    for (let i = 0; i < 300 && !stderr.includes('skewless worker: task queue'); i++) await new Promise((r) => setTimeout(r, 100));
    assert.match(
      stderr,
      new RegExp(
        `skewless worker: task queue ${taskQueue} on ${env.address}, namespace ${env.namespace ?? 'default'}, no TLS; clusters lab from `,
      ),
    );

    const handle = await env.client.workflow.start(toolchainSmokeWorkflow, {
      taskQueue,
      workflowId: `smoke/${taskQueue}`,
      args: [{ from: '1.32.4', to: '1.34', available: ['1.32.4', '1.33.7', '1.34.2'] }],
    });
    await handle.signal(proceedSmokeSignal, { by: 'worker-cli test' });
    const result = await handle.result();
    assert.deepEqual(result.hops, ['1.33.7', '1.34.2']);
    assert.equal(result.workerNodeVersion, process.version); // run by the spawned worker: no other polls this queue
    // Worker Versioning: the first worker of its deployment made its build current, and the run is pinned to it.
    const build = workflowBuildId() ?? '';
    assert.match(stderr, new RegExp(`; build ${build} of deployment ${workerDeploymentName(taskQueue)} \\(current: takes new runs\\)`));
    const versioning = (await handle.describe()).raw.workflowExecutionInfo?.versioningInfo;
    assert.equal(versioning?.deploymentVersion?.buildId, build);
    assert.equal(decodeVersioningBehavior(versioning?.behavior), 'PINNED');

    const t0 = Date.now();
    child.kill('SIGTERM');
    assert.equal(await exited, 0, stderr);
    assert.match(stderr, /skewless worker: SIGTERM, finishing the tasks in flight/);
    assert.match(stderr, /skewless worker: stopped/);
    assert.ok(Date.now() - t0 < 15_000, `stopped in ${Date.now() - t0} ms`);
  });
  it("writes the SDK core's log lines without ANSI colour codes when stderr is a file", async () => {
    // Temporal goes away under a polling worker: the SDK's core logs its retried polls (WARN). A TCP
    // relay in front of the shared server stands for Temporal here, so that closing it is the outage.
    const [host, port] = env.address.split(':') as [string, string];
    const sockets = new Set<Socket>();
    const relay = createServer((inbound) => {
      const outbound = createConnection(Number(port), host);
      for (const s of [inbound, outbound]) {
        sockets.add(s);
        s.on('error', () => s.destroy());
      }
      inbound.pipe(outbound).pipe(inbound);
    });
    const relayPort = await freePort();
    await new Promise<void>((r) => relay.listen(relayPort, '127.0.0.1', r));
    // stderr to a file, as a service manager's log file or `worker 2>>worker.log` takes it: not a terminal.
    const logFile = join(tempDir('worker-log'), 'worker.log');
    const fd = openSync(logFile, 'a');
    const child = spawn(
      process.execPath,
      [join(repoRoot, 'bin', 'skewless.js'), 'worker', '--clusters-dir', clustersDir(), '--task-queue', uniqueTaskQueue('worker-log')],
      { env: { ...cleanEnv(), ...temporalVars(env), TEMPORAL_ADDRESS: `127.0.0.1:${relayPort}` }, stdio: ['ignore', 'pipe', fd] },
    );
    closeSync(fd);
    children.push(child);
    const stderr = () => readFileSync(logFile, 'utf8');
    let stdout = '';
    child.stdout?.on('data', (d: Buffer) => (stdout += d.toString()));
    try {
      for (let i = 0; i < 300 && !stderr().includes('skewless worker: task queue'); i++) await new Promise((r) => setTimeout(r, 100));
      assert.match(stderr(), /skewless worker: task queue/);
      relay.close();
      for (const s of sockets) s.destroy();
      for (let i = 0; i < 600 && !/retried \d+ times/.test(stderr() + stdout); i++) await new Promise((r) => setTimeout(r, 100));
      assert.equal(stdout, '', 'a service prints nothing on stdout');
      assert.match(stderr(), /retried \d+ times/, stderr().slice(0, 2000));
      assert.doesNotMatch(stderr(), /\x1b\[/, JSON.stringify(stderr().slice(0, 1000)));
      assert.match(stderr(), /\[WARN\] .*retried \d+ times/);
    } finally {
      relay.close();
      child.kill('SIGKILL');
    }
  });
});
