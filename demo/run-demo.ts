import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { Client, WorkflowFailedError, type WorkflowHandle } from '@temporalio/client';
import { parse as parseYaml, stringify as stringifyYaml } from 'yaml';
import {
  formatAvailability,
  startAvailabilitySampler,
  type AvailabilityReport,
  type AvailabilitySampler,
} from '../sim/availability-sampler.js';
import { ensureSimBinaries } from '../sim/cluster/binaries.js';
import { readDescription, type SimDescription } from '../sim/description.js';
import { startSimulation, type Simulation } from '../sim/simulation.js';
import { temporalConfig } from '../worker/config.js';
import { statusQuery, type UpgradeStatus } from '../workflows/rollout-messages.js';
import { DemoError } from './demo-error.js';
import { startOperator, type Operator } from './operator.js';
import { ProcessRegistry, type Started } from './processes.js';
import { formatDuration, nodeTable, uiLink, type NodeRow } from './summary.js';
import { ensureTemporal, type DemoTemporal } from './temporal-server.js';
import { upgradeWorkflowId } from '../contracts/workflow-ids.js';
import type { ReadinessFinding } from '../rules/readiness/finding.js';

/**
 * The main job (`npm run demo`): on the Temporal dev server (reused if one answers, else started),
 * a simulated 3 + 5 node cluster at 1.32 is upgraded to 1.34 by the real `skewless upgrade`
 * (watched live) and a real worker, while the demo plays the operator (gates, a blocked drain) and
 * samples workload availability. Ends with a summary; everything it started is stopped on exit,
 * on SIGINT/SIGTERM/SIGHUP, and when its output goes away (`npm run demo | head`).
 *
 * Exit status: 0 upgraded with no PodDisruptionBudget violated; 1 otherwise; 128+N when interrupted.
 */

const repoRoot = fileURLToPath(new URL('../../', import.meta.url));
const CLI = join(repoRoot, 'bin', 'skewless.js');
const MARKER = '.skewless-demo';
/**
 * How long a drain waits for evictions before reporting the node blocked (the worker's cluster
 * config). Short, so that the blocked drain shows up soon; a production cluster wants more than two
 * minutes (see docs/configuration.md: a StatefulSet's replacement pod counts as healthy only 2 min after an
 * eviction), and the demo's operator waits that case out before it retries.
 */
const DRAIN_TIMEOUT_SECONDS = 15;

const help = `Usage: npm run demo [-- --address HOST:PORT] [--ui-port N] [--state-dir DIR]

Upgrades a simulated 3-control-plane, 5-worker cluster from 1.32 to 1.34 with the real skewless CLI,
worker and Temporal, acting as the operator, and prints a summary.
  --address    Temporal to use (default TEMPORAL_ADDRESS or 127.0.0.1:7233); reused if it answers,
               else a dev server is started there and stopped at the end
  --ui-port    the started dev server's UI port (default: the Temporal port + 1000)
  --state-dir  where the run keeps its state and logs (default SKEWLESS_DEMO_DIR or .skewless/demo,
               emptied at the start of each run)`;

// ---- output that survives its reader going away -------------------------------------------
const gone = new Set<NodeJS.WriteStream>();
const say = (line: string) => {
  if (!gone.has(process.stdout)) process.stdout.write(`${line}\n`);
};
const sayErr = (line: string) => {
  if (!gone.has(process.stderr)) process.stderr.write(`${line}\n`);
};

