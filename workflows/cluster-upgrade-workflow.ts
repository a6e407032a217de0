import {
  ActivityFailure,
  ApplicationFailure,
  CancellationScope,
  condition,
  ContinueAsNew,
  continueAsNew,
  patched,
  upsertSearchAttributes,
  workflowInfo,
  allHandlersFinished,
} from '@temporalio/workflow';
import {
  buildRunbook,
  checkRunbook,
  checkSkew,
  describeTarget,
  etcdPatchHop,
  etcdPatchSnapshotLabel,
  fullHopWork,
  hopWork,
  isBelowHop,
  movesAtHop,
  nodeUpgradesDone,
  runSpan,
  planEtcdPatch,
  withoutNodes,
  type HopWork,
  type MaintenanceWindow,
  type PhaseKind,
  soakSecondsAfter,
  type RolloutPlan,
  type UpgradePlan,
  type UpgradePolicy,
  type WorkerHops,
  type SinkSubscription,
  type Exclusion,
  changesMinor,
  describeExclusion,
  exclusionAt,
  type HookSubscription,
  hooksAt,
  UPGRADE_POLICY_KEYS,
  upgradeCommand,
  withDefaults,
  type WithDefaults,
  planReversibility,
  autoCommitSoakSeconds,
  reversibleRefusal,
  type ReversibilityFacts,
  minorOf,
  parseVersion,
} from '../rules/index.js';
import type { ReadinessReport } from '../activities/readiness/index.js';
import { gateFindings } from '../rules/readiness/finding.js';
import { nodeWorkflowId } from '../contracts/workflow-ids.js';
import { activities as a } from './activities-proxy.js';
import { WORKFLOW_FAILURE } from '../contracts/failure-types.js';
import { fleetReporter } from './fleet-report.js';
import { PATCH } from './patches.js';
import { nodeStepPolicy, type NodeStepInput, type NodeStepResult } from './node-step-input.js';
import { planLive, type LiveInventory } from './plan-live.js';
import { cappedNote } from './open-children-cap.js';
import { preflightRefusals } from './preflight.js';
import { quarantineHolds, quarantineProof } from './quarantine-hold.js';
import { reportConcentration } from './rebalance.js';
import { progressMemo, Rollout } from './rollout.js';
import { applyRule } from './rule-failure.js';
import { SEARCH_ATTRIBUTES } from './search-attributes.js';
import { doneOutcome, leftAs, nodesLeftBehind, skewFailure } from './upgrade-ending.js';
import { statusQuery, type UpgradeStatus } from './rollout-messages.js';
import { waitForWindow, type WindowWaitContext } from './window-wait.js';
import { failureReason, hookEvent } from './run-events.js';
import { handleTrialRollback, ReversibleHop } from './reversible-hop.js';

export type { UpgradePolicy };

export interface UpgradeInput {
  cluster: string;
  to: string;
  policy?: UpgradePolicy;
  /**
   * Only the control planes (their components and kubelets); the workers keep their version. What a
   * blue/green replacement (workflows/bluegreen-workflow.ts) runs before the green pool joins at the
   * target. Absent in every other run, which then plans and runs exactly as before (no patch needed).
   */
  controlPlaneOnly?: boolean;
  /** Who acknowledged the readiness findings and PDBs named in policy.acknowledge, and why (history shows it). */
  acknowledgedBy?: { by: string; reason?: string; /** An acknowledgement's own reason, by its name. */ reasons?: Record<string, string> };
  /**
   * `skewless upgrade --reversible` (issue 36): each hop that can be runs as a trial first
   * (workflows/reversible-hop.ts); one that cannot refuses the start unless `reversible:<hop>` is among
   * `acknowledged` (it then runs as any hop). Absent: no hop is a trial. `autoCommit`: a trial whose
   * soak (the longer of soakSeconds and phaseSoakSeconds, not 0) passes commits without an approval.
   */
  reversible?: { acknowledged?: string[]; autoCommit?: boolean };
  /** Set only by the workflow itself when it continues as new: where the previous run stopped. */
  carried?: CarriedUpgrade;
}

/** What one run hands the next: the plan (not re-planned), the status so far, and the next safe point. */
export interface CarriedUpgrade {
  /**
   * `windows`: the cluster's maintenance windows as read when the upgrade started (absent: none).
   * `workerHops`: the hops at which each worker moves (absent: a run that predates PATCH.workersOnce, every hop).
   */
  plan: {
    from: string;
    hops: string[];
    rollout: RolloutPlan;
    windows?: MaintenanceWindow[];
    /** The cluster's blackout dates as read when the upgrade started (absent: none). */
    exclusions?: Exclusion[];
    workerHops?: WorkerHops;
    /** The configuration's notification sinks, names and events only (absent: none). */
    notify?: SinkSubscription[];
    /** The configuration's change hooks, names, points and failure policy only (absent: none). */
    hooks?: HookSubscription[];
    /** The hops that run as a trial (input.reversible; absent: none). */
    reversibleHops?: string[];
  };
  status: UpgradeStatus;
  /**
   * The hop to go on with, and its next worker phase (-1: the hop has not started). `wave`: the phase
   * is half done, continued between two of its waves (PATCH.continueBetweenWaves): its nodes still
   * below the hop go on, without waiting for a maintenance window again.
   */
  cursor: { hop: number; phase: number; wave?: boolean };
}

type Inventory = LiveInventory;

/**
 * The durable upgrade of one cluster, workflow id `upgrade/<cluster>`: plan, then per hop the etcd
 * snapshot, the control planes one at a time, the canary and the batches, each node a child workflow.
 */
