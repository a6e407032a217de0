import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { isAlive } from '../../demo/processes.js';
import { freePort } from '../../tooling/free-port.js';
import { archiveLabel, archivePersistedServer, recordWorldSecrets } from '../helpers/history-archive.js';
import { repoRoot } from '../helpers/run-cli.js';

/**
 * The README's main command, end to end: the real demo process with its own Temporal dev server,
 * simulated cluster, worker and CLI children. Also: interrupted (SIGINT) and with its reader gone
 * (EPIPE, as in `npm run demo | head`), it leaves no process it started and no port it held.
 * Runs dist/demo/run-demo.js directly: `npm run demo` would rebuild dist/ under the running tests.
 */

interface DemoRun {
  child: ChildProcess;
  stateDir: string;
  ports: { temporal: number; ui: number };
  stdout: () => string;
  stderr: () => string;
  exited: Promise<number | null>;
  /** Resolves once stdout contains `text`. */
  waitFor: (text: string, timeoutMs: number) => Promise<void>;
}

const runs: DemoRun[] = [];

/** This process's environment without what would point the demo elsewhere. */
function demoEnv(): NodeJS.ProcessEnv {
  const env = { ...process.env };
  for (const key of ['TEMPORAL_ADDRESS', 'TEMPORAL_NAMESPACE', 'SKEWLESS_TASK_QUEUE', 'SKEWLESS_DEMO_DIR']) delete env[key];
  return env;
}

async function startDemo(): Promise<DemoRun> {
  const stateDir = join(mkdtempSync(join(tmpdir(), 'skewless-demo-test-')), 'state');
  const ports = { temporal: await freePort(), ui: await freePort() };
  const child = spawn(
    process.execPath,
    [
      join(repoRoot, 'dist', 'demo', 'run-demo.js'),
      '--address',
      `127.0.0.1:${ports.temporal}`,
      '--ui-port',
      String(ports.ui),
      '--state-dir',
      stateDir,
    ],
    {
      cwd: repoRoot,
      stdio: ['ignore', 'pipe', 'pipe'],
      env: demoEnv(),
    },
  );
  let out = '';
  let err = '';
  const waiters: { text: string; resolve: () => void }[] = [];
  child.stdout?.on('data', (d: Buffer) => {
    out += d.toString();
    for (const w of waiters.filter((x) => out.includes(x.text))) w.resolve();
  });
  child.stderr?.on('data', (d: Buffer) => (err += d.toString()));
  child.stdout?.on('error', () => undefined);
  const exited = new Promise<number | null>((r) => child.once('exit', (code, signal) => r(code ?? (signal ? -1 : null))));
  const run: DemoRun = {
    child,
    stateDir,
    ports,
    exited,
    stdout: () => out,
    stderr: () => err,
    waitFor: (text, timeoutMs) =>
      new Promise((resolve, reject) => {
        if (out.includes(text)) return resolve();
        const timer = setTimeout(() => reject(new Error(`"${text}" not printed within ${timeoutMs / 1000} s\n${out}\n${err}`)), timeoutMs);
        const done = () => {
          clearTimeout(timer);
          resolve();
        };
        waiters.push({ text, resolve: done });
        void exited.then(() => reject(new Error(`the demo exited before printing "${text}"\n${out}\n${err}`)));
      }),
  };
  runs.push(run);
  return run;
}

async function exitWithin(run: DemoRun, ms: number): Promise<number | null> {
  let timer: NodeJS.Timeout | undefined;
  const code = await Promise.race([run.exited, new Promise<'timeout'>((r) => (timer = setTimeout(() => r('timeout'), ms)))]);
  clearTimeout(timer);
  assert.notEqual(code, 'timeout', `the demo did not exit within ${ms / 1000} s\n${run.stdout()}\n${run.stderr()}`);
  return code as number | null;
}

const portFree = (port: number) =>
  new Promise<boolean>((resolve) => {
    const server = createServer();
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });

/** Every process the demo recorded is gone, and every port it recorded is free again. */
async function assertNothingLeft(run: DemoRun, expectAtLeast: string[]): Promise<void> {
  const file = join(run.stateDir, 'pids.json');
  assert.ok(existsSync(file), 'the demo records what it starts');
  const { pids, ports } = JSON.parse(readFileSync(file, 'utf8')) as { pids: Record<string, number>; ports: Record<string, number> };
  for (const name of expectAtLeast) assert.ok(pids[name], `${name} was started and recorded: ${JSON.stringify(pids)}`);
  assert.equal(ports.temporal, run.ports.temporal);
  // Children that got SIGKILL a moment ago may still be in the kernel's hands: give them a second.
  const deadline = Date.now() + 5000;
  let alive = Object.entries(pids).filter(([, pid]) => isAlive(pid));
  while (alive.length > 0 && Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 200));
    alive = alive.filter(([, pid]) => isAlive(pid));
  }
  assert.deepEqual(alive, [], 'no process the demo started is still running');
  const taken: string[] = [];
  for (const [name, port] of Object.entries(ports)) if (!(await portFree(port))) taken.push(`${name}:${port}`);
  assert.deepEqual(taken, [], 'every port the demo used is free again');
}

