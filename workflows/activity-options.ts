import type { ActivityOptions } from '@temporalio/workflow';

/**
 * The one place that declares activity timeouts and retry policies. Every profile sets
 * startToCloseTimeout, a finite maximumInterval, a bounded attempt count and the error types
 * that must never be retried, so nothing relies on the SDK's infinite-retry default by accident.
 */

/** Short, read-only calls that answer in seconds. */
export const quickRead: ActivityOptions = {
  startToCloseTimeout: '30 seconds',
  retry: {
    initialInterval: '1 second',
    backoffCoefficient: 2,
    maximumInterval: '30 seconds',
    maximumAttempts: 10,
    nonRetryableErrorTypes: ['InvalidInput'],
  },
};
