import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, openSync, readFileSync, realpathSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { DescriptionError, readDescription } from './description.js';
import type { SimulationEndpoints } from './simulation.js';

const daemonScript = fileURLToPath(new URL('./daemon.js', import.meta.url));

export const simHelp = `Usage: skewless-sim up FILE [--state DIR] [--timeout SECONDS]
       skewless-sim down [--state DIR]
       skewless-sim status [--state DIR]
       skewless-sim fault HOST --set JSON | --clear [--state DIR]
       skewless-sim machine create NAME --version VERSION [--labels K=V,...] [--pool POOL] [--state DIR]
       skewless-sim machine delete NAME [--state DIR]

Runs a simulated kubeadm cluster on loopback: a real etcd, kube-apiserver, controller-manager and
scheduler, kwok as the kubelets, and one SSH host per node. "up" returns once the cluster is in the
described state and prints its kubeconfig, the worker's cluster configuration
(<state>/clusters/NAME.yaml: "skewless worker --clusters-dir <state>/clusters") and the SSH endpoints;
"down" stops everything "up" started. The state directory (default .skewless/sim) keeps host state,
keys and logs between runs; <state>/hosts/<node>/commands.log has every command that host ran, one
JSON line each ({"time","command","exitCode","durationMs"}).
"machine" creates or deletes a machine while the simulation runs (blue/green node pools): a new SSH
host with kubeadm, kubelet and kubectl at VERSION and a Node with the labels, Ready; or the host
stopped and removed, and its Node deleted if still there. It talks to the simulation's machine API
(<state>/machine-api.json and its token file), so it works from a provisioning command hook.

A command fault matches by prefix, read as the host reads a command line (after sudo -n and
VAR=value), so a line copied from commands.log works as its "command"; one that can never match is
refused: a program the host does not have (apt for apt-get, dnf on a Debian host), or a command
skewless never sends (rules/host-command-forms.ts, and the cluster configuration's maintenance.command).
"status" lists the faults in effect.
Fault JSON: {"kind":"fail","command":"apt-get install","times":2} | {"kind":"refuse","seconds":30} |
            {"kind":"hang","command":"kubeadm upgrade apply"} | {"kind":"slow","command":"apt-get","ms":5000} |
            {"kind":"rebootDuring","command":"apt-get install"} | {"kind":"rotateHostKey"}`;

interface DaemonInfo extends SimulationEndpoints {
  pid: number;
  controlPort: number;
}

class SimUsageError extends Error {}

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

function readDaemon(stateDir: string): DaemonInfo | undefined {
  const file = join(stateDir, 'daemon.json');
  if (!existsSync(file)) return undefined;
  const info = JSON.parse(readFileSync(file, 'utf8')) as DaemonInfo;
  return alive(info.pid) ? info : undefined;
}

function printEndpoints(info: DaemonInfo, stateDir: string): void {
  console.log(`cluster ${info.cluster} is up`);
  console.log(`kubeconfig: ${info.adminKubeconfig} (admin; the worker's own identity: ${info.kubeconfig})`);
  // What someone trying skewless needs next: the worker reads the cluster by name from this directory.
  console.log(`cluster configuration: ${join(info.clustersDir, `${info.cluster}.yaml`)}`);
  console.log(
    `start a worker on it: skewless worker --clusters-dir ${info.clustersDir} (with a Temporal server running: skewless dev-server)`,
  );
  console.log(`ssh: user ${info.ssh.user}, key ${info.ssh.privateKeyPath}, known_hosts ${info.ssh.knownHostsPath}`);
  for (const h of info.ssh.hosts) console.log(`  ${h.name.padEnd(16)} ${h.host}:${h.port}`);
  console.log(`every command a host runs: ${join(stateDir, 'hosts', '<node>', 'commands.log')} (one JSON line each)`);
}

