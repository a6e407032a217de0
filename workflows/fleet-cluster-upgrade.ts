import {
  ActivityFailure,
  ChildWorkflowCancellationType,
  ChildWorkflowFailure,
  executeChild,
  ParentClosePolicy,
} from '@temporalio/workflow';
import { WorkflowExecutionAlreadyStartedError } from '@temporalio/common';
import { describeTarget, type FleetPolicy, type ReversibleRunInput } from '../rules/index.js';
import { clusterUpgradeWorkflow, type UpgradePolicy } from './cluster-upgrade-workflow.js';
import type { FleetClusterState } from './fleet-messages.js';
import { planLive } from './plan-live.js';
import { SEARCH_ATTRIBUTES } from './search-attributes.js';

/** What the plan of one cluster of a fleet says: the exact version to go to, or why there is nothing to do. */
export type ClusterPlan = { version: string } | { from: string; nothingToDo: string };

/**
 * Planned here first, as a schedule does: a cluster already where its target points is done
 * (nothing to do), not a failed upgrade; and the upgrade goes to the exact version planned now.
 */
export async function planCluster(c: FleetClusterState, policy: FleetPolicy): Promise<ClusterPlan> {
  const { plan } = await planLive({ cluster: c.cluster, to: c.to, policy, batchBy: policy.batchBy });
  const version = plan.hops.at(-1);
  if (version !== undefined) return { version };
  return {
    from: plan.from,
    nothingToDo: plan.target.nothingToDo ? describeTarget(plan.target) : `already at ${plan.from} (target ${c.to})`,
  };
}

/**
 * The cluster's upgrade as the child `upgrade/<cluster>` (its usual id, so every per-cluster command
 * works on it), abandoned, never cancelled, with the fleet: ending a fleet never stops an upgrade half way.
 */
export async function upgradeCluster(
  c: FleetClusterState,
  version: string,
  policy: FleetPolicy,
  fleet: string,
  reversible?: ReversibleRunInput,
) {
  return executeChild(clusterUpgradeWorkflow, {
    workflowId: c.workflowId,
    args: [{ cluster: c.cluster, to: version, policy: policy as UpgradePolicy, ...(reversible ? { reversible } : {}) }],
    parentClosePolicy: ParentClosePolicy.ABANDON,
    cancellationType: ChildWorkflowCancellationType.ABANDON,
    typedSearchAttributes: [{ key: SEARCH_ATTRIBUTES.fleet, value: fleet }],
    staticSummary: `fleet ${fleet}: ${c.stage} cluster ${c.cluster} to ${c.to}`,
  });
}

/** Why the cluster's attempt failed, on one line. */
export function failureMessage(c: FleetClusterState, err: unknown): string {
  return err instanceof WorkflowExecutionAlreadyStartedError
    ? `${c.workflowId} is already running (started outside this fleet): retry once it has ended, or skip`
    : rootMessage(err);
}

/** The root cause of a child's failure on one line (not "Child Workflow execution failed"). */
function rootMessage(err: unknown): string {
  let cause: unknown = err;
  while ((cause instanceof ChildWorkflowFailure || cause instanceof ActivityFailure) && cause.cause) cause = cause.cause;
  if (cause instanceof ActivityFailure) return `${cause.activityType} failed: ${cause.message}`;
  const e = cause as { message?: string; type?: string };
  return `${e.type ? `${e.type}: ` : ''}${(e.message ?? String(cause)).replace(/\s*\n\s*/g, ' ')}`;
}
