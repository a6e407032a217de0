import {
  ApplicationFailure,
  condition,
  ContinueAsNew,
  continueAsNew,
  executeChild,
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
  fullHopWork,
  hopWork,
  isBelowHop,
  planUpgrade,
  withoutNodes,
  type HopWork,
  type MaintenanceWindow,
  type RolloutPlan,
  type UpgradePlan,
  type UpgradePolicy,
  UPGRADE_POLICY_KEYS,
  withDefaults,
} from '../rules/index.js';
import { activities as a } from './activities-proxy.js';
import { WORKFLOW_FAILURE } from '../contracts/failure-types.js';
import { fleetReporter } from './fleet-report.js';
import { PATCH } from './patches.js';
import { nodeUpgradeWorkflow, type NodeUpgradeInput, type NodeUpgradeResult } from './node-upgrade-workflow.js';
import { preflightRefusals } from './preflight.js';
import { rolloutControls } from './rollout-controls.js';
import { applyRule, refuseBadPolicy } from './rule-failure.js';
import { SEARCH_ATTRIBUTES } from './search-attributes.js';
import { compensate, doneOutcome, handBack, leftAs, nodesLeftBehind, skewFailure } from './upgrade-ending.js';
import { statusQuery, type UpgradeStatus } from './upgrade-messages.js';
import { waitForWindow, type WindowWaitContext } from './window-wait.js';

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
  /** Set only by the workflow itself when it continues as new: where the previous run stopped. */
  carried?: CarriedUpgrade;
}

/** What one run hands the next: the plan (not re-planned), the status so far, and the next safe point. */
export interface CarriedUpgrade {
  /** `windows`: the cluster's maintenance windows as read when the upgrade started (absent: none). */
  plan: { from: string; hops: string[]; rollout: RolloutPlan; windows?: MaintenanceWindow[] };
  status: UpgradeStatus;
  /** The hop to go on with, and its next worker phase (-1: the hop has not started). */
  cursor: { hop: number; phase: number };
}

const nowIso = () => new Date(Date.now()).toISOString(); // workflow time: deterministic on replay

/**
 * The durable upgrade of one cluster, workflow id `upgrade/<cluster>`: plan, then per hop the etcd
 * snapshot, the control planes one at a time, the canary and the batches, each node a child workflow.
 */
