import { Context } from '@temporalio/activity';
import { WorkflowNotFoundError } from '@temporalio/client';

export interface RunningUpgrade {
  running: boolean;
  /** The running upgrade's run and start, when there is one. */
  runId?: string;
  startedAt?: string;
}

/**
 * Whether `upgrade/<cluster>` runs now, asked of Temporal through the worker's own client (no
 * cluster is touched). A scheduled run asks before it reads the cluster: a cluster in the middle of
 * someone's upgrade would otherwise look like a plan of its own, or like nothing to do.
 */
export async function findRunningUpgrade(input: { cluster: string }): Promise<RunningUpgrade> {
  try {
    const description = await Context.current().client.workflow.getHandle(`upgrade/${input.cluster}`).describe();
    if (description.status.name !== 'RUNNING') return { running: false };
    return { running: true, runId: description.runId, startedAt: description.startTime.toISOString() };
  } catch (err) {
    if (err instanceof WorkflowNotFoundError) return { running: false };
    throw err;
  }
}
