import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { startAvailabilitySampler, type AvailabilitySampler } from '../../sim/availability-sampler.js';
import { parseDescription } from '../../sim/description.js';
import { freePort } from '../../tooling/free-port.js';
import { startSimulation, type Simulation } from '../../sim/simulation.js';
import { treeMemory, type TreeMemory } from '../../stack/memory.js';
import { freeStackPorts, startStack, type RunningStack } from '../../stack/stack.js';
import { clusterUpgradeWorkflow } from '../../workflows/cluster-upgrade-workflow.js';
import type { UpgradeStatus } from '../../workflows/rollout-messages.js';
import { FAULT_POLICY } from '../faults/fault-lab.js';
import { DevServerProcess, WorkerProcess } from '../faults/fault-processes.js';
import { checkUpgradeOutcome } from '../faults/final-checks.js';
import { outcomeOf } from '../faults/harness.js';
import { pendingActivities, podsLeftOn, trackCommands, type CommandTracker, type RunningCommand } from '../faults/in-flight.js';
import { TARGET_COMMAND } from '../faults/kill-schedule.js';
import { archiveHistories, archiveLabel, recordWorldSecrets } from '../helpers/history-archive.js';
import { drainAttempts, type DrainAttempt } from './drain-attempts.js';
import { upgradeWorkflowId } from '../../contracts/workflow-ids.js';

/**
 * One upgrade of a simulated cluster (3 control planes, 4 workers, PDBs; the shared control-plane
 * layout) by two `skewless worker` processes on one task queue, on the stack (PostgreSQL and the
 * Temporal server from stack/) or on the dev server, and with `faults`, on the stack: the Temporal server
 * SIGKILLed and restarted as hop 1's workers install their packages, PostgreSQL shut down at once (no
 * checkpoint: WAL recovery) and restarted as hop 2 begins, then the worker running hop 2's first drain
 * SIGKILLed for good (the other carries on; hop 1 ran on both). Then the fault harness's final checks.
 */

export const STACK_LAB = `
name: stackfail
version: 1.32.4
repository: [1.32.4, 1.33.0, 1.33.7, 1.34.0, 1.34.2]
rebootSeconds: 1
latencies: {aptInstall: 1500, kubeletRestart: 1500, kubeadmApply: 8000, kubeadmNode: 1000}
nodes:
  - {name: cp, role: control-plane, count: 3}
  - {name: worker, role: worker, count: 4}
workloads:
  - {kind: Deployment, name: web, replicas: 4, pdb: {minAvailable: 3}}
  - {kind: Deployment, name: api, replicas: 3, pdb: {maxUnavailable: 1}}
  - {kind: DaemonSet, name: node-exporter, namespace: monitoring}
`;
export const STACK_HOPS = ['1.33.7', '1.34.2'];

export interface StackUpgradeOptions {
  temporal: 'stack' | 'dev';
  faults: boolean;
  log?: (line: string) => void;
  timeoutMs?: number;
}

export interface FaultRecord {
  what: 'worker-kill' | 'server-restart' | 'postgres-restart';
  atMs: number;
  /** The same moment as a wall-clock time, to compare with the drains' history times. */
  atEpochMs: number;
  /** What was in flight: the command that triggered it, and for a kill the activity of the killed worker. */
  during: string;
  outageMs: number;
}

