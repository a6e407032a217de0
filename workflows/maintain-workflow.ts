import {
  ApplicationFailure,
  allHandlersFinished,
  condition,
  executeChild,
  upsertSearchAttributes,
  workflowInfo,
} from '@temporalio/workflow';
import {
  MAINTENANCE_POLICY_KEYS,
  planRollout,
  withDefaults,
  type MaintenancePolicy,
  type PlanNode,
  type RolloutPlan,
} from '../rules/index.js';
import { WORKFLOW_FAILURE, type FailureType } from '../contracts/failure-types.js';
import { activities as a } from './activities-proxy.js';
import { maintenanceStatusQuery, type MaintenanceStatus } from './maintenance-messages.js';
import { nodeUpgradeWorkflow, type NodeUpgradeResult } from './node-upgrade-workflow.js';
import { rolloutControls } from './rollout-controls.js';
import { waitForWindow, type WindowWaitContext } from './window-wait.js';
import { applyRule, refuseBadPolicy } from './rule-failure.js';
import { SEARCH_ATTRIBUTES } from './search-attributes.js';
import { compensate, handBack } from './upgrade-ending.js';

/**
 * Workers maintained first, on their own (canary, default 1), then batches of batchSize, at most
 * maxUnavailable out at once; the gate `canary-maintenance` (approveAfterCanary) or a soak; a reboot
 * waited for up to rebootTimeoutSeconds (default 600 s); forcePods, the pods no controller manages that
 * the operator lets go (without them the run refuses). Checked by rules/policy.ts.
 */
export type { MaintenancePolicy };

export interface MaintainInput {
  cluster: string;
  /** A label selector (`pool=blue`) or node names: exactly one. */
  selector?: string;
  nodes?: string[];
  policy?: MaintenancePolicy;
}

const nowIso = () => new Date(Date.now()).toISOString(); // workflow time: deterministic on replay
const refuse = (message: string, type: FailureType = WORKFLOW_FAILURE.PreflightBlocked) =>
  ApplicationFailure.nonRetryable(`refusing to start: ${message}`, type);

/**
 * OS maintenance of a set of nodes, workflow id `maintain/<cluster>`: control planes one at a time,
 * then the canary and batches of workers, each node a child workflow (`maintain/<cluster>/<node>`):
 * cordon → drain (PDBs honoured; a blocked drain waits for `skewless resolve`) → the cluster's
 * maintenance.command → reboot → SSH and Ready → pods back → uncordon; the workloads are checked
 * after each phase. Before anything is touched, pods that no controller manages on those nodes are
 * refused (they would not come back) unless forced by name. The operator controls are the upgrade's.
 */
