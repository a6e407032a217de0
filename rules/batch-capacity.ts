import { selectorMatches, type LabelSelector } from './label-selector.js';

/**
 * Whether the pods a batch's drains evict fit on the nodes that stay schedulable, counted as the
 * scheduler's NodeResourcesFit counts (the sum of requests against allocatable, and the pod count),
 * with its TaintToleration and NodeAffinity filters as far as the API shows them (nodeSelector, the
 * required node affinity terms, NoSchedule and NoExecute taints). Not the scheduler itself: pods are
 * placed first-fit, largest first, so a fit here is a good sign, a misfit a sure one (kubermatic#15650:
 * a drain whose pods cannot fit leaves them Pending). Pure: the facts are read by the activity.
 */

/** CPU in millicores, memory in bytes, and a count of pods. */
export interface Resources {
  milliCpu: number;
  memoryBytes: number;
  pods: number;
}

export interface Taint {
  key: string;
  value?: string;
  effect: string;
}

export interface Toleration {
  key?: string;
  operator?: string;
  value?: string;
  effect?: string;
}

export interface CapacityNode {
  name: string;
  labels: Record<string, string>;
  taints: Taint[];
  /** Cordoned, or not Ready: takes no pod. */
  unschedulable: boolean;
  allocatable: Resources;
  /** The requests of the pods bound to it now (pods: how many). */
  requested: Resources;
}

export interface CapacityPod {
  /** `namespace/name`. */
  name: string;
  node: string;
  requests: Resources;
  nodeSelector?: Record<string, string>;
  /** spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution's terms (ORed), as label selectors. */
  affinityTerms?: LabelSelector[];
  tolerations?: Toleration[];
}

/** The cluster as a capacity check reads it: the nodes, and the pods a drain would evict (recreated elsewhere by their controller). */
export interface CapacityFacts {
  nodes: CapacityNode[];
  movablePods: CapacityPod[];
}

export interface BatchFit {
  /** The nodes asked for. */
  nodes: string[];
  /** The pods their drains would evict, and what they request together. */
  evicted: number;
  requests: Resources;
  /** Evicted pods that would find no node (empty: the batch fits). */
  pending: string[];
  /** What stays free on the schedulable nodes once the evicted pods are placed. */
  headroom: Resources;
}

const DECIMAL: Record<string, number> = { '': 1, k: 1e3, M: 1e6, G: 1e9, T: 1e12, P: 1e15, E: 1e18, m: 1e-3, u: 1e-6, n: 1e-9 };
const BINARY: Record<string, number> = { Ki: 2 ** 10, Mi: 2 ** 20, Gi: 2 ** 30, Ti: 2 ** 40, Pi: 2 ** 50, Ei: 2 ** 60 };

/** A Kubernetes quantity (`500m`, `1.5`, `256Gi`, `1e3`) as a number; undefined when it is none. */
export function parseQuantity(text: string | number | undefined): number | undefined {
  if (typeof text === 'number') return text;
  if (typeof text !== 'string') return undefined;
  const m = /^([+-]?(?:\d+\.?\d*|\.\d+))(?:([eE][+-]?\d+)|(Ki|Mi|Gi|Ti|Pi|Ei|[kMGTPEmun])?)$/.exec(text.trim());
  if (!m) return undefined;
  const [, number, exponent, suffix = ''] = m;
  const base = Number(number);
  if (exponent) return base * 10 ** Number(exponent.slice(1));
  return base * (BINARY[suffix] ?? DECIMAL[suffix] ?? 1);
}

/** CPU, memory and one pod from a requests mapping (`{cpu: '250m', memory: '64Mi'}`); an absent request counts 0. */
export function podRequests(requests: Record<string, string | number> | undefined): Resources {
  return {
    milliCpu: Math.ceil((parseQuantity(requests?.cpu) ?? 0) * 1000),
    memoryBytes: Math.ceil(parseQuantity(requests?.memory) ?? 0),
    pods: 1,
  };
}

