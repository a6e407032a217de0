import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client, Connection, WorkflowFailedError } from '@temporalio/client';
import { archiveHistories, archiveLabel, recordWorldSecrets } from '../helpers/history-archive.js';
import { startAvailabilitySampler, type AvailabilityReport, type AvailabilitySampler } from '../../sim/availability-sampler.js';
import { parseDescription } from '../../sim/description.js';
import type { HangupFate } from '../../sim/hosts/command-runner.js';
import { startSimulation, type Simulation } from '../../sim/simulation.js';
import { clusterUpgradeWorkflow } from '../../workflows/cluster-upgrade-workflow.js';
import type { UpgradeStatus } from '../../workflows/rollout-messages.js';
import { failureChain } from '../helpers/upgrade-evidence.js';
import { faultLab, type FaultWorld } from './fault-lab.js';
import { WorkerProcess } from './fault-processes.js';
import { startFaultTemporal, type FaultTemporal, type FaultTemporalKind } from './fault-temporal.js';
import { checkUpgradeOutcome } from './final-checks.js';
import { podsLeftOn, trackCommands, type CommandTracker } from './in-flight.js';
import { trackManifests, type ManifestTracker } from './manifest-checks.js';
import { replayRunHistories } from './replay-check.js';
import {
  planKills,
  planOutages,
  planServerRestarts,
  randomOutages,
  SHARED_TARGETS,
  TARGET_COMMAND,
  TARGETS,
  type KillScheduleOptions,
  type KillTarget,
} from './kill-schedule.js';
import { killWorkerLoop, type KillRecord, type OutageRecord } from './fault-loops.js';
import { outageLoop, takingTurns } from './temporal-loops.js';
import { mulberry32 } from './prng.js';
import { upgradeWorkflowId } from '../../contracts/workflow-ids.js';

/**
 * The fault harness: a simulated cluster (the shared or the per-node world), the Temporal dev server
 * or the stack (Temporal server on PostgreSQL) and the skewless worker as separate processes, an
 * upgrade started through the client, and meanwhile the worker SIGKILLed (and restarted) at planned
 * moments, the Temporal server SIGKILLed (and restarted on its storage) K times and, on the stack,
 * PostgreSQL SIGKILLed and restarted. At the end it checks every promise (final-checks.ts, and the
 * per-node manifests), replays every history with the current bundle, and reports what it did.
 */

export interface FaultRunOptions {
  seed: number;
  kills: number;
  serverRestarts?: number;
  /** The targets the kills wait for (default: the world's); the suite's short runs pick the ones they are about. */
  targets?: readonly KillTarget[];
  /** PostgreSQL SIGKILLs (the stack only). */
  dbRestarts?: number;
  world?: FaultWorld;
  temporal?: FaultTemporalKind;
  /** The per-node world's size (default 3 control planes, workers as for the kills). */
  size?: { controlPlanes?: number; workers?: number };
  /** The simulated cluster (YAML) and the hops its upgrade to `to` goes through (default: the world's lab). */
  description?: string;
  to?: string;
  hops?: string[];
  schedule?: Omit<KillScheduleOptions, 'kills' | 'serverRestarts'>;
  /** Kept afterwards when set (default: a temporary folder, removed unless the run failed). */
  stateDir?: string;
  /** How long a targeted kill waits for its moment before it kills anyway (default 20 s). */
  targetWaitMs?: number;
  /** Give up on the upgrade after this long (default 15 min + 2 min per kill and restart). */
  timeoutMs?: number;
  log?: (line: string) => void;
}

