import { spawn } from 'node:child_process';
import { closeSync, existsSync, mkdirSync, openSync, readFileSync, rmSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { DEFAULT_PORTS, STACK_FILE, freeStackPorts, type StackInfo } from './stack.js';
import { ensureStackTools } from './stack-tools.js';

/**
 * `npm run stack -- up|down|status [--state-dir DIR] [--free-ports] [--no-ui] [--while-pid PID]`: the production shape
 * (PostgreSQL, the Temporal server on it, the UI) on this machine without Docker; docs/deployment.md,
 * "Running without Docker". `up` returns once everything answers; the programs run on under a daemon
 * process until `down` (or until the process `--while-pid` names ends: a test, a CI job).
 */

const USAGE = 'usage: npm run stack -- up|down|status [--state-dir DIR] [--free-ports] [--no-ui] [--while-pid PID]';
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

function describe(r: Recorded): string[] {
  return [
    `Temporal ${r.versions.temporalServer}: ${r.address}, namespace ${r.namespace} (pid ${r.pids['temporal-server']})`,
    `PostgreSQL ${r.versions.postgresMajor}: ${r.postgres.address} as ${r.postgres.user}, data ${r.postgres.dataDir} (pid ${r.pids.postgres}); schemas ${r.schemas.map((s) => `${s.database} ${s.to}`).join(', ')}`,
    r.uiUrl ? `Temporal UI ${r.versions.temporalUi}: ${r.uiUrl} (pid ${r.pids['temporal-ui']})` : 'Temporal UI: not started (--no-ui)',
    `logs in ${r.logs}; daemon pid ${r.daemonPid}; workers and the CLI: TEMPORAL_ADDRESS=${r.address}`,
  ];
}

async function up(stateDir: string, o: { freePorts: boolean; ui: boolean; whilePid?: number }): Promise<number> {
  const running = recorded(stateDir);
  if (running) {
    console.log(['already running:', ...describe(running)].join('\n  '));
    return 0;
  }
  ensureStackTools({ ui: o.ui }); // builds or installs in the foreground, its progress on stderr
  mkdirSync(join(stateDir, 'logs'), { recursive: true });
  const ports = o.freePorts ? await freeStackPorts() : DEFAULT_PORTS;
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

async function down(stateDir: string): Promise<number> {
  const r = recorded(stateDir);
  if (!r) {
    console.log(`stack: not running (${stateDir})`);
    return 0;
  }
  process.kill(r.daemonPid, 'SIGTERM');
  const deadline = Date.now() + 90_000;
  while (alive(r.daemonPid)) {
    if (Date.now() > deadline) {
      console.error(`stack down: the daemon (pid ${r.daemonPid}) did not stop within 90 s`);
      return 1;
    }
    await sleep(200);
  }
  const left = Object.entries(r.pids)
    .filter(([, pid]) => alive(pid))
    .map(([name, pid]) => `${name} (pid ${pid})`);
  if (left.length > 0) {
    console.error(`stack down: still running: ${left.join(', ')}`);
    return 1;
  }
  console.log(`stack: stopped ${Object.keys(r.pids).join(', ')} (data kept in ${stateDir})`);
  return 0;
}

async function status(stateDir: string): Promise<number> {
  const r = recorded(stateDir);
  if (!r) {
    console.log(`stack: not running (${stateDir})`);
    return 1;
  }
  const down = Object.entries(r.pids)
    .filter(([, pid]) => !alive(pid))
    .map(([name]) => name);
  console.log([down.length ? `running, but ${down.join(', ')} exited:` : 'running:', ...describe(r)].join('\n  '));
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
      },
    });
  } catch (err) {
    console.error(`stack: ${(err as Error).message}; ${USAGE}`);
    return 2;
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
