import {
  ApplicationFailure, condition, continueAsNew, executeChild, getExternalWorkflowHandle, setHandler, sleep,
  upsertMemo, upsertSearchAttributes, workflowInfo, allHandlersFinished,
} from '@temporalio/workflow';
import {
  buildRunbook, checkRunbook, checkSkew, describeTarget, planUpgrade, withoutNodes, type MaintenanceWindow, type RolloutPlan, type RolloutPolicy, type UpgradePlan,
} from '../rules/index.js';
import { activities as a } from './activities-proxy.js';
import { fleetReporter } from './fleet-report.js';
import { haltOf } from './halt.js';
import { recordGateWait, setBlockedNodes } from './metrics.js';
import { drainResolutionSignal } from './node-messages.js';
import { nodeUpgradeWorkflow, type NodeUpgradeInput, type NodeUpgradeResult } from './node-upgrade-workflow.js';
import { preflightRefusals } from './preflight.js';
import { applyRule } from './rule-failure.js';
import { SEARCH_ATTRIBUTES } from './search-attributes.js';
import { compensate, handBack, leftAs, skewFailure } from './upgrade-ending.js';
import {
  abortSignal, approveUpdate, nodeBlockedSignal, pauseSignal, resolveDrainUpdate, resumeSignal, statusQuery,
  type GateState, type HaltResolution, type HaltState, type UpgradeStatus,
} from './upgrade-messages.js';
import { waitForWindow, type WindowWaitContext } from './window-wait.js';

export interface UpgradePolicy extends RolloutPolicy {
  /** Wait for an `approve` update before the workers of each hop, and after each canary. */
  approveWorkers?: boolean;
  approveAfterCanary?: boolean;
  /** Soak after the canary when no approval is asked (seconds). */
  soakSeconds?: number;
  /** PDB findings ("namespace/name") the operator acknowledges, so they don't block the start. */
  acknowledge?: string[];
  drainTimeoutSeconds?: number;
  /**
   * How long a step on a host keeps retrying (a host refusing SSH or rebooting, a command timing out)
   * before its node is reported blocked and the operator asked (`skewless resolve`). Turned into an
   * attempt count over each host profile's backoff (activity-options.ts: withHostRetryBudget), so a
   * running attempt is never cut short. Default: the profiles' own budgets, about 7 minutes of backoff
   * for a host command.
   */
  hostRetrySeconds?: number;
  kubeletTimeoutSeconds?: number;
  verifySeconds?: number;
  /**
   * Continue as new at the next safe point (between hops, between worker phases) once the run's
   * history has this many events, or when the server suggests it. Default 4,000.
   */
  continueAsNewAfterEvents?: number;
}