const ZERO: Resources = { milliCpu: 0, memoryBytes: 0, pods: 0 };
const plus = (a: Resources, b: Resources): Resources => ({
  milliCpu: a.milliCpu + b.milliCpu,
  memoryBytes: a.memoryBytes + b.memoryBytes,
  pods: a.pods + b.pods,
});
const minus = (a: Resources, b: Resources): Resources => ({
  milliCpu: a.milliCpu - b.milliCpu,
  memoryBytes: a.memoryBytes - b.memoryBytes,
  pods: a.pods - b.pods,
});
const within = (need: Resources, free: Resources) =>
  need.milliCpu <= free.milliCpu && need.memoryBytes <= free.memoryBytes && need.pods <= free.pods;

/** Whether a toleration tolerates a taint (core/v1 Toleration.ToleratesTaint). */
function tolerates(t: Toleration, taint: Taint): boolean {
  if (t.effect && t.effect !== taint.effect) return false;
  if (t.key && t.key !== taint.key) return false;
  if (!t.key && t.operator !== 'Exists') return false;
  return t.operator === 'Exists' || (t.value ?? '') === (taint.value ?? '');
}

/** Whether the scheduler's filters (other than resources) let the pod onto the node. */
export function podMayRunOn(pod: CapacityPod, node: CapacityNode): boolean {
  if (node.unschedulable) return false;
  for (const [k, v] of Object.entries(pod.nodeSelector ?? {})) if (node.labels[k] !== v) return false;
  if (pod.affinityTerms?.length && !pod.affinityTerms.some((term) => selectorMatches(term, node.labels))) return false;
  return node.taints
    .filter((t) => t.effect === 'NoSchedule' || t.effect === 'NoExecute')
    .every((taint) => (pod.tolerations ?? []).some((t) => tolerates(t, taint)));
}

/** The batch's evicted pods placed on the other schedulable nodes, largest first, each on the first node it fits. */
export function fitBatch(facts: CapacityFacts, batch: readonly string[]): BatchFit {
  const out = new Set(batch);
  const targets = facts.nodes
    .filter((n) => !out.has(n.name) && !n.unschedulable)
    .map((n) => ({ node: n, free: minus(n.allocatable, n.requested) }));
  const evicted = facts.movablePods.filter((p) => out.has(p.node));
  const largestFirst = [...evicted].sort(
    (a, b) => b.requests.milliCpu - a.requests.milliCpu || b.requests.memoryBytes - a.requests.memoryBytes || (a.name < b.name ? -1 : 1),
  );
  const pending: string[] = [];
  for (const pod of largestFirst) {
    const target = targets.find((t) => within(pod.requests, t.free) && podMayRunOn(pod, t.node));
    if (target) target.free = minus(target.free, pod.requests);
    else pending.push(pod.name);
  }
  return {
    nodes: [...batch],
    evicted: evicted.length,
    requests: evicted.reduce((sum, p) => plus(sum, p.requests), ZERO),
    pending: pending.sort(),
    headroom: targets.reduce((sum, t) => plus(sum, t.free), ZERO),
  };
}

/**
 * How many of `nodes`, taken in order, can be out at once with their pods fitting elsewhere: the
 * batch shrunk until it fits. 0 when even the first node's pods would not fit (`fit` says which
 * would stay Pending); `fit` is the check of the nodes kept.
 */
export function largestFittingBatch(facts: CapacityFacts, nodes: readonly string[]): { size: number; fit: BatchFit } {
  for (let size = nodes.length; size > 1; size--) {
    const fit = fitBatch(facts, nodes.slice(0, size));
    if (fit.pending.length === 0) return { size, fit };
  }
  const fit = fitBatch(facts, nodes.slice(0, 1));
  return { size: fit.pending.length === 0 ? Math.min(1, nodes.length) : 0, fit };
}

/** `12.5 CPU, 200Gi memory, 300 pods` for a plan or a refusal. */
export function describeResources(r: Resources): string {
  const gib = r.memoryBytes / 2 ** 30;
  const memory = Math.abs(gib) >= 1 ? `${+gib.toFixed(1)}Gi` : `${Math.round(r.memoryBytes / 2 ** 20)}Mi`;
  return `${+(r.milliCpu / 1000).toFixed(2)} CPU, ${memory} memory, ${r.pods} pods`;
}