// ---- interruption --------------------------------------------------------------------------
class Interrupted extends Error {
  override name = 'Interrupted';
  constructor(
    readonly reason: string,
    readonly exitCode: number,
  ) {
    super(`interrupted (${reason})`);
  }
}
const interruption = new AbortController();
let interruptedAt = 0;
let forceExit: (() => void) | undefined;
function interrupt(reason: string, exitCode: number): void {
  if (interruption.signal.aborted) {
    // A second interrupt a moment later (npm forwards the terminal's SIGINT as well) is the same one;
    // a later one means "now": kill what is left without waiting.
    if (Date.now() - interruptedAt > 2000) forceExit?.();
    return;
  }
  interruptedAt = Date.now();
  sayErr(`\n[demo] ${reason}: stopping everything the demo started`);
  interruption.abort(new Interrupted(reason, exitCode));
}
const aborted = new Promise<never>((_, reject) =>
  interruption.signal.addEventListener('abort', () => reject(interruption.signal.reason as Error), { once: true }),
);
aborted.catch(() => undefined);
/** Waits for `p` unless the demo is interrupted first. */
const race = <T>(p: Promise<T>): Promise<T> => Promise.race([p, aborted]);

// Not SIGPIPE: Node ignores it, and a handler would make every write to ANY closed socket or pipe (the
// simulation's load balancer in front of an apiserver restarting mid-hop) look like a reader gone away.
// A reader of our own output that goes away is the EPIPE below.
for (const [signal, code] of [
  ['SIGINT', 130],
  ['SIGTERM', 143],
  ['SIGHUP', 129],
] as const) {
  process.on(signal, () => interrupt(signal, code));
}
for (const stream of [process.stdout, process.stderr]) {
  stream.on('error', (err: NodeJS.ErrnoException) => {
    gone.add(stream); // its reader is gone (EPIPE): write nothing more there, and tear down
    interrupt(err.code ?? 'output error', 141);
  });
}

const withTimeout = <T>(p: Promise<T>, ms: number, what: string): Promise<T | undefined> =>
  Promise.race([
    p,
    new Promise<undefined>((r) =>
      setTimeout(() => {
        sayErr(`[demo] ${what} did not finish within ${ms / 1000} s`);
        r(undefined);
      }, ms).unref(),
    ),
  ]);

// ---- the run --------------------------------------------------------------------------------
interface Resources {
  registry?: ProcessRegistry;
  temporal?: DemoTemporal;
  worker?: Started;
  upgrade?: Started;
  simStarting?: Promise<Simulation>;
  sim?: Simulation;
  sampler?: AvailabilitySampler;
  operator?: Operator;
  client?: Client;
  workflowStarted?: boolean;
}

function prepareStateDir(dir: string): void {
  if (existsSync(dir) && readdirSync(dir).length > 0 && !existsSync(join(dir, MARKER))) {
    throw new DemoError(`refusing to empty ${dir}: it is not a demo state folder (no ${MARKER} in it)`);
  }
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(join(dir, 'logs'), { recursive: true });
  writeFileSync(join(dir, MARKER), 'state of `npm run demo`; emptied at the start of each run\n');
}

const kubeletOf = async (sim: Simulation) =>
  Object.fromEntries(
    (await sim.kube.core.listNode()).items.map((n) => [n.metadata?.name ?? '?', n.status?.nodeInfo?.kubeletVersion ?? '?']),
  );

interface DemoOptions {
  address: string;
  namespace: string;
  uiPort?: number;
  stateDir: string;
}

/** The command line's options, or 'help'; a bad one is a DemoError (exit 2). */
function parseDemoOptions(): DemoOptions | 'help' {
  let values;
  try {
    ({ values } = parseArgs({
      options: {
        address: { type: 'string' },
        'ui-port': { type: 'string' },
        'state-dir': { type: 'string' },
        help: { type: 'boolean', short: 'h' },
      },
    }));
  } catch (err) {
    throw new DemoError(`${(err as Error).message.split('\n')[0]} (see --help)`, 2);
  }
  if (values['ui-port'] !== undefined && !/^\d{1,5}$/.test(values['ui-port']))
    throw new DemoError(`--ui-port must be a port number, got ${JSON.stringify(values['ui-port'])}`, 2);
  if (values.help) return 'help';
  const config = temporalConfig();
  return {
    address: values.address ?? config.address,
    namespace: config.namespace,
    ...(values['ui-port'] ? { uiPort: Number(values['ui-port']) } : {}),
    stateDir: resolve(values['state-dir'] ?? process.env.SKEWLESS_DEMO_DIR ?? join(repoRoot, '.skewless', 'demo')),
  };
}

