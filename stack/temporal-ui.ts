import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ManagedProcess } from '../tooling/managed-process.js';

/**
 * The Temporal UI server (built from the Go module proxy at the compose file's version) pointed at the
 * stack's frontend, on 127.0.0.1: the audit trail, as the compose stack's temporal-ui service serves it.
 */
export class TemporalUi {
  readonly url: string;
  readonly logFile: string;
  private readonly process: ManagedProcess;

  constructor(o: { binary: string; stateDir: string; port: number; frontend: string; namespace: string }) {
    this.url = `http://127.0.0.1:${o.port}`;
    this.logFile = join(o.stateDir, 'logs', 'temporal-ui.log');
    const root = join(o.stateDir, 'ui');
    mkdirSync(join(root, 'config'), { recursive: true });
    const config = {
      temporalGrpcAddress: o.frontend,
      host: '127.0.0.1',
      port: o.port,
      enableUi: true,
      defaultNamespace: o.namespace,
      notifyOnNewVersion: false,
    };
    writeFileSync(join(root, 'config', 'stack.yaml'), `${JSON.stringify(config, null, 2)}\n`);
    this.process = new ManagedProcess(
      'temporal-ui',
      o.binary,
      ['--root', root, '--config', 'config', '--env', 'stack', 'start'],
      this.logFile,
    );
  }

  get pid(): number | undefined {
    return this.process.running ? this.process.pid : undefined;
  }

  whenExited(): Promise<void> {
    return this.process.whenExited();
  }

  async start(timeoutMs = 30_000): Promise<void> {
    this.process.start();
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      try {
        if ((await fetch(this.url, { signal: AbortSignal.timeout(2_000) })).ok) return;
      } catch {
        // not listening yet
      }
      this.process.assertAlive();
      if (Date.now() > deadline)
        throw new Error(`the Temporal UI did not answer on ${this.url} within ${timeoutMs / 1000} s; see ${this.logFile}`);
      await new Promise((r) => setTimeout(r, 200));
    }
  }

  stop(): Promise<void> {
    return this.process.stop(5_000);
  }
}
