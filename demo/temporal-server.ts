import { join } from 'node:path';
import { Connection } from '@temporalio/client';
import { devServerArgs } from '../client/commands/dev-server.js';
import { ensureTemporalBinary } from '../tooling/temporal-binary.js';
import { ensureSearchAttributes } from '../stack/search-attributes.js';
import { DemoError } from './demo-error.js';
import type { ProcessRegistry, Started } from './processes.js';

/**
 * The Temporal the demo talks to: a dev server already answering at the configured address is
 * reused (and left running); otherwise the demo starts one with `skewless dev-server`'s arguments,
 * its history in the demo's state folder, and stops it at the end.
 */
export interface DemoTemporal {
  address: string;
  namespace: string;
  uiUrl: string;
  reused: boolean;
  db?: string;
  connection: Connection;
  server?: Started;
}

async function tryConnect(address: string, timeoutMs: number): Promise<Connection | undefined> {
  try {
    const connection = await Connection.connect({ address, connectTimeout: timeoutMs });
    await connection.workflowService.getSystemInfo({});
    return connection;
  } catch {
    return undefined;
  }
}

export interface TemporalOptions {
  address: string;
  namespace: string;
  uiPort?: number;
  /** The dev server's /metrics port when this starts one (default: a random one). */
  metricsPort?: number;
  stateDir: string;
  registry: ProcessRegistry;
  say: (line: string) => void;
  /** Aborted: stop waiting for the server to come up. */
  signal: AbortSignal;
}

export async function ensureTemporal(o: TemporalOptions): Promise<DemoTemporal> {
  const match = /^(.+):(\d+)$/.exec(o.address);
  if (!match) throw new DemoError(`the Temporal address must be host:port, got ${JSON.stringify(o.address)}`, 2);
  const host = match[1] as string;
  const port = Number(match[2]);
  const uiPort = o.uiPort ?? port + 1000; // the dev server's own convention: 7233 → 8233
  const uiUrl = `http://${host === '127.0.0.1' || host === '0.0.0.0' ? 'localhost' : host}:${uiPort}`;

  const existing = await tryConnect(o.address, 2000);
  if (existing) {
    const added = await ensureSearchAttributes(existing, o.namespace);
    o.say(
      `[demo] reusing the Temporal server that answers at ${o.address} (left running at the end)${added.length ? `; registered search attributes ${added.join(', ')}` : ''}`,
    );
    return { address: o.address, namespace: o.namespace, uiUrl, reused: true, connection: existing };
  }

  const bin = ensureTemporalBinary();
  const db = join(o.stateDir, 'temporal.db');
  const server = o.registry.spawn(
    'temporal-dev-server',
    bin,
    devServerArgs({ db, ip: host, port, uiPort, ...(o.metricsPort ? { metricsPort: o.metricsPort } : {}) }),
    {
      logFile: join(o.stateDir, 'logs', 'temporal.log'),
    },
  );
  o.registry.recordPort('temporal', port);
  o.registry.recordPort('temporal-ui', uiPort);
  o.say(`[demo] started the Temporal dev server (pid ${server.pid}) on ${o.address}, UI ${uiUrl}`);
  const deadline = Date.now() + 90_000;
  let gone = false;
  void server.exited.then(() => (gone = true));
  for (;;) {
    if (o.signal.aborted) throw o.signal.reason;
    if (gone)
      throw new DemoError(
        `the Temporal dev server exited at start (port ${port} or ${uiPort} taken?); see ${join(o.stateDir, 'logs', 'temporal.log')}`,
      );
    const connection = await tryConnect(o.address, 1000);
    if (connection) return { address: o.address, namespace: o.namespace, uiUrl, reused: false, db, connection, server };
    if (Date.now() > deadline) throw new DemoError(`the Temporal dev server did not answer at ${o.address} within 90 s`);
    await new Promise((r) => setTimeout(r, 250));
  }
}