/** The registry of every process the demo starts, killed whatever way the process leaves (a second interrupt: at once). */
function startRegistry(r: Resources, stateDir: string): ProcessRegistry {
  const registry = (r.registry = new ProcessRegistry(join(stateDir, 'pids.json')));
  process.on('exit', () => registry.killAllNow()); // whatever path the process leaves by
  forceExit = () => {
    sayErr('[demo] second interrupt: killing what is left');
    registry.killAllNow();
    process.exit(137);
  };
  return registry;
}

/** Temporal and the simulated cluster, brought up side by side; the simulation's processes and ports recorded. */
async function startServices(
  r: Resources,
  o: DemoOptions,
  description: SimDescription,
  registry: ProcessRegistry,
): Promise<{ temporal: DemoTemporal; sim: Simulation }> {
  // Binaries first: building them (first run only) blocks, and nothing of ours is running yet.
  const binaries = ensureSimBinaries();
  say(
    `[demo] starting the simulated cluster "${description.name}": ${description.nodes.length} nodes at ${description.version}, repository ${description.nodes[0]?.repository.join(', ')}`,
  );
  r.simStarting = startSimulation(description, { stateDir: join(o.stateDir, 'sim'), binaries });
  r.simStarting.catch(() => undefined); // awaited below, or by the teardown
  const temporal = (r.temporal = await race(
    ensureTemporal({
      address: o.address,
      namespace: o.namespace,
      ...(o.uiPort !== undefined ? { uiPort: o.uiPort } : {}),
      stateDir: o.stateDir,
      registry,
      say,
      signal: interruption.signal,
    }),
  ));
  const sim = (r.sim = await race(r.simStarting));
  recordSimulation(registry, sim);
  return { temporal, sim };
}

function recordSimulation(registry: ProcessRegistry, sim: Simulation): void {
  for (const [name, p] of Object.entries(sim.controlPlane.running())) if (p.pid) registry.record(`sim-${name}`, p.pid);
  registry.recordPort('kube-apiserver', Number(new URL(sim.server).port));
  registry.recordPort('etcd', Number(new URL(sim.etcdEndpoint).port));
  // A per-node world's other etcd members: one per control plane.
  const cp = sim.controlPlane;
  if (cp.mode === 'per-node')
    for (const n of cp.etcdMembers.nodes) registry.recordPort(`etcd-${n}`, Number(new URL(cp.etcdMembers.clientUrl(n)).port));
  for (const h of sim.endpoints.ssh.hosts) registry.recordPort(`ssh-${h.name}`, h.port);
}

/** A drain that cannot finish reports "blocked" after DRAIN_TIMEOUT_SECONDS (the simulation's default is 60 s). */
function shortenDrainTimeout(configFile: string): void {
  const clusterConfig = parseYaml(readFileSync(configFile, 'utf8')) as { drain?: Record<string, unknown> };
  clusterConfig.drain = { ...clusterConfig.drain, timeoutSeconds: DRAIN_TIMEOUT_SECONDS };
  writeFileSync(configFile, stringifyYaml(clusterConfig));
}

function sayClusterUp(sim: Simulation, description: SimDescription): void {
  say(
    `[demo] cluster up: API ${sim.server}, ${sim.endpoints.ssh.hosts.length} SSH hosts; control plane ${sim.controlPlane.mode}: ${Object.entries(
      sim.controlPlane.running(),
    )
      .map(([n, p]) => `${n} pid ${p.pid}`)
      .join(', ')}`,
  );
  for (const w of description.workloads) {
    const pdb = w.pdb
      ? `, PDB ${Object.entries(w.pdb)
          .map(([k, v]) => `${k} ${v}`)
          .join('')}`
      : '';
    say(`[demo]   ${w.kind} ${w.namespace}/${w.name}${w.kind === 'DaemonSet' ? '' : ` × ${w.replicas}`}${pdb}`);
  }
}

