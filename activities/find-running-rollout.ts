import { Context } from '@temporalio/activity';
import { WorkflowNotFoundError } from '@temporalio/client';
import { ROLLOUT_KINDS, rolloutWorkflowId } from '../contracts/workflow-ids.js';

export interface RunningRollout {
  running: boolean;
  /** The running rollout's workflow id (`maintain/<cluster>`, ...), run and start, when there is one. */
  workflowId?: string;
  runId?: string;
  startedAt?: string;
}

/** Whether the workflow `workflowId` runs now, asked of Temporal through the worker's own client. */
async function runningWorkflow(workflowId: string): Promise<RunningRollout> {
  try {
    const description = await Context.current().client.workflow.getHandle(workflowId).describe();
    if (description.status.name !== 'RUNNING') return { running: false };
    return { running: true, workflowId, runId: description.runId, startedAt: description.startTime.toISOString() };
  } catch (err) {
    if (err instanceof WorkflowNotFoundError) return { running: false };
    throw err;
  }
}

/**
 * Whether `upgrade/<cluster>` runs now (no cluster is touched): the activity a scheduled run that
 * predates PATCH.exclusiveRollouts calls (its name is in histories). A scheduled run asks before it
 * reads the cluster: a cluster in the middle of someone's upgrade would otherwise look like a plan
 * of its own, or like nothing to do.
 */
export async function findRunningUpgrade(input: { cluster: string }): Promise<Omit<RunningRollout, 'workflowId'>> {
  const { workflowId: _id, ...found } = await runningWorkflow(rolloutWorkflowId('upgrade', input.cluster));
  return found;
}

/**
 * The first of the cluster's rollouts (upgrade, maintain, restore, bluegreen) that runs now, other
 * than the workflows in `ignore` (the caller and the rollout that started it): two rollouts
 * cordoning and restarting the same nodes under two plans is what this keeps from happening.
 */
export async function findRunningRollout(input: { cluster: string; ignore?: string[] }): Promise<RunningRollout> {
  for (const kind of ROLLOUT_KINDS) {
    const workflowId = rolloutWorkflowId(kind, input.cluster);
    if (input.ignore?.includes(workflowId)) continue;
    const found = await runningWorkflow(workflowId);
    if (found.running) return found;
  }
  return { running: false };
}
