import { ApplicationFailure, Context } from '@temporalio/activity';
import { ErrorType } from './errors.js';
import { SETTING_LIMITS } from '../contracts/time-limits.js';

/** The activity context when there is one: plain unit calls run without it. */
function context(): Context | undefined {
  try {
    return Context.current();
  } catch {
    return undefined; // deliberate: outside a worker there is no context, and checks still run
  }
}

export function heartbeat(details: unknown): void {
  context()?.heartbeat(details);
}

/** The activity's cancellation, so I/O (fetch, sleeps) stops when the workflow cancels. */
export function cancellationSignal(): AbortSignal | undefined {
  return context()?.cancellationSignal;
}

function pause(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

/** Longest `waitSeconds` a check accepts: under the healthCheck profile's startToClose (contracts/time-limits.ts). */
export const MAX_WAIT_SECONDS = SETTING_LIMITS.verifySeconds.max;

export function waitSecondsOf(input: { waitSeconds?: unknown }): number {
  const w = input.waitSeconds ?? 0;
  if (typeof w !== 'number' || !Number.isFinite(w) || w < 0 || w > MAX_WAIT_SECONDS) {
    throw ApplicationFailure.create({
      type: ErrorType.Invalid,
      message: `waitSeconds must be a number from 0 to ${MAX_WAIT_SECONDS}, got ${JSON.stringify(w)}`,
      nonRetryable: true,
    });
  }
  return w;
}

/** Heartbeat details stay small: a long list of failures is summarised, never sent whole. */
function progress(what: string, attempt: number, result: unknown): unknown {
  const text = JSON.stringify(result) ?? '';
  return text.length <= 4000 ? { check: what, attempt, result } : { check: what, attempt, healthy: false, truncated: true };
}

/**
 * Runs `check` until it reports healthy or `waitSeconds` have passed, heartbeating what is still
 * failing between attempts: Ready converges, so a check right after a restart may pass a moment
 * later. A slow attempt (a probe with a long timeout) heartbeats every 5 s while it runs, so the
 * profile's heartbeat timeout never mistakes it for a dead worker. Returns the last result either
 * way; the caller decides whether to throw.
 */
export async function pollUntilHealthy<R extends { healthy: boolean }>(
  what: string,
  waitSeconds: number,
  check: () => Promise<R>,
  intervalMs = 500,
): Promise<R> {
  const deadline = Date.now() + waitSeconds * 1000;
  for (let attempt = 1; ; attempt++) {
    const alive = setInterval(() => heartbeat({ check: what, attempt, running: true }), 5_000);
    let result: R;
    try {
      result = await check();
    } finally {
      clearInterval(alive);
    }
    if (result.healthy || Date.now() >= deadline) return result;
    heartbeat(progress(what, attempt, result));
    await pause(Math.min(intervalMs, Math.max(0, deadline - Date.now())), cancellationSignal());
  }
}

/** The typed failure of a check that stayed unhealthy; details carry the whole (secret-free) result. */
export function unhealthy(
  type: typeof ErrorType.Unhealthy | typeof ErrorType.NodeNotReady,
  message: string,
  result: unknown,
): ApplicationFailure {
  return ApplicationFailure.create({ type, message, details: [result] });
}
