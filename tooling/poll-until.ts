import { setTimeout as timer } from 'node:timers/promises';

/**
 * The one way to wait for something to become true, after testcontainers' IntervalRetry: try, judge
 * the result, give up once the time is up, else wait and try again. Activities and the CLI poll
 * through it (a Node Ready, a pod gone, etcd answering, a worker polling a queue); a wait that
 * becomes a watch later still reads as one call here.
 */
export interface PollOptions<T> {
  /** How long to keep trying, from the first attempt (Infinity: until done or cancelled). */
  timeoutMs: number;
  /** The wait between attempts: fixed, or by the number of the attempt that just failed (a backoff). */
  intervalMs: number | ((attempt: number) => number);
  /** Cancels the wait at once, rejecting with the signal's reason (an activity's CancelledFailure). */
  signal?: AbortSignal | undefined;
  /** Each result that is not done yet, before the wait: where an activity heartbeats its progress. */
  onPending?: (result: T, attempt: number) => void;
}

/**
 * Runs `attempt` until `done(result)` holds and returns that result; once `timeoutMs` have passed
 * after an attempt that is not done, returns `onTimeout(last)` instead (which throws the caller's
 * own message, or returns the last result). The last wait is cut to the deadline, so the last
 * attempt comes at it, not an interval past it.
 */
export function pollUntil<T, D extends T, U = never>(
  attempt: (n: number) => Promise<T>,
  done: (result: T) => result is D,
  onTimeout: (last: T) => U,
  options: PollOptions<T>,
): Promise<D | U>;
export function pollUntil<T, U = never>(
  attempt: (n: number) => Promise<T>,
  done: (result: T) => boolean,
  onTimeout: (last: T) => U,
  options: PollOptions<T>,
): Promise<T | U>;
export async function pollUntil<T, U>(
  attempt: (n: number) => Promise<T>,
  done: (result: T) => boolean,
  onTimeout: (last: T) => U,
  options: PollOptions<T>,
): Promise<T | U> {
  const deadline = Date.now() + options.timeoutMs;
  const interval = options.intervalMs;
  // Set once a wait was cut to the deadline: the attempt after it is the last, even when a timer
  // fired a millisecond early by the clock.
  let lastAttempt = false;
  for (let n = 1; ; n++) {
    options.signal?.throwIfAborted();
    const result = await attempt(n);
    if (done(result)) return result;
    if (lastAttempt || Date.now() >= deadline) return onTimeout(result);
    options.onPending?.(result, n);
    const wait = typeof interval === 'number' ? interval : interval(n);
    const left = deadline - Date.now();
    lastAttempt = wait >= left;
    await sleep(Math.min(wait, left), options.signal);
  }
}

/**
 * Waits `ms` (node:timers/promises). When `signal` aborts first it rejects with the signal's own
 * reason rather than Node's AbortError: an activity's cancellation then reaches Temporal as the
 * CancelledFailure it is (reset and pause included).
 */
export async function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  try {
    await timer(Math.max(0, ms), undefined, signal ? { signal } : {});
  } catch (err) {
    throw signal?.aborted ? (signal.reason ?? err) : err;
  }
}