export async function clusterUpgradeWorkflow(input: UpgradeInput): Promise<UpgradeStatus> {
  const run = new UpgradeRun(input);
  run.registerHandlers();
  if (!input.carried) await run.planAndCheck();
  const { rollout } = run;
  try {
    await run.hops(input.carried?.cursor ?? { hop: 0, phase: -1 });
  } catch (err) {
    // continueAsNew() unwinds through here as an exception: the upgrade goes on in its next run.
    if (err instanceof ContinueAsNew && patched(PATCH.continueWithoutCompensation)) throw err;
    await rollout.compensate(run.planned.nodes);
    rollout.setPhase('failed');
    await rollout.failed(failureReason(err), run.finishCommand());
    throw err;
  }
  await run.end();
  await rollout.hooksAt('afterRun', {});
  return rollout.ended();
}

/** One run of an upgrade (a continue-as-new starts another with the plan and status carried): its plan and hops on the rollout core. */
class UpgradeRun {
  readonly policy: WithDefaults<UpgradePolicy>;
  readonly rollout: Rollout<UpgradeStatus>;
  readonly status: UpgradeStatus;
  /** Set by planAndCheck, or carried from the previous run. */
  plan!: CarriedUpgrade['plan'];
  /** The hop in progress; declared before the handlers (a child's id names it). */
  hop: string;
  /** The inventory read last, while it still describes the cluster (dropped once anything moved). */
  live: Inventory | undefined;
  /** Disruptive phases start only inside these (the cluster configuration's `maintenanceWindows`). */
  windows: MaintenanceWindow[];
  /** No run starts and no phase of nodes begins inside these (the configuration's `exclusions`). */
  exclusions: Exclusion[] = [];
  /** Whether this run finishes what an earlier one left behind (patched: decided once, before the hops). */
  finishing = false;
  /** Tells the fleet that started this upgrade, if one did, that it is blocked or moving again. */
  private readonly reportToFleet: () => void;

  constructor(private readonly input: UpgradeInput) {
    this.policy = withDefaults(input.policy);
    this.status = input.carried?.status ?? newStatus(input);
    this.hop = this.status.hop ?? '';
    this.reportToFleet = fleetReporter(this.status);
    const memo = () => upgradeMemo(this.status);
    const childId = (node: string) => nodeWorkflowId(this.rollout.owner, node, this.hop);
    this.rollout = new Rollout({
      status: this.status,
      statusQuery,
      childId,
      memo,
      noun: 'upgrade',
      onBlockedChange: this.reportToFleet,
      acknowledged: this.policy.acknowledge ?? [],
    });
    if (input.carried) this.plan = input.carried.plan;
    this.windows = input.carried?.plan.windows ?? [];
    this.exclusions = input.carried?.plan.exclusions ?? [];
    this.rollout.notifier.sinks = input.carried?.plan.notify ?? [];
    this.rollout.hooks = input.carried?.plan.hooks ?? [];
  }

  /** Every handler before the workflow's first await: the rollout's, and a reversible hop's rollback. */
  registerHandlers(): void {
    this.rollout.registerHandlers();
    handleTrialRollback(this.status, (e) => this.rollout.note(e));
  }

  /** The same upgrade again, on this run's task queue and with its policy: what finishes what a run left. */
  finishCommand(to = this.status.to): string {
    const { cluster, policy } = this.input;
    return upgradeCommand({ cluster, to, policy, taskQueue: workflowInfo().taskQueue });
  }

  /** What a maintenance-window wait reads: the windows as this run knows them now. */
  private get windowWait(): WindowWaitContext {
    return {
      status: this.status,
      windows: this.windows,
      exclusions: this.exclusions,
      minor: this.plan !== undefined && changesMinor(this.plan.from, this.hop || this.plan.from),
      aborted: () => this.rollout.aborted() !== undefined,
      setPhase: (p) => this.rollout.setPhase(p),
    };
  }

  get planned() {
    return { nodes: Object.keys(this.plan.rollout.stageLabels) };
  }

