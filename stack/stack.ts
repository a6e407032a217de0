import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { freePort } from '../tooling/free-port.js';
import { Postgres } from './postgres.js';
import { ensureStackTools, stackVersions, type StackVersions } from './stack-tools.js';
import { ensureSchemas, type SchemaState } from './temporal-schema.js';
import { TemporalServer, type ServerPorts } from './temporal-server.js';
import { TemporalUi } from './temporal-ui.js';
import { Supervisor, type Supervised } from './supervisor.js';

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
  /** The programs running now, by name (a program the supervisor is starting again is absent). */
  pids: Record<string, number>;
  /** Programs that exited and that the supervisor is starting again (RunningStack.supervise). */
  restarting?: string[];
  logs: string;
  /** The ports the programs listen on (absent in a record an older version wrote). */
  ports?: StackPorts;
  /** Milliseconds from the call to a usable namespace, by step. */
  startMs: Record<string, number>;
}

export interface RunningStack extends StackInfo {
  /** SIGKILL the Temporal server and start it again on the same database (after `downMs`). */
  restartServer(o?: { downMs?: number }): Promise<void>;
  /**
   * PostgreSQL's immediate shutdown (no checkpoint: recovery from the WAL), or with `SIGKILL` its crash
   * (postmaster and backends killed), then start it again after `downMs`.
   */
  restartPostgres(o?: { signal?: 'SIGQUIT' | 'SIGKILL'; downMs?: number }): Promise<void>;
  stop(): Promise<void>;
  info(): StackInfo;
  /**
   * Starts each program again when it exits on its own, after a backoff (1 s, doubling to 30 s) while
   * its start fails; `changed` after each exit and each start (the daemon rewrites stack.json).
   * `startNow` cuts the wait of every program that is down (`stack up` on a stack with a part down).
   */
  supervise(o: { log: (line: string) => void; changed: () => void }): { startNow(): void };
}

export { restartBackoffMs } from './supervisor.js';

/**
 * The stack's one Temporal server is the only member of its cluster, but every server it ran before left
 * its rows in cluster_membership (for two days): a server started after one was SIGKILLed, or on other
 * ports, waits for those hosts in its ring's join (30 s and more, measured), dispatching no workflow task
 * meanwhile. No server runs when this is called: every row is an earlier one's.
 */
async function forgetEarlierServers(pg: Postgres): Promise<void> {
  await pg.query('temporal', 'DELETE FROM cluster_membership');
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

/** What `stack status` and the start print of a running stack: addresses, versions, schemas, pids. */
function stackInfo(
  o: StackOptions,
  p: {
    namespace: string;
    server: TemporalServer;
    ui: TemporalUi | undefined;
    pg: Postgres;
    versions: StackInfo['versions'];
    schemas: StackInfo['schemas'];
    startMs: Record<string, number>;
  },
): StackInfo {
  const { server, ui, pg } = p;
  return {
    address: server.address,
    namespace: p.namespace,
    ...(ui ? { uiUrl: ui.url } : {}),
    postgres: { address: `127.0.0.1:${o.ports.postgres}`, dataDir: pg.dataDir, user: pg.user ?? '?' },
    versions: p.versions,
    schemas: p.schemas,
    logs: join(o.stateDir, 'logs'),
    ports: o.ports,
    startMs: p.startMs,
    pids: Object.fromEntries(
      Object.entries({ postgres: pg.pid, 'temporal-server': server.pid, 'temporal-ui': ui?.pid }).filter(
        (e): e is [string, number] => e[1] !== undefined,
      ),
    ),
  };
}

/** The programs the daemon keeps running: PostgreSQL, the server (its start forgets earlier servers), the UI. */
function supervisedPrograms(pg: Postgres, server: TemporalServer, ui: TemporalUi | undefined): Supervised[] {
  const programs: Supervised[] = [
    {
      name: 'postgres',
      whenExited: () => pg.whenExited(),
      start: () => pg.start(),
      stop: () => pg.stop(),
      get pid() {
        return pg.pid;
      },
    },
    {
      name: 'temporal-server',
      whenExited: () => server.whenExited(),
      start: async () => {
        await forgetEarlierServers(pg);
        await server.start();
      },
      stop: () => server.stop(),
      get pid() {
        return server.pid;
      },
    },
  ];
  if (ui)
    programs.push({
      name: 'temporal-ui',
      whenExited: () => ui.whenExited(),
      start: () => ui.start(),
      stop: () => ui.stop(),
      get pid() {
        return ui.pid;
      },
    });
  return programs;
}

/** A crash test's server restart: killed, down for `downMs`, started again. */
async function restartServer(server: TemporalServer, r: { downMs?: number }): Promise<void> {
  await server.kill();
  await new Promise((resolve) => setTimeout(resolve, r.downMs ?? 0));
  await server.start();
}

/** A crash test's PostgreSQL restart: crashed with `signal`, down for `downMs`, started again. */
async function restartPostgres(pg: Postgres, r: { signal?: 'SIGQUIT' | 'SIGKILL'; downMs?: number }): Promise<void> {
  await pg.crash(r.signal);
  await new Promise((resolve) => setTimeout(resolve, r.downMs ?? 0));
  // After a SIGKILL, a backend forked as the postmaster died may hold the shared memory a moment longer.
  for (let attempt = 1; ; attempt++) {
    try {
      return await pg.start();
    } catch (err) {
      if (r.signal !== 'SIGKILL' || attempt >= 5) throw err;
      await pg.stop();
      await new Promise((resolve) => setTimeout(resolve, 1000));
    }
  }
}

/** Starts PostgreSQL, the Temporal server (its schemas first) and the UI, each step timed; stops what it started if one fails. */
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
  let stopping = false;
  const stopAll = async () => {
    stopping = true;
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
    await forgetEarlierServers(pg);
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
    const shown = ui;
    const info = (): StackInfo => ({
      ...stackInfo(o, { namespace, server: running, ui: shown, pg, versions, schemas, startMs }),
      ...(supervisor.restarting.size > 0 ? { restarting: [...supervisor.restarting] } : {}),
    });
    const programs = supervisedPrograms(pg, running, ui);
    const supervisor = new Supervisor(programs, () => stopping);
    return {
      ...info(),
      info,
      restartServer: (r = {}) => restartServer(running, r),
      restartPostgres: (r = {}) => restartPostgres(pg, r),
      stop: stopAll,
      supervise: (out) => supervisor.supervise(out),
    };
  } catch (err) {
    await stopAll().catch(() => undefined);
    throw err;
  }
}