/**
 * The worker: the only process holding the cluster's credentials (the simulation wrote its <cluster>.yaml).
 * Resolves once it polls, with `died`: a promise that rejects if it exits (wrapped, or awaiting the start would wait for that).
 */
async function startWorker(
  r: Resources,
  registry: ProcessRegistry,
  o: { clustersDir: string; taskQueue: string; stateDir: string; env: NodeJS.ProcessEnv },
): Promise<{ died: Promise<never> }> {
  let workerReady!: () => void;
  const ready = new Promise<void>((res) => (workerReady = res));
  const workerArgs = ['worker', '--clusters-dir', o.clustersDir, '--task-queue', o.taskQueue];
  const worker = (r.worker = registry.spawn('worker', process.execPath, [CLI, ...workerArgs], {
    env: o.env,
    logFile: join(o.stateDir, 'logs', 'worker.log'),
    onErrLine: (line) => line.startsWith('skewless worker: task queue') && workerReady(),
  }));
  say(`[demo] started the worker (pid ${worker.pid}): skewless ${workerArgs.join(' ')}`);
  const workerDied = worker.exited.then((code) => {
    throw new DemoError(`the worker exited (status ${code}); see ${join(o.stateDir, 'logs', 'worker.log')}`);
  });
  workerDied.catch(() => undefined);
  await race(Promise.race([ready, workerDied]));
  say(
    `[demo] worker polling; all processes: ${Object.entries(registry.pids)
      .map(([n, p]) => `${n} ${p}`)
      .join(', ')}`,
  );
  return { died: workerDied };
}

async function terminateEarlierRun(handle: WorkflowHandle, workflowId: string): Promise<void> {
  const previous = await handle.describe().catch(() => undefined);
  if (previous?.status.name === 'RUNNING') {
    say(`[demo] ${workflowId} from an earlier demo is still running on this server: terminating it`);
    await handle.terminate('superseded by a new demo run');
  }
}

type Skewless = (args: string[], onLine: (line: string) => void) => Started;

/** The operator's `skewless upgrade`: the budgets the pre-flight audit flags and etcd's readiness hold acknowledged. */
async function upgradeArguments(description: SimDescription, skewless: Skewless, workerDied: Promise<never>): Promise<string[]> {
  // The operator's acknowledgement of the budget the pre-flight audit flags (it is resolved when it blocks).
  const blocking = description.workloads
    .filter((w) => w.pdb?.minAvailable !== undefined && Number(w.pdb.minAvailable) >= w.replicas)
    .map((w) => `${w.namespace}/${w.name}`);
  const upgradeArgs = [
    'upgrade',
    '--cluster',
    description.name,
    '--to',
    '1.34',
    '--canary',
    '1',
    '--batch-size',
    '2',
    '--max-unavailable',
    '2',
    '--approve-workers',
    '--approve-canary',
    ...blocking.flatMap((b) => ['--acknowledge', b]),
    ...(await acknowledgeSimulatedEtcd(skewless, description.name, say, () => race(workerDied))),
  ];
  for (const b of blocking)
    say(
      `[operator] pre-flight will flag PodDisruptionBudget ${b} (it allows no eviction): acknowledged, to be handled when its drain blocks`,
    );
  return upgradeArgs;
}

/** The workflow's final status, and its failure's message if it failed. */
async function finalStatus(handle: WorkflowHandle): Promise<{ status: UpgradeStatus; failure?: string }> {
  try {
    return { status: (await handle.result()) as UpgradeStatus };
  } catch (err) {
    const failure = err instanceof WorkflowFailedError ? (err.cause?.message ?? err.message) : (err as Error).message;
    return { status: await handle.query(statusQuery), failure };
  }
}

