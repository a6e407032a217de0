import type { KubeWatch } from './kube-api.js';
import { ObjectWatch, type OutageWitness } from './object-watch.js';

/** What one list of a node's pods gave: the UIDs bound to it and where a watch continues from. */
export interface PodListing {
  uids: Set<string>;
  resourceVersion: string;
}

export interface NodePodWatchOptions {
  kube: KubeWatch;
  node: string;
  /** Lists the node's pods; the caller's wrapper rides out (and bounds) an API server outage. */
  list: () => Promise<PodListing>;
  /** Called whenever a pod may have left: after each list and on each event. */
  onChange: () => void;
  /** A list that failed for good: the wait on the pods cannot go on. */
  onFailure: (err: unknown) => void;
  signal: AbortSignal;
  /** Told when the watch's connection broke (object-watch.ts). */
  outage?: OutageWitness;
}

/**
 * Follows the pods bound to one node (object-watch.ts: one list, then events, relisting on 410 Gone or a
 * failure). A drain learns that an evicted pod is gone when the server says so, instead of listing the
 * node's pods four times a second; a UID absent from a new list is gone (UIDs never come back).
 */
export class NodePodWatch {
  readonly #watch: ObjectWatch<{ metadata?: { uid?: string } }>;

  constructor(o: NodePodWatchOptions) {
    this.#watch = new ObjectWatch({
      kube: o.kube,
      path: '/api/v1/pods',
      query: { fieldSelector: `spec.nodeName=${o.node}` },
      list: async () => {
        const { uids, resourceVersion } = await o.list();
        return { items: [...uids].map((uid) => ({ metadata: { uid } })), resourceVersion };
      },
      onChange: o.onChange,
      onFailure: o.onFailure,
      signal: o.signal,
      ...(o.outage ? { outage: o.outage } : {}),
    });
  }

  /** Whether the pod with this UID has left the node (false until the first list answered). */
  isGone(uid: string): boolean {
    return this.#watch.listed && !this.#watch.has(uid);
  }

  /** Starts following; returns once the first list answered (or failed: then onFailure was called). */
  async start(): Promise<void> {
    await this.#watch.start();
  }
}
