import { readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Connection } from '@temporalio/client';
import { devServerArgs } from '../../client/commands/dev-server.js';
import { ManagedProcess } from '../../tooling/managed-process.js';
import { ensureTemporalBinary } from '../../tooling/temporal-binary.js';

/**
 * The two processes the fault harness kills: the Temporal dev server (its history in a file, so a
 * restart on the same port and file picks up where it was) and the skewless worker, each a real
 * separate process started from what a user runs. SIGKILL is a crash, not a shutdown.
 */

const repoRoot = fileURLToPath(new URL('../../../', import.meta.url));
const CLI = join(repoRoot, 'bin', 'skewless.js');

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Text appended to `file` since byte `from`. */
function logSince(file: string, from: number): string {
  try {
    return readFileSync(file).subarray(from).toString('utf8');
  } catch {
    return '';
  }
}

function logSize(file: string): number {
  try {
    return statSync(file).size;
  } catch {
    return 0;
  }
}

async function answers(address: string): Promise<boolean> {
  let connection: Connection | undefined;
  try {
    connection = await Connection.connect({ address, connectTimeout: 1000 });
    await connection.workflowService.getSystemInfo({});
    return true;
  } catch {
    return false;
  } finally {
    await connection?.close().catch(() => undefined);
  }
}

export class DevServerProcess {
  readonly address: string;
  readonly db: string;
  private readonly process: ManagedProcess;
  private readonly logFile: string;

  constructor(stateDir: string, port: number) {
    this.address = `127.0.0.1:${port}`;
    this.db = join(stateDir, 'temporal.db');
    this.logFile = join(stateDir, 'temporal.log');
    // The UI is not needed (--headless); its port is still passed so that none is picked at random.
    const args = [...devServerArgs({ db: this.db, ip: '127.0.0.1', port, uiPort: port + 1 }), '--headless'];
    this.process = new ManagedProcess('temporal-dev-server', ensureTemporalBinary(), args, this.logFile);
  }

  get pid(): number | undefined {
    return this.process.pid;
  }

  /** Starts the server and waits until it answers (a restart reopens the same file on the same port). */
  async start(timeoutMs = 90_000): Promise<void> {
    this.process.start();
    const deadline = Date.now() + timeoutMs;
    while (!(await answers(this.address))) {
      this.process.assertAlive();
      if (Date.now() > deadline)
        throw new Error(`the Temporal dev server did not answer at ${this.address} within ${timeoutMs / 1000} s; see ${this.logFile}`);
      await sleep(200);
    }
  }

  kill(): Promise<void> {
    return this.process.kill();
  }

  stop(): Promise<void> {
    return this.process.stop(10_000);
  }
}

export interface WorkerProcessOptions {
  clustersDir: string;
  address: string;
  taskQueue: string;
  logFile: string;
}

/** `skewless worker`, as an operator runs it. */
export class WorkerProcess {
  private readonly process: ManagedProcess;
  /** How many times it was started. */
  starts = 0;

  constructor(private readonly options: WorkerProcessOptions) {
    const args = [CLI, 'worker', '--clusters-dir', options.clustersDir, '--address', options.address, '--task-queue', options.taskQueue];
    this.process = new ManagedProcess('skewless-worker', process.execPath, args, options.logFile);
  }

  get pid(): number | undefined {
    return this.process.pid;
  }

  get running(): boolean {
    return this.process.running;
  }

  /** Starts it and waits for the line it prints once it polls its task queue. */
  async start(timeoutMs = 120_000): Promise<void> {
    const from = logSize(this.options.logFile);
    this.process.start();
    this.starts++;
    const deadline = Date.now() + timeoutMs;
    while (!logSince(this.options.logFile, from).includes('skewless worker: task queue')) {
      if (!this.process.running)
        throw new Error(`the worker exited at start: ${logSince(this.options.logFile, from).trim().split('\n').slice(-3).join(' | ')}`);
      if (Date.now() > deadline) throw new Error(`the worker did not poll within ${timeoutMs / 1000} s; see ${this.options.logFile}`);
      await sleep(100);
    }
  }

  /** SIGKILL: no graceful shutdown, whatever it was doing is cut off. */
  kill(): Promise<void> {
    return this.process.kill();
  }

  stop(): Promise<void> {
    return this.process.stop(10_000);
  }

  /** Whether the worker died on its own (not killed by us): its log says why. */
  assertAlive(): void {
    this.process.assertAlive();
  }
}
