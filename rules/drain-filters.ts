import { DRAIN_LABEL as DRAIN_LABEL_TEXT, drainRuleFor, type DrainRule } from './drain-rules.js';

/**
 * Drain policy, separated from the mechanism that evicts (activities/drain.ts): which pods on a node
 * are evicted, left alone, or block the drain until the operator opts in. Each filter judges one
 * pod from plain facts gathered beforehand; there is no I/O and no clock in here.
 */

/** The mirror annotation the kubelet puts on the API copy of a static pod. */
export const MIRROR_POD_ANNOTATION = 'kubernetes.io/config.mirror';

export interface PodRef {
  namespace: string;
  name: string;
  uid: string;
}

/** What the drain policy needs to know about one pod (gathered by the activity). */
export interface DrainPodFacts extends PodRef {
  ownerReferences: { kind: string; name: string; controller?: boolean }[];
  annotations: Record<string, string>;
  /** The pod's labels, for `drainRules:` and the `skewless.io/drain` label (absent: none). */
  labels?: Record<string, string>;
  phase?: string;
  /** deletionTimestamp is set: the pod is already on its way out. */
  terminating: boolean;
  hasEmptyDir: boolean;
  /** For a pod whose controller is a DaemonSet: does that DaemonSet still exist? */
  daemonSetExists?: boolean;
}

export interface DrainOptions {
  ignoreDaemonSets: boolean;
  deleteEmptyDirData: boolean;
  /** Pods the operator allowed to be lost, as `namespace/name` or a bare `name`. */
  force: string[];
  /** The cluster configuration's `drainRules:` (rules/drain-rules.ts); absent: none. */
  rules?: readonly DrainRule[];
}

/** The switch that would let a refused pod through. */
export type DrainOverride = 'force' | 'deleteEmptyDirData' | 'ignoreDaemonSets';

export type Verdict =
  | { kind: 'okay' }
  | { kind: 'skip'; reason: string }
  | { kind: 'warning'; reason: string }
  | { kind: 'error'; reason: string; override: DrainOverride };

export type DrainFilterName = 'terminating' | 'mirror' | 'daemonSet' | 'unmanaged' | 'emptyDir' | 'drainRule';

export interface FilterVerdict {
  filter: DrainFilterName;
  verdict: Verdict;
}

/** A pod to evict, with its round when a drain rule gave it one other than 0. */
export type EvictPod = PodRef & { order?: number };

export interface DrainPlan {
  evict: EvictPod[];
  /** Pods a drain rule or their label says to wait for until they complete (never evicted). */
  waitCompleted: PodRef[];
  skipped: { pod: PodRef; reason: string; filter: DrainFilterName }[];
  warnings: { pod: PodRef; reason: string }[];
  blockers: { pod: PodRef; reason: string; override: DrainOverride }[];
}

const OKAY: Verdict = { kind: 'okay' };
const key = (p: PodRef) => `${p.namespace}/${p.name}`;
const controllerOf = (p: DrainPodFacts) => p.ownerReferences.find((o) => o.controller === true);
const isCompleted = (p: DrainPodFacts) => p.phase === 'Succeeded' || p.phase === 'Failed';

/** Whether the operator named this pod in `force` (by `namespace/name` or by bare name). */
export function isForced(p: PodRef, o: DrainOptions): boolean {
  return o.force.includes(key(p)) || o.force.includes(p.name);
}

type Filter = (p: DrainPodFacts, o: DrainOptions) => Verdict;

