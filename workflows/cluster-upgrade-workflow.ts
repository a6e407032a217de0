import {
  ApplicationFailure, CancellationScope, condition, executeChild, getExternalWorkflowHandle, setHandler, sleep,
  upsertSearchAttributes, workflowInfo, allHandlersFinished,
} from '@temporalio/workflow';
import { checkSkew, planUpgrade, type RolloutPolicy, type UpgradePlan } from '../rules/index.js';
import { activities as a } from './activities-proxy.js';
import { drainResolutionSignal } from './node-messages.js';
import { nodeUpgradeWorkflow, type NodeUpgradeInput, type NodeUpgradeResult } from './node-upgrade-workflow.js';
import { applyRule } from './rule-failure.js';
import { SEARCH_ATTRIBUTES } from './search-attributes.js';
import {
  abortSignal, approveUpdate, nodeBlockedSignal, pauseSignal, resolveDrainUpdate, resumeSignal, statusQuery,
  type GateState, type UpgradeStatus,
} from './upgrade-messages.js';

export interface UpgradePolicy extends RolloutPolicy {
  /** Wait for an `approve` update before the workers of each hop, and after each canary. */
  approveWorkers?: boolean;
  approveAfterCanary?: boolean;
  /** Soak after the canary when no approval is asked (seconds). */
  soakSeconds?: number;
  /** PDB findings ("namespace/name") the operator acknowledges, so they don't block the start. */
  acknowledge?: string[];
  drainTimeoutSeconds?: number;
  kubeletTimeoutSeconds?: number;
  verifySeconds?: number;
}

export interface UpgradeInput {
  cluster: string;
  to: string;
  policy?: UpgradePolicy;
}

