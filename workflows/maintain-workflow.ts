import { ApplicationFailure, patched } from '@temporalio/workflow';
import {
  MAINTENANCE_POLICY_KEYS,
  planRollout,
  withDefaults,
  type MaintenancePolicy,
  type PlanNode,
  type RolloutPlan,
  type WithDefaults,
} from '../rules/index.js';
import type { MaintenancePlanFacts } from '../activities/maintenance.js';
import { WORKFLOW_FAILURE, type FailureType } from '../contracts/failure-types.js';
import { nodeWorkflowId } from '../contracts/workflow-ids.js';
import { activities as a } from './activities-proxy.js';
import { maintenanceStatusQuery, type MaintenanceStatus } from './maintenance-messages.js';
import { nodeStepPolicy } from './node-step-input.js';
import { progressMemo, Rollout } from './rollout.js';
import { waitForWindow, type WindowWaitContext } from './window-wait.js';
import { applyRule } from './rule-failure.js';
import { cappedNote, planWithinOpenChildren } from './open-children-cap.js';
import { SEARCH_ATTRIBUTES } from './search-attributes.js';
import { stillCordoned } from './upgrade-ending.js';
import { PATCH } from './patches.js';
import { failureReason } from './run-events.js';

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
  const run = new MaintenanceRun(input);
  run.rollout.registerHandlers();
  await run.rollout.start({
    policy: { given: input.policy, keys: MAINTENANCE_POLICY_KEYS },
    searchAttributes: [{ key: SEARCH_ATTRIBUTES.cluster, value: input.cluster }],
    alone: { then: 'maintain after it ends' },
  });
  // Pre-flight, read-only: nothing is cordoned or labelled before every check passed.
  const facts = await run.preflight();
  const plan = run.plan(facts);
  run.started(plan, facts);
  try {
    await run.phases(plan, facts);
  } catch (err) {
    await run.rollout.compensate(Object.keys(plan.stageLabels));
    run.rollout.setPhase('failed');
    await run.rollout.failed(failureReason(err), run.againCommand());
    throw err;
  }
  await run.end(plan);
  return run.rollout.ended();
}

/** One maintenance run: its status, plan and phases on the rollout core. */
class MaintenanceRun {
  readonly rollout: Rollout<MaintenanceStatus>;
  readonly policy: WithDefaults<MaintenancePolicy>;

