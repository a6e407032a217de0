import type { KubeApi } from './kube-api.js';
import { listAllAt } from './inventory-pages.js';
import type { WatchedCollection } from './watch-until.js';

/**
 * The collections the health checks follow by watch (watch-until.ts): each one listed once with the
 * selectors its watch uses, so the watch goes on from that list's resourceVersion.
 */

/** One node, by name: a get (a missing node is a 404, NotFound), watched from its own resourceVersion. */
export function nodeCollection(kube: KubeApi, node: string): WatchedCollection {
  return {
    what: `read node ${node}`,
    path: '/api/v1/nodes',
    query: { fieldSelector: `metadata.name=${node}` },
    list: async () => {
      const n = await kube.core.readNode({ name: node });
      return { items: [n], resourceVersion: n.metadata?.resourceVersion ?? '' };
    },
  };
}

/** The pods bound to a node, every namespace. */
export function podsOnNodeCollection(kube: KubeApi, node: string, limit: number): WatchedCollection {
  const fieldSelector = `spec.nodeName=${node}`;
  const what = `list pods on ${node}`;
  return {
    what,
    path: '/api/v1/pods',
    query: { fieldSelector },
    list: () => listAllAt(what, (p) => kube.core.listPodForAllNamespaces({ ...p, fieldSelector }), limit),
  };
}

/** A control-plane node's mirror pods of these components (kube-system). */
export function controlPlanePodsCollection(kube: KubeApi, node: string, components: string[]): WatchedCollection {
  const query = { fieldSelector: `spec.nodeName=${node}`, labelSelector: `component in (${components.join(',')})` };
  return {
    what: `list control-plane pods on ${node}`,
    path: '/api/v1/namespaces/kube-system/pods',
    query,
    list: async () => {
      const { items, metadata } = await kube.core.listNamespacedPod({ namespace: 'kube-system', ...query });
      return { items, resourceVersion: metadata?.resourceVersion ?? '' };
    },
  };
}

export type WorkloadKind = 'Deployment' | 'StatefulSet' | 'DaemonSet';
const PLURAL: Record<WorkloadKind, string> = { Deployment: 'deployments', StatefulSet: 'statefulsets', DaemonSet: 'daemonsets' };

/** Deployments, StatefulSets or DaemonSets in a namespace, or in every namespace. */
export function workloadCollection(kube: KubeApi, kind: WorkloadKind, namespace: string | undefined, limit: number): WatchedCollection {
  const what = `list ${kind}s in ${namespace ?? 'all namespaces'}`;
  const a = kube.apps;
  const page = (p: { limit: number; _continue?: string }) => {
    if (kind === 'Deployment') return namespace ? a.listNamespacedDeployment({ ...p, namespace }) : a.listDeploymentForAllNamespaces(p);
    if (kind === 'StatefulSet') return namespace ? a.listNamespacedStatefulSet({ ...p, namespace }) : a.listStatefulSetForAllNamespaces(p);
    return namespace ? a.listNamespacedDaemonSet({ ...p, namespace }) : a.listDaemonSetForAllNamespaces(p);
  };
  return {
    what,
    path: `/apis/apps/v1${namespace ? `/namespaces/${encodeURIComponent(namespace)}` : ''}/${PLURAL[kind]}`,
    list: () => listAllAt<{ metadata?: { uid?: string } }>(what, page, limit),
  };
}