export interface StackUpgradeReport {
  problems: string[];
  faults: FaultRecord[];
  status?: UpgradeStatus;
  /** The Temporal side ready (stack or dev server), the upgrade alone, the whole run. */
  temporalStartMs: number;
  upgradeMs: number;
  wallMs: number;
  /** The stack's programs as the upgrade ends (stack only). */
  memory?: Record<string, TreeMemory>;
  /** Every drainNode attempt: which worker, when. */
  drains: DrainAttempt[];
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The Temporal side of the run: its address and how to restart its parts. */
interface Temporal {
  address: string;
  stack?: RunningStack;
  stop(): Promise<void>;
}

async function startTemporal(kind: 'stack' | 'dev', stateDir: string): Promise<Temporal> {
  if (kind === 'stack') {
    const stack = await startStack({ stateDir: join(stateDir, 'stack'), ports: await freeStackPorts(), ui: false });
    return { address: stack.address, stack, stop: () => stack.stop() };
  }
  const server = new DevServerProcess(stateDir, await freePort());
  await server.start();
  return { address: server.address, stop: () => server.stop() };
}

export async function runStackUpgrade(o: StackUpgradeOptions): Promise<StackUpgradeReport> {
  const t0 = Date.now();
  const log = o.log ?? (() => undefined);
  const stateDir = mkdtempSync(join(tmpdir(), `skewless-stack-upgrade-${o.temporal}-`));
  chmodSync(stateDir, 0o711); // PostgreSQL runs as its own user under root: it must enter the stack's dir below
  const description = parseDescription(STACK_LAB, 'stack lab');
  const report: StackUpgradeReport = { problems: [], faults: [], temporalStartMs: 0, upgradeMs: 0, wallMs: 0, drains: [] };
  let temporal: Temporal | undefined;
  let sim: Simulation | undefined;
  let simStarting: Promise<Simulation> | undefined;
  let workers: WorkerProcess[] = [];
  let connection: Connection | undefined;
  let tracker: CommandTracker | undefined;
  let sampler: AvailabilitySampler | undefined;
  const finished = new AbortController();
  try {
    simStarting = startSimulation(description, { stateDir: join(stateDir, 'sim') });
    simStarting.catch(() => undefined);
    temporal = await startTemporal(o.temporal, stateDir);
    report.temporalStartMs = Date.now() - t0;
    sim = await simStarting;
    const started = sim;
    tracker = trackCommands(sim.hosts);
    sim.hosts.onCommand((e) => {
      if (e.phase !== 'start' || !TARGET_COMMAND['kubelet-restart'].test(e.command)) return;
      podsLeftOn(started.kube, e.host).then(
        (left) => {
          if (left.length > 0) report.problems.push(`${e.host} restarted its kubelet with ${left.join(', ')} still on it`);
        },
        () => undefined,
      );
    });
    const taskQueue = `stack-${o.temporal}-${process.pid}`;
    workers = [1, 2].map(
      (n) =>
        new WorkerProcess({
          clustersDir: started.endpoints.clustersDir,
          address: temporal!.address,
          taskQueue,
          logFile: join(stateDir, `worker-${n}.log`),
        }),
    );
    await Promise.all(workers.map((w) => w.start()));
    connection = await Connection.connect({ address: temporal.address });
    const client = new Client({ connection });
    sampler = startAvailabilitySampler(sim.kube, { intervalMs: 500 });
    const workflowId = upgradeWorkflowId(description.name);
    const tUpgrade = Date.now();
    await client.workflow.start(clusterUpgradeWorkflow, {
      taskQueue,
      workflowId,
      workflowIdConflictPolicy: 'FAIL',
      args: [{ cluster: description.name, to: '1.34', policy: FAULT_POLICY }],
    });
    log(
      `[stack] ${o.temporal}: Temporal ${temporal.address} ready in ${report.temporalStartMs} ms; workers ${workers.map((w) => w.pid).join(', ')}; ${workflowId} started`,
    );
    const outcome = outcomeOf(client, workflowId, tUpgrade + (o.timeoutMs ?? 15 * 60_000)).finally(() => finished.abort());
    const faults =
      o.faults && temporal.stack
        ? injectFaults({ stack: temporal.stack, client, workers, tracker, t0: tUpgrade, signal: finished.signal, log, out: report.faults })
        : Promise.resolve();
    const [result] = await Promise.all([outcome, faults]);
    report.upgradeMs = Date.now() - tUpgrade;
    report.status = result.status;
    const pids = temporal.stack?.info().pids ?? {};
    if (temporal.stack) report.memory = Object.fromEntries(Object.entries(pids).map(([name, pid]) => [name, treeMemory(pid)]));
    report.drains = await drainAttempts(client, description.name);
    const availability = await sampler.stop();
    sampler = undefined;
    await sim.versionHistorySettled();
    report.problems.push(
      ...(await checkUpgradeOutcome({ sim, hops: STACK_HOPS, status: result.status, failure: result.failure, availability })),
    );
    if (o.faults) report.problems.push(...checkFaults(report.faults, workers));
  } catch (err) {
    report.problems.push(`the run failed: ${(err as Error).stack ?? String(err)}`);
  } finally {
    finished.abort();
    sim ??= await simStarting?.catch(() => undefined);
    tracker?.stop();
    await sampler?.stop().catch(() => undefined);
    if (sim) recordWorldSecrets(sim.stateDir, archiveLabel(`stack-${o.temporal}-sim`));
    if (connection)
      await archiveHistories(connection, archiveLabel(`stack-${o.temporal}`)).catch((err: unknown) =>
        report.problems.push(`archiving histories: ${(err as Error).message}`),
      );
    await connection?.close().catch(() => undefined);
    await Promise.all(workers.map((w) => w.stop().catch(() => undefined)));
    await sim?.stop().catch((err: unknown) => report.problems.push(`stopping the simulation: ${(err as Error).message}`));
    await temporal?.stop().catch(() => undefined);
  }
  report.wallMs = Date.now() - t0;
  if (report.problems.length === 0) rmSync(stateDir, { recursive: true, force: true });
  else report.problems.push(`state kept in ${stateDir}`);
  return report;
}

function checkFaults(faults: FaultRecord[], workers: WorkerProcess[]): string[] {
  const problems: string[] = [];
  for (const what of ['worker-kill', 'server-restart', 'postgres-restart'] as const) {
    if (!faults.some((f) => f.what === what)) problems.push(`no ${what} happened before the upgrade ended`);
  }
  const alive = workers.filter((w) => w.running);
  if (alive.length !== 1 || alive[0]?.starts !== 1)
    problems.push(`expected the one surviving worker to carry on alone, ${alive.length} running`);
  return problems;
}

interface FaultContext {
  stack: RunningStack;
  client: Client;
  workers: WorkerProcess[];
  tracker: CommandTracker;
  t0: number;
  signal: AbortSignal;
  log: (line: string) => void;
  out: FaultRecord[];
}

const short = (c: RunningCommand) => `${c.host}: '${c.command.replace(/^sudo -n (\S+=\S+ )*/, '')}'`;

/** The three faults, each at its moment, in the order the upgrade reaches them. */
async function injectFaults(ctx: FaultContext): Promise<void> {
  const { tracker, signal } = ctx;
  const workerInstall = await tracker.nextStart(
    (c) => c.host.startsWith('worker-') && TARGET_COMMAND['apt-install'].test(c.command),
    signal,
  );
  if (!workerInstall) return;
  await timed(ctx, 'server-restart', short(workerInstall), () => ctx.stack.restartServer());

  const hop2 = await tracker.nextStart((c) => TARGET_COMMAND['apt-install'].test(c.command) && /=1\.34\./.test(c.command), signal);
  if (!hop2) return;
  await timed(ctx, 'postgres-restart', short(hop2), () => ctx.stack.restartPostgres());

  await killDrainingWorker(ctx, `/${STACK_HOPS[1]}/`);
}

/**
 * SIGKILLs the worker (`pid@host`) that started the first drainNode of a worker node in `hop`; not restarted.
 * A worker node's drain waits on its PDBs for a second or more; a control plane's is over in ~0.4 s, often
 * before the kill lands.
 */
async function killDrainingWorker(ctx: FaultContext, hop: string): Promise<void> {
  const isWorkerNodeDrain = (a: { activity: string; started: boolean; workflowId: string }) =>
    a.activity === 'drainNode' && a.started && a.workflowId.includes(hop) && !a.workflowId.split('/').at(-1)!.startsWith('cp-');
  while (!ctx.signal.aborted) {
    const drain = (await pendingActivities(ctx.client).catch(() => [])).find(isWorkerNodeDrain);
    const victim = ctx.workers.find((w) => w.running && `${w.pid}@${hostname()}` === drain?.worker);
    if (drain && victim) {
      const node = drain.workflowId.split('/').at(-1);
      await timed(ctx, 'worker-kill', `drainNode ${node} on ${drain.worker}`, () => victim.kill());
      return;
    }
    await sleep(250);
  }
}

async function timed(ctx: FaultContext, what: FaultRecord['what'], during: string, act: () => Promise<void>): Promise<void> {
  const start = Date.now();
  await act();
  const record = { what, atMs: start - ctx.t0, atEpochMs: start, during, outageMs: Date.now() - start };
  ctx.out.push(record);
  ctx.log(`[stack] ${what} at ${(record.atMs / 1000).toFixed(1)} s (${record.outageMs} ms) during ${during}`);
}