  /** Plan: the inventory, what the repository offers, and the rules' verdict, before touching anything. */
  async planAndCheck(): Promise<void> {
    const { input, rollout, status, policy } = this;
    // The flow that started this upgrade (a blue/green run's control-plane phase) is not another rollout.
    // Its search attributes wait for the plan: they name the versions.
    await rollout.start({
      policy: { given: input.policy, keys: UPGRADE_POLICY_KEYS },
      alone: {
        then: 'upgrade once it ends',
        startedBy: workflowInfo().parent?.workflowId ?? rollout.owner,
        ofCluster: true,
        when: () => patched(PATCH.exclusiveRollouts),
      },
    });
    // Workers move once when the skew policy allows; a run that predates it keeps every worker at every hop.
    const decided = { workersOnce: false };
    const asked = () => ((decided.workersOnce = patched(PATCH.workersOnce)) ? policy : { ...policy, workersEveryHop: true });
    const live = await planLive({ cluster: input.cluster, to: input.to, policy: asked, batchBy: policy.batchBy });
    const { inventory } = live;
    const { workersOnce } = decided;
    this.live = inventory;
    this.windows = inventory.maintenanceWindows ?? [];
    this.exclusions = inventory.exclusions ?? [];
    rollout.notifier.sinks = inventory.notify ?? [];
    rollout.hooks = inventory.hooks ?? [];
    let full: UpgradePlan = live.plan;
    if (input.controlPlaneOnly) full = this.withoutWorkers(full, inventory);
    const { from, hops, rollout: planned, workerHops } = full;
    this.plan = { from, hops, rollout: planned, ...(workersOnce ? { workerHops } : {}) };
    if (workersOnce && hops.length > 1 && !input.controlPlaneOnly) rollout.note(`workers move at: ${describeWorkerHops(workerHops)}`);
    Object.assign(status, { from: full.from, hops: full.hops });
    if (full.target.to !== input.to) {
      // An expression (latest-patch, next-minor): status and memo show the version it names.
      status.to = full.hops.at(-1) ?? full.from;
      rollout.note(`target ${describeTarget(full.target)}`);
    }
    const capped = cappedNote(full.rollout, `maxUnavailable ${String(policy.maxUnavailable)}`);
    if (capped) rollout.note(capped);
    const kubeletOf = new Map((inventory.skew.kubelets ?? []).map((k) => [k.node, k.version]));
    status.moves = {};
    for (const [node, stage] of Object.entries(full.rollout.stageLabels)) {
      const from = kubeletOf.get(node);
      status.nodes[node] = { phase: 'pending', stage, ...(from ? { from, version: from } : {}) };
      // What progress counts: a node already at a hop (a finishing run's) has nothing to do in it.
      status.moves[node] = full.hops.filter((h) => movesAtHop(this.plan.workerHops, node, h) && isBelowHop(from, h));
    }
    upsertSearchAttributes([
      { key: SEARCH_ATTRIBUTES.cluster, value: input.cluster },
      { key: SEARCH_ATTRIBUTES.fromVersion, value: full.from },
      { key: SEARCH_ATTRIBUTES.targetVersion, value: full.hops.at(-1) ?? full.from },
    ]);
    rollout.updateMemo();
    this.refuseToStart(full, inventory);
    // The facts of the cluster (its etcd, alpha gates) come with the readiness report: judged after it (PATCH.reversibleFacts).
    const withFacts = input.reversible !== undefined && patched(PATCH.reversibleFacts);
    if (input.reversible && !withFacts && patched(PATCH.reversibleHops)) this.plan.reversibleHops = this.reversibleHops(full);
    this.refuseInsideExclusion(full);
    const report = patched(PATCH.readinessGate) ? await this.readinessGate(full, inventory) : undefined;
    if (withFacts && patched(PATCH.reversibleHops)) this.plan.reversibleHops = this.reversibleHops(full, report?.reversibility);
    await this.beforeRunHooks();
    const nodes = Object.keys(full.rollout.stageLabels).length;
    const reached = full.hops.at(-1) ?? full.from;
    rollout.notifier.emit(
      'run.started',
      'started',
      `upgrade of ${input.cluster} started: ${full.from} → ${reached} (${full.hops.join(', ') || 'no hop'}; ${nodes} nodes)`,
      {
        from: full.from,
        to: reached,
        hops: full.hops,
        nodes,
        controlPlanes: full.rollout.controlPlanes.length,
        phases: full.rollout.phases.map((p) => `${p.stage}: ${p.nodes.length}`),
        ...(input.acknowledgedBy ? { acknowledgedBy: input.acknowledgedBy.by } : {}),
      },
    );
  }

  /**
   * What would break a hop though the skew policy holds (issue 21): removed APIs in use and hop
   * prerequisites hold the upgrade until acknowledged; drains predicted to block are noted.
   */
  private async readinessGate(full: UpgradePlan, inventory: Inventory): Promise<ReadinessReport> {
    const { input, policy, rollout } = this;
    const report = await a.readinessReport({
      cluster: input.cluster,
      from: full.from,
      hops: full.hops,
      policy,
      ...(this.plan.workerHops ? { workerHops: this.plan.workerHops } : {}),
      ...(policy.drainTimeoutSeconds ? { drainTimeoutSeconds: policy.drainTimeoutSeconds } : {}),
    });
    // The alert gate fails closed: a Prometheus it cannot ask now would hold the first phase for good.
    if (report.alerts?.unreachable)
      throw ApplicationFailure.nonRetryable(`refusing to start: alerts: ${report.alerts.unreachable}`, WORKFLOW_FAILURE.PreflightBlocked);
    // With fixPrerequisites a hold the runbook fixes (etcd below 3.5.26) needs no acknowledgement: its step runs before the hop.
    const gate = gateFindings(report.findings, policy.acknowledge ?? [], policy.fixPrerequisites === true);
    // Alerts firing now hold no start: the control plane waits for them to clear (workflows/alert-gate.ts).
    const firing = gate.held.filter((f) => f.check === 'alert');
    const held = gate.held.filter((f) => f.check !== 'alert');
    const who = input.acknowledgedBy;
    const by = (ack: string) => {
      const why = who?.reasons?.[ack] ?? who?.reason;
      return who ? ` by ${who.by}${why ? ` (${why})` : ''}` : '';
    };
    for (const f of gate.acknowledged) rollout.note(`readiness: ${f.ack} acknowledged${by(f.ack)}: ${f.what}`);
    for (const f of gate.fixed) rollout.note(`readiness: ${f.ack} fixed by the runbook before ${f.hop}: ${f.what}; ${f.fix?.how ?? ''}`);
    const bare = new Set((inventory.barePods ?? []).map((p) => `drain-block:${p.namespace}/${p.name}`)); // already named
    for (const f of gate.warnings) if (!bare.has(f.ack)) rollout.note(`readiness: ${f.what}; ${f.todo}`);
    for (const p of report.problems) rollout.note(`readiness: could not read: ${p}`);
    for (const f of firing)
      rollout.note(`readiness: ${f.what}; the control plane of ${f.hop} waits while it fires (or acknowledge ${f.ack})`);
    if (held.length === 0) return report;
    const refusals = held.map(
      (f) => `${f.what} (hop ${f.hop}${f.node ? `, ${f.node}` : ''}: ${f.todo}; acknowledge with --acknowledge ${f.ack})`,
    );
    throw ApplicationFailure.nonRetryable(
      `refusing to start: readiness holds the upgrade: ${refusals.join('; ')}`,
      WORKFLOW_FAILURE.PreflightBlocked,
    );
  }

