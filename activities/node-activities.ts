import type { V1Node } from '@kubernetes/client-node';
import { ApplicationFailure } from '@temporalio/activity';
import type { ClusterResolver } from './cluster-access.js';
import { ErrorType, httpStatus, kubeCall, kubeFailure, retryOnConflict } from './errors.js';
import { mergePatch, type KubeApi } from './kube-api.js';
import { releaseQuarantines } from './quarantine-node.js';

/** Who cordoned the node (a workflow id), so compensation uncordons only what its own run cordoned. */
export const CORDONED_BY_ANNOTATION = 'skewless.io/cordoned-by';
/** The node's rollout stage (canary, batch-1 …): a label, so the plan is selectable cluster state. */
export const STAGE_LABEL = 'skewless.io/stage';
/** Who set the stage label. An annotation, because a workflow id (`upgrade/lab`) is not a valid label value. */
export const STAGE_OWNER_ANNOTATION = 'skewless.io/stage-owner';

export interface CordonResult {
  cordoned: true;
  /** True when this owner's annotation is on the node: compensation may uncordon it. */
  ownedByUs: boolean;
  /** Whether this call wrote to the node. */
  changed: boolean;
  /** The owner named on a node that was already cordoned by someone else, if any. */
  cordonedBy?: string;
}

export interface UncordonResult {
  uncordoned: boolean;
  changed: boolean;
  /** Why nothing was done (cordoned by someone else, node gone). */
  reason?: string;
  /** The owner named on a node left cordoned because someone else cordoned it, if any. */
  cordonedBy?: string;
  /** The node no longer exists (deleted since: blue/green). */
  notFound?: true;
}

export interface StageLabelsResult {
  changed: string[];
  unchanged: string[];
}

function requireText(value: unknown, what: string): string {
  if (typeof value !== 'string' || value === '') {
    throw ApplicationFailure.create({ type: ErrorType.Invalid, message: `${what} must be a non-empty string`, nonRetryable: true });
  }
  return value;
}

type Deps = { clusters: ClusterResolver };
const kubeOf = (deps: Deps, cluster: string): KubeApi => deps.clusters(requireText(cluster, 'cluster')).kube;
const readNode = (kube: KubeApi, node: string) => kubeCall(`read node ${node}`, () => kube.core.readNode({ name: node }));
type Change = { unschedulable?: boolean; labels?: Record<string, string | null>; annotations?: Record<string, string | null> };
// The resourceVersion makes a concurrent change a 409 (retryable Conflict): the retry re-reads and re-decides.
const patchNode = (kube: KubeApi, node: V1Node, change: Change, what: string) => {
  const { unschedulable, ...metadata } = change;
  const body = {
    ...(unschedulable === undefined ? {} : { spec: { unschedulable } }),
    metadata: { ...metadata, resourceVersion: node.metadata?.resourceVersion },
  };
  return kubeCall(what, () => kube.core.patchNode({ name: node.metadata?.name as string, body }, mergePatch));
};

/** Marks the node unschedulable and records the owner, unless someone else had already cordoned it. */
function cordonNode(deps: Deps, input: { cluster: string; node: string; owner: string }): Promise<CordonResult> {
  return retryOnConflict(async () => {
    const owner = requireText(input.owner, 'owner');
    const kube = kubeOf(deps, input.cluster);
    const node = await readNode(kube, input.node);
    const by = node.metadata?.annotations?.[CORDONED_BY_ANNOTATION];
    if (node.spec?.unschedulable) {
      // Someone else's cordon (an operator, another tool) stays theirs: we record nothing.
      if (by === owner) return { cordoned: true, ownedByUs: true, changed: false };
      return { cordoned: true, ownedByUs: false, changed: false, ...(by ? { cordonedBy: by } : {}) };
    }
    await patchNode(kube, node, { unschedulable: true, annotations: { [CORDONED_BY_ANNOTATION]: owner } }, `cordon ${input.node}`);
    return { cordoned: true, ownedByUs: true, changed: true };
  });
}

