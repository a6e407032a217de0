import { Context } from '@temporalio/activity';
import { METRICS } from '../contracts/metric-names.js';

/**
 * The bits of the activity context a long drain needs, tolerant of running outside an activity
 * (plain unit calls): then there is nothing to heartbeat to and nothing cancels.
 */
export interface DrainContext {
  signal?: AbortSignal;
  heartbeat(details: unknown): void;
  /** Details of the last heartbeat of a previous attempt, if this is a retry. */
  previousDetails: unknown;
  attempt: number;
  /** Counts one eviction a PodDisruptionBudget refused (skewless_evictions_refused); outside an activity, nothing. */
  evictionRefused(cluster: string): void;
  /** Counts one request the API server throttled (skewless_api_throttled); outside an activity, nothing. */
  apiThrottled(cluster: string): void;
}

export function drainContext(): DrainContext {
  let ctx: Context | undefined;
  try {
    ctx = Context.current();
  } catch {
    ctx = undefined; // not inside an activity: a direct call from a script or test
  }
  return {
    signal: ctx?.cancellationSignal,
    heartbeat: (details) => ctx?.heartbeat(details),
    previousDetails: ctx?.info.heartbeatDetails,
    attempt: ctx?.info.attempt ?? 1,
    evictionRefused: (cluster) =>
      ctx?.metricMeter
        .createCounter(METRICS.evictionsRefused, undefined, 'Eviction requests a PodDisruptionBudget refused')
        .add(1, { cluster }),
    apiThrottled: (cluster) =>
      ctx?.metricMeter
        .createCounter(METRICS.apiThrottled, undefined, 'Requests the API server throttled (429, Priority and Fairness)')
        .add(1, { cluster }),
  };
}

/** Throws the cancellation's own reason (a CancelledFailure inside an activity) once cancelled. */
export function throwIfCancelled(signal?: AbortSignal): void {
  if (signal?.aborted) throw signal.reason;
}
