/** A program the stack's daemon keeps running: how to know it exited, and how to start and stop it. */
export interface Supervised {
  name: string;
  whenExited(): Promise<void>;
  start(): Promise<void>;
  stop(): Promise<void>;
  readonly pid: number | undefined;
}

/** Where the supervisor says what it does: a line for the daemon's log, and a change of what runs. */
export interface SupervisorOutput {
  log: (line: string) => void;
  changed: () => void;
}

/** The supervisor's wait before the next start of a program whose starts failed `failures` times in a row. */
export const restartBackoffMs = (failures: number): number => Math.min(30_000, 1000 * 2 ** failures);

/**
 * Starts each program again when it exits, after a backoff that grows with each failed start, until the
 * stack stops. `restarting` names the programs between their exit and their next successful start.
 */
export class Supervisor {
  readonly restarting = new Set<string>();
  /** The programs waiting out their backoff: `startNow` ends every wait at once. */
  readonly #waiting = new Set<() => void>();

  constructor(
    private readonly programs: readonly Supervised[],
    private readonly stopping: () => boolean,
  ) {}

  supervise(out: SupervisorOutput): { startNow(): void } {
    for (const p of this.programs) void this.#keepRunning(p, out);
    return { startNow: () => [...this.#waiting].forEach((done) => done()) };
  }

  #backoff(ms: number): Promise<void> {
    return new Promise<void>((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.#waiting.delete(done);
        resolve();
      };
      const timer = setTimeout(done, ms);
      this.#waiting.add(done);
    });
  }

  async #keepRunning(p: Supervised, out: SupervisorOutput): Promise<void> {
    for (;;) {
      await p.whenExited();
      if (this.stopping()) return;
      this.restarting.add(p.name);
      out.changed();
      for (let failures = 0; ; failures++) {
        const wait = restartBackoffMs(failures);
        out.log(`${p.name} exited; starting it again in ${wait / 1000} s`);
        await this.#backoff(wait);
        if (this.stopping()) return;
        try {
          await p.start();
          break;
        } catch (err) {
          out.log(`${p.name} did not start: ${(err as Error).message}`);
          await p.stop(); // a start that timed out may have left it half up: the next start begins clean
        }
      }
      this.restarting.delete(p.name);
      out.log(`${p.name} running again (pid ${p.pid})`);
      out.changed();
    }
  }
}
