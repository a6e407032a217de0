import type { V1Node, V1Pod } from '@kubernetes/client-node';
import { nodeHealthProblems, type NodeHealthPolicy } from '../rules/index.js';
import { DEFAULT_NODE_HEALTH, type ClusterConfig, type NodeHealthConfig } from './cluster-config.js';
import { isReady } from './inventory-facts.js';

/** The configuration's `nodeHealth:`, or its defaults. */
export const nodeHealthPolicy = (config: ClusterConfig): NodeHealthConfig => config.nodeHealth ?? DEFAULT_NODE_HEALTH;

/** The node's problems beyond Ready (rules/node-health.ts): its configured conditions and DaemonSet pods, as a watch last saw them. */
export function nodeHealthOfFacts(node: V1Node, pods: V1Pod[], policy: NodeHealthPolicy): string[] {
  const daemonSetPods = pods.flatMap((p) => {
    const owner = p.metadata?.ownerReferences?.find((o) => o.controller === true && o.kind === 'DaemonSet');
    if (!owner || p.metadata?.deletionTimestamp) return [];
    return [
      {
        namespace: p.metadata?.namespace ?? 'default',
        name: p.metadata?.name ?? '',
        daemonSet: owner.name,
        ready: isReady(p.status?.conditions),
        ...(p.status?.phase ? { phase: p.status.phase } : {}),
      },
    ];
  });
  const conditions = (node.status?.conditions ?? []).map((c) => ({
    type: c.type,
    status: c.status,
    ...(c.reason ? { reason: c.reason } : {}),
    ...(c.message ? { message: c.message } : {}),
  }));
  return nodeHealthProblems({ conditions, daemonSetPods }, policy);
}
