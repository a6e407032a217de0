import type { V1Container, V1Node, V1Pod } from '@kubernetes/client-node';
import { ApplicationFailure } from '@temporalio/activity';
import {
  isNodeName,
  largestFittingBatch,
  podRequests,
  type BatchFit,
  type CapacityFacts,
  type CapacityNode,
  type CapacityPod,
  type Resources,
} from '../rules/index.js';
import type { ClusterResolver } from './cluster-access.js';
import { ErrorType } from './errors.js';
import { isReady, MIRROR_ANNOTATION } from './inventory-facts.js';
import { DEFAULT_PAGE_SIZE, listAll } from './inventory-pages.js';

/** Most nodes one capacity check takes: a batch, or a plan's every batch. */
const MAX_NODES = 5_000;

/** What a batch's check says: how many of its nodes may be out at once, and the fit of those (or of the first, when none may). */
export interface BatchCapacity {
  size: number;
  fit: BatchFit;
}

function checkBatches(batches: unknown): string[][] {
  const ok =
    Array.isArray(batches) &&
    batches.every((b) => Array.isArray(b) && b.length > 0 && b.every(isNodeName)) &&
    batches.flat().length <= MAX_NODES;
  if (!ok)
    throw ApplicationFailure.create({
      type: ErrorType.Invalid,
      message: `batches must be lists of node names (at most ${MAX_NODES} in all)`,
      nonRetryable: true,
    });
  return batches as string[][];
}

/** A pod's effective requests, as the scheduler counts them: the containers' sum, or the largest init container's if more. */
function requestsOf(pod: V1Pod): Resources {
  const each = (c: V1Container) => podRequests(c.resources?.requests as Record<string, string> | undefined);
  const sum = (pod.spec?.containers ?? [])
    .map(each)
    .reduce((a, b) => ({ milliCpu: a.milliCpu + b.milliCpu, memoryBytes: a.memoryBytes + b.memoryBytes, pods: 1 }), {
      milliCpu: 0,
      memoryBytes: 0,
      pods: 1,
    });
  const init = (pod.spec?.initContainers ?? []).map(each);
  const overhead = podRequests(pod.spec?.overhead as Record<string, string> | undefined);
  return {
    milliCpu: Math.max(sum.milliCpu, ...init.map((r) => r.milliCpu)) + overhead.milliCpu,
    memoryBytes: Math.max(sum.memoryBytes, ...init.map((r) => r.memoryBytes)) + overhead.memoryBytes,
    pods: 1,
  };
}

const terminal = (p: V1Pod) => p.status?.phase === 'Succeeded' || p.status?.phase === 'Failed';

/** A pod a drain evicts and its controller recreates elsewhere: not a DaemonSet's, not a mirror pod, not done. */
function movable(p: V1Pod): boolean {
  const owner = p.metadata?.ownerReferences?.find((o) => o.controller === true);
  if (!owner || owner.kind === 'DaemonSet') return false;
  return !(MIRROR_ANNOTATION in (p.metadata?.annotations ?? {})) && !terminal(p) && !p.metadata?.deletionTimestamp;
}

function capacityPod(p: V1Pod): CapacityPod {
  const terms = p.spec?.affinity?.nodeAffinity?.requiredDuringSchedulingIgnoredDuringExecution?.nodeSelectorTerms ?? [];
  return {
    name: `${p.metadata?.namespace ?? 'default'}/${p.metadata?.name ?? ''}`,
    node: p.spec?.nodeName ?? '',
    requests: requestsOf(p),
    ...(p.spec?.nodeSelector ? { nodeSelector: p.spec.nodeSelector } : {}),
    // matchFields (metadata.name) is not a label: such a term is left out, so the check may be generous, never strict.
    ...(terms.length ? { affinityTerms: terms.map((t) => ({ matchExpressions: t.matchExpressions ?? [] })) } : {}),
    ...(p.spec?.tolerations ? { tolerations: p.spec.tolerations.map((t) => ({ ...t })) as CapacityPod['tolerations'] } : {}),
  };
}

function capacityNode(n: V1Node, requested: Resources | undefined): CapacityNode {
  const allocatable = podRequests(n.status?.allocatable as Record<string, string> | undefined);
  return {
    name: n.metadata?.name ?? '',
    labels: n.metadata?.labels ?? {},
    taints: (n.spec?.taints ?? []).map((t) => ({ key: t.key, effect: t.effect, ...(t.value === undefined ? {} : { value: t.value }) })),
    unschedulable: n.spec?.unschedulable === true || !isReady(n.status?.conditions),
    allocatable: { ...allocatable, pods: Number(n.status?.allocatable?.pods ?? 110) },
    requested: requested ?? { milliCpu: 0, memoryBytes: 0, pods: 0 },
  };
}

export function createBatchCapacityActivities(deps: { clusters: ClusterResolver; pageSize?: number }) {
  const limit = deps.pageSize ?? DEFAULT_PAGE_SIZE;
  return {
    /**
     * Read-only: for each batch (its nodes in order), how many may be out at once with the pods their
     * drains evict fitting on the nodes that stay schedulable (rules/batch-capacity.ts), and that fit's
     * pods left Pending, requests and headroom. The nodes and pods are read once for every batch.
     */
    async checkBatchCapacity(input: { cluster: string; batches: string[][] }): Promise<{ batches: BatchCapacity[] }> {
      const batches = checkBatches(input.batches);
      const { kube } = deps.clusters(input.cluster);
      const [nodes, pods] = await Promise.all([
        listAll('list nodes', (p) => kube.core.listNode(p), limit),
        listAll('list pods', (p) => kube.core.listPodForAllNamespaces(p), limit),
      ]);
      const requested = new Map<string, Resources>();
      for (const p of pods) {
        const node = p.spec?.nodeName;
        if (!node || terminal(p)) continue;
        const r = requestsOf(p);
        const was = requested.get(node) ?? { milliCpu: 0, memoryBytes: 0, pods: 0 };
        requested.set(node, { milliCpu: was.milliCpu + r.milliCpu, memoryBytes: was.memoryBytes + r.memoryBytes, pods: was.pods + 1 });
      }
      const facts: CapacityFacts = {
        nodes: nodes.map((n) => capacityNode(n, requested.get(n.metadata?.name ?? ''))),
        movablePods: pods.filter(movable).map(capacityPod),
      };
      return { batches: batches.map((b) => largestFittingBatch(facts, b)) };
    },
  };
}