/** The durable upgrade of one cluster, workflow id `upgrade/<cluster>`. */
export async function clusterUpgradeWorkflow(input: UpgradeInput): Promise<UpgradeStatus> {
  const { cluster } = input;
  const policy = input.policy ?? {};
  const owner = workflowInfo().workflowId;
  const status: UpgradeStatus = { cluster, from: '', to: input.to, hops: [], phase: 'inventory', paused: false, nodes: {}, gates: [], snapshots: [], events: [] };
  const note = (text: string) => status.events.push(text);
  let aborted: string | undefined;
  // Declared before the handlers: a signal buffered before the first await runs at setHandler.
  let hop = '';
  const childId = (node: string) => `${owner}/${hop}/${node}`;

  setHandler(statusQuery, () => status);
  setHandler(pauseSignal, (p) => { status.paused = true; note(`paused by ${p.by}${p.reason ? `: ${p.reason}` : ''}`); });
  setHandler(resumeSignal, (p) => { status.paused = false; note(`resumed by ${p.by}`); });
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
  setHandler(nodeBlockedSignal, ({ node, block }) => {
    const state = (status.nodes[node] ??= { phase: 'pending' });
    if (block) Object.assign(state, { phase: 'blocked', blocked: block });
    else Object.assign(state, { phase: 'draining', blocked: undefined });
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
    note(`drain of ${r.node} resolved by ${r.by}: ${r.action}${r.action === 'force' ? ` ${r.pods.join(',')}` : ''}${r.comment ? ` (${r.comment})` : ''}`);
    const { node, ...resolution } = r;
    await getExternalWorkflowHandle(childId(node)).signal(drainResolutionSignal, resolution);
    return status.nodes[node] as NonNullable<UpgradeStatus['nodes'][string]>;
  }, {
    validator: (r) => {
      if (status.nodes[r.node]?.phase !== 'blocked') throw new Error(`node ${r.node} is not blocked`);
      if (!['retry', 'skip', 'force', 'abort'].includes(r.action)) throw new Error(`unknown action ${String(r.action)}`);
      if (r.action === 'force' && (!Array.isArray(r.pods) || r.pods.length === 0)) throw new Error('force names the pods to delete');
    },
  });

  const setPhase = (phase: UpgradeStatus['phase']) => {
    status.phase = phase;
    upsertSearchAttributes([{ key: SEARCH_ATTRIBUTES.phase, value: phase }]);
  };
  const gate = async (name: string, needsApproval: boolean, soakSeconds = 0) => {
    if (!needsApproval && soakSeconds <= 0) return;
    const g: GateState = { name };
    status.gates.push(g);
    setPhase('gate');
    if (needsApproval) await condition(() => g.approvedBy !== undefined || aborted !== undefined);
    else {
      note(`soak ${soakSeconds} s after ${name}`);
      await Promise.race([sleep(soakSeconds * 1000), condition(() => aborted !== undefined)]);
      g.approvedBy = 'soak';
    }
  };
  const runNode = async (node: string, step: NodeUpgradeInput['step'], extra: Partial<NodeUpgradeInput> = {}): Promise<NodeUpgradeResult> => {
    const role = plan.rollout.controlPlanes.includes(node) ? 'control-plane' : 'worker';
    const state = (status.nodes[node] ??= { phase: 'pending' });
    state.phase = step === 'control-plane' ? 'upgrading-control-plane' : 'draining';
    const result = await executeChild(nodeUpgradeWorkflow, {
      workflowId: childId(node),
      args: [{ cluster, node, role, version: hop, step, owner, kubeletTimeoutSeconds: policy.kubeletTimeoutSeconds ?? 300,
        verifySeconds: policy.verifySeconds ?? 60, ...(policy.drainTimeoutSeconds ? { drainTimeoutSeconds: policy.drainTimeoutSeconds } : {}), ...extra }],
    });
    state.phase = result.outcome === 'done' ? (step === 'control-plane' ? 'pending' : 'done') : result.outcome;
    delete state.blocked;
    if (result.outcome === 'aborted') aborted ??= `aborted at node ${node}`;
    if (result.outcome === 'skipped') note(`${node} skipped: left cordoned at its old version`);
    return result;
  };
  /** Runs a phase's nodes with at most `width` in flight, never starting one while paused or aborted. */
  const window = async (nodes: string[], width: number) => {
    let inFlight = 0;
    const running: Promise<unknown>[] = [];
    for (const node of nodes) {
      await condition(() => aborted !== undefined || (!status.paused && inFlight < width));
      if (aborted) break;
      inFlight++;
      running.push(runNode(node, 'node').finally(() => inFlight--));
    }
    await Promise.all(running);
  };

  // Plan: the inventory, what the repository offers, and the rules' verdict, before touching anything.
  const inventory = await a.takeInventory({ cluster });
  const available = await a.availableVersions({ cluster, node: inventory.skew.apiservers[0]?.node ?? '' });
  const plan: UpgradePlan = applyRule(() => planUpgrade({ inventory: inventory.skew, to: input.to, available, policy }));
  Object.assign(status, { from: plan.from, hops: plan.hops });
  for (const [node, stage] of Object.entries(plan.rollout.stageLabels)) status.nodes[node] = { phase: 'pending', stage };
  upsertSearchAttributes([{ key: SEARCH_ATTRIBUTES.cluster, value: cluster }, { key: SEARCH_ATTRIBUTES.targetVersion, value: plan.hops.at(-1) ?? plan.from }]);
  if (!plan.skew.compliant) {
    const f = plan.skew.failure;
    throw ApplicationFailure.nonRetryable(`refusing to start: ${f?.step ? `step "${f.step.detail}" of ${f.step.hop}` : 'the cluster as it is'} breaks the skew policy: ${f?.violations.map((v) => `${v.component} on ${v.node} at ${v.version}: ${v.rule}`).join('; ')}`, 'SkewViolation');
  }
  const unacknowledged = inventory.pdbFindings.filter((f) => f.severity === 'error' && !(policy.acknowledge ?? []).includes(`${f.namespace}/${f.name}`));
  if (unacknowledged.length > 0) {
    throw ApplicationFailure.nonRetryable(`refusing to start: ${unacknowledged.map((f) => f.message).join('; ')} (acknowledge with namespace/name to proceed)`, 'PreflightBlocked');
  }
  const notReady = inventory.nodes.filter((n) => !n.ready).map((n) => n.name);
  if (notReady.length > 0) throw ApplicationFailure.nonRetryable(`refusing to start: nodes not Ready: ${notReady.join(', ')}`, 'PreflightBlocked');

  const [first] = plan.rollout.controlPlanes as [string];
  try {
    for (const h of plan.hops) {
      if (aborted) break;
      hop = h;
      status.hop = h;
      setPhase('backup');
      const snap = await a.snapshotEtcd({ cluster, node: first, hop });
      status.snapshots.push({ hop, remotePath: snap.remotePath, localPath: snap.localPath, sizeBytes: snap.sizeBytes, sha256: snap.sha256, revision: snap.revision });
      setPhase('preflight');
      // kubeadm plans only up to its own version: the first control plane gets the new kubeadm first.
      await a.installPackages({ cluster, node: first, version: hop, packages: ['kubeadm'] });
      await a.kubeadmUpgradePlan({ cluster, node: first, version: hop });
      await a.setStageLabels({ cluster, labels: plan.rollout.stageLabels, owner });
      setPhase('control-plane');
      for (const [i, cp] of plan.rollout.controlPlanes.entries()) {
        await condition(() => aborted !== undefined || !status.paused);
        if (aborted) break;
        await runNode(cp, 'control-plane', { first: i === 0 });
      }
      for (const cp of plan.rollout.controlPlanes) if (!aborted) await window([cp], 1);
      if (!aborted) await gate(`workers-${hop}`, policy.approveWorkers ?? false);
      setPhase('workers');
      for (const phase of plan.rollout.phases.filter((p) => p.kind !== 'control-plane')) {
        if (aborted) break;
        await window(phase.nodes, phase.maxUnavailable);
        if (aborted) break;
        await a.checkWorkloads({ cluster, waitSeconds: policy.verifySeconds ?? 60, require: true });
        if (phase.kind === 'canary') await gate(`canary-${hop}`, policy.approveAfterCanary ?? false, policy.soakSeconds ?? 0);
      }
      if (aborted) break;
      setPhase('verify');
      const after = await a.takeInventory({ cluster });
      const skew = checkSkew(after.skew, { topology: 'kubeadm' });
      if (!skew.compliant) throw ApplicationFailure.nonRetryable(`after ${hop} the cluster breaks the skew policy: ${skew.violations.map((v) => v.rule).join('; ')}`, 'SkewViolation');
      note(`hop ${hop} done`);
    }
  } catch (err) {
    await compensate(cluster, owner, Object.keys(plan.rollout.stageLabels), status);
    status.phase = 'failed';
    throw err;
  }
  if (aborted) {
    await compensate(cluster, owner, Object.keys(plan.rollout.stageLabels), status);
    setPhase('aborted');
    status.outcome = aborted;
  } else {
    await a.clearStageLabels({ cluster, owner });
    setPhase('done');
    status.outcome = `upgraded to ${plan.hops.at(-1) ?? plan.from}`;
  }
  await condition(allHandlersFinished);
  return status;
}

/** Undoes what this run did to scheduling, never versions: uncordon only our cordons, clear our labels. */
async function compensate(cluster: string, owner: string, nodes: string[], status: UpgradeStatus): Promise<void> {
  status.phase = 'compensating';
  await CancellationScope.nonCancellable(async () => {
    for (const node of nodes) {
      try {
        const r = await a.uncordonNode({ cluster, node, owner });
        if (r.changed) status.events.push(`compensation: uncordoned ${node}`);
      } catch (err) {
        status.events.push(`compensation: uncordon ${node} failed: ${(err as Error).message}`); // keep going: best effort
      }
    }
    await a.clearStageLabels({ cluster, owner }).catch((err: Error) => status.events.push(`compensation: clear labels failed: ${err.message}`));
  });
}
