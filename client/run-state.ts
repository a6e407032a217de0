import type { Client, WorkflowHandle } from '@temporalio/client';
import type { QueryDefinition } from '@temporalio/common';
import { isClientError } from './temporal-sdk.js';
import { CommandFailed } from './cli-support.js';
import { summarizeWorkflowFailure, type FailureSummary } from './workflow-failure.js';
import { pollUntil } from '../tooling/poll-until.js';

/**
 * What a run is, read from what Temporal holds, and its worker's answer only when a worker gives one.
 *
 * A query needs a worker: without one the server holds it 30 s and then fails it. The operator's
 * "where is my upgrade" must not wait on that, so a query gets a short deadline. The task queue's
 * pollers only word the answer: they cannot decide it, since a stopped worker stays listed for
 * minutes and a live one may poll a partition the description does not list (seen on the dev server:
 * no pollers listed while a worker served the queue).
 */

/** How long a worker gets to answer a query: a live one answers in milliseconds. */
export const QUERY_WAIT_MS = 5_000;

/** gRPC codes of a query whose deadline passed: the client cancels the call (CANCELLED, measured) or DEADLINE_EXCEEDED. */
const DEADLINE_CODES = new Set([1, 4]);
/** The server refused the query at once (FAILED_PRECONDITION): the run's first workflow task has not completed yet. */
const NOT_READY = 9;

/**
 * The worker's answer, or why there is none, as one classification (`noWorker`, for scripts too):
 * no worker answered in time, or none has answered the run yet (its first workflow task is still
 * open); `polled`: whether the task queue lists any poller.
 */
export type Answer<T> = { value: T; noWorker?: undefined } | { value?: undefined; noWorker: string; polled: boolean };

async function listsPollers(client: Client, taskQueue: string): Promise<boolean> {
  const { pollers } = await client.workflowService.describeTaskQueue({
    namespace: client.options.namespace,
    taskQueue: { name: taskQueue },
  });
  return (pollers?.length ?? 0) > 0;
}

const grpcCode = (err: unknown): number | undefined => {
  const code = (err as { cause?: { code?: unknown } })?.cause?.code ?? (err as { code?: unknown })?.code;
  return (err as Error)?.name === 'ServiceError' && typeof code === 'number' ? code : undefined;
};

/** The run's answer to QUERY, or why no worker gave one (within QUERY_WAIT_MS). */
export async function queryIfServed<T>(
  client: Client,
  handle: WorkflowHandle,
  taskQueue: string,
  query: QueryDefinition<T>,
  waitMs = QUERY_WAIT_MS,
): Promise<Answer<T>> {
  let notReady = false;
  try {
    return { value: await client.withDeadline(Date.now() + waitMs, () => handle.query(query)) };
  } catch (err) {
    const code = grpcCode(err);
    notReady = code === NOT_READY;
    if (!notReady && (code === undefined || !DEADLINE_CODES.has(code))) throw err;
  }
  const polled = await listsPollers(client, taskQueue);
  if (!polled) return { polled, noWorker: `no worker polls task queue ${taskQueue}` };
  return {
    polled,
    noWorker: notReady
      ? `no worker has answered on task queue ${taskQueue} yet (the run's first workflow task is still open; a worker polled it recently: stopped or overloaded?)`
      : `no worker answered on task queue ${taskQueue} within ${Math.round(waitMs / 1000)} s (a worker polled it recently: stopped or overloaded?)`,
  };
}

/** How a closed run ended, from its history (no worker needed): its result, or its failure. */
export type Ending<R> = { result: R; failure?: undefined } | { result?: undefined; failure: FailureSummary };

export async function runEnding<R>(handle: WorkflowHandle): Promise<Ending<R>> {
  try {
    return { result: (await handle.result()) as R };
  } catch (err) {
    if (!isClientError(err, 'WorkflowFailedError')) throw err;
    return { failure: summarizeWorkflowFailure(err) };
  }
}

/**
 * Returns once a worker polls `taskQueue`; a workflow started without one would wait forever, so after
 * 5 s without one this is the one line that says to start one (a worker may be starting: it waits a little).
 */
export async function untilAWorkerPolls(client: Client, taskQueue: string, waiting?: () => void): Promise<void> {
  const pollers = async () =>
    (await client.workflowService.describeTaskQueue({ namespace: client.options.namespace, taskQueue: { name: taskQueue } })).pollers
      ?.length ?? 0;
  await pollUntil(
    pollers,
    (n) => n > 0,
    () => {
      throw new CommandFailed(`no worker polls task queue ${taskQueue}; start one with "skewless worker --clusters-dir DIR"`);
    },
    { timeoutMs: 5000, intervalMs: 500, ...(waiting ? { onPending: () => waiting() } : {}) },
  );
}
