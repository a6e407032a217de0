import { spawn, type ChildProcess } from 'node:child_process';
import { createWriteStream, readFileSync, writeFileSync } from 'node:fs';
import { createInterface } from 'node:readline';

/**
 * Every process the demo starts, in one place: spawned with their output in log files (or handed
 * line by line to the caller), recorded in `pids.json` as they start so that a test (or a person)
 * can check afterwards that none survived, and stopped the way a service is stopped.
 */

export interface Started {
  name: string;
  pid: number;
  child: ChildProcess;
  /** Resolves with the exit code (or 128 + signal number) when the process has exited. */
  exited: Promise<number>;
}

export interface SpawnOptions {
  env?: NodeJS.ProcessEnv;
  cwd?: string;
  /** Append stdout and stderr to this file. */
  logFile?: string;
  /** Called with each stdout line (after it is logged). */
  onLine?: (line: string) => void;
  /** Called with each stderr line. */
  onErrLine?: (line: string) => void;
}

const SIGNALS: Record<string, number> = { SIGHUP: 1, SIGINT: 2, SIGKILL: 9, SIGPIPE: 13, SIGTERM: 15 };

export class ProcessRegistry {
  private readonly live = new Map<number, Started>();
  /** Every pid ever recorded, by name; also processes started elsewhere (the simulation's). */
  private readonly recorded: Record<string, number> = {};
  private readonly ports: Record<string, number> = {};

  constructor(private readonly pidsFile: string) {}

  spawn(name: string, command: string, args: string[], options: SpawnOptions = {}): Started {
    const child = spawn(command, args, { env: options.env ?? process.env, cwd: options.cwd, stdio: ['ignore', 'pipe', 'pipe'] });
    if (child.pid === undefined) throw new Error(`could not start ${name} (${command})`);
    const log = options.logFile ? createWriteStream(options.logFile, { flags: 'a' }) : undefined;
    const exited = new Promise<number>((resolve) => {
      child.once('error', () => resolve(127));
      child.once('close', (code, signal) => {
        this.live.delete(child.pid as number);
        log?.end();
        resolve(code ?? 128 + (signal ? (SIGNALS[signal] ?? 0) : 0));
      });
    });
    for (const [stream, handler] of [
      [child.stdout, options.onLine],
      [child.stderr, options.onErrLine],
    ] as const) {
      if (!stream) continue;
      if (log) stream.pipe(log, { end: false });
      if (handler) createInterface({ input: stream, crlfDelay: Infinity }).on('line', handler);
      else if (!log) stream.resume();
    }
    const started: Started = { name, pid: child.pid, child, exited };
    this.live.set(child.pid, started);
    this.record(name, child.pid);
    return started;
  }

  /** Records a process or a port the demo is responsible for, and rewrites pids.json. */
  record(name: string, pid: number): void {
    this.recorded[name] = pid;
    this.save();
  }

  recordPort(name: string, port: number): void {
    this.ports[name] = port;
    this.save();
  }

  private save(): void {
    writeFileSync(this.pidsFile, JSON.stringify({ pids: this.recorded, ports: this.ports }, null, 2));
  }

  get pids(): Readonly<Record<string, number>> {
    return this.recorded;
  }

  /** SIGTERM, then SIGKILL after `graceMs`; resolves once the process is gone. */
  async stop(p: Started, graceMs = 10_000): Promise<number> {
    if (p.child.exitCode !== null || p.child.signalCode !== null) return p.exited;
    p.child.kill('SIGTERM');
    const timer = setTimeout(() => p.child.kill('SIGKILL'), graceMs);
    try {
      return await p.exited;
    } finally {
      clearTimeout(timer);
    }
  }

  /** The last resort (second interrupt, process exit): SIGKILL whatever is still running. */
  killAllNow(): void {
    for (const p of this.live.values()) {
      try {
        p.child.kill('SIGKILL');
      } catch {
        // already gone
      }
    }
  }
}

/** Whether a process with this pid exists and is not a zombie waiting for its parent to reap it. */
export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  try {
    return !/^\d+ \(.*\) Z/.test(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return true; // no /proc: kill(0) is all there is
  }
}