/** A row per node: from what the workflow found to what the cluster reports now (the workflow's own claim is cross-checked). */
function nodeRows(
  before: Record<string, string>,
  after: Record<string, string>,
  status: UpgradeStatus,
  description: SimDescription,
  operator: Operator,
): NodeRow[] {
  return Object.keys(before)
    .sort((a, b) => a.localeCompare(b, 'en', { numeric: true }))
    .map((name) => {
      const n = status.nodes[name];
      const role = description.nodes.find((d) => d.name === name)?.role ?? '?';
      const from = n?.from ? `v${n.from}` : (before[name] ?? '?');
      const to = after[name] ?? '?';
      const note = [
        operator.blocked[name],
        n?.version && `v${n.version}` !== to ? `workflow says v${n.version}` : undefined,
        status.skipped?.includes(name) ? 'skipped' : undefined,
        n && n.phase !== 'done' ? n.phase : undefined,
      ]
        .filter(Boolean)
        .join('; ');
      return {
        node: name,
        role,
        from,
        to,
        ...(n?.drainSeconds !== undefined ? { drainSeconds: n.drainSeconds } : {}),
        ...(note ? { note } : {}),
      };
    });
}

interface Outcome {
  workflowId: string;
  runId: string;
  status: UpgradeStatus;
  failure?: string;
  cliCode: number | null;
  rows: NodeRow[];
  operator: Operator;
  report: AvailabilityReport;
  temporal: DemoTemporal;
  address: string;
  t0: number;
  upgradeMs: number;
}

/** Prints the summary; the demo's exit status: 0 upgraded with no budget violated. */
function printSummary(o: Outcome): number {
  const { status } = o;
  const target = status.hops.at(-1) ?? status.to;
  const notAtTarget = o.rows.filter((row) => row.to !== `v${target}`).map((row) => row.node);
  const upgraded = o.cliCode === 0 && !o.failure && status.phase === 'done' && notAtTarget.length === 0;
  say('');
  say(
    `== summary: ${o.workflowId} ${upgraded ? 'upgraded' : 'NOT upgraded'}: ${status.from} → ${status.hops.join(' → ')} (${status.outcome ?? o.failure ?? status.phase}) ==`,
  );
  say('');
  say(nodeTable(o.rows));
  say('');
  say('etcd snapshots:');
  for (const s of status.snapshots)
    say(`  before ${s.hop}: ${s.localPath} (${s.sizeBytes} bytes, revision ${s.revision}, sha256 ${s.sha256.slice(0, 16)}…)`);
  if (status.snapshots.length === 0) say('  none');
  say('operator actions:');
  for (const a of o.operator.actions) say(`  - ${a}`);
  say(
    `workload availability (${o.report.samples} samples, every 0.5 s): ${o.report.violated ? 'VIOLATED: a Deployment went below its PodDisruptionBudget' : 'OK: no PodDisruptionBudget went below its floor'}`,
  );
  for (const line of formatAvailability(o.report).split('\n')) say(`  ${line}`);
  const { temporal } = o;
  say(`Temporal UI: ${uiLink(temporal.uiUrl, temporal.namespace, o.workflowId, o.runId)}`);
  if (!temporal.reused)
    say(
      `  (the dev server stops with the demo; to browse this run later: node bin/skewless.js dev-server --db ${temporal.db}${o.address === '127.0.0.1:7233' ? '' : ` --port ${new URL(`http://${o.address}`).port}`})`,
    );
  say(`wall time: ${formatDuration(Date.now() - o.t0)} (upgrade ${formatDuration(o.upgradeMs)})`);
  if (notAtTarget.length) say(`[demo] not at v${target}: ${notAtTarget.join(', ')}`);
  return upgraded && !o.report.violated ? 0 : 1;
}