/** Makes the node schedulable again only if this owner cordoned it (or force); a missing node is fine. */
function uncordonNode(deps: Deps, input: { cluster: string; node: string; owner: string; force?: boolean }): Promise<UncordonResult> {
  return retryOnConflict(async () => {
    const owner = requireText(input.owner, 'owner');
    const kube = kubeOf(deps, input.cluster);
    let node: V1Node;
    try {
      node = await kube.core.readNode({ name: input.node });
    } catch (err) {
      // Compensation for a node that has since been deleted (blue/green) has nothing left to undo.
      if (httpStatus(err) === 404) return { uncordoned: false, changed: false, reason: `node ${input.node} not found`, notFound: true };
      throw kubeFailure(err, `read node ${input.node}`);
    }
    const by = node.metadata?.annotations?.[CORDONED_BY_ANNOTATION];
    const ours = by === owner || input.force === true;
    if (node.spec?.unschedulable && !ours) {
      return {
        uncordoned: false,
        changed: false,
        reason: `node ${input.node} was cordoned by ${by ?? 'someone else'}, not ${owner}: left cordoned`,
        ...(by ? { cordonedBy: by } : {}),
      };
    }
    // Already schedulable; a leftover annotation of ours is still removed so a retry converges.
    if (!node.spec?.unschedulable && by !== owner) return { uncordoned: true, changed: false };
    await patchNode(kube, node, { unschedulable: false, annotations: { [CORDONED_BY_ANNOTATION]: null } }, `uncordon ${input.node}`);
    return { uncordoned: true, changed: true };
  });
}

/** Puts each node's stage label (and this owner) on it; nodes already right are not written. */
// Each pass re-lists and re-decides: a node written meanwhile (a kubelet's status, a controller) is a 409 to retry.
function setStageLabels(deps: Deps, input: { cluster: string; labels: Record<string, string>; owner: string }): Promise<StageLabelsResult> {
  return retryOnConflict(async () => {
    const owner = requireText(input.owner, 'owner');
    const kube = kubeOf(deps, input.cluster);
    const wanted = Object.entries(input.labels ?? {}).sort(([a], [b]) => a.localeCompare(b));
    const { items } = await kubeCall('list nodes', () => kube.core.listNode());
    const byName = new Map(items.map((n) => [n.metadata?.name as string, n]));
    const result: StageLabelsResult = { changed: [], unchanged: [] };
    for (const [name, stage] of wanted) {
      requireText(stage, `stage of ${name}`);
      const node = byName.get(name);
      if (!node)
        throw ApplicationFailure.create({
          type: ErrorType.NotFound,
          message: `set stage label ${stage} on node ${name}: node not found`,
          nonRetryable: true,
        });
      const m = node.metadata;
      if (m?.labels?.[STAGE_LABEL] === stage && m.annotations?.[STAGE_OWNER_ANNOTATION] === owner) {
        result.unchanged.push(name);
        continue;
      }
      await patchNode(
        kube,
        node,
        { labels: { [STAGE_LABEL]: stage }, annotations: { [STAGE_OWNER_ANNOTATION]: owner } },
        `label node ${name} ${STAGE_LABEL}=${stage}`,
      );
      result.changed.push(name);
    }
    return result;
  });
}

/**
 * Removes stage labels from the nodes this owner labelled; other owners' labels stay. Also releases
 * this owner's quarantines of nodes back in service (quarantine-node.ts): `released`, when any.
 */
function clearStageLabels(deps: Deps, input: { cluster: string; owner: string }): Promise<{ cleared: string[]; released?: string[] }> {
  return retryOnConflict(async () => {
    const owner = requireText(input.owner, 'owner');
    const kube = kubeOf(deps, input.cluster);
    const { items } = await kubeCall('list staged nodes', () => kube.core.listNode({ labelSelector: STAGE_LABEL }));
    const cleared: string[] = [];
    for (const node of items) {
      if (node.metadata?.annotations?.[STAGE_OWNER_ANNOTATION] !== owner) continue;
      const name = node.metadata?.name as string;
      await patchNode(
        kube,
        node,
        { labels: { [STAGE_LABEL]: null }, annotations: { [STAGE_OWNER_ANNOTATION]: null } },
        `clear stage label of node ${name}`,
      );
      cleared.push(name);
    }
    const released = await releaseQuarantines(kube, owner);
    return { cleared: cleared.sort(), ...(released.length > 0 ? { released } : {}) };
  });
}

/** Cordon, uncordon and stage labels; every write is a merge patch guarded by the resourceVersion read. */
export function createNodeActivities(deps: Deps) {
  return {
    cordonNode: (input: Parameters<typeof cordonNode>[1]) => cordonNode(deps, input),
    uncordonNode: (input: Parameters<typeof uncordonNode>[1]) => uncordonNode(deps, input),
    setStageLabels: (input: Parameters<typeof setStageLabels>[1]) => setStageLabels(deps, input),
    clearStageLabels: (input: Parameters<typeof clearStageLabels>[1]) => clearStageLabels(deps, input),
  };
}

export type NodeActivities = ReturnType<typeof createNodeActivities>;
