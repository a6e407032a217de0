import { ApplicationFailure, type WorkflowFailedError } from '@temporalio/client';
import { EXIT } from './cli-support.js';

/**
 * Failure types that say the request itself is wrong (the rules' codes, the worker's lookup of the
 * cluster and its configuration): exit 2, like a bad flag. Any other failure (a pre-flight refusal
 * by the cluster's state, a step that failed) is exit 1.
 */
export const INVALID_REQUEST_TYPES: ReadonlySet<string> = new Set([
  'InvalidVersion', 'InvalidInventory', 'InvalidPolicy', 'Downgrade', 'MissingRelease', 'UnsupportedMajor', 'ClusterConfigInvalid', 'UnknownNode',
  // skewless bluegreen: pools the configuration lacks, a green pool that has nodes, no provisioning (pool-provisioning.ts).
  'BlueGreenInvalid',
]);

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