async function run(r: Resources, t0: number): Promise<number> {
  const options = parseDemoOptions();
  if (options === 'help') {
    say(help);
    return 0;
  }
  const { stateDir } = options;
  prepareStateDir(stateDir);
  const registry = startRegistry(r, stateDir);
  const description = readDescription(join(repoRoot, 'demo', 'cluster.yaml'));
  const cluster = description.name;
  const workflowId = upgradeWorkflowId(cluster);
  const taskQueue = `skewless-demo-${process.pid}`;
  say(`[demo] state and logs in ${stateDir}`);

  const { temporal, sim } = await startServices(r, options, description, registry);
  const clustersDir = join(stateDir, 'sim', 'clusters');
  shortenDrainTimeout(join(clustersDir, `${cluster}.yaml`));
  sayClusterUp(sim, description);
  const env = {
    ...process.env,
    TEMPORAL_ADDRESS: temporal.address,
    TEMPORAL_NAMESPACE: temporal.namespace,
    SKEWLESS_TASK_QUEUE: taskQueue,
  };
  const { died: workerDied } = await startWorker(r, registry, { clustersDir, taskQueue, stateDir, env });

  const before = await kubeletOf(sim);
  r.client = new Client({ connection: temporal.connection, namespace: temporal.namespace });
  const handle = r.client.workflow.getHandle(workflowId);
  await terminateEarlierRun(handle, workflowId);

  r.sampler = startAvailabilitySampler(sim.kube, { intervalMs: 500 });
  const skewless: Skewless = (args, onLine) =>
    registry.spawn(`skewless-${args[0]}`, process.execPath, [CLI, ...args], { env, cwd: repoRoot, onLine, onErrLine: (l) => sayErr(l) });
  const upgradeArgs = await upgradeArguments(description, skewless, workerDied);
  say(`[operator] $ skewless ${upgradeArgs.join(' ')}`);
  const tUpgrade = Date.now();
  const upgrade = (r.upgrade = skewless(upgradeArgs, (line) => say(line)));
  r.workflowStarted = true;
  const operator = (r.operator = startOperator({
    client: r.client,
    workflowId,
    cluster,
    kube: sim.kube,
    say,
    skewless: (args) => skewless(args, (line) => say(`[operator]   ${line}`)).exited,
  }));
  const cliCode = await race(Promise.race([upgrade.exited, workerDied]));
  const upgradeMs = Date.now() - tUpgrade;
  await operator.stop();
  const report: AvailabilityReport = await r.sampler.stop();
  r.sampler = undefined;

  const { status, failure } = await finalStatus(handle);
  r.workflowStarted = false; // closed: nothing to terminate
  const runId = (await handle.describe()).runId;
  const rows = nodeRows(before, await kubeletOf(sim), status, description, operator);
  return printSummary({
    workflowId,
    runId,
    status,
    ...(failure !== undefined ? { failure } : {}),
    cliCode,
    rows,
    operator,
    report,
    temporal,
    address: options.address,
    t0,
    upgradeMs,
  });
}

/** Stops everything this run started, in dependency order; a reused Temporal server is left running. */
async function teardown(r: Resources, reason: string): Promise<void> {
  if (r.operator) await withTimeout(r.operator.stop(), 10_000, 'the operator');
  // Its report is not needed any more; a sample in flight may wait on an API that is going away.
  void r.sampler?.stop().catch(() => undefined);
  if (r.workflowStarted && r.client) {
    // Not left running on a reused server (nor in the history of our own, which can be served again).
    const handle = r.client.workflow.getHandle(upgradeWorkflowId(r.sim?.description.name ?? 'demo'));
    const outcome = await Promise.race([
      handle
        .describe()
        .then(async (d) => (d.status.name === 'RUNNING' ? (await handle.terminate(`demo stopped: ${reason}`), 'terminated') : 'closed'))
        .catch(() => 'unreachable'),
      new Promise<string>((res) => setTimeout(() => res('unreachable'), 3_000).unref()),
    ]);
    if (outcome === 'terminated') sayErr('[demo] terminated the running upgrade workflow');
    if (outcome === 'unreachable') sayErr('[demo] could not terminate the upgrade workflow (Temporal already stopping?)');
  }
  const registry = r.registry;
  if (registry && r.upgrade) await registry.stop(r.upgrade, 5_000);
  if (registry && r.worker) await registry.stop(r.worker, 10_000);
  const sim =
    r.sim ??
    (r.simStarting
      ? await withTimeout(
          r.simStarting.catch(() => undefined),
          15_000,
          'the simulation start',
        )
      : undefined);
  if (sim) {
    // A per-node control plane restarted its programs at each hop's release: record the ones running now too.
    if (registry)
      for (const [name, p] of Object.entries(sim.controlPlane.running())) if (p.pid) registry.record(`sim-${name}-at-end`, p.pid);
    await withTimeout(sim.stop(), 30_000, 'stopping the simulation');
  }
  await r.temporal?.connection.close().catch(() => undefined);
  if (registry && r.temporal?.server) await registry.stop(r.temporal.server, 10_000);
  registry?.killAllNow();
}