async function up(file: string, stateDir: string, timeoutSeconds: number): Promise<number> {
  readDescription(file); // validate before starting anything
  if (readDaemon(stateDir)) throw new SimUsageError(`a simulation is already running in ${stateDir}; run "skewless-sim down" first`);
  mkdirSync(stateDir, { recursive: true });
  const logFile = join(stateDir, 'daemon.log');
  const out = openSync(logFile, 'a');
  const child = spawn(process.execPath, [daemonScript, resolve(file), stateDir], { detached: true, stdio: ['ignore', out, out] });
  child.unref();
  const deadline = Date.now() + timeoutSeconds * 1000;
  while (Date.now() < deadline) {
    const info = readDaemon(stateDir);
    if (info) {
      printEndpoints(info, stateDir);
      await printFaults(info);
      return 0;
    }
    if (child.exitCode !== null || !alive(child.pid as number)) {
      throw new SimUsageError(`the simulation failed to start; see ${logFile}`);
    }
    await new Promise((r) => setTimeout(r, 250));
  }
  process.kill(child.pid as number, 'SIGTERM');
  throw new SimUsageError(`the simulation was not up after ${timeoutSeconds} s; stopped it; see ${logFile}`);
}

async function down(stateDir: string): Promise<number> {
  const file = join(stateDir, 'daemon.json');
  const info = existsSync(file) ? (JSON.parse(readFileSync(file, 'utf8')) as DaemonInfo) : undefined;
  if (!info || !alive(info.pid)) {
    console.log(`no simulation running in ${stateDir}`);
    return 0;
  }
  process.kill(info.pid, 'SIGTERM');
  const deadline = Date.now() + 60_000;
  while (alive(info.pid) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 200));
  if (alive(info.pid)) process.kill(info.pid, 'SIGKILL');
  console.log(`simulation ${info.cluster} stopped`);
  return 0;
}

async function fault(host: string, stateDir: string, set: string | undefined, clear: boolean): Promise<number> {
  const info = readDaemon(stateDir);
  if (!info) throw new SimUsageError(`no simulation running in ${stateDir}`);
  if (!set && !clear) throw new SimUsageError('give --set JSON or --clear');
  if (set) {
    try {
      JSON.parse(set);
    } catch {
      throw new SimUsageError('--set must be JSON');
    }
  }
  const res = await fetch(`http://127.0.0.1:${info.controlPort}/hosts/${encodeURIComponent(host)}/faults`, {
    method: set ? 'POST' : 'DELETE',
    ...(set ? { body: set } : {}),
  });
  if (!res.ok) throw new SimUsageError(await res.text());
  return 0;
}

/** `status`'s list of the faults in effect, per host (what `fault --set` or the description armed and has not used up). */
async function printFaults(info: DaemonInfo): Promise<void> {
  const res = await fetch(`http://127.0.0.1:${info.controlPort}/faults`);
  if (!res.ok) throw new SimRefused(`faults: HTTP ${res.status}: ${(await res.text()).split('\n')[0]}`);
  const byHost = (await res.json()) as Record<string, { fault: object; remaining?: number | null; secondsLeft?: number }[]>;
  const lines = Object.entries(byHost).flatMap(([host, faults]) =>
    faults.map((f) => {
      const left =
        f.secondsLeft !== undefined
          ? `${f.secondsLeft}s left`
          : f.remaining === null
            ? 'every run'
            : `${f.remaining} more run${f.remaining === 1 ? '' : 's'}`;
      return `  ${host}: ${JSON.stringify(f.fault)} (${left})`;
    }),
  );
  console.log(lines.length ? `faults in effect:\n${lines.join('\n')}` : 'faults in effect: none');
}

/** A refusal by the running simulation (exit 1), as opposed to a usage error (exit 2). */
class SimRefused extends Error {}