// Filter order matters only for which skip reason is reported first; every verdict is kept.
const FILTERS: [DrainFilterName, Filter][] = [
  ['terminating', (p) => (p.terminating ? { kind: 'skip', reason: `${key(p)} is already terminating` } : OKAY)],
  [
    'mirror',
    (p) =>
      p.annotations[MIRROR_POD_ANNOTATION] !== undefined
        ? { kind: 'skip', reason: `${key(p)} is a mirror pod of a static pod: the kubelet owns it, not the API` }
        : OKAY,
  ],
  [
    'daemonSet',
    (p, o) => {
      const c = controllerOf(p);
      if (c?.kind !== 'DaemonSet') return OKAY;
      // An orphan of a deleted DaemonSet is judged as unmanaged (below), as nothing would recreate it.
      if (p.daemonSetExists === false) return OKAY;
      if (!o.ignoreDaemonSets) {
        return {
          kind: 'error',
          override: 'ignoreDaemonSets',
          reason: `${key(p)} is managed by DaemonSet ${c.name}; set ignoreDaemonSets to leave it in place and proceed`,
        };
      }
      return { kind: 'skip', reason: `${key(p)} is managed by DaemonSet ${c.name}, which ignores cordons: left in place` };
    },
  ],
  // A completed pod has nothing left to lose: unmanaged or emptyDir, it goes without fuss.
  [
    'unmanaged',
    (p, o) => {
      if (isCompleted(p)) return OKAY;
      const c = controllerOf(p);
      const orphanOfDaemonSet = c?.kind === 'DaemonSet' && p.daemonSetExists === false;
      if (c && !orphanOfDaemonSet) return OKAY;
      const what = orphanOfDaemonSet ? `pod ${key(p)} of missing DaemonSet ${c.name}` : `unmanaged pod ${key(p)}`;
      if (isForced(p, o)) return { kind: 'warning', reason: `${what} is evicted because it was forced by name; it will not come back` };
      return { kind: 'error', override: 'force', reason: `${what} would be lost for good; force it by name to proceed` };
    },
  ],
  [
    'emptyDir',
    (p, o) => {
      if (!p.hasEmptyDir || isCompleted(p)) return OKAY;
      if (o.deleteEmptyDirData || isForced(p, o))
        return { kind: 'warning', reason: `${key(p)} uses emptyDir: its data is deleted with it` };
      return {
        kind: 'error',
        override: 'deleteEmptyDirData',
        reason: `${key(p)} uses emptyDir and its data would be deleted; set deleteEmptyDirData or force it by name to proceed`,
      };
    },
  ],
];

/** Every filter's verdict on one pod, in filter order. */
export function judgeDrainPod(pod: DrainPodFacts, options: DrainOptions): FilterVerdict[] {
  return FILTERS.map(([filter, judge]) => ({ filter, verdict: judge(pod, options) }));
}

const ref = (p: DrainPodFacts): PodRef => ({ namespace: p.namespace, name: p.name, uid: p.uid });

/**
 * The drain plan for the pods on one node: a filter's skip wins over everything (the pod is left
 * alone); then a drain rule's (or the pod label's) `skip` or `waitCompleted`, which no filter's error
 * outweighs since nothing is evicted; any error makes the pod a blocker (it is not evicted, and the
 * drain should not start; one entry per error); otherwise the pod is evicted in its rule's round and
 * its warnings are reported. Output is sorted by namespace/name.
 */
export function planDrainPods(pods: readonly DrainPodFacts[], options: DrainOptions): DrainPlan {
  const plan: DrainPlan = { evict: [], waitCompleted: [], skipped: [], warnings: [], blockers: [] };
  const sorted = [...pods].sort((a, b) => key(a).localeCompare(key(b)));
  for (const pod of sorted) {
    const verdicts = judgeDrainPod(pod, options);
    const skip = verdicts.find((v) => v.verdict.kind === 'skip');
    if (skip && skip.verdict.kind === 'skip') {
      plan.skipped.push({ pod: ref(pod), reason: skip.verdict.reason, filter: skip.filter });
      continue;
    }
    const rule = drainRuleFor(pod, options.rules ?? []);
    if (rule.unknownLabel !== undefined)
      plan.warnings.push({
        pod: ref(pod),
        reason: `${key(pod)} has label ${DRAIN_LABEL_TEXT}=${rule.unknownLabel}, which is neither skip nor wait-completed: ignored`,
      });
    if (rule.behavior === 'skip') {
      plan.skipped.push({
        pod: ref(pod),
        reason: `${key(pod)} is never evicted (${rule.source ?? 'drain rule'}): the node drains around it`,
        filter: 'drainRule',
      });
      continue;
    }
    if (rule.behavior === 'waitCompleted') {
      if (isCompleted(pod))
        plan.skipped.push({ pod: ref(pod), reason: `${key(pod)} has completed (${rule.source ?? 'drain rule'})`, filter: 'drainRule' });
      else plan.waitCompleted.push(ref(pod));
      continue;
    }
    const errors = verdicts.flatMap(({ verdict: v }) => (v.kind === 'error' ? [v] : []));
    if (errors.length > 0) {
      for (const e of errors) plan.blockers.push({ pod: ref(pod), reason: e.reason, override: e.override });
      continue;
    }
    for (const { verdict: v } of verdicts) if (v.kind === 'warning') plan.warnings.push({ pod: ref(pod), reason: v.reason });
    plan.evict.push(rule.order === 0 ? ref(pod) : { ...ref(pod), order: rule.order });
  }
  return plan;
}

/** One line naming every blocker and its override, for a DrainRefused message. */
export function describeDrainBlockers(plan: DrainPlan): string {
  return plan.blockers.map((b) => b.reason).join('; ');
}
