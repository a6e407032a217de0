import type { V1Node, V1Pod } from '@kubernetes/client-node';
import { ApplicationFailure } from '@temporalio/activity';
import { isNodeName, planDrainPods, type DrainOptions, type DrainPlan, type DrainPodFacts } from '../rules/index.js';
import { ErrorType, httpStatus, kubeCall, kubeFailure } from './errors.js';
import type { KubeApi } from './kube-api.js';

export interface NodeDrainState {
  node: V1Node;
  /** The pods bound to the node now, as listed (the mechanism needs their labels for PDB lookups). */
  pods: V1Pod[];
  plan: DrainPlan;
}

/** The node name goes into a field selector, so it must be a plain DNS name, nothing more. */
export function checkNodeName(node: unknown): string {
  if (!isNodeName(node)) {
    throw ApplicationFailure.create({ type: ErrorType.Invalid, message: `invalid node name ${JSON.stringify(node)}`, nonRetryable: true });
  }
  return node;
}

/** Facts about one pod for the pure drain filters; `daemonSetExists` answers for its DaemonSet owner. */
export function podFacts(pod: V1Pod, daemonSetExists?: boolean): DrainPodFacts {
  const m = pod.metadata ?? {};
  return {
    namespace: m.namespace ?? 'default',
    name: m.name ?? '',
    uid: m.uid ?? '',
    ownerReferences: (m.ownerReferences ?? []).map((o) => ({ kind: o.kind, name: o.name, controller: o.controller === true })),
    annotations: m.annotations ?? {},
    labels: m.labels ?? {},
    ...(pod.status?.phase ? { phase: pod.status.phase } : {}),
    terminating: Boolean(m.deletionTimestamp),
    hasEmptyDir: (pod.spec?.volumes ?? []).some((v) => v.emptyDir !== undefined && v.emptyDir !== null),
    ...(daemonSetExists === undefined ? {} : { daemonSetExists }),
  };
}

async function daemonSetExists(kube: KubeApi, namespace: string, name: string): Promise<boolean> {
  try {
    await kube.apps.readNamespacedDaemonSet({ name, namespace });
    return true;
  } catch (err) {
    if (httpStatus(err) === 404) return false;
    throw kubeFailure(err, `read DaemonSet ${namespace}/${name}`);
  }
}

/** Reads the node and its pods and judges them (read-only). */
export async function readNodeDrainState(kube: KubeApi, nodeName: string, options: DrainOptions): Promise<NodeDrainState> {
  checkNodeName(nodeName);
  const node = await kubeCall(`read node ${nodeName}`, () => kube.core.readNode({ name: nodeName }));
  const { items } = await kubeCall(`list pods on ${nodeName}`, () =>
    kube.core.listPodForAllNamespaces({ fieldSelector: `spec.nodeName=${nodeName}` }),
  );
  const known = new Map<string, boolean>();
  const facts: DrainPodFacts[] = [];
  for (const pod of items) {
    const owner = pod.metadata?.ownerReferences?.find((o) => o.controller === true);
    let exists: boolean | undefined;
    if (owner?.kind === 'DaemonSet') {
      const key = `${pod.metadata?.namespace}/${owner.name}`;
      if (!known.has(key)) known.set(key, await daemonSetExists(kube, pod.metadata?.namespace ?? 'default', owner.name));
      exists = known.get(key);
    }
    facts.push(podFacts(pod, exists));
  }
  return { node, pods: items, plan: planDrainPods(facts, options) };
}
