import type { V1Pod } from '@kubernetes/client-node';
import type { PodRef } from '../rules/index.js';
import { sleep } from '../tooling/poll-until.js';
import { kubeCall } from './errors.js';
import type { KubeApi } from './kube-api.js';
import { ObjectWatch, type OutageWitness } from './object-watch.js';

/** Without a watch (a narrow test double): one list of the node's pods a second. */
const LIST_INTERVAL_MS = 1_000;

export interface WaitCompletedOptions {
  kube: KubeApi;
  node: string;
  /** Wraps each list: rides out an API server outage and bounds it (drain.ts's `api`). */
  guard: <T>(call: () => Promise<T>) => Promise<T>;
  /** Told when the pod watch's connection broke (drain.ts's ApiOutage). */
  outage?: OutageWitness;
  /** Each pod seen completed (Succeeded or Failed) or gone, once. */
  onCompleted: (pod: PodRef) => void;
  signal: AbortSignal;
}

const completed = (phase: string | undefined) => phase === 'Succeeded' || phase === 'Failed';

/**
 * The drain's `waitCompleted` pods (drainRules, or the pod's `skewless.io/drain: wait-completed`
 * label): never evicted, waited for until each has completed or left the node, by UID, up to the
 * drain's deadline (the pods left are then the caller's to report). The node's pods are followed by
 * watch (object-watch.ts): a Job that runs for an hour costs one list and its events, not a list a second.
 */
export async function untilCompleted(pods: readonly PodRef[], deadline: number, o: WaitCompletedOptions): Promise<void> {
  if (pods.length === 0) return;
  const waiting = new Map(pods.map((p) => [p.uid, p]));
  const list = () =>
    o.guard(() =>
      kubeCall(`list pods on ${o.node}`, () => o.kube.core.listPodForAllNamespaces({ fieldSelector: `spec.nodeName=${o.node}` })),
    );
  /** Settles what the pods' phases now say; true once none is left to wait for. */
  const settle = (phase: Map<string | undefined, string | undefined>): boolean => {
    for (const [uid, pod] of waiting) {
      if (phase.has(uid) && !completed(phase.get(uid))) continue;
      waiting.delete(uid);
      o.onCompleted(pod);
    }
    return waiting.size === 0;
  };
  const phases = (items: V1Pod[]) => new Map(items.map((p) => [p.metadata?.uid, p.status?.phase]));
  if (o.kube.watch === undefined) {
    while (!settle(phases((await list()).items))) {
      const left = deadline - Date.now();
      if (left <= 0) return;
      await sleep(Math.min(left, LIST_INTERVAL_MS), o.signal);
    }
    return;
  }
  await followUntilCompleted(o, list, deadline, (items) => settle(phases(items)));
}

/** One list, then the node's pod events, judged by `done` after each, until it says so, the deadline or a failure. */
async function followUntilCompleted(
  o: WaitCompletedOptions,
  list: () => Promise<{ items: V1Pod[]; metadata?: { resourceVersion?: string } }>,
  deadline: number,
  done: (items: V1Pod[]) => boolean,
): Promise<void> {
  const stop = new AbortController();
  const signal = AbortSignal.any([o.signal, stop.signal]);
  let wake: (() => void) | undefined;
  let failure: { err: unknown } | undefined;
  const watch = new ObjectWatch<V1Pod>({
    kube: o.kube.watch as NonNullable<KubeApi['watch']>,
    path: '/api/v1/pods',
    query: { fieldSelector: `spec.nodeName=${o.node}` },
    list: async () => {
      const { items, metadata } = await list();
      return { items, resourceVersion: metadata?.resourceVersion ?? '' };
    },
    onChange: () => wake?.(),
    onFailure: (err) => {
      failure = { err };
      wake?.();
    },
    signal,
    ...(o.outage ? { outage: o.outage } : {}),
  });
  try {
    await watch.start();
    for (;;) {
      if (failure) throw failure.err;
      o.signal.throwIfAborted();
      if (done(watch.objects() ?? [])) return;
      const left = deadline - Date.now();
      if (left <= 0) return;
      const woken = new AbortController();
      wake = () => woken.abort();
      await sleep(left, AbortSignal.any([o.signal, woken.signal])).catch((err: unknown) => {
        if (o.signal.aborted) throw err;
      });
    }
  } finally {
    stop.abort();
  }
}
