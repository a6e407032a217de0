/**
 * A node's health beyond its Ready condition (issue 40, cluster-api#10949 and #11826): after its
 * kubelet restarted (or kubeadm moved its control plane), every DaemonSet pod bound to it Ready (the
 * CNI and kube-proxy among them: without them the node is Ready and useless) and none of the
 * configured node conditions True (node-problem-detector's KernelDeadlock, ReadonlyFilesystem, ...).
 * A failure halts for the operator, naming the pod or condition; nothing is remediated. Pure: facts in.
 */

export interface NodeHealthFacts {
  conditions: readonly { type: string; status: string; reason?: string; message?: string }[];
  /** The DaemonSet pods bound to the node, not terminating. */
  daemonSetPods: readonly { namespace: string; name: string; daemonSet: string; ready: boolean; phase?: string }[];
}

export interface NodeHealthPolicy {
  daemonSets: boolean;
  conditions: readonly string[];
}

/** kube-system's pods first (the CNI and kube-proxy), then by namespace/name: the message names what matters most first. */
const systemFirst = (a: { namespace: string; name: string }, b: { namespace: string; name: string }): number =>
  Number(b.namespace === 'kube-system') - Number(a.namespace === 'kube-system') ||
  `${a.namespace}/${a.name}`.localeCompare(`${b.namespace}/${b.name}`);

/** What is wrong with the node, one line per problem; empty: healthy. */
export function nodeHealthProblems(facts: NodeHealthFacts, policy: NodeHealthPolicy): string[] {
  const conditions = facts.conditions
    .filter((c) => policy.conditions.includes(c.type) && c.status === 'True')
    .map((c) => `condition ${c.type} is True${c.reason ? ` (${c.reason}${c.message ? `: ${c.message.slice(0, 120)}` : ''})` : ''}`);
  const pods = policy.daemonSets
    ? [...facts.daemonSetPods]
        .filter((p) => !p.ready)
        .sort(systemFirst)
        .map((p) => `DaemonSet ${p.namespace}/${p.daemonSet}'s pod ${p.name} is not Ready${p.phase ? ` (${p.phase})` : ''}`)
    : [];
  return [...conditions, ...pods];
}