  /**
   * `--reversible`: the hops that run as a trial (rules/hop-reversibility.ts); one that cannot and is
   * not acknowledged (`reversible:<hop>`) refuses the start in the rule's one line.
   */
  private reversibleHops(full: UpgradePlan, facts?: ReversibilityFacts): string[] {
    const verdicts = planReversibility(full.from, full.hops, facts);
    const acks = this.input.reversible?.acknowledged ?? [];
    const refusal = reversibleRefusal(verdicts, acks);
    if (this.input.reversible?.autoCommit === true && autoCommitSoakSeconds(this.policy) === 0)
      throw ApplicationFailure.nonRetryable(
        'refusing to start: autoCommit needs a soak (soakSeconds or phaseSoakSeconds): a trial would commit as soon as its probes pass',
        WORKFLOW_FAILURE.PreflightBlocked,
      );
    if (refusal) throw ApplicationFailure.nonRetryable(`refusing to start: ${refusal}`, WORKFLOW_FAILURE.PreflightBlocked);
    for (const v of verdicts)
      this.rollout.note(
        v.reversible
          ? `reversible: ${v.hop} runs as a trial emulating ${v.emulates}, then waits at gate commit-${v.hop}`
          : `reversible: ${v.hop} acknowledged (${v.ack}), runs without a trial: ${v.reasons[0]?.text ?? ''}`,
      );
    return verdicts.filter((v) => v.reversible).map((v) => v.hop);
  }

  /** No run starts inside a blackout date (a `minor` one only when the run changes the minor): one line, until when and why. */
  private refuseInsideExclusion(full: UpgradePlan): void {
    if (this.exclusions.length === 0 || !patched(PATCH.exclusions)) return;
    const held = exclusionAt(
      this.exclusions,
      Date.now(),
      full.hops.some((h) => changesMinor(full.from, h)),
    );
    if (held)
      throw ApplicationFailure.nonRetryable(
        `refusing to start: inside the exclusion ${describeExclusion(held.exclusion)} until ${new Date(held.until).toISOString()}`,
        WORKFLOW_FAILURE.PreflightBlocked,
      );
  }

  /** A beforeRun hook that says no (onFailure fail) refuses the start in one line with its answer: a change ticket gates the run. */
  private async beforeRunHooks(): Promise<void> {
    const { rollout } = this;
    for (const hook of hooksAt(rollout.hooks, 'beforeRun')) {
      if (!patched(PATCH.changeHooks)) return;
      const event = hookEvent(rollout, 'beforeRun', {});
      try {
        const r = await a.runChangeHook({ cluster: this.input.cluster, hook: hook.name, point: 'beforeRun', event });
        rollout.note(`hook ${hook.name} at beforeRun: yes${r.answer ? ` (${r.answer})` : ''}`);
      } catch (err) {
        const why = err instanceof ActivityFailure && err.cause ? err.cause.message : (err as Error).message;
        if (hook.onFailure === 'ignore') rollout.note(`${why} (ignored: onFailure ignore)`);
        else throw ApplicationFailure.nonRetryable(`refusing to start: ${why}`, WORKFLOW_FAILURE.PreflightBlocked);
      }
    }
  }

  /** Every step judged again without the workers' steps: they stay at their version through the hops. */
  private withoutWorkers(full: UpgradePlan, inventory: Inventory): UpgradePlan {
    const workers = Object.keys(full.rollout.stageLabels).filter((n) => !full.rollout.controlPlanes.includes(n));
    const rollout = withoutNodes(full.rollout, workers);
    const steps = buildRunbook(full.hops, rollout, inventory.packageManager);
    this.rollout.note(`control planes only: the workers (${workers.join(', ') || 'none'}) keep their version`);
    return { ...full, rollout, steps, skew: checkRunbook(inventory.skew, steps) };
  }

  private refuseToStart(full: UpgradePlan, inventory: Inventory): void {
    if (!full.skew.compliant) throw skewFailure('refusing to start', full.skew.failure);
    const refusals = preflightRefusals(inventory, this.policy.acknowledge, {
      from: full.from,
      hops: full.hops,
      to: describeTarget(full.target),
    });
    if (refusals.length > 0)
      throw ApplicationFailure.nonRetryable(`refusing to start: ${refusals.join('; ')}`, WORKFLOW_FAILURE.PreflightBlocked);
    // Not a refusal: each such node's drain will stop and wait for the operator (skip or force).
    const moving = new Set(Object.keys(full.rollout.stageLabels));
    const { cluster } = this.input;
    for (const pod of inventory.barePods ?? []) {
      if (moving.has(pod.node))
        this.rollout.note(
          `the drain of ${pod.node} will block on ${pod.namespace}/${pod.name} (no controller): skewless resolve ${cluster} --node ${pod.node} --action skip|force when it does`,
        );
    }
  }

