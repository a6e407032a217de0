import type { PodRef } from '../rules/index.js';
import { sleep } from '../tooling/poll-until.js';
import type { ApiOutage } from './api-outage.js';
import { podsOnNode } from './drain-eviction.js';
import type { KubeApi } from './kube-api.js';
import { NodePodWatch } from './pod-watch.js';

/** Without a watch (a narrow test double): one list of the node's pods a second. */
const LIST_INTERVAL_MS = 1_000;

export interface EvictedPodsOptions {
  kube: KubeApi;
  node: string;
  /** Wraps each list: rides out an API server outage and bounds it (drain.ts's `api`). */
  guard: <T>(call: () => Promise<T>) => Promise<T>;
  /** Told when the pod watch's connection broke, so that `guard` takes the restarted server's first 403s as the outage. */
  outage?: ApiOutage;
  /** Each pod seen gone, once. */
  onGone: (pod: PodRef) => void;
  signal: AbortSignal;
}

/**
 * The pods a drain evicted (or found terminating) that have not left yet. They hold no eviction slot
 * while they take their grace period; the node's pod watch (one list, then events) says when each is
 * gone, by UID: a StatefulSet's replacement may take the name.
 */
export class EvictedPodsGone {
  readonly #awaiting = new Map<string, PodRef>();
  readonly #o: EvictedPodsOptions;
  readonly #watch: NodePodWatch | undefined;
  #expecting = true;
  #failure: { err: unknown } | undefined;
  #wake: (() => void) | undefined;
  /** Ends the watch: at `close()`, or when the drain is cancelled or fails. */
  readonly #watching = new AbortController();

  constructor(options: EvictedPodsOptions) {
    this.#o = options;
    const { kube, node, guard } = options;
    const signal = AbortSignal.any([options.signal, this.#watching.signal]);
    this.#watch =
      kube.watch === undefined
        ? undefined
        : new NodePodWatch({
            kube: kube.watch,
            node,
            list: () => guard(() => podsOnNode(kube, node)),
            onChange: () => this.#wake?.(),
            onFailure: (err) => {
              this.#failure = { err };
              this.#wake?.();
            },
            signal,
            ...(options.outage ? { outage: options.outage } : {}),
          });
  }

  /** Stops following the node's pods (the drain is over, however it ended). */
  close(): void {
    this.#watching.abort();
  }

  /** An eviction was accepted (or the pod was terminating already): the drain is not done until it is gone. */
  expect(pod: PodRef): void {
    this.#awaiting.set(`${pod.namespace}/${pod.name}`, pod);
    this.#wake?.();
  }

  /** No more pods will be expected: `untilGone` ends once the last is gone. */
  doneExpecting(): void {
    this.#expecting = false;
    this.#wake?.();
  }

  /**
   * Resolves once every expected pod is gone and no more will come, or at `deadline` (the pods left
   * are then the caller's to report); rejects on cancellation or a list that failed for good.
   */
  async untilGone(deadline: number): Promise<void> {
    const { signal } = this.#o;
    if (this.#watch) await this.#watch.start();
    for (;;) {
      signal.throwIfAborted();
      if (this.#failure) throw this.#failure.err;
      if (this.#watch) this.#settle((uid) => this.#watch?.isGone(uid) ?? false);
      else if (this.#awaiting.size > 0) {
        const { uids } = await this.#o.guard(() => podsOnNode(this.#o.kube, this.#o.node));
        this.#settle((uid) => !uids.has(uid));
      }
      if (!this.#expecting && this.#awaiting.size === 0) return;
      const left = deadline - Date.now();
      if (left <= 0) return;
      await this.#nap(this.#watch ? left : Math.min(left, LIST_INTERVAL_MS));
    }
  }

  #settle(isGone: (uid: string) => boolean): void {
    for (const [k, pod] of this.#awaiting) {
      if (!isGone(pod.uid)) continue;
      this.#awaiting.delete(k);
      this.#o.onGone(pod);
    }
  }

  /** Waits `ms`, or less when a pod may have left, one is expected or expecting ended. */
  async #nap(ms: number): Promise<void> {
    const woken = new AbortController();
    this.#wake = () => woken.abort();
    try {
      await sleep(ms, AbortSignal.any([this.#o.signal, woken.signal]));
    } catch (err) {
      if (this.#o.signal.aborted) throw this.#o.signal.reason ?? err;
    } finally {
      this.#wake = undefined;
    }
  }
}
