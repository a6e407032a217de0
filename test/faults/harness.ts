import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client, Connection, WorkflowFailedError } from '@temporalio/client';
import { archiveHistories, archiveLabel, recordWorldSecrets } from '../helpers/history-archive.js';
import { startAvailabilitySampler, type AvailabilityReport, type AvailabilitySampler } from '../../sim/availability-sampler.js';
import { parseDescription } from '../../sim/description.js';
import { freePort } from '../../tooling/free-port.js';
import type { HangupFate } from '../../sim/hosts/command-runner.js';
import { startSimulation, type Simulation } from '../../sim/simulation.js';
import { clusterUpgradeWorkflow } from '../../workflows/cluster-upgrade-workflow.js';
import type { UpgradeStatus } from '../../workflows/upgrade-messages.js';
import { failureChain } from '../helpers/upgrade-evidence.js';
import { FAULT_HOPS, FAULT_LAB, FAULT_POLICY, FAULT_TARGET } from './fault-lab.js';
import { DevServerProcess, WorkerProcess } from './fault-processes.js';
import { checkUpgradeOutcome } from './final-checks.js';
import { podsLeftOn, trackCommands, type CommandTracker } from './in-flight.js';
import { planKills, planServerRestarts, TARGET_COMMAND, TARGETS, type KillScheduleOptions, type KillTarget } from './kill-schedule.js';
import { killWorkerLoop, restartServerLoop, type KillRecord, type ServerRestartRecord } from './fault-loops.js';
import { mulberry32 } from './prng.js';
import { upgradeWorkflowId } from '../../contracts/workflow-ids.js';

/**
 * The fault harness: a simulated cluster, the Temporal dev server and the skewless worker as
 * separate processes, an upgrade started through the client, and meanwhile the worker SIGKILLed
 * (and restarted) at planned moments and the server SIGKILLed (and restarted on its file) K times.
 * At the end it checks every promise (final-checks.ts) and reports what it did and what broke.
 */

export interface FaultRunOptions {
  seed: number;
  kills: number;
  serverRestarts?: number;
  /** The simulated cluster (YAML) and the hops its upgrade to `to` goes through. */
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
  requested: { kills: number; serverRestarts: number };
  kills: KillRecord[];
  serverRestarts: ServerRestartRecord[];
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
  const rng = mulberry32(o.seed);
  const plan = { kills: o.kills, serverRestarts: o.serverRestarts ?? 0, ...o.schedule };
  const kills = planKills(rng.fork(), plan);
  const restarts = planServerRestarts(rng.fork(), plan);
  const fates = rng.fork();
  const stateDir = o.stateDir ?? mkdtempSync(join(tmpdir(), 'skewless-faults-'));
  const description = parseDescription(o.description ?? FAULT_LAB, 'fault lab');
  const hops = o.hops ?? FAULT_HOPS;
  const timeoutMs = o.timeoutMs ?? 15 * 60_000 + 120_000 * (plan.kills + plan.serverRestarts);
  const report: FaultRunReport = {
    seed: o.seed,
    requested: { kills: plan.kills, serverRestarts: plan.serverRestarts },
    kills: [],
    serverRestarts: [],
    hangups: [],
    targetsHit: { apply: 0, drain: 0, 'apt-install': 0, 'kubelet-restart': 0 },
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
  let server: DevServerProcess | undefined;
  let worker: WorkerProcess | undefined;
  let connection: Connection | undefined;
  let tracker: CommandTracker | undefined;
  let sampler: AvailabilitySampler | undefined;
  const finished = new AbortController();
  try {
    server = new DevServerProcess(stateDir, await freePort());
    simStarting = startSimulation(description, { stateDir: join(stateDir, 'sim') });
    simStarting.catch(() => undefined);
    await server.start();
    sim = await simStarting;
    log(
      `[faults] seed ${o.seed}: ${description.nodes.length} nodes at ${description.version}, Temporal ${server.address} (pid ${server.pid}, ${server.db}), state ${stateDir}`,
    );
    log(`[faults] plan: ${kills.length} worker kills (${kills.map((k) => k.target).join(', ')}), ${restarts.length} server restarts`);

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
      address: server.address,
      taskQueue,
      logFile: join(stateDir, 'worker.log'),
    });
    await worker.start();
    connection = await Connection.connect({ address: server.address });
    const client = new Client({ connection });
    sampler = startAvailabilitySampler(sim.kube, { intervalMs: 500 });
    const workflowId = upgradeWorkflowId(description.name);
    const tUpgrade = Date.now();
    await client.workflow.start(clusterUpgradeWorkflow, {
      taskQueue,
      workflowId,
      workflowIdConflictPolicy: 'FAIL',
      args: [{ cluster: description.name, to: o.to ?? FAULT_TARGET, policy: FAULT_POLICY }],
    });
    log(`[faults] started ${workflowId}: ${description.version} → ${o.to ?? FAULT_TARGET} on task queue ${taskQueue}`);

    const outcome = outcomeOf(client, workflowId, tUpgrade + timeoutMs).finally(() => finished.abort());
    const loopCtx = {
      sim: started,
      client,
      worker,
      server,
      tracker,
      log,
      t0: tUpgrade,
      finished: finished.signal,
      targetWaitMs: o.targetWaitMs ?? 20_000,
    };
    loops = [killWorkerLoop(loopCtx, kills, report.kills), restartServerLoop(loopCtx, restarts, report.serverRestarts)];
    const [result] = await Promise.all([outcome, ...loops]);
    report.upgradeMs = Date.now() - tUpgrade;
    report.status = result.status;
    const availability: AvailabilityReport = await sampler.stop();
    sampler = undefined;
    await sim.versionHistorySettled();

    for (const k of report.kills) if (k.target !== 'random' && k.hit) report.targetsHit[k.target]++;
    report.problems.push(...(await checkUpgradeOutcome({ sim, hops, status: result.status, failure: result.failure, availability })));
    report.problems.push(...report.undrained);
    if (report.kills.length < plan.kills)
      report.problems.push(`only ${report.kills.length} of ${plan.kills} planned kills happened before the upgrade ended`);
    if (report.serverRestarts.length < plan.serverRestarts)
      report.problems.push(
        `only ${report.serverRestarts.length} of ${plan.serverRestarts} server restarts happened before the upgrade ended`,
      );
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
    await server?.stop().catch(() => undefined);
  }
  report.ok = report.problems.length === 0;
  report.wallMs = Date.now() - t0;
  if (report.ok && !o.stateDir) rmSync(stateDir, { recursive: true, force: true });
  return report;
}
