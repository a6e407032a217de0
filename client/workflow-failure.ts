import type { WorkflowFailedError, WorkflowHandle } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import { INVALID_REQUEST } from '../contracts/failure-types.js';
import { isClientError } from './temporal-sdk.js';
import { EXIT, type CommandIo } from './cli-support.js';
import { printRecord } from './output.js';

/** Failure types that say the request itself is wrong: exit 2, like a bad flag (contracts/failure-types.ts). */
export const INVALID_REQUEST_TYPES: ReadonlySet<string> = INVALID_REQUEST;

export interface FailureSummary {
  /** The root cause's message on one line (not "Activity task failed"). */
  message: string;
  type?: string;
  exit: number;
}

/** The ApplicationFailure under WorkflowFailedError → (ChildWorkflowFailure →) ActivityFailure → …, as one line and an exit code. */
export function summarizeWorkflowFailure(err: WorkflowFailedError): FailureSummary {
  let cause: Error | undefined = err.cause;
  while (cause && !(cause instanceof ApplicationFailure) && cause.cause instanceof Error) cause = cause.cause;
  const root = cause ?? err;
  const type = root instanceof ApplicationFailure ? (root.type ?? undefined) : undefined;
  return {
    message: root.message.trim().replace(/\s*\n\s*/g, ' '),
    ...(type ? { type } : {}),
    exit: type !== undefined && INVALID_REQUEST_TYPES.has(type) ? EXIT.invalid : EXIT.notCompliant,
  };
}

/**
 * The exit status of a run that completed, for every command that reports an outcome (upgrade, watch,
 * status, fleet): 0 done, 4 done but nodes left behind, 1 ended otherwise (aborted).
 */
export const outcomeExit = (result: { phase?: string; leftBehind?: readonly unknown[] }): number =>
  result.phase !== 'done' ? EXIT.notCompliant : (result.leftBehind?.length ?? 0) > 0 ? EXIT.leftBehind : EXIT.ok;

/**
 * How a followed run ended, once it is no longer running: its outcome (exit 0 when done, 4 when done
 * but nodes were left behind, 1 when it ended otherwise, e.g. aborted) or its failure's root cause on stderr (exit 1, or 2 when the request
 * itself was wrong); with `json`, the last NDJSON record (`result` or `failed`).
 */
export async function reportRunEnding(
  handle: WorkflowHandle,
  cluster: string,
  what: string,
  io: CommandIo,
  json: boolean,
): Promise<number> {
  try {
    const result = (await handle.result()) as { phase: string; outcome?: string; leftBehind?: unknown[] };
    const exit = outcomeExit(result);
    if (json) printRecord(io, 'result', cluster, { exit, outcome: result.outcome ?? result.phase, status: result });
    else io.out(`${cluster}: ${result.outcome ?? result.phase}`);
    return exit;
  } catch (err) {
    if (!isClientError(err, 'WorkflowFailedError')) throw err;
    // The root cause (not "Activity task failed"), on stderr; exit 2 when the request itself was wrong.
    const failure = summarizeWorkflowFailure(err);
    if (json)
      printRecord(io, 'failed', cluster, {
        exit: failure.exit,
        message: failure.message,
        ...(failure.type ? { failureType: failure.type } : {}),
      });
    io.err(`skewless: ${what} of ${cluster} failed: ${failure.message}`);
    return failure.exit;
  }
}
