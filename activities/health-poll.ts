import { ApplicationFailure, Context } from '@temporalio/activity';
import { ErrorType } from './errors.js';
import { pollUntil } from '../tooling/poll-until.js';
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
 * later; once a second at most (the API server is shared by every client). A slow attempt (a probe
 * with a long timeout) heartbeats every 5 s while it runs, so the profile's heartbeat timeout never
 * mistakes it for a dead worker. Returns the last result either way; the caller decides whether to throw.
 */
export async function pollUntilHealthy<R extends { healthy: boolean }>(
  what: string,
  waitSeconds: number,
  check: () => Promise<R>,
  intervalMs = 1_000,
): Promise<R> {
  const attempt = async (n: number): Promise<R> => {
    const alive = setInterval(() => heartbeat({ check: what, attempt: n, running: true }), 5_000);
    try {
      return await check();
    } finally {
      clearInterval(alive);
    }
  };
  return pollUntil(
    attempt,
    (r) => r.healthy,
    (last) => last,
    {
      timeoutMs: waitSeconds * 1000,
      intervalMs,
      signal: cancellationSignal(),
      onPending: (r, n) => heartbeat(progress(what, n, r)),
    },
  );
}

/** The typed failure of a check that stayed unhealthy; details carry the whole (secret-free) result. */
export function unhealthy(
  type: typeof ErrorType.Unhealthy | typeof ErrorType.NodeNotReady,
  message: string,
  result: unknown,
): ApplicationFailure {
  return ApplicationFailure.create({ type, message, details: [result] });
}
