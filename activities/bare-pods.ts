import type { V1Pod } from '@kubernetes/client-node';
import { compareNatural, planDrainPods, type DrainOptions, type DrainPodFacts } from '../rules/index.js';
import { podFacts as drainPodFacts } from './drain-facts.js';

/**
 * The bare pods of a cluster: pods no controller manages, which a drain refuses to lose until the
 * operator forces or skips them (`skewless resolve`). Listed by the inventory so that `plan --cluster`
 * says which drains will block before the upgrade meets them.
 */
export interface BarePod {
  namespace: string;
  name: string;
  node: string;
}

/**
 * At most this many are listed (the rest only counted): the inventory is an activity result in the
 * upgrade's history, and a cluster full of hand-made pods must not fill it.
 */
export const BARE_PODS_LISTED = 100;

/** A pod bound to a node with no controller at all, with what the drain filters need to judge it. */
export type UncontrolledPod = DrainPodFacts & { node: string };

export function uncontrolledPod(pod: V1Pod): UncontrolledPod | undefined {
  const node = pod.spec?.nodeName;
  // An orphan of a deleted DaemonSet (a controller reference to nothing) is found at its drain only:
  // telling it apart costs a read per DaemonSet.
  if (!node || pod.metadata?.ownerReferences?.some((o) => o.controller === true)) return undefined;
  return { ...drainPodFacts(pod), node };
}

/** The uncontrolled pods the drain filters would refuse to lose (mirror, finished and terminating pods are not). */
export function barePodsOf(
  pods: readonly UncontrolledPod[],
  drain: Omit<DrainOptions, 'force'>,
): { barePods: BarePod[]; barePodCount: number } {
  const nodeOf = new Map(pods.map((p) => [`${p.namespace}/${p.name}`, p.node]));
  const plan = planDrainPods(pods, { ...drain, force: [] });
  const bare = plan.blockers
    .filter((b) => b.override === 'force')
    .map((b) => ({ namespace: b.pod.namespace, name: b.pod.name, node: nodeOf.get(`${b.pod.namespace}/${b.pod.name}`) ?? '' }))
    .sort((a, b) => compareNatural(a.node, b.node) || `${a.namespace}/${a.name}`.localeCompare(`${b.namespace}/${b.name}`));
  return { barePods: bare.slice(0, BARE_PODS_LISTED), barePodCount: bare.length };
}