export interface FaultRunReport {
  seed: number;
  world: FaultWorld;
  temporal: FaultTemporalKind;
  nodes: number;
  requested: { kills: number; serverRestarts: number; dbRestarts: number };
  kills: KillRecord[];
  serverRestarts: OutageRecord[];
  dbRestarts: OutageRecord[];
  /** Histories replayed with the current bundle at the end. */
  replayed: number;
  hangups: { atMs: number; host: string; command: string; fate: HangupFate; exitCode: number | null }[];
  targetsHit: Record<KillTarget, number>;
  /** Kubelet restarts on a node that still ran pods a drain should have moved. */
  undrained: string[];
  status?: UpgradeStatus;
  problems: string[];
  ok: boolean;
  wallMs: number;
  upgradeMs: number;
  stateDir: string;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Waits for the workflow's result through server restarts: a lost connection is retried, a failed workflow is not. */
export async function outcomeOf(
  client: Client,
  workflowId: string,
  deadline: number,
): Promise<{ status?: UpgradeStatus; failure?: string }> {
  for (;;) {
    try {
      return { status: (await client.workflow.getHandle(workflowId).result()) as UpgradeStatus };
    } catch (err) {
      if (err instanceof WorkflowFailedError) return { failure: failureChain(err) };
      if (Date.now() > deadline) return { failure: `not finished by the deadline (last error: ${(err as Error).message})` };
      await sleep(1000);
    }
  }
}

export async function runFaultHarness(o: FaultRunOptions): Promise<FaultRunReport> {
  const t0 = Date.now();
  const log = o.log ?? (() => undefined);
  const world = o.world ?? 'shared';
  const temporalKind = o.temporal ?? 'dev';
  if ((o.dbRestarts ?? 0) > 0 && temporalKind !== 'stack') throw new Error('PostgreSQL restarts need the stack (temporal: stack)');
  const rng = mulberry32(o.seed);
  const plan = { kills: o.kills, serverRestarts: o.serverRestarts ?? 0, dbRestarts: o.dbRestarts ?? 0, ...o.schedule };
  const kills = planKills(rng.fork(), plan, o.targets ?? (world === 'per-node' ? TARGETS : SHARED_TARGETS));
  // The dev server's restarts at random gaps, as before the stack; the stack's server also into apply and a drain.
  const serverRng = rng.fork();
  const restarts =
    temporalKind === 'stack' ? planOutages(serverRng, { count: plan.serverRestarts }) : randomOutages(planServerRestarts(serverRng, plan));
  const fates = rng.fork();
  // Forked last: the plans above are what they were for a seed before PostgreSQL's restarts existed.
  const dbRestarts = planOutages(rng.fork(), { count: plan.dbRestarts });
  const stateDir = o.stateDir ?? mkdtempSync(join(tmpdir(), 'skewless-faults-'));
  const lab = faultLab(world, o.kills, o.size);
  const description = parseDescription(o.description ?? lab.description, 'fault lab');
  const hops = o.hops ?? lab.hops;
  const timeoutMs = o.timeoutMs ?? 15 * 60_000 + 120_000 * (plan.kills + plan.serverRestarts + plan.dbRestarts);
  const report: FaultRunReport = {
    seed: o.seed,
    world,
    temporal: temporalKind,
    nodes: description.nodes.length,
    requested: { kills: plan.kills, serverRestarts: plan.serverRestarts, dbRestarts: plan.dbRestarts },
    kills: [],
    serverRestarts: [],
    dbRestarts: [],
    replayed: 0,
    hangups: [],
    targetsHit: { apply: 0, 'upgrade-node': 0, drain: 0, 'apt-install': 0, 'kubelet-restart': 0 },
    undrained: [],
    problems: [],
    ok: false,
    wallMs: 0,
    upgradeMs: 0,
    stateDir,
  };

  let sim: Simulation | undefined;
  let simStarting: Promise<Simulation> | undefined;
  let loops: Promise<unknown>[] = [];
  let temporal: FaultTemporal | undefined;
  let manifests: ManifestTracker | undefined;
  let worker: WorkerProcess | undefined;
  let connection: Connection | undefined;
  let tracker: CommandTracker | undefined;
  let sampler: AvailabilitySampler | undefined;
  const finished = new AbortController();
  try {
    simStarting = startSimulation(description, { stateDir: join(stateDir, 'sim') });
    simStarting.catch(() => undefined);
    temporal = await startFaultTemporal(temporalKind, stateDir);
    sim = await simStarting;
    log(
      `[faults] seed ${o.seed}: ${world} world, ${description.nodes.length} nodes at ${description.version}, Temporal: ${temporal.describe()}, state ${stateDir}`,
    );
    const targets = (p: { target: string }[]) => (p.length > 0 ? ` (${p.map((r) => r.target).join(', ')})` : '');
    log(
      `[faults] plan: ${kills.length} worker kills${targets(kills)}, ${restarts.length} server restarts${targets(restarts)}, ${dbRestarts.length} PostgreSQL kills${targets(dbRestarts)}`,
    );
    if (world === 'per-node') manifests = trackManifests(sim);

    // A command whose client died goes either way on a real host (sim/hosts/command-runner.ts): the seed
    // decides, except that a hung-up kubeadm upgrade apply runs on every other time, starting with the first.
    const started = sim;
    let applies = 0;
    sim.hosts.setHangupPolicy((_host, command) => {
      if (TARGET_COMMAND.apply.test(command)) return applies++ % 2 === 0 ? 'finishes' : 'dies';
      return fates.chance(0.5) ? 'finishes' : 'dies';
    });
    sim.hosts.onCommand((e) => {
      if (e.phase !== 'end' || !e.hungUp) return;
      const fate: HangupFate = e.exitCode === null ? 'dies' : 'finishes';
      report.hangups.push({ atMs: e.time - t0, host: e.host, command: e.command, fate, exitCode: e.exitCode });
      log(
        `[faults]   ${e.host}: '${e.command}' lost its client; ${fate === 'dies' ? 'it died there (no effect)' : `it finished on the host (exit ${e.exitCode})`}`,
      );
    });
    // A kubelet restarts only on a drained node: pods a drain moves that are still there are a broken promise.
    const undrained: string[] = report.undrained;
    sim.hosts.onCommand((e) => {
      if (e.phase !== 'start' || !TARGET_COMMAND['kubelet-restart'].test(e.command)) return;
      podsLeftOn(started.kube, e.host).then(
        (left) => {
          if (left.length === 0) return;
          undrained.push(`${e.host} restarted its kubelet at ${((e.time - t0) / 1000).toFixed(1)} s with ${left.join(', ')} still on it`);
          log(`[faults]   NOT DRAINED: ${undrained.at(-1)}`);
        },
        (err: unknown) => log(`[faults]   could not list the pods on ${e.host}: ${(err as Error).message}`),
      );
    });
    tracker = trackCommands(sim.hosts);

    const taskQueue = `faults-${o.seed}-${process.pid}`;
    worker = new WorkerProcess({
      clustersDir: sim.endpoints.clustersDir,
      address: temporal.address,
      taskQueue,
      logFile: join(stateDir, 'worker.log'),
    });
    await worker.start();
    connection = await Connection.connect({ address: temporal.address });
    const client = new Client({ connection });
    sampler = startAvailabilitySampler(sim.kube, { intervalMs: 500 });
    const workflowId = upgradeWorkflowId(description.name);
    const tUpgrade = Date.now();
    await client.workflow.start(clusterUpgradeWorkflow, {
      taskQueue,
      workflowId,
      workflowIdConflictPolicy: 'FAIL',
      args: [
        {
          cluster: description.name,
          to: o.to ?? lab.to,
          policy: lab.policy,
          ...(lab.acknowledgedBy ? { acknowledgedBy: lab.acknowledgedBy } : {}),
        },
      ],
    });
    log(`[faults] started ${workflowId}: ${description.version} → ${o.to ?? lab.to} on task queue ${taskQueue}`);

    const outcome = outcomeOf(client, workflowId, tUpgrade + timeoutMs).finally(() => finished.abort());
    const loopCtx = {
      sim: started,
      client,
      worker,
      temporal,
      outage: takingTurns(),
      tracker,
      log,
      t0: tUpgrade,
      finished: finished.signal,
      targetWaitMs: o.targetWaitMs ?? 20_000,
    };
    loops = [
      killWorkerLoop(loopCtx, kills, report.kills),
      outageLoop(loopCtx, 'server', restarts, report.serverRestarts),
      outageLoop(loopCtx, 'postgres', dbRestarts, report.dbRestarts),
    ];
    const [result] = await Promise.all([outcome, ...loops]);
    report.upgradeMs = Date.now() - tUpgrade;
    report.status = result.status;
    const availability: AvailabilityReport = await sampler.stop();
    sampler = undefined;
    await sim.versionHistorySettled();

    for (const k of report.kills) if (k.target !== 'random' && k.hit) report.targetsHit[k.target]++;
    report.problems.push(...(await checkUpgradeOutcome({ sim, hops, status: result.status, failure: result.failure, availability })));
    report.problems.push(...report.undrained);
    if (manifests) report.problems.push(...manifests.check(hops.at(-1) as string));
    const replay = await replayRunHistories(client);
    report.replayed = replay.histories;
    report.problems.push(...replay.problems);
    log(`[faults] replayed ${replay.histories} histories with the current workflow bundle: ${replay.problems.length} problem(s)`);
    if (report.kills.length < plan.kills)
      report.problems.push(`only ${report.kills.length} of ${plan.kills} planned kills happened before the upgrade ended`);
    if (report.serverRestarts.length < plan.serverRestarts)
      report.problems.push(
        `only ${report.serverRestarts.length} of ${plan.serverRestarts} server restarts happened before the upgrade ended`,
      );
    if (report.dbRestarts.length < plan.dbRestarts)
      report.problems.push(`only ${report.dbRestarts.length} of ${plan.dbRestarts} PostgreSQL kills happened before the upgrade ended`);
    for (const [part, planned, done] of [
      ['server restart', restarts, report.serverRestarts],
      ['PostgreSQL kill', dbRestarts, report.dbRestarts],
    ] as const)
      for (const t of ['apply', 'drain'] as const)
        if (planned.some((r) => r.target === t) && !done.some((r) => r.target === t && r.hit))
          report.problems.push(`no ${part} landed in ${t} (planned, never hit)`);
    for (const t of TARGETS) {
      if (kills.some((k) => k.target === t) && report.targetsHit[t] === 0)
        report.problems.push(`no kill landed in ${t} (planned, never hit)`);
    }
  } catch (err) {
    report.problems.push(`the harness failed: ${(err as Error).stack ?? String(err)}`);
  } finally {
    finished.abort();
    await Promise.allSettled(loops); // a loop in the middle of a kill or a restart finishes it first
    sim ??= await simStarting?.catch(() => undefined);
    tracker?.stop();
    manifests?.stop();
    await sampler?.stop().catch(() => undefined);
    // The secret scan at the end of the suite reads every history this run made, and the keys it must not hold.
    if (sim) recordWorldSecrets(sim.stateDir, archiveLabel('faults-sim'));
    if (connection)
      await archiveHistories(connection, archiveLabel('faults')).catch((err: unknown) =>
        report.problems.push(`archiving histories: ${(err as Error).message}`),
      );
    await connection?.close().catch(() => undefined);
    await worker?.stop().catch(() => undefined);
    await sim?.stop().catch((err: unknown) => report.problems.push(`stopping the simulation: ${(err as Error).message}`));
    await temporal?.stop().catch(() => undefined);
  }
  report.ok = report.problems.length === 0;
  report.wallMs = Date.now() - t0;
  if (report.ok && !o.stateDir) rmSync(stateDir, { recursive: true, force: true });
  return report;
}
