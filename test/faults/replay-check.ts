import type { Client } from '@temporalio/client';
import type { temporal } from '@temporalio/proto';
import { Worker } from '@temporalio/worker';
import { workflowBundle } from '../helpers/temporal-env.js';

/**
 * The run's history, every workflow and every run of it, replayed with the current workflow bundle
 * (test/replay's machinery: Worker.runReplayHistories): a crash that made the worker record a command
 * sequence the code would not make again is a nondeterminism a later worker would trip on.
 */

export interface RecordedHistory {
  workflowId: string;
  history: temporal.api.history.v1.IHistory;
}

/** Replays each history; one problem per history that does not replay. */
export async function replayHistories(histories: AsyncIterable<RecordedHistory> | Iterable<RecordedHistory>): Promise<{
  histories: number;
  problems: string[];
}> {
  const problems: string[] = [];
  let replayed = 0;
  for await (const r of Worker.runReplayHistories({ workflowBundle: await workflowBundle() }, histories)) {
    replayed++;
    if (r.error)
      problems.push(`${r.workflowId} (run ${r.runId}) does not replay with the current bundle: ${r.error.message.split('\n')[0]}`);
  }
  return { histories: replayed, problems };
}

export async function replayRunHistories(client: Client): Promise<{ histories: number; problems: string[] }> {
  const executions: { workflowId: string; runId: string }[] = [];
  for await (const e of client.workflow.list()) executions.push({ workflowId: e.workflowId, runId: e.runId });
  const fetched = async function* () {
    for (const e of executions)
      yield { workflowId: e.workflowId, history: await client.workflow.getHandle(e.workflowId, e.runId).fetchHistory() };
  };
  const result = await replayHistories(fetched());
  if (result.histories !== executions.length) result.problems.push(`replayed ${result.histories} of ${executions.length} histories`);
  if (executions.length === 0) result.problems.push('no history to replay');
  return result;
}