export interface UpgradeInput {
  cluster: string;
  to: string;
  policy?: UpgradePolicy;
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

const DEFAULT_CONTINUE_AFTER_EVENTS = 4_000;
const nowIso = () => new Date(Date.now()).toISOString(); // workflow time: deterministic on replay

/**
 * The durable upgrade of one cluster, workflow id `upgrade/<cluster>`: plan, then per hop the etcd
 * snapshot, the control planes one at a time, the canary and the batches, each node a child workflow.
 */
export async function clusterUpgradeWorkflow(input: UpgradeInput): Promise<UpgradeStatus> {
  const { cluster } = input;
  const policy = input.policy ?? {};
  const owner = workflowInfo().workflowId;
  const status: UpgradeStatus = input.carried?.status ??
    { cluster, from: '', to: input.to, hops: [], phase: 'inventory', paused: false, nodes: {}, gates: [], snapshots: [], events: [], skipped: [], runs: 0 };
  const note = (text: string) => status.events.push(text);
  let aborted: string | undefined;
  /** The operator's answer to a halted rollout (status.halted). */
  let haltAnswer: HaltResolution | undefined;
  // Declared before the handlers: a signal buffered before the first await runs at setHandler.
  let hop = status.hop ?? '';
  const childId = (node: string) => `${owner}/${hop}/${node}`;
  /** Tells the fleet that started this upgrade, if one did, that it is blocked or moving again. */
  const reportToFleet = fleetReporter(status);

  /** The memo answers "where is this upgrade" in the UI without a query. */
  const updateMemo = () => {
    const nodes = Object.values(status.nodes);
    upsertMemo({
      from: status.from, to: status.to, hop: status.hop ?? null, phase: status.phase, paused: status.paused,
      progress: `${nodes.filter((n) => n.phase === 'done').length}/${nodes.length} nodes done`,
      blocked: Object.entries(status.nodes).filter(([, n]) => n.phase === 'blocked').map(([name]) => name),
      skipped: status.skipped,
    });
  };

  setHandler(statusQuery, () => status);
  setHandler(pauseSignal, (p) => { status.paused = true; note(`paused by ${p.by}${p.reason ? `: ${p.reason}` : ''}`); updateMemo(); });
  setHandler(resumeSignal, (p) => { status.paused = false; note(`resumed by ${p.by}`); updateMemo(); });
  setHandler(abortSignal, async (p) => {
    aborted = `aborted by ${p.by}${p.reason ? `: ${p.reason}` : ''}`;
    note(aborted);
    // A node waiting on a blocked drain would wait forever: it is told to abort too.
    for (const [node, state] of Object.entries(status.nodes)) {
      if (state.phase === 'blocked') {
        await getExternalWorkflowHandle(childId(node)).signal(drainResolutionSignal, { action: 'abort', by: p.by, ...(p.reason ? { comment: p.reason } : {}) });
      }
    }
  });
  setHandler(nodeBlockedSignal, ({ node, block, phase }) => {
    const state = (status.nodes[node] ??= { phase: 'pending' });
    if (block) {
      Object.assign(state, { phase: 'blocked', blocked: block });
      if (block.kind === 'StepFailed') note(`${node} blocked: ${block.summary} failed (${block.failure}, ${block.gaveUp}): ${block.message}`);
    } else Object.assign(state, { phase: phase ?? 'draining', blocked: undefined });
    updateMemo();
    setBlockedNodes(cluster, status.nodes);
    reportToFleet();
  });
  setHandler(approveUpdate, (approval) => {
    const gate = status.gates.find((g) => g.name === approval.gate && !g.approvedBy) as GateState;
    Object.assign(gate, { approvedBy: approval.by, ...(approval.comment ? { comment: approval.comment } : {}) });
    note(`gate ${gate.name} approved by ${approval.by}${approval.comment ? `: ${approval.comment}` : ''}`);
    return gate;
  }, {
    validator: (approval) => {
      if (!status.gates.some((g) => g.name === approval.gate && !g.approvedBy)) throw new Error(`no gate ${approval.gate} is waiting`);
      if (!approval.by) throw new Error('an approval needs a "by"');
    },
  });
  setHandler(resolveDrainUpdate, async (r) => {
    const comment = r.comment ? ` (${r.comment})` : '';
    if (r.node === undefined) {
      // A halted rollout: the loop after the phase checks again, or aborts.
      const halt = status.halted as HaltState;
      note(`workload check after ${halt.after} resolved by ${r.by}: ${r.action}${comment}`);
      haltAnswer = r;
      return halt;
    }
    const block = status.nodes[r.node]?.blocked;
    const what = block?.kind === 'StepFailed' ? `${block.step} of ${r.node}` : `drain of ${r.node}`;
    note(`${what} resolved by ${r.by}: ${r.action}${r.action === 'force' ? ` ${r.pods.join(',')}` : ''}${comment}`);
    const { node, ...resolution } = r;
    await getExternalWorkflowHandle(childId(node)).signal(drainResolutionSignal, resolution);
    return status.nodes[node] as NonNullable<UpgradeStatus['nodes'][string]>;
  }, {
    validator: (r) => {
      if (!['retry', 'skip', 'force', 'abort'].includes(r.action)) throw new Error(`unknown action ${String(r.action)}`);
      if (r.node === undefined) {
        if (!status.halted) throw new Error('the upgrade is not halted: name the blocked node');
        if (!status.halted.actions.includes(r.action)) throw new Error(`a halted rollout is retried or aborted, not ${r.action}`);
        return;
      }
      if (!status.nodes[r.node]) throw new Error(`no node ${r.node} in this upgrade`);
      const block = status.nodes[r.node]?.blocked;
      if (status.nodes[r.node]?.phase !== 'blocked' || !block) throw new Error(`node ${r.node} is not blocked`);
      if (block.kind === 'StepFailed' && !block.actions.includes(r.action)) {
        throw new Error(r.action === 'force'
          ? `force is for blocked drains; ${r.node} is blocked on a failed step (${block.step}): retry or abort`
          : `skip is not offered once ${r.node} has started to move to the new version (${block.step} failed): retry or abort`);
      }
      if (r.action === 'force' && (!Array.isArray(r.pods) || r.pods.length === 0)) throw new Error('force names the pods to delete');
    },
  });

  const setPhase = (phase: UpgradeStatus['phase']) => {
    status.phase = phase;
    upsertSearchAttributes([{ key: SEARCH_ATTRIBUTES.phase, value: phase }]);
    updateMemo();
  };
  const gate = async (name: string, needsApproval: boolean, soakSeconds = 0) => {
    if (!needsApproval && soakSeconds <= 0) return;
    const g: GateState = { name };
    status.gates.push(g);
    setPhase('gate');
    const since = Date.now();
    if (needsApproval) await condition(() => g.approvedBy !== undefined || aborted !== undefined);
    else {
      g.opensAt = new Date(Date.now() + soakSeconds * 1000).toISOString();
      note(`soak ${soakSeconds} s after ${name}`);
      await Promise.race([sleep(soakSeconds * 1000), condition(() => aborted !== undefined)]);
      g.approvedBy = 'soak';
    }
    recordGateWait(cluster, name, needsApproval ? 'approval' : 'soak', (Date.now() - since) / 1000);
  };
  const runNode = async (node: string, step: NodeUpgradeInput['step'], extra: Partial<NodeUpgradeInput> = {}): Promise<NodeUpgradeResult> => {
    const role = plan.rollout.controlPlanes.includes(node) ? 'control-plane' : 'worker';
    const state = (status.nodes[node] ??= { phase: 'pending' });
    state.phase = step === 'control-plane' ? 'upgrading-control-plane' : 'draining';
    state.startedAt ??= nowIso();
    const result = await executeChild(nodeUpgradeWorkflow, {
      workflowId: childId(node),
      staticSummary: step === 'control-plane' ? `control plane of ${node} to v${hop}` : `${node}: drain, kubelet v${hop}, uncordon`,
      args: [{ cluster, node, role, version: hop, step, owner, kubeletTimeoutSeconds: policy.kubeletTimeoutSeconds ?? 300,
        verifySeconds: policy.verifySeconds ?? 60, ...(policy.drainTimeoutSeconds ? { drainTimeoutSeconds: policy.drainTimeoutSeconds } : {}),
        ...(policy.hostRetrySeconds === undefined ? {} : { hostRetrySeconds: policy.hostRetrySeconds }), ...extra }],
    });
    state.phase = result.outcome === 'done' ? (step === 'control-plane' ? 'pending' : 'done') : result.outcome;
    state.finishedAt = nowIso();
    if (result.drainSeconds !== undefined) state.drainSeconds = (state.drainSeconds ?? 0) + result.drainSeconds;
    if (result.outcome === 'done' && step === 'node') state.version = hop;
    delete state.blocked;
    reportToFleet();
    if (result.outcome === 'aborted') aborted ??= `aborted at node ${node}`;
    if (result.outcome === 'skipped') {
      status.skipped.push(node);
      note(`${node} skipped by the operator: stays cordoned at ${state.version ?? state.from ?? 'its old version'} until the run ends`);
    }
    return result;
  };
  /** A node waiting on a failed step: something is wrong with hosts or nodes, so no other node starts. */
  const stepBlocked = () => Object.values(status.nodes).some((n) => n.phase === 'blocked' && n.blocked?.kind === 'StepFailed');
  /**
   * Runs a phase's nodes with at most `width` in flight, never starting one while paused, aborted or
   * while a node waits on a failed step. (A drain blocked by a PDB holds only its own slot: its node
   * is cordoned and untouched, and the next node's drain asks the same PDB, which protects itself.)
   */
  const window = async (nodes: string[], width: number) => {
    let inFlight = 0;
    const running: Promise<unknown>[] = [];
    for (const node of nodes) {
      await condition(() => aborted !== undefined || (!status.paused && inFlight < width && !stepBlocked()));
      if (aborted) break;
      inFlight++;
      running.push(runNode(node, 'node').finally(() => inFlight--));
    }
    await Promise.all(running);
  };
  /**
   * After a phase of workers, "Ready is not working" until the workloads say so: a failed check
   * halts the rollout (status.halted names the workloads) until the operator retries it or aborts.
   */
  const verifyWorkloads = async (after: string) => {
    for (;;) {
      try {
        await a.checkWorkloads({ cluster, waitSeconds: policy.verifySeconds ?? 60, require: true });
        return;
      } catch (err) {
        const halt = haltOf(err, after, hop);
        if (!halt) throw err;
        status.halted = halt;
        haltAnswer = undefined;
        note(`halted after ${after}: ${halt.message}`);
        upsertMemo({ halted: after });
        reportToFleet();
        await condition(() => haltAnswer !== undefined || aborted !== undefined);
        delete status.halted;
        upsertMemo({ halted: null });
        reportToFleet();
        const answer = haltAnswer as HaltResolution | undefined;
        if (answer?.action === 'abort') aborted ??= `aborted by ${answer.by}${answer.comment ? `: ${answer.comment}` : ''}`;
        if (aborted) return;
      }
    }
  };
  /** Between hops and worker phases no child runs and no gate waits: the next run can take over. */
  const continueIfLong = async (cursor: CarriedUpgrade['cursor']) => {
    const info = workflowInfo();
    if (aborted || !(info.continueAsNewSuggested || info.historyLength >= (policy.continueAsNewAfterEvents ?? DEFAULT_CONTINUE_AFTER_EVENTS))) return;
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
  const windowWait: WindowWaitContext = { status, get windows() { return windows; }, aborted: () => aborted !== undefined, setPhase };
  if (input.carried) {
    plan = input.carried.plan;
  } else {
    const retry = policy.hostRetrySeconds;
    if (retry !== undefined && !(typeof retry === 'number' && Number.isFinite(retry) && retry >= 0)) {
      throw ApplicationFailure.nonRetryable(`refusing to start: hostRetrySeconds must be a number of seconds ≥ 0, got ${JSON.stringify(retry)}`, 'InvalidPolicy');
    }
    // Plan: the inventory, what the repository offers, and the rules' verdict, before touching anything.
    const inventory = await a.takeInventory({ cluster });
    live = inventory;
    windows = inventory.maintenanceWindows ?? [];
    const available = await a.availableVersions({ cluster, node: inventory.skew.apiservers[0]?.node ?? '' });
    const full: UpgradePlan = applyRule(() => planUpgrade({ inventory: inventory.skew, to: input.to, available, policy }));
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
    const refusals = preflightRefusals(inventory, policy.acknowledge, { from: full.from, hops: full.hops, to: describeTarget(full.target) });
    if (refusals.length > 0) throw ApplicationFailure.nonRetryable(`refusing to start: ${refusals.join('; ')}`, 'PreflightBlocked');
  }

  const [first] = plan.rollout.controlPlanes as [string];
  const cursor = input.carried?.cursor ?? { hop: 0, phase: -1 };
  try {
    for (let h = cursor.hop; h < plan.hops.length && !aborted; h++) {
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
        const check = checkRunbook(live.skew, buildRunbook([hop], rollout));
        if (!check.compliant) throw skewFailure(`refusing hop ${hop}`, check.failure);
        live = undefined;
        setPhase('backup');
        const snap = await a.snapshotEtcd({ cluster, node: first, hop });
        status.snapshots.push({ hop, remotePath: snap.remotePath, localPath: snap.localPath, sizeBytes: snap.sizeBytes, sha256: snap.sha256, revision: snap.revision });
        setPhase('preflight');
        // kubeadm plans only up to its own version: the first control plane gets the new kubeadm first.
        await a.installPackages({ cluster, node: first, version: hop, packages: ['kubeadm'] });
        await a.kubeadmUpgradePlan({ cluster, node: first, version: hop });
        await a.setStageLabels({ cluster, labels: rollout.stageLabels, owner });
        setPhase('control-plane');
        for (const [i, cp] of rollout.controlPlanes.entries()) {
          await condition(() => aborted !== undefined || !status.paused);
          if (aborted) break;
          await runNode(cp, 'control-plane', { first: i === 0 });
        }
        for (const cp of rollout.controlPlanes) if (!aborted) await window([cp], 1);
        if (!aborted) await gate(`workers-${hop}`, policy.approveWorkers ?? false);
        setPhase('workers');
      }
      for (let k = Math.max(0, startPhase); k < workerPhases.length && !aborted; k++) {
        if (k > startPhase) await continueIfLong({ hop: h, phase: k });
        const phase = workerPhases[k] as (typeof workerPhases)[number];
        // Each phase starts inside a maintenance window; a phase in flight when it closes finishes its nodes.
        if (await waitForWindow(windowWait, phase.stage) === 'aborted') break;
        await window(phase.nodes, phase.maxUnavailable);
        if (aborted) break;
        await verifyWorkloads(phase.stage);
        if (aborted) break;
        updateMemo();
        if (phase.kind === 'canary') await gate(`canary-${hop}`, policy.approveAfterCanary ?? false, policy.soakSeconds ?? 0);
        setPhase('workers');
      }
      if (aborted) break;
      setPhase('verify');
      const after = await a.takeInventory({ cluster });
      const skew = checkSkew(after.skew, { topology: 'kubeadm' });
      if (!skew.compliant) throw ApplicationFailure.nonRetryable(`after ${hop} the cluster breaks the skew policy: ${skew.violations.map((v) => v.rule).join('; ')}`, 'SkewViolation');
      note(`hop ${hop} done`);
      if (h + 1 < plan.hops.length) await continueIfLong({ hop: h + 1, phase: -1 });
    }
  } catch (err) {
    await compensate(cluster, owner, Object.keys(plan.rollout.stageLabels), status);
    setPhase('failed');
    throw err;
  }
  if (aborted) {
    await compensate(cluster, owner, Object.keys(plan.rollout.stageLabels), status);
    setPhase('aborted');
    status.outcome = `${aborted}; ${leftAs(status)}`;
  } else {
    // Skipped nodes go back into service at their old version: no node stays cordoned by this run.
    await handBack(cluster, owner, status.skipped, status);
    await a.clearStageLabels({ cluster, owner });
    setPhase('done');
    status.outcome = `upgraded to ${plan.hops.at(-1) ?? plan.from}${status.skipped.length ? `; ${leftAs(status)}` : ''}`;
  }
  await condition(allHandlersFinished);
  return status;
}