export async function clusterUpgradeWorkflow(input: UpgradeInput): Promise<UpgradeStatus> {
  const { cluster } = input;
  const policy = withDefaults(input.policy);
  const owner = workflowInfo().workflowId;
  const status: UpgradeStatus = input.carried?.status ?? {
    cluster,
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
  // Declared before the handlers: a signal buffered before the first await runs at setHandler.
  let hop = status.hop ?? '';
  const childId = (node: string) => `${owner}/${hop}/${node}`;
  /** Tells the fleet that started this upgrade, if one did, that it is blocked or moving again. */
  const reportToFleet = fleetReporter(status);
  /** The memo answers "where is this upgrade" in the UI without a query. */
  const memo = () => {
    const nodes = Object.values(status.nodes);
    return {
      from: status.from,
      to: status.to,
      hop: status.hop ?? null,
      phase: status.phase,
      paused: status.paused,
      progress: `${nodes.filter((n) => n.phase === 'done').length}/${nodes.length} nodes done`,
      blocked: Object.entries(status.nodes)
        .filter(([, n]) => n.phase === 'blocked')
        .map(([name]) => name),
      skipped: status.skipped,
    };
  };
  const c = rolloutControls({ cluster, status, statusQuery, childId, memo, noun: 'upgrade', onBlockedChange: reportToFleet });
  const { note, setPhase, updateMemo, gate } = c;
  const runNode = async (
    node: string,
    step: NodeUpgradeInput['step'],
    extra: Partial<NodeUpgradeInput> = {},
  ): Promise<NodeUpgradeResult> => {
    const role = plan.rollout.controlPlanes.includes(node) ? 'control-plane' : 'worker';
    const state = (status.nodes[node] ??= { phase: 'pending' });
    state.phase = step === 'control-plane' ? 'upgrading-control-plane' : 'draining';
    state.startedAt ??= nowIso();
    const result = await executeChild(nodeUpgradeWorkflow, {
      workflowId: childId(node),
      staticSummary: step === 'control-plane' ? `control plane of ${node} to v${hop}` : `${node}: drain, kubelet v${hop}, uncordon`,
      args: [
        {
          cluster,
          node,
          role,
          version: hop,
          step,
          owner,
          kubeletTimeoutSeconds: policy.kubeletTimeoutSeconds,
          verifySeconds: policy.verifySeconds,
          ...(policy.drainTimeoutSeconds ? { drainTimeoutSeconds: policy.drainTimeoutSeconds } : {}),
          ...(policy.hostRetrySeconds === undefined ? {} : { hostRetrySeconds: policy.hostRetrySeconds }),
          ...extra,
        },
      ],
    });
    state.phase = result.outcome === 'done' ? (step === 'control-plane' ? 'pending' : 'done') : result.outcome;
    state.finishedAt = nowIso();
    if (result.drainSeconds !== undefined) state.drainSeconds = (state.drainSeconds ?? 0) + result.drainSeconds;
    if (result.outcome === 'done' && step === 'node') {
      state.version = hop;
      // The run drained it but the cordon is someone else's: it stays cordoned, and the result says so.
      if (finishing) state.cordonedBySomeoneElse = !result.cordonedByUs;
    }
    delete state.blocked;
    reportToFleet();
    if (result.outcome === 'aborted') c.abort(`aborted at node ${node}`);
    if (result.outcome === 'skipped') {
      status.skipped.push(node);
      note(`${node} skipped by the operator: stays cordoned at ${state.version ?? state.from ?? 'its old version'} until the run ends`);
    }
    return result;
  };
  /** A hop starts every node again: pending if it moves in the hop, done if it is already there. */
  const startHop = (work: HopWork) => {
    for (const [node, state] of Object.entries(status.nodes)) {
      if (status.skipped.includes(node)) continue;
      state.phase = work.kubelets.includes(node) || work.controlPlanes.includes(node) ? 'pending' : 'done';
    }
    updateMemo();
  };
  /** Between hops and worker phases no child runs and no gate waits: the next run can take over. */
  const continueIfLong = async (cursor: CarriedUpgrade['cursor']) => {
    const info = workflowInfo();
    if (c.aborted() || !(info.continueAsNewSuggested || info.historyLength >= policy.continueAsNewAfterEvents)) return;
    await condition(allHandlersFinished);
    status.runs++;
    note(`continued as new at ${info.historyLength} events (run ${status.runs + 1})`);
    const carriedPlan = { from: plan.from, hops: plan.hops, rollout: plan.rollout, ...(windows.length > 0 ? { windows } : {}) };
    await continueAsNew<typeof clusterUpgradeWorkflow>({ ...input, carried: { plan: carriedPlan, status, cursor } });
  };

  let plan: CarriedUpgrade['plan'];
  let live: Awaited<ReturnType<typeof a.takeInventory>> | undefined;
  /** Disruptive phases start only inside these (the cluster configuration's `maintenanceWindows`). */
  let windows: MaintenanceWindow[] = input.carried?.plan.windows ?? [];
  const windowWait: WindowWaitContext = {
    status,
    get windows() {
      return windows;
    },
    aborted: () => c.aborted() !== undefined,
    setPhase,
  };
  if (input.carried) {
    plan = input.carried.plan;
  } else {
    refuseBadPolicy(input.policy, UPGRADE_POLICY_KEYS);
    if (patched(PATCH.exclusiveRollouts)) {
      // One rollout of a cluster at a time; the flow that started this upgrade (a blue/green run's
      // control-plane phase) is not another one.
      const other = await a.findRunningRollout({ cluster, ignore: [owner, workflowInfo().parent?.workflowId ?? owner] });
      if (other.running) {
        throw ApplicationFailure.nonRetryable(
          `refusing to start: ${other.workflowId ?? 'another rollout'} of ${cluster} is running (since ${other.startedAt ?? '?'}): upgrade once it ends`,
          WORKFLOW_FAILURE.RolloutRunning,
        );
      }
    }
    // Plan: the inventory, what the repository offers, and the rules' verdict, before touching anything.
    const inventory = await a.takeInventory({ cluster });
    live = inventory;
    windows = inventory.maintenanceWindows ?? [];
    // `to` only names a repository file that cannot offer the target in the failure (an argument: replay-safe).
    const available = await a.availableVersions({ cluster, node: inventory.skew.apiservers[0]?.node ?? '', to: input.to });
    let full: UpgradePlan = applyRule(() =>
      planUpgrade({ inventory: inventory.skew, to: input.to, available, policy, packageManager: inventory.packageManager }),
    );
    if (input.controlPlaneOnly) {
      // Every step judged again without the workers' steps: they stay at their version through the hops.
      const workers = Object.keys(full.rollout.stageLabels).filter((n) => !full.rollout.controlPlanes.includes(n));
      const rollout = withoutNodes(full.rollout, workers);
      const steps = buildRunbook(full.hops, rollout, inventory.packageManager);
      full = { ...full, rollout, steps, skew: checkRunbook(inventory.skew, steps) };
      note(`control planes only: the workers (${workers.join(', ') || 'none'}) keep their version`);
    }
    plan = full;
    Object.assign(status, { from: full.from, hops: full.hops });
    if (full.target.to !== input.to) {
      // An expression (latest-patch, next-minor): status and memo show the version it names.
      status.to = full.hops.at(-1) ?? full.from;
      note(`target ${describeTarget(full.target)}`);
    }
    const kubeletOf = new Map((inventory.skew.kubelets ?? []).map((k) => [k.node, k.version]));
    for (const [node, stage] of Object.entries(full.rollout.stageLabels)) {
      const from = kubeletOf.get(node);
      status.nodes[node] = { phase: 'pending', stage, ...(from ? { from, version: from } : {}) };
    }
    upsertSearchAttributes([
      { key: SEARCH_ATTRIBUTES.cluster, value: cluster },
      { key: SEARCH_ATTRIBUTES.fromVersion, value: full.from },
      { key: SEARCH_ATTRIBUTES.targetVersion, value: full.hops.at(-1) ?? full.from },
    ]);
    updateMemo();
    if (!full.skew.compliant) throw skewFailure('refusing to start', full.skew.failure);
    const refusals = preflightRefusals(inventory, policy.acknowledge, {
      from: full.from,
      hops: full.hops,
      to: describeTarget(full.target),
    });
    if (refusals.length > 0)
      throw ApplicationFailure.nonRetryable(`refusing to start: ${refusals.join('; ')}`, WORKFLOW_FAILURE.PreflightBlocked);
    // Not a refusal: each such node's drain will stop and wait for the operator (skip or force).
    const moving = new Set(Object.keys(full.rollout.stageLabels));
    for (const pod of inventory.barePods ?? []) {
      if (moving.has(pod.node))
        note(
          `the drain of ${pod.node} will block on ${pod.namespace}/${pod.name} (no controller): skewless resolve ${cluster} --node ${pod.node} --action skip|force when it does`,
        );
    }
  }

  const [first] = plan.rollout.controlPlanes as [string];
  const cursor = input.carried?.cursor ?? { hop: 0, phase: -1 };
  const finishing = patched(PATCH.finishLeftBehind);
  /** A node's kubelet still to move in this hop: below it as this run knows it (its status, carried across continue-as-new). */
  const kubeletMoves = (node: string) => !finishing || isBelowHop(status.nodes[node]?.version, hop);
  try {
    for (let h = cursor.hop; h < plan.hops.length && !c.aborted(); h++) {
      hop = plan.hops[h] as string;
      status.hop = hop;
      // Skipped nodes stay where they are; the rest of the plan goes on without them.
      const rollout = withoutNodes(plan.rollout, status.skipped);
      const workerPhases = rollout.phases.filter((p) => p.kind !== 'control-plane');
      const startPhase = h === cursor.hop ? cursor.phase : -1;
      if (startPhase < 0) {
        // The snapshot, kubeadm and every control plane start inside a maintenance window; after a
        // wait the cluster is read again.
        const waited = await waitForWindow(windowWait, 'control-plane');
        if (waited === 'aborted') break;
        if (waited > 0) live = undefined;
        // Every step of this hop judged on the cluster as it is now, skipped nodes included.
        live ??= await a.takeInventory({ cluster });
        const check = checkRunbook(live.skew, buildRunbook([hop], rollout, undefined, finishing ? live.skew : undefined));
        if (!check.compliant) throw skewFailure(`refusing hop ${hop}`, check.failure);
        // What an earlier run left behind is all this hop moves of a cluster already half-way through it.
        const work: HopWork = finishing ? hopWork(live.skew, hop, rollout) : fullHopWork(hop, rollout);
        live = undefined;
        if (finishing) startHop(work);
        setPhase('backup');
        const snap = await a.snapshotEtcd({ cluster, node: first, hop });
        status.snapshots.push({
          hop,
          remotePath: snap.remotePath,
          localPath: snap.localPath,
          sizeBytes: snap.sizeBytes,
          sha256: snap.sha256,
          revision: snap.revision,
        });
        setPhase('preflight');
        if (work.controlPlanes.length > 0) {
          // kubeadm plans only up to its own version: the first control plane gets the new kubeadm first.
          if (patched(PATCH.hopRepository)) await a.pointPackageRepository({ cluster, node: first, version: hop });
          await a.installPackages({ cluster, node: first, version: hop, packages: ['kubeadm'] });
          await a.kubeadmUpgradePlan({ cluster, node: first, version: hop });
        }
        await a.setStageLabels({ cluster, labels: rollout.stageLabels, owner });
        setPhase('control-plane');
        for (const [i, cp] of work.controlPlanes.entries()) {
          await condition(() => c.aborted() !== undefined || !status.paused);
          if (c.aborted()) break;
          await runNode(cp, 'control-plane', { first: i === 0 && work.apply });
        }
        for (const cp of rollout.controlPlanes.filter(kubeletMoves))
          if (!c.aborted()) await c.window([cp], 1, (node) => runNode(node, 'node'));
        if (!c.aborted()) await gate(`workers-${hop}`, policy.approveWorkers ?? false);
        setPhase('workers');
      }
      for (let k = Math.max(0, startPhase); k < workerPhases.length && !c.aborted(); k++) {
        if (k > startPhase) await continueIfLong({ hop: h, phase: k });
        const phase = workerPhases[k] as (typeof workerPhases)[number];
        // Each phase starts inside a maintenance window; a phase in flight when it closes finishes its nodes.
        if ((await waitForWindow(windowWait, phase.stage)) === 'aborted') break;
        const nodes = phase.nodes.filter(kubeletMoves);
        if (nodes.length === 0) continue; // every node of the phase is already at the hop: no verify, no gate
        await c.window(nodes, phase.maxUnavailable, (node) => runNode(node, 'node'));
        if (c.aborted()) break;
        await c.verifyWorkloads(phase.stage, hop, policy.verifySeconds);
        if (c.aborted()) break;
        updateMemo();
        if (phase.kind === 'canary') await gate(`canary-${hop}`, policy.approveAfterCanary ?? false, policy.soakSeconds);
        setPhase('workers');
      }
      if (c.aborted()) break;
      setPhase('verify');
      const after = await a.takeInventory({ cluster });
      const skew = checkSkew(after.skew, { topology: 'kubeadm' });
      if (!skew.compliant)
        throw ApplicationFailure.nonRetryable(
          `after ${hop} the cluster breaks the skew policy: ${skew.violations.map((v) => v.rule).join('; ')}`,
          WORKFLOW_FAILURE.SkewViolation,
        );
      note(`hop ${hop} done`);
      if (h + 1 < plan.hops.length) await continueIfLong({ hop: h + 1, phase: -1 });
    }
  } catch (err) {
    // continueAsNew() unwinds through here as an exception: the upgrade goes on in its next run.
    if (err instanceof ContinueAsNew && patched(PATCH.continueWithoutCompensation)) throw err;
    await compensate(cluster, owner, Object.keys(plan.rollout.stageLabels), status);
    setPhase('failed');
    throw err;
  }
  if (c.aborted()) {
    await compensate(cluster, owner, Object.keys(plan.rollout.stageLabels), status);
    setPhase('aborted');
    status.outcome = `${c.aborted()}; ${leftAs(status)}${finishing ? `; finish with: skewless upgrade --cluster ${cluster} --to ${status.to}` : ''}`;
  } else {
    // Skipped nodes go back into service at their old version: no node stays cordoned by this run.
    await handBack(cluster, owner, status.skipped, status);
    await a.clearStageLabels({ cluster, owner });
    setPhase('done');
    if (finishing) {
      status.leftBehind = nodesLeftBehind(status);
      status.outcome = doneOutcome(status, plan.hops.at(-1) ?? plan.from, status.leftBehind);
    } else {
      status.outcome = `upgraded to ${plan.hops.at(-1) ?? plan.from}${status.skipped.length ? `; ${leftAs(status)}` : ''}`;
    }
  }
  await condition(allHandlersFinished);
  return status;
}