describe('npm run demo (the README main command)', () => {
  after(async () => {
    for (const run of runs) {
      if (run.child.exitCode === null && run.child.signalCode === null) {
        run.child.kill('SIGKILL');
        await run.exited;
      }
      // For the run's secret scan: the demo's histories (from its server's file) and its world's keys.
      const label = archiveLabel('demo');
      recordWorldSecrets(run.stateDir, label);
      if (existsSync(join(run.stateDir, 'temporal.db'))) await archivePersistedServer(join(run.stateDir, 'temporal.db'), label);
      rmSync(join(run.stateDir, '..'), { recursive: true, force: true });
    }
  });

  it('upgrades all 8 nodes to 1.34 with no PDB violated, prints the summary and leaves nothing running', { timeout: 780_000 }, async () => {
    const run = await startDemo();
    const code = await exitWithin(run, 720_000);
    const out = run.stdout();
    // Kept for the record (test-output/ is not committed): what the demo's operator read and did.
    mkdirSync(join(repoRoot, 'test-output'), { recursive: true });
    writeFileSync(join(repoRoot, 'test-output', 'demo-stdout.log'), out);
    assert.equal(code, 0, `${out}\n${run.stderr()}`);
    // The operator read plan's readiness first: the etcd version of every control plane holds the 1.34 hop.
    assert.match(out, /^\[operator\] readiness: HOLD etcd-version before 1\.34\.\d+ on cp-1: /m);

    const rows = [...out.matchAll(/^(cp-\d+|worker-\d+)\s+(control-plane|worker)\s+(v\S+)\s+(v\S+)\s+([\d.]+ s|-)/gm)];
    assert.deepEqual(
      rows.map((m) => m[1]).sort(),
      ['cp-1', 'cp-2', 'cp-3', 'worker-1', 'worker-2', 'worker-3', 'worker-4', 'worker-5'],
      out,
    );
    for (const [, node, , from, to, drain] of rows) {
      assert.match(from as string, /^v1\.32\./, `${node} started at 1.32`);
      assert.match(to as string, /^v1\.34\./, `${node} ended at 1.34`);
      assert.match(drain as string, /^[\d.]+ s$/, `${node} has a drain time`);
    }
    assert.match(out, /^workload availability \(\d+ samples.*\): OK/m);
    assert.doesNotMatch(out, /VIOLATED/);
    // The blocking PDB did block, and the operator fixed it and retried; every gate was approved.
    assert.match(out, /^\[operator\] \$ skewless resolve demo --node \S+ --action retry/m);
    assert.match(out, /drain blocked by PDB default\/payments/);
    assert.equal(
      [...out.matchAll(/^\[operator\] {3}gate \S+ approved by demo-operator/gm)].length,
      2,
      'the workers and canary gates of 1.34 (the workers move once, at the last hop: 1.33 has neither)',
    );
    assert.equal([...out.matchAll(/^ {2}before 1\.3\d\.\d+: .*\.db \(\d+ bytes/gm)].length, 2, 'one etcd snapshot per hop');
    assert.match(
      out,
      new RegExp(`^Temporal UI: http://localhost:${run.ports.ui}/namespaces/default/workflows/upgrade%2Fdemo/[0-9a-f-]{36}/history$`, 'm'),
    );
    assert.match(out, /^wall time: \d+/m);

    await assertNothingLeft(run, [
      'temporal-dev-server',
      'worker',
      'sim-cp-1/etcd',
      'sim-cp-1/kube-apiserver',
      'sim-cp-3/kube-scheduler',
      'sim-cp-1/kube-apiserver-at-end',
      'sim-kwok',
      'skewless-upgrade',
      'skewless-resolve',
      'skewless-approve',
    ]);
  });

  it('SIGINT mid-upgrade stops everything it started', { timeout: 300_000 }, async () => {
    const run = await startDemo();
    await run.waitFor('started upgrade/demo', 240_000);
    run.child.kill('SIGINT');
    const code = await exitWithin(run, 60_000);
    assert.equal(code, 130, run.stderr());
    assert.match(run.stderr(), /SIGINT: stopping everything the demo started/);
    assert.match(run.stderr(), /terminated the running upgrade workflow/);
    await assertNothingLeft(run, ['temporal-dev-server', 'worker', 'sim-cp-1/etcd', 'sim-cp-1/kube-apiserver', 'skewless-upgrade']);
  });

  it('a reader that goes away (npm run demo | head) stops everything too', { timeout: 300_000 }, async () => {
    const run = await startDemo();
    await run.waitFor('[demo] started the worker', 240_000);
    run.child.stdout?.destroy(); // the next line the demo writes meets EPIPE
    const code = await exitWithin(run, 90_000);
    assert.equal(code, 141, run.stderr());
    assert.match(run.stderr(), /EPIPE: stopping everything the demo started/);
    await assertNothingLeft(run, ['temporal-dev-server', 'worker']);
  });
});
