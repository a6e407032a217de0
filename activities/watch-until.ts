import { pollUntil, sleep } from '../tooling/poll-until.js';
import { cancellationSignal, heartbeat } from './health-poll.js';
import type { KubeWatch } from './kube-api.js';
import { ObjectWatch, type Listing, type Watched } from './object-watch.js';
import { countThrottled, throttledFor } from './throttling.js';
import { kubeFailure } from './errors.js';
import { ApiOutage } from './api-outage.js';

/** One collection a wait follows: where to watch it, and how to list it (with the same selectors). */
export interface WatchedCollection {
  /** What listing it is, for a failure's message ("list pods on worker-3"). */
  what: string;
  path: string;
  query?: Record<string, string>;
  /** The raw API call (its failure is typed here, once it is not worth repeating). */
  list: () => Promise<Listing<Watched>>;
}

export interface WatchWait<R> {
  /** What is waited for, in heartbeats ("node worker-3 Ready"). */
  what: string;
  cluster: string;
  waitSeconds: number;
  kube: KubeWatch | undefined;
  collections: WatchedCollection[];
  judge: (objects: Watched[][]) => R;
  /**
   * Heartbeats instead of the activity's plain one, for an activity whose heartbeat details carry its own
   * progress (a reboot's boot ID): the wait's details are merged into them.
   */
  beat?: (details: Record<string, unknown>) => void;
  /** Counts the lists made (the first of each collection and every relist): what the wait cost beside its watches. */
  calls?: { lists: number };
}

/** Without a watch (a narrow test double), or a wait of 0: one list of each collection a second at most. */
const LIST_INTERVAL_MS = 1_000;
/** Heartbeats while nothing changes: silence would look like a dead worker. */
const HEARTBEAT_MS = 5_000;
/** Judging every object is not free at 10,000 workloads: a burst of events is judged once. */
const JUDGE_GAP_MS = 200;

/**
 * Waits up to `waitSeconds` for `judge` over the collections to say healthy, following them by watch
 * (object-watch.ts: one list each, then events; relists on 410 Gone or a failed watch) instead of
 * listing them again and again. Heartbeats what is still failing. Returns the last judgement either way;
 * the caller decides whether to throw. A list the API server cannot answer (restarting, throttling) is
 * tried again once a second, or after its Retry-After, until the wait ends.
 */
export async function watchUntilHealthy<R extends { healthy: boolean }>(w: WatchWait<R>): Promise<R> {
  const { what, waitSeconds, kube, collections, judge } = w;
  const deadline = Date.now() + waitSeconds * 1000;
  const outer = cancellationSignal();
  const beat = w.beat ?? heartbeat;
  const outage = new ApiOutage();
  const list = (c: WatchedCollection) => {
    if (w.calls) w.calls.lists++;
    return riding(c, { cluster: w.cluster, deadline, signal: outer, beat, outage });
  };
  if (kube === undefined || waitSeconds === 0)
    return pollUntil(
      async () => judge(await Promise.all(collections.map(async (c) => (await list(c)).items))),
      (r) => r.healthy,
      (last) => last,
      { timeoutMs: waitSeconds * 1000, intervalMs: LIST_INTERVAL_MS, signal: outer, onPending: (r, n) => beat(progress(what, n, r)) },
    );

  const stop = new AbortController();
  const signal = outer ? AbortSignal.any([outer, stop.signal]) : stop.signal;
  let wake: (() => void) | undefined;
  let failure: { err: unknown } | undefined;
  const watches = collections.map(
    (c) =>
      new ObjectWatch<Watched>({
        kube,
        path: c.path,
        ...(c.query ? { query: c.query } : {}),
        list: () => list(c),
        onChange: () => wake?.(),
        onFailure: (err) => {
          failure = { err };
          wake?.();
        },
        signal,
        outage,
      }),
  );
  try {
    // Only listed at first: a check that passes at once (most do) opens no watch.
    await Promise.all(watches.map((w) => w.start({ watch: false })));
    for (let n = 1; ; n++) {
      if (failure) throw failure.err;
      signal.throwIfAborted();
      const result = judge(watches.map((w) => w.objects() ?? []));
      if (result.healthy || Date.now() >= deadline) return result;
      if (n === 1) for (const w of watches) w.follow();
      beat(progress(what, n, result));
      await until(Math.min(deadline - Date.now(), HEARTBEAT_MS), signal, (w) => (wake = w));
      await sleep(Math.min(JUDGE_GAP_MS, Math.max(0, deadline - Date.now())), signal);
    }
  } finally {
    stop.abort();
  }
}

/** Waits `ms`, or less when woken. */
async function until(ms: number, signal: AbortSignal, setWake: (wake: () => void) => void): Promise<void> {
  const woken = new AbortController();
  setWake(() => woken.abort());
  try {
    await sleep(ms, AbortSignal.any([signal, woken.signal]));
  } catch (err) {
    if (signal.aborted) throw signal.reason ?? err;
  }
}

/** A list tried again while the API server is away or throttling, until the deadline. */
async function riding(
  c: WatchedCollection,
  o: {
    cluster: string;
    deadline: number;
    signal: AbortSignal | undefined;
    beat: (details: Record<string, unknown>) => void;
    outage: ApiOutage;
  },
): Promise<Listing<Watched>> {
  const { cluster, deadline, signal } = o;
  for (;;) {
    try {
      return await c.list();
    } catch (err) {
      const throttled = throttledFor(err);
      if (throttled) countThrottled(cluster);
      const wait = throttled?.retryAfterMs ?? LIST_INTERVAL_MS;
      if ((throttled === undefined && !o.outage.isPartOf(err)) || Date.now() + wait >= deadline) throw kubeFailure(err, c.what);
      o.beat({
        apiError: (err instanceof Error ? err.message : String(err)).split('\n')[0]?.slice(0, 200),
        ...(throttled ? { throttled } : {}),
      });
      await sleep(wait, signal);
    }
  }
}

/** Heartbeat details stay small: a long list of failures is summarised, never sent whole. */
function progress(what: string, attempt: number, result: unknown): Record<string, unknown> {
  const text = JSON.stringify(result) ?? '';
  return text.length <= 4000 ? { check: what, attempt, result } : { check: what, attempt, healthy: false, truncated: true };
}
