import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { freePort } from '../tooling/free-port.js';
import { Postgres } from './postgres.js';
import { ensureStackTools, stackVersions, type StackVersions } from './stack-tools.js';
import { ensureSchemas, type SchemaState } from './temporal-schema.js';
import { TemporalServer, type ServerPorts } from './temporal-server.js';
import { TemporalUi } from './temporal-ui.js';

/**
 * The production shape without Docker, in this process's hands: PostgreSQL, the Temporal server on it
 * (schemas set up or migrated first), the namespace with skewless's search attributes, and the UI.
 * Each program is a child that dies with this process, however it ends (ManagedProcess): the daemon of
 * `npm run stack up` holds them, and so does a test that starts a stack itself.
 */

/** In the state dir while `npm run stack up`'s daemon runs: its pid and the stack's StackInfo. */
export const STACK_FILE = 'stack.json';

export interface StackPorts extends ServerPorts {
  postgres: number;
  ui: number;
}

/** Temporal's usual ports (the CLI's and the worker's default address 127.0.0.1:7233), the UI on 8080 as in compose. */
export const DEFAULT_PORTS: StackPorts = {
  frontend: 7233,
  frontendHttp: 7243,
  history: 7234,
  matching: 7235,
  worker: 7239,
  membership: [6933, 6934, 6935, 6939],
  postgres: 55432,
  ui: 8080,
};

/** Every port free on 127.0.0.1 now: tests, and stacks beside each other. */
export async function freeStackPorts(): Promise<StackPorts> {
  const next = freePort;
  return {
    frontend: await next(),
    frontendHttp: await next(),
    history: await next(),
    matching: await next(),
    worker: await next(),
    membership: [await next(), await next(), await next(), await next()],
    postgres: await next(),
    ui: await next(),
  };
}

export interface StackOptions {
  stateDir: string;
  ports: StackPorts;
  namespace?: string;
  /** Serve the UI (default true). */
  ui?: boolean;
  log?: (line: string) => void;
}

export interface StackInfo {
  address: string;
  namespace: string;
  uiUrl?: string;
  postgres: { address: string; dataDir: string; user: string };
  versions: StackVersions;
  schemas: SchemaState[];
  pids: Record<string, number>;
  logs: string;
  /** Milliseconds from the call to a usable namespace, by step. */
  startMs: Record<string, number>;
}

export interface RunningStack extends StackInfo {
  /** SIGKILL the Temporal server and start it again on the same database. */
  restartServer(): Promise<void>;
  /** PostgreSQL's immediate shutdown (no checkpoint: recovery from the WAL), then start it again. */
  restartPostgres(): Promise<void>;
  stop(): Promise<void>;
  info(): StackInfo;
}

/** The database password: made on first start, kept in the state dir (0600), never in argv or logs. */
function dbPassword(stateDir: string): string {
  const file = join(stateDir, 'secrets', 'db-password');
  if (existsSync(file)) return readFileSync(file, 'utf8').trim();
  mkdirSync(join(stateDir, 'secrets'), { recursive: true, mode: 0o700 });
  const password = randomBytes(24).toString('hex');
  writeFileSync(file, password, { mode: 0o600 });
  return password;
}

export async function startStack(o: StackOptions): Promise<RunningStack> {
  const t0 = Date.now();
  const startMs: Record<string, number> = {};
  const lap = (step: string) => (startMs[step] = Date.now() - t0 - Object.values(startMs).reduce((a, b) => a + b, 0));
  const log = o.log ?? (() => undefined);
  const namespace = o.namespace ?? 'default';
  const withUi = o.ui ?? true;
  mkdirSync(join(o.stateDir, 'logs'), { recursive: true });
  const tools = ensureStackTools({ ui: withUi });
  const versions = stackVersions();
  lap('tools');
  const password = dbPassword(o.stateDir);
  const pg = new Postgres({ bin: tools.pgBin, stateDir: o.stateDir, port: o.ports.postgres, password });
  let server: TemporalServer | undefined;
  let ui: TemporalUi | undefined;
  const stopAll = async () => {
    await ui?.stop();
    await server?.stop();
    await pg.stop();
  };
  try {
    if (await pg.init()) log(`initialised PostgreSQL ${versions.postgresMajor} in ${pg.dataDir}`);
    await pg.start();
    lap('postgres');
    log(`PostgreSQL on 127.0.0.1:${o.ports.postgres} (pid ${pg.pid}, user ${pg.user})`);
    const schemas = await ensureSchemas(pg, { sqlTool: tools.sqlTool, schemaDir: tools.schemaDir, port: o.ports.postgres, password });
    for (const s of schemas) log(`schema ${s.database}: ${s.from === s.to ? `at ${s.to}` : `${s.from || 'new'} → ${s.to}`}`);
    lap('schema');
    server = new TemporalServer({
      binary: tools.temporalServer,
      stateDir: o.stateDir,
      ports: o.ports,
      pgPort: o.ports.postgres,
      pgPassword: password,
      namespace,
    });
    await server.start();
    lap('server');
    await server.registerNamespace();
    lap('namespace');
    log(
      `Temporal ${versions.temporalServer} on ${server.address} (pid ${server.pid}), namespace ${namespace} with skewless's search attributes`,
    );
    if (tools.uiServer) {
      ui = new TemporalUi({ binary: tools.uiServer, stateDir: o.stateDir, port: o.ports.ui, frontend: server.address, namespace });
      await ui.start();
      lap('ui');
      log(`Temporal UI ${versions.temporalUi} on ${ui.url} (pid ${ui.pid})`);
    }
    const running = server;
    const info = (): StackInfo => ({
      address: running.address,
      namespace,
      ...(ui ? { uiUrl: ui.url } : {}),
      postgres: { address: `127.0.0.1:${o.ports.postgres}`, dataDir: pg.dataDir, user: pg.user ?? '?' },
      versions,
      schemas,
      logs: join(o.stateDir, 'logs'),
      startMs,
      pids: Object.fromEntries(
        Object.entries({ postgres: pg.pid, 'temporal-server': running.pid, 'temporal-ui': ui?.pid }).filter(
          (e): e is [string, number] => e[1] !== undefined,
        ),
      ),
    });
    return {
      ...info(),
      info,
      restartServer: async () => {
        await running.kill();
        await running.start();
      },
      restartPostgres: async () => {
        await pg.crash();
        await pg.start();
      },
      stop: stopAll,
    };
  } catch (err) {
    await stopAll().catch(() => undefined);
    throw err;
  }
}
