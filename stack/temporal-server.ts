import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Connection } from '@temporalio/client';
import { msToTs } from '@temporalio/common/lib/time.js';
import { ManagedProcess } from '../tooling/managed-process.js';
import { ensureSearchAttributes } from './search-attributes.js';
import { ALL_SEARCH_ATTRIBUTES } from '../workflows/search-attributes.js';
import { PG_USER } from './postgres.js';

/**
 * The Temporal server of the stack: every service (frontend, history, matching, worker) in one process
 * of the binary built from the Go module proxy, on PostgreSQL, with a config file written here. Every
 * port binds to 127.0.0.1. Once up, the namespace is registered with skewless's search attributes.
 */

export interface ServerPorts {
  frontend: number;
  frontendHttp: number;
  history: number;
  matching: number;
  worker: number;
  /** Ringpop's membership ports, one per service. */
  membership: [number, number, number, number];
}

export interface TemporalServerOptions {
  binary: string;
  stateDir: string;
  ports: ServerPorts;
  pgPort: number;
  pgPassword: string;
  namespace: string;
}

const datastore = (o: TemporalServerOptions, databaseName: string, conns: number) => ({
  sql: {
    pluginName: 'postgres12',
    databaseName,
    connectAddr: `127.0.0.1:${o.pgPort}`,
    connectProtocol: 'tcp',
    user: PG_USER,
    password: o.pgPassword,
    maxConns: conns,
    maxIdleConns: conns,
    maxConnLifetime: '1h',
  },
});

const service = (grpcPort: number, membershipPort: number, httpPort?: number) => ({
  rpc: { grpcPort, membershipPort, bindOnLocalHost: true, ...(httpPort ? { httpPort } : {}) },
});

/** The server's configuration (development-postgres12.yaml's shape, without archival or metrics listeners). */
export function serverConfig(o: TemporalServerOptions): object {
  const p = o.ports;
  return {
    log: { stdout: true, level: 'warn' },
    persistence: {
      defaultStore: 'postgres-default',
      visibilityStore: 'postgres-visibility',
      numHistoryShards: 4,
      datastores: { 'postgres-default': datastore(o, 'temporal', 20), 'postgres-visibility': datastore(o, 'temporal_visibility', 10) },
    },
    global: { membership: { maxJoinDuration: '30s', broadcastAddress: '127.0.0.1' } },
    services: {
      frontend: service(p.frontend, p.membership[0], p.frontendHttp),
      history: service(p.history, p.membership[1]),
      matching: service(p.matching, p.membership[2]),
      worker: service(p.worker, p.membership[3]),
    },
    clusterMetadata: {
      enableGlobalNamespace: false,
      failoverVersionIncrement: 10,
      masterClusterName: 'active',
      currentClusterName: 'active',
      clusterInformation: {
        active: { enabled: true, initialFailoverVersion: 1, rpcName: 'frontend', rpcAddress: `127.0.0.1:${p.frontend}` },
      },
    },
    dcRedirectionPolicy: { policy: 'noop' },
  };
}

export class TemporalServer {
  readonly address: string;
  readonly logFile: string;
  private readonly process: ManagedProcess;

  constructor(private readonly o: TemporalServerOptions) {
    this.address = `127.0.0.1:${o.ports.frontend}`;
    this.logFile = join(o.stateDir, 'logs', 'temporal-server.log');
    // JSON is YAML: the loader reads `<root>/config/<env>.yaml`. The file holds the database password: 0600.
    const root = join(o.stateDir, 'temporal');
    mkdirSync(join(root, 'config'), { recursive: true });
    writeFileSync(join(root, 'config', 'stack.yaml'), `${JSON.stringify(serverConfig(o), null, 2)}\n`, { mode: 0o600 });
    this.process = new ManagedProcess(
      'temporal-server',
      o.binary,
      ['--root', root, '--config', 'config', '--env', 'stack', '--allow-no-auth', 'start'],
      this.logFile,
    );
  }

  get pid(): number | undefined {
    return this.process.running ? this.process.pid : undefined;
  }

  whenExited(): Promise<void> {
    return this.process.whenExited();
  }

  /** Starts it and waits until the frontend answers. */
  async start(timeoutMs = 120_000): Promise<void> {
    this.process.start();
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const connection = await connectOnce(this.address);
      if (connection) {
        await connection.close();
        return;
      }
      this.process.assertAlive();
      if (Date.now() > deadline)
        throw new Error(`the Temporal server did not answer at ${this.address} within ${timeoutMs / 1000} s; see ${this.logFile}`);
      await sleep(250);
    }
  }

  /**
   * The namespace and skewless's search attributes, idempotent. Ready when a visibility query naming
   * every attribute is accepted: the frontend's namespace and search-attribute caches have them.
   */
  async registerNamespace(timeoutMs = 60_000): Promise<void> {
    const connection = await Connection.connect({ address: this.address });
    try {
      const { namespace } = this.o;
      try {
        await connection.workflowService.registerNamespace({ namespace, workflowExecutionRetentionPeriod: msToTs('30 days') });
      } catch (err) {
        if (!/already exists|AlreadyExists/i.test((err as Error).message)) throw err;
      }
      const query = ALL_SEARCH_ATTRIBUTES.map((a) => `${a.name} = 'probe'`).join(' AND ');
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        try {
          await ensureSearchAttributes(connection, namespace);
          await connection.workflowService.countWorkflowExecutions({ namespace, query });
          return;
        } catch (err) {
          if (Date.now() > deadline)
            throw new Error(
              `namespace ${namespace} or its search attributes not usable after ${timeoutMs / 1000} s: ${(err as Error).message}`,
            );
          await sleep(500);
        }
      }
    } finally {
      await connection.close();
    }
  }

  stop(): Promise<void> {
    return this.process.stop(20_000);
  }

  /** SIGKILL: a crash. */
  kill(): Promise<void> {
    return this.process.kill();
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function connectOnce(address: string): Promise<Connection | undefined> {
  let connection: Connection | undefined;
  try {
    connection = await Connection.connect({ address, connectTimeout: 1000 });
    await connection.workflowService.getSystemInfo({});
    return connection;
  } catch {
    await connection?.close().catch(() => undefined);
    return undefined;
  }
}