async function main(): Promise<void> {
  const t0 = Date.now();
  const r: Resources = {};
  let code = 1;
  let reason = 'finished';
  try {
    code = await run(r, t0);
  } catch (err) {
    if (err instanceof Interrupted) {
      code = err.exitCode;
      reason = err.reason;
    } else if (err instanceof DemoError) {
      sayErr(`[demo] ${err.message}`);
      code = err.exitCode;
      reason = 'failed';
    } else {
      sayErr(`[demo] failed: ${(err as Error).stack ?? String(err)}`);
      code = 1;
      reason = 'failed';
    }
  }
  if (interruption.signal.aborted) {
    const i = interruption.signal.reason as Interrupted;
    code = i.exitCode;
    reason = i.reason;
  }
  await teardown(r, reason);
  const stopped = r.registry ? Object.keys(r.registry.pids).length : 0;
  if (stopped > 0)
    sayErr(`[demo] stopped the ${stopped} process(es) it started${r.temporal?.reused ? '; the reused Temporal server keeps running' : ''}`);
  process.exit(code);
}

void main();

/**
 * What the readiness check holds (issue 21), read as an operator does, with `skewless plan --cluster`.
 * The only finding the operator lets go is etcd's version: kubeadm 1.32 writes etcd 3.5.24-0 in every
 * manifest, which etcd's guide says must reach 3.5.26 before kubeadm 1.34 moves it to 3.6 (3.5.24–3.5.26
 * fix upgrade blockers of clusters whose membership changed). The simulation's real 3.5.24 members never
 * changed, and etcd 3.6.5 joins them (sim/build/REAL-KUBEADM.md). Anything else that holds is left to
 * refuse the upgrade, as it would on a real cluster.
 */
async function acknowledgeSimulatedEtcd(
  skewless: Skewless,
  cluster: string,
  say: (line: string) => void,
  failFast: () => Promise<unknown>,
): Promise<string[]> {
  const lines: string[] = [];
  const plan = skewless(['plan', '--cluster', cluster, '--to', '1.34', '--output', 'json'], (line) => lines.push(line));
  await Promise.race([plan.exited, failFast()]);
  const readiness =
    (JSON.parse(lines.join('\n') || '{}') as { readiness?: { held?: string[]; findings?: ReadinessFinding[]; problems?: string[] } })
      .readiness ?? {};
  const held = readiness.held ?? [];
  // Every finding, as plan's readiness section lists it: what holds, and what is only a warning.
  for (const f of readiness.findings ?? [])
    say(
      `[operator] readiness: ${f.severity === 'hold' ? 'HOLD' : 'WARN'} ${f.check} before ${f.hop}${f.node ? ` on ${f.node}` : ''}: ${f.what}`,
    );
  for (const p of readiness.problems ?? []) say(`[operator] readiness: could not read: ${p}`);
  const etcd = held.filter((name) => name.startsWith('etcd-version:'));
  const reason = 'the 3.5.24 members never changed membership: the blockers 3.5.26 fixes do not apply';
  for (const name of held)
    say(`[operator] readiness holds ${name}${etcd.includes(name) ? `: acknowledged (${reason})` : ': left to refuse the upgrade'}`);
  if (etcd.length === 0) return [];
  return [...etcd.flatMap((name) => ['--acknowledge', name]), '--by', 'demo-operator', '--reason', reason];
}