async function machine(
  action: string | undefined,
  name: string | undefined,
  stateDir: string,
  values: { version?: string; labels?: string; pool?: string },
): Promise<number> {
  if (action !== 'create' && action !== 'delete') throw new SimUsageError('machine needs create or delete');
  if (!name) throw new SimUsageError(`machine ${action} needs a NAME`);
  const labels: Record<string, string> = {};
  if (action === 'create') {
    if (!values.version) throw new SimUsageError('machine create needs --version');
    for (const term of (values.labels ?? '').split(',').filter((t) => t !== '')) {
      const eq = term.indexOf('=');
      if (eq <= 0) throw new SimUsageError(`--labels must be K=V,...; got ${JSON.stringify(term).slice(0, 60)}`);
      labels[term.slice(0, eq)] = term.slice(eq + 1);
    }
  } else if (values.version !== undefined || values.labels !== undefined)
    throw new SimUsageError('machine delete takes no --version or --labels');
  const file = join(stateDir, 'machine-api.json');
  if (!existsSync(file)) throw new SimUsageError(`no simulation running in ${stateDir} (no machine-api.json)`);
  const api = JSON.parse(readFileSync(file, 'utf8')) as { endpoint: string; tokenFile: string };
  const token = readFileSync(api.tokenFile, 'utf8').trim();
  let res: Response;
  try {
    res = await fetch(action === 'create' ? `${api.endpoint}/machines` : `${api.endpoint}/machines/${encodeURIComponent(name)}`, {
      method: action === 'create' ? 'POST' : 'DELETE',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      ...(action === 'create'
        ? { body: JSON.stringify({ name, version: values.version, labels, ...(values.pool ? { pool: values.pool } : {}) }) }
        : {}),
    });
  } catch (err) {
    throw new SimRefused(
      `the machine API at ${api.endpoint} did not answer: ${(err as { cause?: { code?: string } }).cause?.code ?? (err as Error).message}`,
    );
  }
  const text = await res.text();
  if (!res.ok) throw new SimRefused(`machine ${action} ${name}: HTTP ${res.status}: ${text.split('\n')[0]}`);
  const body = JSON.parse(text) as { created?: boolean; port?: number; deleted?: boolean };
  if (action === 'create') console.log(`machine ${name} ${body.created ? 'created' : 'already there'}: ssh 127.0.0.1:${body.port}`);
  else console.log(body.deleted ? `machine ${name} deleted` : `machine ${name} was not there`);
  return 0;
}

export async function simMain(argv: string[]): Promise<number> {
  try {
    const { values, positionals } = parseArgs({
      args: argv,
      allowPositionals: true,
      options: {
        state: { type: 'string' },
        timeout: { type: 'string' },
        set: { type: 'string' },
        clear: { type: 'boolean' },
        help: { type: 'boolean', short: 'h' },
        version: { type: 'string' },
        labels: { type: 'string' },
        pool: { type: 'string' },
      },
    });
    const [command, arg, third] = positionals;
    if (values.help || !command) {
      console.log(simHelp);
      return command || values.help ? 0 : 2;
    }
    const stateDir = resolve(values.state ?? '.skewless/sim');
    if (command === 'up') {
      if (!arg) throw new SimUsageError('up needs a description FILE');
      const timeout = values.timeout === undefined ? 900 : Number(values.timeout);
      if (!Number.isInteger(timeout) || timeout < 1) throw new SimUsageError('--timeout must be a positive number of seconds');
      return await up(arg, stateDir, timeout);
    }
    if (command === 'down') return await down(stateDir);
    if (command === 'status') {
      const info = readDaemon(stateDir);
      if (!info) {
        console.log(`no simulation running in ${stateDir}`);
        return 1;
      }
      printEndpoints(info, stateDir);
      await printFaults(info);
      return 0;
    }
    if (command === 'fault') {
      if (!arg) throw new SimUsageError('fault needs a HOST');
      return await fault(arg, stateDir, values.set, values.clear ?? false);
    }
    if (command === 'machine') return await machine(arg, third, stateDir, values);
    throw new SimUsageError(`unknown command "${command}"`);
  } catch (err) {
    if (err instanceof SimRefused) {
      console.error(`skewless-sim: ${err.message.split('\n')[0]}`);
      return 1;
    }
    if (err instanceof SimUsageError || err instanceof DescriptionError || (err as { code?: string }).code?.startsWith('ERR_PARSE_ARGS')) {
      console.error(`skewless-sim: ${(err as Error).message.split('\n')[0]}`);
      return 2;
    }
    throw err;
  }
}

// `node dist/sim/cli.js ...` runs it too (bin/skewless-sim.js is the installed form).
if (process.argv[1] && realpathSync(process.argv[1]) === fileURLToPath(import.meta.url)) {
  simMain(process.argv.slice(2)).then(
    (code) => (process.exitCode = code),
    (err: unknown) => {
      console.error(err);
      process.exitCode = 1;
    },
  );
}
