import { selectorMatches, type PodRef } from '../rules/index.js';
import { httpStatus, kubeCall, kubeFailure } from './errors.js';
import type { KubeApi } from './kube-api.js';
import type { PodListing } from './pod-watch.js';
import { throttledFor, type Throttle } from './throttling.js';

export type EvictionOutcome =
  | { kind: 'accepted' }
  /** The pod with this UID no longer exists (404, or a replacement now holds the name). */
  | { kind: 'gone' }
  /** Refused for now (429: a PDB, or its status not yet observed): try again later. `byBudget`: a PDB refused it. */
  | { kind: 'blocked'; message: string; byBudget?: true }
  /** The API server itself throttled the request (429 of Priority and Fairness, throttling.ts): no PDB refused it. */
  | { kind: 'throttled'; throttle: Throttle };

const firstLine = (err: unknown) => {
  const body = (err as { body?: unknown })?.body;
  if (typeof body === 'string') {
    try {
      return (JSON.parse(body) as { message?: string }).message ?? body.slice(0, 200);
    } catch {
      return body.slice(0, 200);
    }
  }
  return (err as Error)?.message?.split('\n')[0] ?? String(err);
};

/** Whether the pod with this exact UID has left the API (a same-named replacement does not count). */
export async function isPodGone(kube: KubeApi, pod: PodRef): Promise<boolean> {
  // A list by name, not a get: the drain lists pods anyway, so the worker needs no `get` on pods.
  const { items } = await kubeCall(`list pod ${pod.namespace}/${pod.name}`, () =>
    kube.core.listNamespacedPod({ namespace: pod.namespace, fieldSelector: `metadata.name=${pod.name}` }),
  );
  return !items.some((p) => p.metadata?.uid === pod.uid);
}

/** UIDs of the pods on `node` now (terminating ones included), and the list's resourceVersion for a watch to go on from. */
export async function podsOnNode(kube: KubeApi, node: string): Promise<PodListing> {
  const { items, metadata } = await kubeCall(`list pods on ${node}`, () =>
    kube.core.listPodForAllNamespaces({ fieldSelector: `spec.nodeName=${node}` }),
  );
  return { uids: new Set(items.map((p) => p.metadata?.uid as string)), resourceVersion: metadata?.resourceVersion ?? '' };
}

/**
 * One eviction request through the Eviction API (policy/v1), so PDBs are honoured. The UID
 * precondition means a replacement pod of the same name (a StatefulSet's db-0) is never evicted
 * by mistake: the API answers 409 instead, and we check that our pod is gone.
 */
export async function evictPod(kube: KubeApi, pod: PodRef, gracePeriodSeconds?: number): Promise<EvictionOutcome> {
  try {
    await kube.core.createNamespacedPodEviction({
      name: pod.name,
      namespace: pod.namespace,
      body: {
        apiVersion: 'policy/v1',
        kind: 'Eviction',
        metadata: { name: pod.name, namespace: pod.namespace },
        deleteOptions: { preconditions: { uid: pod.uid }, ...(gracePeriodSeconds === undefined ? {} : { gracePeriodSeconds }) },
      },
    });
    return { kind: 'accepted' };
  } catch (err) {
    const status = httpStatus(err);
    if (status === 404) return { kind: 'gone' };
    if (status === 409) return (await isPodGone(kube, pod)) ? { kind: 'gone' } : { kind: 'blocked', message: firstLine(err) };
    const throttle = throttledFor(err);
    if (throttle) return { kind: 'throttled', throttle };
    // 429: a PDB refuses now. 500 "more than one PodDisruptionBudget": also reported as blocked, as retrying
    // cannot hurt and the drain timeout names the PDBs for the operator.
    if (status === 429 || (status === 500 && /DisruptionBudget/i.test(firstLine(err))))
      return { kind: 'blocked', message: firstLine(err), byBudget: true };
    throw kubeFailure(err, `evict pod ${pod.namespace}/${pod.name}`);
  }
}

/** The PDBs of a namespace, as name and selector: what the drain matches its pods against. */
export type PdbSelectors = { name: string; selector: Parameters<typeof selectorMatches>[0] }[];

export async function pdbsIn(kube: KubeApi, namespace: string): Promise<PdbSelectors> {
  const { items } = await kubeCall(`list PodDisruptionBudgets in ${namespace}`, () =>
    kube.policy.listNamespacedPodDisruptionBudget({ namespace }),
  );
  return items.map((p) => ({ name: p.metadata?.name as string, selector: p.spec?.selector }));
}

/** Names of the PDBs whose selector matches the labels, sorted. */
export function pdbsCovering(pdbs: PdbSelectors, labels: Record<string, string>): string[] {
  return pdbs
    .filter((p) => selectorMatches(p.selector, labels))
    .map((p) => p.name)
    .sort();
}

/** Network-level failures of a request: the API server restarting, a load balancer failing over. */
const CONNECTION_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EPIPE',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EAI_AGAIN',
  'ECONNABORTED',
  'UND_ERR_SOCKET',
]);

/**
 * Whether a failed API call is worth repeating in a moment: no answer at all (the connection was
 * refused or dropped: the API server is restarting), or an answer that says "later" (502/503/504,
 * a 500 from an etcd timeout). A 500 about PodDisruptionBudgets is an eviction refusal, handled above.
 */
export function isTransientApiError(err: unknown): boolean {
  const status = httpStatus(err);
  if (status !== undefined)
    return status === 502 || status === 503 || status === 504 || (status === 500 && !/DisruptionBudget/i.test(firstLine(err)));
  const e = err as { code?: unknown; type?: unknown; message?: unknown; cause?: { code?: unknown } } | undefined;
  const code = typeof e?.code === 'string' ? e.code : typeof e?.cause?.code === 'string' ? e.cause.code : undefined;
  if (code !== undefined && CONNECTION_CODES.has(code)) return true;
  // node-fetch's FetchError for a dropped socket carries the code in its message only.
  return e?.type === 'system' || (typeof e?.message === 'string' && /socket hang up|ECONNREFUSED|ECONNRESET/.test(e.message));
}