  /** Every hop from the cursor: its control plane (unless resumed past it), then its worker phases, then the skew check. */
  async hops(cursor: CarriedUpgrade['cursor']): Promise<void> {
    const { plan, rollout } = this;
    this.finishing = patched(PATCH.finishLeftBehind);
    for (let h = cursor.hop; h < plan.hops.length && !rollout.aborted(); h++) {
      this.hop = plan.hops[h] as string;
      this.status.hop = this.hop;
      // Skipped and quarantined nodes stay where they are; the rest of the plan goes on without them.
      const phases = withoutNodes(plan.rollout, [...this.status.skipped, ...(this.status.quarantined ?? [])]);
      const startPhase = h === cursor.hop ? cursor.phase : -1;
      const midPhase = h === cursor.hop && cursor.wave === true;
      if (startPhase < 0) await rollout.hooksAt('beforeHop', { hop: this.hop });
      if (startPhase < 0 && (rollout.aborted() || (await this.controlPlaneOf(phases)) === 'aborted')) break;
      // A hop in which the plan moves no worker (workers move once, at a later hop) is its control planes only.
      const workersMove = this.workersMove(phases);
      if (workersMove) await this.workerPhases(phases, h, startPhase, midPhase);
      if (rollout.aborted()) break;
      await this.verifyHop();
      // Workloads pile up on few nodes only where workers were drained: a control-plane-only hop has nothing to report.
      if (workersMove && !rollout.aborted() && patched(PATCH.concentrationReport))
        await reportConcentration(rollout, {
          hop: this.hop,
          rebalance: this.policy.rebalance === true,
          waitSeconds: this.policy.verifySeconds,
        });
      if (h + 1 < plan.hops.length) await this.continueIfLong({ hop: h + 1, phase: -1 });
    }
  }

  /**
   * A node's kubelet still to move in this hop: one the plan moves at this hop (a worker may sit a hop
   * out), below it as this run knows it (its status, carried across continue-as-new).
   */
  private kubeletMoves = (node: string) =>
    movesAtHop(this.plan.workerHops, node, this.hop) && (!this.finishing || isBelowHop(this.status.nodes[node]?.version, this.hop));

  /** Whether any worker of `rollout` moves in this hop (always, for a run that predates PATCH.workersOnce). */
  private workersMove(rollout: RolloutPlan): boolean {
    if (!this.plan.workerHops) return true;
    return rollout.phases.some((p) => p.kind !== 'control-plane' && p.nodes.some(this.kubeletMoves));
  }

  /** The hop's snapshot, kubeadm and control planes; they start inside a maintenance window, after which the cluster is read again. */
  private async controlPlaneOf(rollout: RolloutPlan): Promise<'aborted' | 'done'> {
    const { hop, finishing } = this;
    const { cluster } = this.input;
    const r = this.rollout;
    const waited = await waitForWindow(this.windowWait, 'control-plane');
    if (waited === 'aborted') return 'aborted';
    if (waited > 0) this.live = undefined;
    const readLive = async () => (this.live ??= await a.takeInventory({ cluster })).skew;
    const held = await quarantineHolds({ status: this.status, rollout: r, hop, live: readLive, forget: () => (this.live = undefined) });
    if (held === 'aborted') return 'aborted';
    await r.alerts.beforePhase('control-plane', hop);
    if (r.aborted()) return 'aborted';
    // Every step of this hop judged on the cluster as it is now, skipped nodes included.
    const live = (this.live ??= await a.takeInventory({ cluster }));
    const { workerHops } = this.plan;
    const check = checkRunbook(live.skew, buildRunbook([hop], rollout, undefined, finishing ? live.skew : undefined, workerHops));
    if (!check.compliant) throw skewFailure(`refusing hop ${hop}`, check.failure);
    // What an earlier run left behind is all this hop moves of a cluster already half-way through it.
    const work: HopWork = finishing ? hopWork(live.skew, hop, rollout, workerHops) : fullHopWork(hop, rollout, workerHops);
    const apiserverFrom = Object.fromEntries(live.skew.apiservers.map((x) => [x.node, x.version]));
    this.live = undefined;
    if (finishing) this.startHop(work);
    // The etcd patch step before the hop whose kubeadm brings etcd 3.6 (only when the operator asked: policy.fixPrerequisites).
    if (this.policy.fixPrerequisites === true && hop === etcdPatchHop(this.plan.hops) && patched(PATCH.etcdPatch)) {
      if ((await this.patchEtcd()) === 'aborted') return 'aborted';
    }
    await this.snapshot();
    r.setPhase('preflight');
    const [first] = this.plan.rollout.controlPlanes as [string];
    if (work.controlPlanes.length > 0) {
      // kubeadm plans only up to its own version: the first control plane gets the new kubeadm first.
      if (patched(PATCH.hopRepository)) await a.pointPackageRepository({ cluster, node: first, version: hop });
      await this.installFirstKubeadm(first);
      await a.kubeadmUpgradePlan({ cluster, node: first, version: hop });
    }
    await a.setStageLabels({ cluster, labels: rollout.stageLabels, owner: r.owner });
    r.setPhase('control-plane');
    if (this.isTrial(work)) {
      const trial = new ReversibleHop(r, this.status, {
        cluster,
        hop,
        emulates: trialMinor(hop),
        controlPlanes: work.controlPlanes,
        from: apiserverFrom,
        verifySeconds: this.policy.verifySeconds,
        ...this.trialSoak(),
      });
      if ((await trial.run()) === 'rolled-back') return 'aborted';
    } else
      for (const [i, cp] of work.controlPlanes.entries()) {
        await condition(() => r.aborted() !== undefined || !this.status.paused);
        if (r.aborted()) break;
        await this.runNode(cp, 'control-plane', { first: i === 0 && work.apply });
      }
    for (const cp of rollout.controlPlanes.filter(this.kubeletMoves))
      if (!r.aborted()) await r.window([cp], 1, (node) => this.runNode(node, 'node'));
    await r.checkProbes('control-plane', hop, this.policy.verifySeconds);
    await r.hooksAt('afterControlPlane', { hop });
    if (!r.aborted()) await r.alerts.afterPhase('control-plane', hop);
    // The workers' gate only where workers move; the soak after the control plane at every hop.
    const soak = this.soakAfter('control-plane');
    if (!r.aborted() && this.workersMove(rollout)) await r.gate(`workers-${hop}`, this.policy.approveWorkers ?? false, soak);
    else if (!r.aborted()) await r.gate(`soak-control-plane-${hop}`, false, soak);
    r.setPhase('workers');
    return 'done';
  }

