import { ActivityFailure, ApplicationFailure, CancelledFailure, TimeoutFailure } from '@temporalio/workflow';
import type { StepBlock } from './node-messages.js';

const GAVE_UP: Record<string, StepBlock['gaveUp']> = {
  NON_RETRYABLE_FAILURE: 'not retryable',
  MAXIMUM_ATTEMPTS_REACHED: 'retries spent',
  TIMEOUT: 'timed out',
};

/**
 * What the operator is told when a step of a node's upgrade failed for good: the step, the failure
 * type, its message and why it was not retried further. Undefined for anything that is not an
 * activity's failure (a bug, or the workflow being cancelled): that fails the node's workflow.
 */
export function stepBlockOf(err: unknown, step: string, summary: string, skippable: boolean): StepBlock | undefined {
  if (!(err instanceof ActivityFailure) || err.cause instanceof CancelledFailure) return undefined;
  const cause = err.cause;
  const failure =
    cause instanceof ApplicationFailure
      ? (cause.type ?? 'Error')
      : cause instanceof TimeoutFailure
        ? `Timeout (${cause.timeoutType ?? 'unknown'})`
        : (cause?.name ?? 'Error');
  return {
    kind: 'StepFailed',
    step,
    summary,
    failure,
    message: cause?.message ?? err.message,
    gaveUp: GAVE_UP[String(err.retryState)] ?? 'other',
    actions: skippable ? ['retry', 'skip', 'abort'] : ['retry', 'abort'],
    pods: [],
  };
}
