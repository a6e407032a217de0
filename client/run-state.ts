import type { Client, WorkflowHandle } from '@temporalio/client';
import type { QueryDefinition } from '@temporalio/common';
import { isClientError } from './temporal-sdk.js';
import { summarizeWorkflowFailure, type FailureSummary } from './workflow-failure.js';

/**
 * What a run is, read from what Temporal holds, and its worker's answer only when a worker gives one.
 *
 * A query needs a worker: without one the server holds it 30 s and then fails it. The operator's
 * "where is my upgrade" must not wait on that, so a query goes out only when the task queue has a
 * poller, and with a short deadline (a stopped worker stays listed as a poller for minutes).
 */

/** How long a worker gets to answer a query: a live one answers in milliseconds. */
export const QUERY_WAIT_MS = 5_000;

/**
 * gRPC codes of a query nobody answered: the deadline passed (the client cancels the call: CANCELLED,
 * measured; or DEADLINE_EXCEEDED), or the server saw no poller (FAILED_PRECONDITION).
 */
const UNANSWERED_CODES = new Set([1, 4, 9]);

export type Answer<T> = { value: T; noWorker?: undefined } | { value?: undefined; noWorker: string };

/** One line on the task queue's pollers, or undefined when some worker polled it recently. */
export async function missingWorker(client: Client, taskQueue: string): Promise<string | undefined> {
  const { pollers } = await client.workflowService.describeTaskQueue({ namespace: client.options.namespace, taskQueue: { name: taskQueue } });
  return (pollers?.length ?? 0) === 0 ? `no worker polls task queue ${taskQueue}` : undefined;
}

const isUnanswered = (err: unknown): boolean => {
  const code = (err as { cause?: { code?: unknown } })?.cause?.code ?? (err as { code?: unknown })?.code;
  return (err as Error)?.name === 'ServiceError' && typeof code === 'number' && UNANSWERED_CODES.has(code);
};

/** The run's answer to QUERY, or why no worker gave one (within QUERY_WAIT_MS). */
export async function queryIfServed<T>(client: Client, handle: WorkflowHandle, taskQueue: string, query: QueryDefinition<T>, waitMs = QUERY_WAIT_MS): Promise<Answer<T>> {
  const missing = await missingWorker(client, taskQueue);
  if (missing) return { noWorker: missing };
  try {
    return { value: await client.withDeadline(Date.now() + waitMs, () => handle.query(query)) };
  } catch (err) {
    if (!isUnanswered(err)) throw err;
    return { noWorker: `no worker answered on task queue ${taskQueue} within ${Math.round(waitMs / 1000)} s (a worker polled it recently: stopped or overloaded?)` };
  }
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