  /** The trial's soak; with autoCommit (PATCH.reversibleAutoCommit) the longer of the canary's and the phases'. */
  private trialSoak(): { soakSeconds: number; autoCommit?: true } {
    if (this.input.reversible?.autoCommit === true && patched(PATCH.reversibleAutoCommit))
      return { soakSeconds: autoCommitSoakSeconds(this.policy), autoCommit: true };
    return { soakSeconds: this.soakAfter('control-plane') };
  }

  /** Whether this hop runs as a trial: asked and possible (plan.reversibleHops), and every control plane moves in it. */
  private isTrial(work: HopWork): boolean {
    const all = this.plan.rollout.controlPlanes;
    return (
      (this.plan.reversibleHops ?? []).includes(this.hop) &&
      work.apply &&
      work.controlPlanes.length === all.length &&
      all.every((cp) => work.controlPlanes.includes(cp))
    );
  }

  /**
   * The hop's kubeadm on the first control plane (kubeadm plans only up to its own version). The
   * install puts back the holds it lifted; should it fail without managing that (the host gone while
   * it re-holds), the holds read before it are put back here before the run fails, and said.
   */
  private async installFirstKubeadm(first: string): Promise<void> {
    const { cluster } = this.input;
    const install = () => a.installPackages({ cluster, node: first, version: this.hop, packages: ['kubeadm'] });
    if (!patched(PATCH.firstKubeadmHolds)) {
      await install();
      return;
    }
    const { held } = await a.readPackageHolds({ cluster, node: first });
    try {
      await install();
    } catch (err) {
      await CancellationScope.nonCancellable(async () => {
        // A failure to put them back is said, never thrown over the install's own failure.
        const r = await a.restorePackageHolds({ cluster, node: first, held }).catch(() => undefined);
        if (!r)
          this.rollout.note(`holds of ${first} not checked after its failed kubeadm install (held before: ${held.join(' ') || 'none'})`);
        else if (r.putBack.length > 0) this.rollout.note(`holds put back on ${first}: ${r.putBack.join(' ')}`);
      });
      throw err;
    }
  }

  /** An etcd snapshot on the first control plane, labelled `label` (the hop, or what it precedes), recorded in the status. */
  private async snapshot(label = this.hop): Promise<void> {
    this.rollout.setPhase('backup');
    const first = this.plan.rollout.controlPlanes[0] as string;
    const snap = await a.snapshotEtcd({ cluster: this.input.cluster, node: first, hop: label });
    const { remotePath, localPath, sizeBytes, sha256, revision } = snap;
    this.status.snapshots.push({ hop: label, remotePath, localPath, sizeBytes, sha256, revision });
  }

  /**
   * The etcd patch step (issue 35): every stacked member below the target 3.5 patch moved, followers
   * first and the leader last (rules/etcd-patch.ts), after a snapshot and with etcd whole (every member
   * up, one leader, the moved member at its new version) before the next member. A member it cannot
   * patch (not on 3.5) refuses the step; an abort stops it between two members.
   */
  private async patchEtcd(): Promise<'aborted' | 'done'> {
    const { hop } = this;
    const r = this.rollout;
    const { cluster } = this.input;
    const controlPlanes = [...this.plan.rollout.controlPlanes];
    const first = controlPlanes[0] as string;
    r.setPhase('etcd-patch');
    const read = await a.readEtcdMembers({ cluster, node: first, controlPlanes });
    const plan = applyRule(() => planEtcdPatch(read.members, read.target));
    for (const o of read.others) r.note(`etcd: member ${o} is on no control plane of the plan: the step leaves it alone`);
    if (plan.refused.length > 0)
      throw ApplicationFailure.nonRetryable(
        `refusing the etcd patch before ${hop}: ${plan.refused.map((x) => `${x.node}: ${x.why}`).join('; ')}`,
        WORKFLOW_FAILURE.PreflightBlocked,
      );
    if (plan.moves.length === 0) {
      r.note(`etcd: every member at ${plan.target} or newer before ${hop}: nothing to patch`);
      return 'done';
    }
    r.note(
      `etcd patch before ${hop}: ${plan.moves.map((m) => `${m.node} ${m.from} → ${m.to}`).join(', ')} (followers first, the leader last)`,
    );
    await a.checkEtcdHealth({ cluster, node: first });
    await this.snapshot(etcdPatchSnapshotLabel(hop, plan.target));
    r.setPhase('etcd-patch');
    for (const move of plan.moves) {
      if (r.aborted()) return 'aborted';
      await a.patchEtcdMember({ cluster, node: move.node, tag: move.to });
      const health = await a.checkEtcdHealth({ cluster, node: first, expect: { member: move.name, version: move.to } });
      r.note(`etcd: ${move.name} on ${move.node} at ${move.to}; every member up, leader ${health.leader ?? 'unknown'}`);
    }
    return 'done';
  }

