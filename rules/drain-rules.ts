/**
 * The cluster configuration's `drainRules:` (issue 40, after Cluster API's MachineDrainRule): pods
 * chosen by namespace and labels are drained in rounds by `order` (lowest first: storage daemons
 * last), never evicted (`skip`: a node-local agent), or waited for until they complete
 * (`waitCompleted`: a batch Job). A pod's own label `skewless.io/drain: skip | wait-completed`
 * overrides every rule, as `cluster.x-k8s.io/drain` does. Pure: the drain filters apply the verdict.
 */
import {
  boolean,
  dnsLabel,
  FieldPath,
  integer,
  isLabelKey,
  isLabelValue,
  listOf,
  mapping,
  optional,
  refuse,
  shown,
  withDefault,
  type Shape,
} from './input-shapes.js';

/** The per-pod override label and the values it takes. */
export const DRAIN_LABEL = 'skewless.io/drain';
export const DRAIN_LABEL_VALUES = ['skip', 'wait-completed'] as const;

export type DrainBehavior = 'drain' | 'skip' | 'waitCompleted';

export interface DrainRule {
  /** Absent: every namespace. */
  namespace?: string;
  /** Equality terms, all to match; absent: any labels. */
  labels?: Record<string, string>;
  behavior: DrainBehavior;
  /** The round of a `drain` rule (0 for the others). */
  order: number;
}

/** What the rules say of one pod, and why. */
export interface DrainRuleVerdict {
  behavior: DrainBehavior;
  order: number;
  /** `label skewless.io/drain=skip`, `drainRules[2]`, or undefined for no rule (order 0). */
  source?: string;
  /** The pod's skewless.io/drain label has a value the drain does not know: it is ignored, and said. */
  unknownLabel?: string;
}

/** Orders a rule may give: wide enough for any scheme, bounded so a typo (1e9) is refused. */
export const DRAIN_ORDER = { min: -10_000, max: 10_000 } as const;

const labelMap: Shape<Record<string, string>> = (v, at) => {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) return refuse(at, 'must be a mapping of label keys to values');
  const out: Record<string, string> = {};
  for (const [k, value] of Object.entries(v as Record<string, unknown>)) {
    if (!isLabelKey(k)) refuse(at, `key ${shown(k).slice(0, 80)} is not a label key`);
    if (typeof value !== 'string' || !isLabelValue(value))
      refuse(at.child(k), `must be a label value (quote numbers and booleans), got ${shown(value).slice(0, 80)}`);
    out[k] = value as string;
  }
  return out;
};

const RULE_KEYS = mapping({
  namespace: optional(dnsLabel),
  labels: optional(labelMap),
  order: optional(integer(DRAIN_ORDER)),
  skip: optional(boolean),
  waitCompleted: optional(boolean),
});

/** One rule: a selector (namespace, labels, or both) and exactly one of `order: N`, `skip: true`, `waitCompleted: true`. */
export const drainRule: Shape<DrainRule> = (v, at) => {
  const r = RULE_KEYS(v, at);
  if (r.namespace === undefined && (r.labels === undefined || Object.keys(r.labels).length === 0))
    refuse(at, 'must select pods by namespace, labels or both (a rule for every pod is too wide to be meant)');
  if (r.skip === false) refuse(at.child('skip'), 'must be true when given (leave it out otherwise)');
  if (r.waitCompleted === false) refuse(at.child('waitCompleted'), 'must be true when given (leave it out otherwise)');
  const given = (['order', 'skip', 'waitCompleted'] as const).filter((k) => r[k] !== undefined);
  if (given.length !== 1)
    refuse(at, `must have exactly one of order, skip or waitCompleted, got ${given.length === 0 ? 'none' : given.join(' and ')}`);
  const behavior: DrainBehavior = r.skip ? 'skip' : r.waitCompleted ? 'waitCompleted' : 'drain';
  return {
    ...(r.namespace === undefined ? {} : { namespace: r.namespace }),
    ...(r.labels === undefined ? {} : { labels: r.labels }),
    behavior,
    order: r.order ?? 0,
  };
};

/** `drainRules:`, a list read in order (the first rule that selects a pod decides); absent: none. */
export const drainRules: Shape<DrainRule[]> = withDefault(
  listOf(drainRule, 'rules, each a namespace and/or labels with one of order, skip or waitCompleted'),
  [],
);

/** Reads a `drainRules:` value alone (a test, a tool): throws a FieldError naming the key. */
export const parseDrainRules = (v: unknown): DrainRule[] => drainRules(v, FieldPath.root('drainRules'));

const selects = (rule: DrainRule, pod: { namespace: string; labels?: Record<string, string> }): boolean =>
  (rule.namespace === undefined || rule.namespace === pod.namespace) &&
  Object.entries(rule.labels ?? {}).every(([k, v]) => pod.labels?.[k] === v);

/** What the pod's label, else the first rule that selects it, says; no rule: drained in round 0. */
export function drainRuleFor(pod: { namespace: string; labels?: Record<string, string> }, rules: readonly DrainRule[]): DrainRuleVerdict {
  const label = pod.labels?.[DRAIN_LABEL];
  if (label === 'skip') return { behavior: 'skip', order: 0, source: `label ${DRAIN_LABEL}=skip` };
  if (label === 'wait-completed') return { behavior: 'waitCompleted', order: 0, source: `label ${DRAIN_LABEL}=wait-completed` };
  const i = rules.findIndex((r) => selects(r, pod));
  const unknown = label === undefined ? {} : { unknownLabel: label };
  if (i < 0) return { behavior: 'drain', order: 0, ...unknown };
  const rule = rules[i] as DrainRule;
  return { behavior: rule.behavior, order: rule.order, source: `drainRules[${i}]`, ...unknown };
}

/** The pods to evict grouped in rounds, lowest order first; each round waits for the one before to be gone. */
export function drainRoundsOf<P extends { order?: number }>(evict: readonly P[]): { order: number; pods: P[] }[] {
  const byOrder = new Map<number, P[]>();
  for (const p of evict) {
    const o = p.order ?? 0;
    byOrder.set(o, [...(byOrder.get(o) ?? []), p]);
  }
  return [...byOrder.entries()].sort(([a], [b]) => a - b).map(([order, pods]) => ({ order, pods }));
}