  constructor(private readonly input: MaintainInput) {
    this.policy = withDefaults(input.policy);
    const status: MaintenanceStatus = {
      kind: 'maintenance',
      cluster: input.cluster,
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
    const memo = () => ({
      kind: 'maintenance',
      selector: status.selector ?? status.requested?.join(',') ?? null,
      ...progressMemo(status),
    });
    const childId = (node: string) => nodeWorkflowId(this.rollout.owner, node);
    this.rollout = new Rollout({ status, statusQuery: maintenanceStatusQuery, childId, memo, noun: 'maintenance run' });
  }

  /** The nodes and the pods on them judged before anything is touched. */
  async preflight(): Promise<MaintenancePlanFacts> {
    const { input, policy, rollout } = this;
    const { cluster } = input;
    const facts = await a.planMaintenance({
      cluster,
      ...(input.selector === undefined ? {} : { selector: input.selector }),
      ...(input.nodes === undefined ? {} : { nodes: input.nodes }),
      ...(policy.forcePods?.length ? { force: policy.forcePods } : {}),
      ...(policy.batchBy === undefined ? {} : { labelKeys: [policy.batchBy] }),
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
    rollout.status.forced = facts.forced;
    const unseen = (policy.forcePods ?? []).filter((p) => !facts.forced.includes(p));
    if (unseen.length) rollout.note(`forced pods not on the selected nodes (nothing to force): ${unseen.join(', ')}`);
    if (facts.forced.length) rollout.note(`forced by the operator, deleted by their node's drain: ${facts.forced.join(', ')}`);
    return facts;
  }

  plan(facts: MaintenancePlanFacts): RolloutPlan {
    const { policy, rollout } = this;
    const plan: RolloutPlan = planWithinOpenChildren(
      (maxOpenChildren) =>
        applyRule(() =>
          planRollout(
            facts.nodes.map((n): PlanNode => ({ name: n.name, role: n.role, ...(n.labels ? { labels: n.labels } : {}) })),
            {
              ...(policy.canary === undefined ? {} : { canary: policy.canary }),
              ...(policy.batchSize === undefined ? {} : { batchSize: policy.batchSize }),
              ...(policy.maxUnavailable === undefined ? {} : { maxUnavailable: policy.maxUnavailable }),
              ...(policy.batchBy === undefined ? {} : { batchBy: policy.batchBy }),
              ...(policy.batchOrder === undefined ? {} : { batchOrder: policy.batchOrder }),
            },
            { requireControlPlane: false, maxOpenChildren },
          ),
        ),
      (made) => made,
    );
    const capped = cappedNote(plan, `maxUnavailable ${String(policy.maxUnavailable)}`);
    if (capped) rollout.note(capped);
    for (const [node, stage] of Object.entries(plan.stageLabels)) rollout.status.nodes[node] = { phase: 'pending', stage };
    rollout.note(`maintenance of ${facts.nodes.length} nodes: ${plan.phases.map((p) => `${p.stage} ${p.nodes.join(',')}`).join('; ')}`);
    return plan;
  }

  /** Control planes one at a time (their phases hold one node each), then workers at most maxUnavailable at once. */
  async phases(plan: RolloutPlan, facts: MaintenancePlanFacts): Promise<void> {
    const { rollout, policy } = this;
    rollout.setPhase('preflight');
    await a.setStageLabels({ cluster: rollout.cluster, labels: plan.stageLabels, owner: rollout.owner });
    // Reboots are disruptive like an upgrade's phases: each starts only inside a maintenance window.
    const windowWait: WindowWaitContext = {
      status: rollout.status,
      windows: facts.maintenanceWindows ?? [],
      aborted: () => rollout.aborted() !== undefined,
      setPhase: (p) => rollout.setPhase(p),
    };
    await rollout.runPhases(plan.phases, {
      before: async (phase) => {
        if ((await waitForWindow(windowWait, phase.stage)) === 'aborted') return 'stop';
        rollout.setPhase(phase.kind === 'control-plane' ? 'control-plane' : 'workers');
        return 'go';
      },
      run: (node) =>
        rollout.runNodeStep(node, {
          step: 'maintain',
          running: 'draining',
          staticSummary: `${node}: drain, OS maintenance, reboot, uncordon`,
          skippedNote: 'skipped by the operator: stays cordoned, not maintained, until the run ends',
          skippedUncordonedNote: 'skipped by the operator before its cordon: never cordoned, stays in service, not maintained',
          input: {
            role: plan.controlPlanes.includes(node) ? 'control-plane' : 'worker',
            version: '',
            kubeletTimeoutSeconds: 300,
            ...nodeStepPolicy(policy),
            rebootTimeoutSeconds: policy.rebootTimeoutSeconds,
            // Every child gets the whole list: a drain only deletes the named pods it finds on its node.
            ...(facts.forced.length ? { force: facts.forced } : {}),
          },
        }),
      hop: '',
      verifySeconds: policy.verifySeconds,
      canaryGate: { name: 'canary-maintenance', approve: policy.approveAfterCanary ?? false, soakSeconds: policy.soakSeconds },
    });
  }

  /** The run's first event, to the cluster's `notify:` sinks (none for a run that predates PATCH.flowNotifications). */
  started(plan: RolloutPlan, facts: MaintenancePlanFacts): void {
    const { rollout, input } = this;
    if (!patched(PATCH.flowNotifications)) return;
    rollout.notifier.sinks = facts.notify ?? [];
    const nodes = Object.keys(plan.stageLabels).length;
    rollout.notifier.emit('run.started', 'started', `maintenance of ${input.cluster} started: ${nodes} nodes`, {
      flow: 'maintain',
      from: null,
      to: null,
      hops: [],
      nodes,
      controlPlanes: plan.controlPlanes.length,
      phases: plan.phases.map((p) => `${p.stage}: ${p.nodes.length}`),
      ...(input.selector === undefined ? { requested: input.nodes } : { selector: input.selector }),
    });
  }

  /** What maintains the nodes a failed run left (the same selection; a node already maintained is maintained again). */
  againCommand(): string {
    const { cluster, selector, nodes } = this.input;
    return `skewless maintain --cluster ${cluster} ${selector === undefined ? (nodes ?? []).map((n) => `--node ${n}`).join(' ') : `--selector '${selector}'`}`;
  }

  async end(plan: RolloutPlan): Promise<void> {
    const { rollout } = this;
    const { status } = rollout;
    const done = Object.entries(status.nodes)
      .filter(([, n]) => n.phase === 'done')
      .map(([name]) => name);
    if (rollout.aborted()) {
      await rollout.compensate(Object.keys(plan.stageLabels));
      rollout.setPhase('aborted');
      status.outcome = `${rollout.aborted()}; maintained: ${done.join(', ') || 'none'}; ${stillCordoned(status)}`;
      return;
    }
    // Skipped nodes go back into service unmaintained: no node stays cordoned by this run.
    await rollout.handBack(status.skipped, (node) => `${node} uncordoned at ${status.nodes[node]?.version ?? 'its old version'} (skipped)`);
    await a.clearStageLabels({ cluster: rollout.cluster, owner: rollout.owner });
    rollout.setPhase('done');
    const skipped = status.skipped.length ? `; skipped: ${status.skipped.join(', ')}` : '';
    status.outcome = `maintained ${done.length} nodes (${done.join(', ')})${skipped}; no node left cordoned by this run`;
  }
}