  /** A hop starts every node again: pending if it moves in the hop, done if it is already there. */
  private startHop(work: HopWork): void {
    for (const [node, state] of Object.entries(this.status.nodes)) {
      if (this.status.skipped.includes(node) || this.status.quarantined?.includes(node)) continue;
      state.phase = work.kubelets.includes(node) || work.controlPlanes.includes(node) ? 'pending' : 'done';
    }
    this.rollout.updateMemo();
  }

  /** The canary and the batches; each phase starts inside a maintenance window (one in flight when it closes finishes its nodes). */
  private async workerPhases(rollout: RolloutPlan, h: number, startPhase: number, midPhase: boolean): Promise<void> {
    const r = this.rollout;
    const { policy, hop } = this;
    const phases = rollout.phases.filter((p) => p.kind !== 'control-plane');
    await r.runPhases(
      phases,
      {
        before: async (phase, k) => {
          if (k > startPhase) await this.continueIfLong({ hop: h, phase: k });
          // A phase this run took over between two of its waves was in flight: no window wait again.
          if (k === startPhase && midPhase) return 'go';
          return (await waitForWindow(this.windowWait, phase.stage)) === 'aborted' ? 'stop' : 'go';
        },
        // A batch of thousands adds a few events per node to this history: the next run can take over between waves.
        betweenWaves: (_phase, k) => this.continueIfLong({ hop: h, phase: k, wave: true }),
        nodes: (phase) => phase.nodes.filter(this.kubeletMoves),
        run: (node) => this.runNode(node, 'node'),
        hop,
        verifySeconds: policy.verifySeconds,
        afterCheck: () => r.updateMemo(),
        canaryGate: { name: `canary-${hop}`, approve: policy.approveAfterCanary ?? false, soakSeconds: this.soakAfter('canary') },
        phaseSoakSeconds: this.soakAfter('batch'),
        after: () => r.setPhase('workers'),
      },
      Math.max(0, startPhase),
    );
  }

  /**
   * The soak after a phase of `kind` (rules/policy.ts soakSecondsAfter). A run that predates the
   * soak after every phase keeps what it had: the canary's soak alone.
   */
  private soakAfter(kind: PhaseKind): number {
    const before = kind === 'canary' ? (this.policy.soakSeconds ?? 0) : 0;
    const now = soakSecondsAfter(this.policy, kind);
    return now !== before && patched(PATCH.phaseSoak) ? now : before;
  }

  private async verifyHop(): Promise<void> {
    this.rollout.setPhase('verify');
    const after = await a.takeInventory({ cluster: this.input.cluster });
    const skew = checkSkew(after.skew, { topology: 'kubeadm' });
    if (!skew.compliant)
      throw ApplicationFailure.nonRetryable(
        `after ${this.hop} the cluster breaks the skew policy: ${skew.violations.map((v) => v.rule).join('; ')}`,
        WORKFLOW_FAILURE.SkewViolation,
      );
    this.rollout.note(`hop ${this.hop} done`);
    this.rollout.notifier.emit('hop.done', `hop/${this.hop}`, `${this.input.cluster}: hop ${this.hop} done`, {
      hop: this.hop,
      hops: this.plan.hops,
    });
  }

  /** One node's step of this hop as its child workflow: the control-plane components, or drain → kubelet → uncordon. */
  private async runNode(node: string, step: NodeStepInput['step'], extra: Partial<NodeStepInput> = {}): Promise<NodeStepResult> {
    const { policy, hop, status } = this;
    const state = status.nodes[node];
    // A hook's halt answered by abort: the node is not started (its result says so to the phase).
    await this.rollout.hooksAt('beforeNode', { hop, node });
    if (this.rollout.aborted()) return { node, outcome: 'aborted', cordonedByUs: false, forced: [], resolutions: [] };
    const result = await this.rollout.runNodeStep(node, {
      step,
      running: step === 'control-plane' ? 'upgrading-control-plane' : 'draining',
      staticSummary: step === 'control-plane' ? `control plane of ${node} to v${hop}` : `${node}: drain, kubelet v${hop}, uncordon`,
      skippedNote: `skipped by the operator: stays cordoned at ${state?.version ?? state?.from ?? 'its old version'} until the run ends`,
      skippedUncordonedNote: `skipped by the operator before its cordon: never cordoned, stays in service at ${state?.version ?? state?.from ?? 'its old version'}`,
      input: {
        role: this.plan.rollout.controlPlanes.includes(node) ? 'control-plane' : 'worker',
        version: hop,
        kubeletTimeoutSeconds: policy.kubeletTimeoutSeconds,
        ...nodeStepPolicy(policy),
        // Workers only: a control plane's kubelet left behind would hold back every later hop's control plane.
        ...(policy.onDrainTimeout === 'quarantine' && step === 'node' && !this.plan.rollout.controlPlanes.includes(node)
          ? { onDrainTimeout: 'quarantine' as const }
          : {}),
        ...extra,
      },
    });
    const proof = result.outcome === 'quarantined' ? quarantineProof(status, this.plan.hops, hop, node) : undefined;
    if (proof) this.rollout.note(proof);
    const after = status.nodes[node] as NonNullable<typeof state>;
    if (result.outcome === 'done' && step === 'control-plane') after.phase = 'pending'; // its kubelet moves next
    if (result.outcome === 'done' && step === 'node') {
      after.version = hop;
      // The run drained it but the cordon is someone else's: it stays cordoned, and the result says so.
      if (this.finishing) after.cordonedBySomeoneElse = !result.cordonedByUs;
    }
    if (result.outcome === 'done') await this.rollout.hooksAt('afterNode', { hop, node });
    this.reportToFleet();
    return result;
  }