export async function maintainWorkflow(input: MaintainInput): Promise<MaintenanceStatus> {
  const { cluster } = input;
  const policy = withDefaults(input.policy);
  const owner = workflowInfo().workflowId;
  const status: MaintenanceStatus = {
    kind: 'maintenance',
    cluster,
    phase: 'inventory',
    paused: false,
    nodes: {},
    gates: [],
    events: [],
    skipped: [],
    forced: [],
    ...(input.selector === undefined ? {} : { selector: input.selector }),
    ...(input.nodes === undefined ? {} : { requested: input.nodes }),
  };
  const memo = () => {
    const nodes = Object.values(status.nodes);
    return {
      kind: 'maintenance',
      selector: status.selector ?? status.requested?.join(',') ?? null,
      phase: status.phase,
      paused: status.paused,
      progress: `${nodes.filter((n) => n.phase === 'done').length}/${nodes.length} nodes done`,
      blocked: Object.entries(status.nodes)
        .filter(([, n]) => n.phase === 'blocked')
        .map(([name]) => name),
      skipped: status.skipped,
    };
  };
  const childId = (node: string) => `${owner}/${node}`;
  const c = rolloutControls({ cluster, status, statusQuery: maintenanceStatusQuery, childId, memo, noun: 'maintenance run' });
  const { note, setPhase } = c;

  refuseBadPolicy(input.policy, MAINTENANCE_POLICY_KEYS);
  upsertSearchAttributes([{ key: SEARCH_ATTRIBUTES.cluster, value: cluster }]);
  c.updateMemo();

  // Pre-flight, read-only: nothing is cordoned or labelled before every check passed.
  const other = await a.findRunningRollout({ cluster, ignore: [owner] });
  if (other.running)
    throw refuse(
      `${other.workflowId ?? 'another rollout'} is running (since ${other.startedAt ?? '?'}): maintain after it ends`,
      WORKFLOW_FAILURE.RolloutRunning,
    );
  const facts = await a.planMaintenance({
    cluster,
    ...(input.selector === undefined ? {} : { selector: input.selector }),
    ...(input.nodes === undefined ? {} : { nodes: input.nodes }),
    ...(policy.forcePods?.length ? { force: policy.forcePods } : {}),
  });
  if (!facts.hasCommand)
    throw refuse(
      `cluster ${cluster} has no maintenance.command in its configuration (the worker's ${cluster}.yaml)`,
      'ClusterConfigInvalid',
    );
  if (facts.missing.length > 0) throw refuse(`no node ${facts.missing.join(', ')} in cluster ${cluster}`, WORKFLOW_FAILURE.UnknownNode);
  if (facts.nodes.length === 0) throw refuse(`no node of ${cluster} matches ${input.selector ?? 'the names given'}`);
  const notReady = facts.nodes.filter((n) => !n.ready).map((n) => n.name);
  if (notReady.length > 0) throw refuse(`node ${notReady.join(', ')} is NotReady: a drain there would wait on pods that cannot move`);
  if (facts.unmanaged.length > 0) {
    throw refuse(
      `pods that no controller manages would not come back after the reboot: ${facts.unmanaged.map((p) => `${p.namespace}/${p.name} on ${p.node}`).join(', ')}; ` +
        'force each with --force-pod NAMESPACE/NAME to let it go',
      WORKFLOW_FAILURE.UnmanagedPods,
    );
  }
  status.forced = facts.forced;
  const unseen = (policy.forcePods ?? []).filter((p) => !facts.forced.includes(p));
  if (unseen.length) note(`forced pods not on the selected nodes (nothing to force): ${unseen.join(', ')}`);
  if (facts.forced.length) note(`forced by the operator, deleted by their node's drain: ${facts.forced.join(', ')}`);

  const plan: RolloutPlan = applyRule(() =>
    planRollout(
      facts.nodes.map((n): PlanNode => ({ name: n.name, role: n.role })),
      {
        ...(policy.canary === undefined ? {} : { canary: policy.canary }),
        ...(policy.batchSize === undefined ? {} : { batchSize: policy.batchSize }),
        ...(policy.maxUnavailable === undefined ? {} : { maxUnavailable: policy.maxUnavailable }),
      },
      { requireControlPlane: false },
    ),
  );
  for (const [node, stage] of Object.entries(plan.stageLabels)) status.nodes[node] = { phase: 'pending', stage };
  note(`maintenance of ${facts.nodes.length} nodes: ${plan.phases.map((p) => `${p.stage} ${p.nodes.join(',')}`).join('; ')}`);

  const runNode = async (node: string): Promise<NodeUpgradeResult> => {
    const role = plan.controlPlanes.includes(node) ? 'control-plane' : 'worker';
    const state = (status.nodes[node] ??= { phase: 'pending' });
    state.phase = 'draining';
    state.startedAt ??= nowIso();
    const result = await executeChild(nodeUpgradeWorkflow, {
      workflowId: childId(node),
      staticSummary: `${node}: drain, OS maintenance, reboot, uncordon`,
      args: [
        {
          cluster,
          node,
          role,
          version: '',
          step: 'maintain',
          owner,
          kubeletTimeoutSeconds: 300,
          verifySeconds: policy.verifySeconds,
          rebootTimeoutSeconds: policy.rebootTimeoutSeconds,
          // Every child gets the whole list: a drain only deletes the named pods it finds on its node.
          ...(facts.forced.length ? { force: facts.forced } : {}),
          ...(policy.drainTimeoutSeconds ? { drainTimeoutSeconds: policy.drainTimeoutSeconds } : {}),
          ...(policy.hostRetrySeconds === undefined ? {} : { hostRetrySeconds: policy.hostRetrySeconds }),
        },
      ],
    });
    state.phase = result.outcome;
    state.finishedAt = nowIso();
    if (result.drainSeconds !== undefined) state.drainSeconds = (state.drainSeconds ?? 0) + result.drainSeconds;
    delete state.blocked;
    if (result.outcome === 'aborted') c.abort(`aborted at node ${node}`);
    if (result.outcome === 'skipped') {
      status.skipped.push(node);
      note(`${node} skipped by the operator: stays cordoned, not maintained, until the run ends`);
    }
    return result;
  };

  const { verifySeconds } = policy;
  try {
    setPhase('preflight');
    await a.setStageLabels({ cluster, labels: plan.stageLabels, owner });
    // Reboots are disruptive like an upgrade's phases: each starts only inside a maintenance window.
    const windowWait: WindowWaitContext = {
      status,
      windows: facts.maintenanceWindows ?? [],
      aborted: () => c.aborted() !== undefined,
      setPhase,
    };
    for (const phase of plan.phases) {
      if (c.aborted()) break;
      if ((await waitForWindow(windowWait, phase.stage)) === 'aborted') break;
      setPhase(phase.kind === 'control-plane' ? 'control-plane' : 'workers');
      // Control planes one at a time (their phases hold one node each); workers at most maxUnavailable at once.
      await c.window(phase.nodes, phase.maxUnavailable, runNode);
      if (c.aborted()) break;
      await c.verifyWorkloads(phase.stage, '', verifySeconds);
      if (c.aborted()) break;
      if (phase.kind === 'canary') await c.gate('canary-maintenance', policy.approveAfterCanary ?? false, policy.soakSeconds);
    }
  } catch (err) {
    await compensate(cluster, owner, Object.keys(plan.stageLabels), status);
    setPhase('failed');
    throw err;
  }
  const done = Object.entries(status.nodes)
    .filter(([, n]) => n.phase === 'done')
    .map(([name]) => name);
  if (c.aborted()) {
    await compensate(cluster, owner, Object.keys(plan.stageLabels), status);
    setPhase('aborted');
    status.outcome = `${c.aborted()}; maintained: ${done.join(', ') || 'none'}; ${stillCordoned(status)}`;
  } else {
    // Skipped nodes go back into service unmaintained: no node stays cordoned by this run.
    await handBack(cluster, owner, status.skipped, status);
    await a.clearStageLabels({ cluster, owner });
    setPhase('done');
    status.outcome = `maintained ${done.length} nodes (${done.join(', ')})${status.skipped.length ? `; skipped: ${status.skipped.join(', ')}` : ''}; no node left cordoned by this run`;
  }
  await condition(allHandlersFinished);
  return status;
}

function stillCordoned(status: MaintenanceStatus): string {
  const stuck = status.events.filter((e) => e.startsWith('compensation: uncordon ')).map((e) => e.split(' ')[2]);
  return stuck.length ? `STILL CORDONED (uncordon failed): ${stuck.join(', ')}` : 'no node left cordoned by this run';
}
