// The bits of the activity context host activities use, tolerant of running outside an activity (a plain
// unit call): heartbeats become no-ops, there is no cancellation and no previous attempt's details.
import { Context } from '@temporalio/activity';

export interface HostActivityScope {
  heartbeat(details?: unknown): void;
  signal: AbortSignal | undefined;
  /** What the previous attempt last heartbeated (undefined on a first attempt or outside an activity). */
  previousDetails: unknown;
}

export function hostActivityScope(): HostActivityScope {
  let ctx: Context;
  try {
    ctx = Context.current();
  } catch {
    return { heartbeat: () => undefined, signal: undefined, previousDetails: undefined };
  }
  return { heartbeat: (d) => ctx.heartbeat(d), signal: ctx.cancellationSignal, previousDetails: ctx.info.heartbeatDetails };
}

/** Awaits `work`, heartbeating `details()` every `everyMs` meanwhile (long host commands send no progress of their own). */
export async function heartbeatWhile<T>(scope: HostActivityScope, details: () => unknown, work: Promise<T>, everyMs = 5_000): Promise<T> {
  scope.heartbeat(details());
  const timer = setInterval(() => scope.heartbeat(details()), everyMs);
  try {
    return await work;
  } finally {
    clearInterval(timer);
  }
}