  /** Between hops and worker phases no child runs and no gate waits: the next run can take over. */
  private async continueIfLong(cursor: CarriedUpgrade['cursor']): Promise<void> {
    const info = workflowInfo();
    if (this.rollout.aborted() || !(info.continueAsNewSuggested || info.historyLength >= this.policy.continueAsNewAfterEvents)) return;
    // Between two waves the next run starts the phase again with the nodes still below the hop
    // (kubeletMoves), which only a finishing run tells apart; a run that predates it goes on as it did.
    if (cursor.wave && !(this.finishing && patched(PATCH.continueBetweenWaves))) return;
    await condition(allHandlersFinished);
    this.status.runs++;
    this.rollout.note(
      `continued as new at ${info.historyLength} events${cursor.wave ? ' between two waves of a phase' : ''} (run ${this.status.runs + 1})`,
    );
    const { from, hops, rollout, workerHops } = this.plan;
    const carriedPlan = {
      from,
      hops,
      rollout,
      ...(this.windows.length > 0 ? { windows: this.windows } : {}),
      ...(this.exclusions.length > 0 ? { exclusions: this.exclusions } : {}),
      ...(workerHops ? { workerHops } : {}),
      ...(this.rollout.notifier.sinks.length > 0 ? { notify: this.rollout.notifier.sinks } : {}),
      ...(this.rollout.hooks.length > 0 ? { hooks: this.rollout.hooks } : {}),
      ...(this.plan.reversibleHops ? { reversibleHops: this.plan.reversibleHops } : {}),
    };
    await this.rollout.notifier.started(); // the starts only, never a delivery
    await continueAsNew<typeof clusterUpgradeWorkflow>({ ...this.input, carried: { plan: carriedPlan, status: this.status, cursor } });
  }

  /** Aborted: undo our cordons and labels; done: hand the skipped nodes back and name what is left behind. */
  async end(): Promise<void> {
    const { rollout, status, plan, finishing } = this;
    const { cluster } = this.input;
    const reached = plan.hops.at(-1) ?? plan.from;
    const again = (to: string) => this.finishCommand(to);
    if (rollout.aborted()) {
      await rollout.compensate(this.planned.nodes);
      rollout.setPhase('aborted');
      // Aborted once every node was at the target: nothing is left to finish.
      const left = Object.values(status.nodes).some((n) => n.version !== reached);
      status.outcome = `${rollout.aborted()}; ${leftAs(status)}${finishing && left ? `; finish with: ${again(status.to)}` : ''}`;
      return;
    }
    // Skipped nodes go back into service at their old version: no node stays cordoned by this run.
    await rollout.handBack(status.skipped, (node) => `${node} uncordoned at ${status.nodes[node]?.version ?? 'its old version'} (skipped)`);
    const labels = await a.clearStageLabels({ cluster, owner: rollout.owner });
    // Nodes an earlier run quarantined that this one moved and uncordoned: their quarantine is over.
    for (const node of labels.released ?? []) rollout.note(`${node}: quarantine released (back in service)`);
    rollout.setPhase('done');
    if (finishing) {
      status.leftBehind = nodesLeftBehind(status);
      status.outcome = doneOutcome(status, reached, status.leftBehind, again);
    } else status.outcome = `upgraded to ${reached}${status.skipped.length ? `; ${leftAs(status)}` : ''}`;
  }
}

/** `1.34.2: w1, w2; 1.33.7, 1.34.2: old`: the workers grouped by the hops at which they move (a few names per group). */
function describeWorkerHops(workerHops: WorkerHops): string {
  const byHops = new Map<string, string[]>();
  for (const [node, hops] of Object.entries(workerHops)) byHops.set(hops.join(', '), [...(byHops.get(hops.join(', ')) ?? []), node]);
  const some = (nodes: string[]) => nodes.slice(0, 5).join(', ') + (nodes.length > 5 ? ` and ${nodes.length - 5} more` : '');
  return [...byHops].map(([hops, nodes]) => `${hops || 'no hop'}: ${some(nodes)}`).join('; ') || 'no worker';
}

function newStatus(input: UpgradeInput): UpgradeStatus {
  return {
    cluster: input.cluster,
    from: '',
    to: input.to,
    hops: [],
    phase: 'inventory',
    paused: false,
    nodes: {},
    gates: [],
    snapshots: [],
    events: [],
    skipped: [],
    runs: 0,
  };
}

/**
 * The memo answers "where is this upgrade" in the UI without a query, and `status` when no worker
 * answers: the same span and count as the run's status (rules/run-progress.ts), not nodes × hops.
 */
function upgradeMemo(status: UpgradeStatus): Record<string, unknown> {
  const { done, total } = nodeUpgradesDone(status);
  return { ...runSpan(status), hop: status.hop ?? null, ...progressMemo(status), progress: `${done}/${total} node upgrades` };
}

/** The minor a trial of `hop` emulates: the one below it. */
function trialMinor(hop: string): string {
  const v = parseVersion(hop);
  return minorOf({ major: v.major, minor: v.minor - 1 });
}
