import { spawn } from 'node:child_process';
import { closeSync, existsSync, mkdirSync, openSync, readFileSync, rmSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { DEFAULT_PORTS, STACK_FILE, freeStackPorts, type StackInfo, type StackPorts } from './stack.js';
import { ensureStackTools } from './stack-tools.js';

/**
 * `npm run stack -- up|down|status [--state-dir DIR] [--free-ports] [--PROGRAM-port N]... [--no-ui] [--while-pid PID]`:
 * the production shape (PostgreSQL, the Temporal server on it, the UI) on this machine without Docker;
 * docs/deployment.md, "Running without Docker". `up` returns once everything answers; the programs run
 * on under a daemon process, which starts one that exits again (with a backoff), until `down` (or until
 * the process `--while-pid` names ends: a test, a CI job). `up` on a running stack starts what is down now.
 */

const USAGE = 'usage: npm run stack -- up|down|status [--state-dir DIR] [--free-ports] [--PROGRAM-port N]... [--no-ui] [--while-pid PID]';

/** `--frontend-port N` and the like: one flag per port of StackPorts but the membership ports. */
const PORT_FLAGS = {
  'frontend-port': 'frontend',
  'frontend-http-port': 'frontendHttp',
  'history-port': 'history',
  'matching-port': 'matching',
  'worker-port': 'worker',
  'postgres-port': 'postgres',
  'ui-port': 'ui',
} as const satisfies Record<string, Exclude<keyof StackPorts, 'membership'>>;

const HELP = `${USAGE}

The production shape without Docker: Debian's PostgreSQL, the Temporal server on it and its UI (both
built from the Go module proxy into ~/.cache/skewless), data and logs in the state dir (default
.skewless/stack). docs/deployment.md, "Running without Docker".

  up       start everything and return once it answers; a daemon holds the programs and starts one
           that exits on its own again (after 1 s, doubling to 30 s while its start fails); on a
           running stack, starts what is down now and returns once it runs
  status   what runs now (pids of the programs running); exit 1 when the stack or a program is down
  down     stop the daemon and the programs it runs now; the data stays

  --state-dir DIR        where the data, logs and stack.json live
  --free-ports           every port free on 127.0.0.1 now, instead of Temporal's usual 7233, 7234...
${Object.entries(PORT_FLAGS)
  .map(([flag, key]) => `  --${`${flag} N`.padEnd(21)}the ${key} port (default ${DEFAULT_PORTS[key]})`)
  .join('\n')}
  --no-ui                no Temporal UI
  --while-pid PID        stop the stack when that process ends (a test, a CI job)

Exit status: 0 done, 1 failed or (status) down, 2 invalid input.`;
const DAEMON = fileURLToPath(new URL('./daemon.js', import.meta.url));

type Recorded = StackInfo & { daemonPid: number };

const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The running stack's record, or undefined (a record whose daemon is gone is removed). */
function recorded(stateDir: string): Recorded | undefined {
  const file = join(stateDir, STACK_FILE);
  if (!existsSync(file)) return undefined;
  const r = JSON.parse(readFileSync(file, 'utf8')) as Recorded;
  if (alive(r.daemonPid)) return r;
  rmSync(file, { force: true });
  return undefined;
}

/** The programs of the record that do not run now: exited (the daemon starts them again) or between its updates. */
const downIn = (r: Recorded): string[] => [
  ...new Set([
    ...(r.restarting ?? []),
    ...Object.entries(r.pids)
      .filter(([, pid]) => !alive(pid))
      .map(([name]) => name),
  ]),
];

function describe(r: Recorded): string[] {
  const pid = (name: string) => {
    const p = r.pids[name];
    return p !== undefined && alive(p) ? `pid ${p}` : 'down: the daemon is starting it again';
  };
  return [
    `Temporal ${r.versions.temporalServer}: ${r.address}, namespace ${r.namespace} (${pid('temporal-server')})`,
    `PostgreSQL ${r.versions.postgresMajor}: ${r.postgres.address} as ${r.postgres.user}, data ${r.postgres.dataDir} (${pid('postgres')}); schemas ${r.schemas.map((s) => `${s.database} ${s.to}`).join(', ')}`,
    r.uiUrl ? `Temporal UI ${r.versions.temporalUi}: ${r.uiUrl} (${pid('temporal-ui')})` : 'Temporal UI: not started (--no-ui)',
    `logs in ${r.logs}; daemon pid ${r.daemonPid}; workers and the CLI: TEMPORAL_ADDRESS=${r.address}`,
  ];
}

async function up(
  stateDir: string,
  o: { freePorts: boolean; ports: Partial<StackPorts>; ui: boolean; whilePid?: number },
): Promise<number> {
  const running = recorded(stateDir);
  if (running) {
    const conflict = portConflict(running, o.ports);
    if (conflict) {
      console.error(`stack up: ${conflict} (stack down first to move it)`);
      return 2;
    }
    return upAgain(stateDir, running);
  }
  ensureStackTools({ ui: o.ui }); // builds or installs in the foreground, its progress on stderr
  mkdirSync(join(stateDir, 'logs'), { recursive: true });
  const ports = { ...(o.freePorts ? await freeStackPorts() : DEFAULT_PORTS), ...o.ports };
  const logFile = join(stateDir, 'logs', 'daemon.log');
  const fd = openSync(logFile, 'a');
  const daemon = spawn(
    process.execPath,
    [DAEMON, stateDir, JSON.stringify(ports), o.ui ? 'ui' : 'no-ui', ...(o.whilePid ? [String(o.whilePid)] : [])],
    { detached: true, stdio: ['ignore', fd, fd] },
  );
  closeSync(fd);
  daemon.unref();
  const t0 = Date.now();
  for (;;) {
    const r = recorded(stateDir);
    if (r) {
      console.log([`up in ${((Date.now() - t0) / 1000).toFixed(1)} s:`, ...describe(r)].join('\n  '));
      return 0;
    }
    if (daemon.exitCode !== null || !alive(daemon.pid ?? -1)) {
      const tail = readFileSync(logFile, 'utf8').trim().split('\n').slice(-3).join(' | ');
      console.error(`stack up failed: ${tail} (${logFile})`);
      return 1;
    }
    await sleep(250);
  }
}

/** A port flag `up` was given that the running stack does not use, as one line naming the flag; undefined: none. */
function portConflict(running: Recorded, asked: Partial<StackPorts>): string | undefined {
  for (const [flag, key] of Object.entries(PORT_FLAGS)) {
    const want = asked[key];
    const has = running.ports?.[key];
    if (want !== undefined && has !== undefined && want !== has) return `--${flag} ${want}: the running stack uses ${has}`;
  }
  return undefined;
}

/** How long `up` waits for the daemon to start again what is down (PostgreSQL's recovery, the server's start). */
const RESTART_WAIT_MS = 120_000;

/**
 * `up` on a running stack: what is down (exited, or waiting out its backoff) is started now by the
 * daemon (SIGUSR2), and `up` returns once every program runs again, as a first `up` does.
 */
async function upAgain(stateDir: string, running: Recorded): Promise<number> {
  const down = downIn(running);
  if (down.length === 0) {
    console.log(['already running:', ...describe(running)].join('\n  '));
    return 0;
  }
  process.kill(running.daemonPid, 'SIGUSR2');
  const deadline = Date.now() + RESTART_WAIT_MS;
  for (;;) {
    await sleep(250);
    const r = recorded(stateDir);
    if (!r) {
      console.error(`stack up: the daemon (pid ${running.daemonPid}) ended while starting ${down.join(', ')} again`);
      return 1;
    }
    const still = downIn(r);
    if (still.length === 0) {
      console.log([`started ${down.join(', ')} again:`, ...describe(r)].join('\n  '));
      return 0;
    }
    if (Date.now() > deadline) {
      const log = join(stateDir, 'logs', 'daemon.log');
      const tail = readFileSync(log, 'utf8').trim().split('\n').slice(-3).join(' | ');
      console.error(`stack up: ${still.join(', ')} still down after ${RESTART_WAIT_MS / 1000} s: ${tail} (${log})`);
      return 1;
    }
  }
}

async function down(stateDir: string): Promise<number> {
  const r = recorded(stateDir);
  if (!r) {
    console.log(`stack: not running (${stateDir})`);
    return 0;
  }
  // What runs now (the daemon's replacements included): what down stops, and says it stopped.
  const runningNow = Object.entries(r.pids).filter(([, pid]) => alive(pid));
  const notRunning = Object.keys(r.pids)
    .filter((name) => !runningNow.some(([n]) => n === name))
    .concat((r.restarting ?? []).filter((name) => !(name in r.pids)));
  process.kill(r.daemonPid, 'SIGTERM');
  const deadline = Date.now() + 90_000;
  while (alive(r.daemonPid)) {
    if (Date.now() > deadline) {
      console.error(`stack down: the daemon (pid ${r.daemonPid}) did not stop within 90 s`);
      return 1;
    }
    await sleep(200);
  }
  const left = runningNow.filter(([, pid]) => alive(pid)).map(([name, pid]) => `${name} (pid ${pid})`);
  if (left.length > 0) {
    console.error(`stack down: still running: ${left.join(', ')}`);
    return 1;
  }
  const stopped = runningNow.map(([name, pid]) => `${name} (pid ${pid})`);
  const gone = notRunning.length ? `; ${[...new Set(notRunning)].join(', ')} had already exited` : '';
  console.log(`stack: stopped ${['the daemon', ...stopped].join(', ')}${gone} (data kept in ${stateDir})`);
  return 0;
}

async function status(stateDir: string): Promise<number> {
  const r = recorded(stateDir);
  if (!r) {
    console.log(`stack: not running (${stateDir})`);
    return 1;
  }
  const down = downIn(r);
  console.log(
    [down.length ? `running, but ${down.join(', ')} exited (the daemon starts it again):` : 'running:', ...describe(r)].join('\n  '),
  );
  return down.length ? 1 : 0;
}

async function main(argv: string[]): Promise<number> {
  let parsed;
  try {
    parsed = parseArgs({
      args: argv,
      allowPositionals: true,
      options: {
        'state-dir': { type: 'string' },
        'free-ports': { type: 'boolean' },
        'no-ui': { type: 'boolean' },
        'while-pid': { type: 'string' },
        help: { type: 'boolean', short: 'h' },
        ...Object.fromEntries(Object.keys(PORT_FLAGS).map((f) => [f, { type: 'string' as const }])),
      },
    });
  } catch (err) {
    console.error(`stack: ${(err as Error).message}; ${USAGE}`);
    return 2;
  }
  if (parsed.values.help) {
    console.log(HELP);
    return 0;
  }
  const ports: Partial<StackPorts> = {};
  for (const [flag, key] of Object.entries(PORT_FLAGS)) {
    const value = (parsed.values as Record<string, unknown>)[flag];
    if (value === undefined) continue;
    if (typeof value !== 'string' || !/^[1-9]\d{0,4}$/.test(value) || Number(value) > 65535) {
      console.error(`stack: --${flag} must be a port (1-65535), got ${JSON.stringify(value)}`);
      return 2;
    }
    ports[key] = Number(value);
  }
  const [command, ...extra] = parsed.positionals;
  const stateDir = resolve(parsed.values['state-dir'] ?? '.skewless/stack');
  if (extra.length > 0 || !command) {
    console.error(`stack: ${command ? `unexpected ${extra.join(' ')}` : 'no command'}; ${USAGE}`);
    return 2;
  }
  const whilePid = parsed.values['while-pid'];
  if (whilePid !== undefined && !/^[1-9]\d*$/.test(whilePid)) {
    console.error(`stack: --while-pid must be a process id, got ${JSON.stringify(whilePid)}`);
    return 2;
  }
  if (command === 'up')
    return up(stateDir, {
      freePorts: parsed.values['free-ports'] ?? false,
      ports,
      ui: !parsed.values['no-ui'],
      ...(whilePid ? { whilePid: Number(whilePid) } : {}),
    });
  if (command === 'down') return down(stateDir);
  if (command === 'status') return status(stateDir);
  console.error(`stack: unknown command ${command}; ${USAGE}`);
  return 2;
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (err: unknown) => {
    console.error(`stack: ${(err as Error).message}`);
    process.exit(1);
  },
);
