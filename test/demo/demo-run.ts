import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { isAlive } from '../../demo/processes.js';
import { freePort } from '../../tooling/free-port.js';
import { archiveLabel, archivePersistedServer, recordWorldSecrets } from '../helpers/history-archive.js';
import { repoRoot } from '../helpers/run-cli.js';
import { tempDir } from '../helpers/temp-dir.js';

/**
 * The demo process of demo.test.ts and demo-interrupts.test.ts: the real demo with its own Temporal
 * dev server, simulated cluster, worker and CLI children, run from dist/demo/run-demo.js directly
 * (`npm run demo` would rebuild dist/ under the running tests). Two files, so that the suite runs
 * the whole upgrade and the interruptions side by side.
 */

export interface DemoRun {
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

export async function startDemo(): Promise<DemoRun> {
  const stateDir = join(tempDir('demo-test'), 'state');
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

export async function exitWithin(run: DemoRun, ms: number): Promise<number | null> {
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
export async function assertNothingLeft(run: DemoRun, expectAtLeast: string[]): Promise<void> {
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

/** The file's after hook: every demo it started is killed, its histories and keys kept for the secret scan, its folder removed. */
export async function stopDemos(): Promise<void> {
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
}
