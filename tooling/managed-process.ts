import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, openSync, closeSync } from 'node:fs';

/**
 * A child process whose output goes to a log file and that is stopped the way a service is:
 * SIGTERM, then SIGKILL if it has not exited in time. Restartable with the same argv.
 */
// Children die with the process that started them, even when it exits without stopping them or
// is interrupted. A process with its own signal handlers (the sim daemon) stops them gracefully itself.
const running = new Set<ChildProcess>();
const killAll = () => {
  for (const child of running) child.kill('SIGKILL');
};
process.once('exit', killAll);
let signalsWatched = false;
function watchSignals(): void {
  if (signalsWatched) return;
  signalsWatched = true;
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
    if (process.listenerCount(signal) > 0) continue;
    process.once(signal, () => {
      killAll();
      process.kill(process.pid, signal); // the default action, now that the handler is gone
    });
  }
}

// The handlers above do not run when this process is SIGKILLed (a test runner's timeout, an OOM
// kill). On Linux the kernel can do it instead: util-linux's setpriv sets the child's parent-death
// signal (prctl PR_SET_PDEATHSIG) and then execs the command itself, so the pid is the command's.
const SETPRIV = '/usr/bin/setpriv';
const dieWithParent = process.platform === 'linux' && existsSync(SETPRIV);

export interface ManagedProcessOptions {
  /**
   * Run as this user (and its group) instead: a program that refuses root (PostgreSQL). setpriv
   * switches to it and sets the parent-death signal after the switch (a uid change clears it).
   */
  user?: { uid: number; gid: number };
  /** What `stop` sends first (default SIGTERM; PostgreSQL's fast shutdown is SIGINT). */
  stopSignal?: NodeJS.Signals;
}

export class ManagedProcess {
  private child: ChildProcess | undefined;
  private exited: Promise<void> = Promise.resolve();

  constructor(
    readonly name: string,
    private readonly command: string,
    private readonly args: string[],
    private readonly logFile: string,
    private readonly env: NodeJS.ProcessEnv = process.env,
    private readonly options: ManagedProcessOptions = {},
  ) {}

  get pid(): number | undefined {
    return this.child?.pid;
  }

  get running(): boolean {
    return this.child !== undefined && this.child.exitCode === null && this.child.signalCode === null;
  }

  /** `extraArgs` for this start only (etcd's --force-new-cluster after a restore, sim/cluster/static-pods.ts). */
  start(extraArgs: readonly string[] = []): void {
    watchSignals();
    const fd = openSync(this.logFile, 'a');
    try {
      const argv = [...this.args, ...extraArgs];
      const user = this.options.user;
      const as = user ? [`--reuid=${user.uid}`, `--regid=${user.gid}`, '--clear-groups'] : [];
      if (user && !existsSync(SETPRIV)) throw new Error(`${this.name}: running as uid ${user.uid} needs ${SETPRIV} (util-linux)`);
      const [command, args] =
        dieWithParent || user
          ? [SETPRIV, [...as, ...(dieWithParent ? ['--pdeathsig', 'KILL'] : []), '--', this.command, ...argv]]
          : [this.command, argv];
      this.child = spawn(command, args, { stdio: ['ignore', fd, fd], env: this.env });
    } finally {
      closeSync(fd);
    }
    const child = this.child;
    running.add(child);
    this.exited = new Promise((resolve) =>
      child.once('exit', () => {
        running.delete(child);
        resolve();
      }),
    );
  }

  /** Resolves when the process started last exits (at once when none runs): a supervisor waits on it. */
  whenExited(): Promise<void> {
    return this.exited;
  }

  /** Fails fast with the log's path if the process died while someone waits for it. */
  assertAlive(): void {
    if (!this.running)
      throw new Error(`${this.name} exited (code ${this.child?.exitCode}, signal ${this.child?.signalCode}); see ${this.logFile}`);
  }

  async stop(graceMs = 5000): Promise<void> {
    if (!this.running) return;
    this.child?.kill(this.options.stopSignal ?? 'SIGTERM');
    const timer = setTimeout(() => this.child?.kill('SIGKILL'), graceMs);
    await this.exited;
    clearTimeout(timer);
  }

  /** SIGKILL: a crash, not a shutdown (or another signal that ends it at once: PostgreSQL's SIGQUIT). */
  async kill(signal: NodeJS.Signals = 'SIGKILL'): Promise<void> {
    if (!this.running) return;
    this.child?.kill(signal);
    await this.exited;
  }
}
