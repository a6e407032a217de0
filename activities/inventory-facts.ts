import type { V1Node, V1Pod, V1PodDisruptionBudget } from '@kubernetes/client-node';
import { parseVersion, STAGE_LABEL, type LabelSelector, type NodeRole } from '../rules/index.js';

/**
 * Slim, plain-JSON facts read from API objects. Only these survive a page of a list call, so
 * 10,000 pods cost a few hundred bytes each, not a full V1Pod.
 */

export const CONTROL_PLANE_LABEL = 'node-role.kubernetes.io/control-plane';
export const MIRROR_ANNOTATION = 'kubernetes.io/config.mirror';

/** kubeadm's static-pod `component` label → the skew inventory's key. */
export const CONTROL_PLANE_COMPONENTS = {
  'kube-apiserver': 'apiserver',
  'kube-controller-manager': 'controllerManager',
  'kube-scheduler': 'scheduler',
} as const;
export type ControlPlaneComponent = keyof typeof CONTROL_PLANE_COMPONENTS;

export interface InventoryNode {
  name: string;
  role: NodeRole;
  ready: boolean;
  /** Normalised (`1.33.7`) when valid; the raw text otherwise (and a problem is reported). */
  kubeletVersion: string;
  unschedulable: boolean;
  /** The labels asked for (takeInventory's labelKeys), when any were. */
  labels?: Record<string, string>;
  /** The `skewless.io/stage` label, when the rollout has placed the node in a stage. */
  stage?: string;
  internalIP?: string;
}

export interface PodFacts {
  namespace: string;
  name: string;
  uid: string;
  node?: string;
  labels: Record<string, string>;
  phase: string;
  ready: boolean;
  terminating: boolean;
  mirror: boolean;
  /** The image of the main container: the one named like the component, else the first. */
  image?: string;
}

export const isReady = (conditions: { type: string; status: string }[] | undefined): boolean =>
  conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? false;

/** A valid version, normalised, or undefined (callers report the raw text as a problem). */
export function versionOrUndefined(text: string | undefined): string | undefined {
  try {
    return parseVersion(text).text;
  } catch {
    return undefined;
  }
}

/**
 * The version in an image's tag: `registry:5000/kube-apiserver:v1.33.7@sha256:…` → `1.33.7`.
 * A registry port is not a tag; a tag that is not a Kubernetes version gives undefined.
 */
export function imageVersion(image: string | undefined): string | undefined {
  if (!image) return undefined;
  const ref = image.split('@')[0] as string;
  const colon = ref.lastIndexOf(':');
  if (colon < 0 || colon < ref.lastIndexOf('/')) return undefined;
  return versionOrUndefined(ref.slice(colon + 1));
}

/**
 * The node's labels of `keys` only (batch-by's failure-domain label), or nothing when no key is
 * asked: the inventory is an activity result in history, so it carries no node's every label.
 */
export function pickedLabels(n: V1Node, keys: readonly string[] | undefined): { labels?: Record<string, string> } {
  if (!keys?.length) return {};
  const all = n.metadata?.labels ?? {};
  return { labels: Object.fromEntries(keys.filter((k) => k in all).map((k) => [k, all[k] as string])) };
}

export function nodeFacts(n: V1Node): InventoryNode {
  const labels = n.metadata?.labels ?? {};
  const raw = n.status?.nodeInfo?.kubeletVersion ?? '';
  const stage = labels[STAGE_LABEL];
  const internalIP = n.status?.addresses?.find((a) => a.type === 'InternalIP')?.address;
  return {
    name: n.metadata?.name ?? '',
    role: CONTROL_PLANE_LABEL in labels ? 'control-plane' : 'worker',
    ready: isReady(n.status?.conditions),
    kubeletVersion: versionOrUndefined(raw) ?? raw,
    unschedulable: n.spec?.unschedulable === true,
    ...(stage === undefined ? {} : { stage }),
    ...(internalIP === undefined ? {} : { internalIP }),
  };
}

export function podFacts(p: V1Pod): PodFacts {
  const labels = p.metadata?.labels ?? {};
  const containers = p.spec?.containers ?? [];
  const named = labels.component ?? labels['k8s-app'];
  const main = containers.find((c) => c.name === named) ?? containers[0];
  return {
    namespace: p.metadata?.namespace ?? '',
    name: p.metadata?.name ?? '',
    uid: p.metadata?.uid ?? '',
    ...(p.spec?.nodeName ? { node: p.spec.nodeName } : {}),
    labels,
    phase: p.status?.phase ?? 'Unknown',
    ready: isReady(p.status?.conditions),
    terminating: Boolean(p.metadata?.deletionTimestamp),
    mirror: Boolean(p.metadata?.annotations?.[MIRROR_ANNOTATION]),
    ...(main?.image ? { image: main.image } : {}),
  };
}

/** A pod that still counts: not finished and not on its way out. */
export const isLive = (p: PodFacts): boolean => !p.terminating && p.phase !== 'Succeeded' && p.phase !== 'Failed';

export interface PdbSpecFacts {
  namespace: string;
  name: string;
  selector?: LabelSelector;
  minAvailable?: number | string;
  maxUnavailable?: number | string;
  /** Absent while the disruption controller has not observed the current spec. */
  disruptionsAllowed?: number;
  expectedPods: number;
  currentHealthy: number;
  desiredHealthy: number;
}

export function pdbFacts(p: V1PodDisruptionBudget): PdbSpecFacts {
  const s = p.spec ?? {};
  const observed = (p.status?.observedGeneration ?? 0) >= (p.metadata?.generation ?? 1);
  return {
    namespace: p.metadata?.namespace ?? '',
    name: p.metadata?.name ?? '',
    ...(s.selector ? { selector: s.selector as PdbSpecFacts['selector'] } : {}),
    ...(s.minAvailable === undefined ? {} : { minAvailable: s.minAvailable as number | string }),
    ...(s.maxUnavailable === undefined ? {} : { maxUnavailable: s.maxUnavailable as number | string }),
    // A status the controller has not caught up with says nothing about the current spec.
    ...(observed && p.status ? { disruptionsAllowed: p.status.disruptionsAllowed } : {}),
    expectedPods: p.status?.expectedPods ?? 0,
    currentHealthy: p.status?.currentHealthy ?? 0,
    desiredHealthy: p.status?.desiredHealthy ?? 0,
  };
}
