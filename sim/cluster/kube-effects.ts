import type { ClusterEffects } from '../hosts/cluster-effects.js';
import { CONTROL_PLANE_COMPONENTS, componentImage, mirrorPod, versionOfImage } from './control-plane-pods.js';
import { mergePatch, statusOf, strategicMergePatch, type KubeClients } from './kube-clients.js';
import { versionInClusterConfiguration } from './workload-objects.js';
import { replaceMirrorPod } from './mirror-pods.js';
import { waitFor } from './wait-for.js';

/** kwok's chaos stage: while a node carries this label, kwok reports it NotReady. */
export const NOT_READY_LABEL = 'node-not-ready.stage.kwok.x-k8s.io';

const nodeReady = async (kube: KubeClients, node: string) =>
  (await kube.core.readNode({ name: node })).status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? false;

/** The versions of a node's control-plane mirror pods (etcd aside), by component. */
async function controlPlaneVersions(kube: KubeClients, node: string): Promise<Record<string, string>> {
  const { items } = await kube.core.listNamespacedPod({
    namespace: 'kube-system',
    labelSelector: 'tier=control-plane',
    fieldSelector: `spec.nodeName=${node}`,
  });
  const out: Record<string, string> = {};
  for (const pod of items) {
    const component = pod.metadata?.labels?.component;
    const version = versionOfImage(pod.spec?.containers[0]?.image);
    if (component && component !== 'etcd' && version) out[component] = version;
  }
  return out;
}

/** A started kubelet reports its running pods Ready again (kwok only readies Pending pods). */
async function reportRunningPods(kube: KubeClients, node: string): Promise<void> {
  if (!(await nodeReady(kube, node))) return;
  const { items } = await kube.core.listPodForAllNamespaces({ fieldSelector: `spec.nodeName=${node},status.phase=Running` });
  const now = new Date().toISOString();
  for (const pod of items) {
    if (pod.metadata?.deletionTimestamp || pod.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True')) continue;
    const conditions = ['Ready', 'ContainersReady'].map((type) => ({ type, status: 'True', lastTransitionTime: now }));
    await kube.core
      .patchNamespacedPodStatus(
        { name: pod.metadata?.name as string, namespace: pod.metadata?.namespace as string, body: { status: { conditions } } },
        strategicMergePatch,
      )
      .catch((err: unknown) => {
        if (statusOf(err) !== 404) throw err; // deleted meanwhile: nothing to report
      });
  }
}

/** What hosts do to the cluster, done through the real Kubernetes API. */
export function kubeEffects(kube: KubeClients): ClusterEffects {
  const readClusterConfiguration = async () => kube.core.readNamespacedConfigMap({ name: 'kubeadm-config', namespace: 'kube-system' });

  return {
    async kubeletStopped(node) {
      await kube.core.patchNode({ name: node, body: { metadata: { labels: { [NOT_READY_LABEL]: 'true' } } } }, mergePatch);
      await waitFor(`${node} NotReady`, async () => !(await nodeReady(kube, node)), 30_000, 100);
    },

    async kubeletStarted(node, version) {
      // The version first, then let kwok's node-initialize stage make the node Ready again.
      await kube.core.patchNodeStatus({ name: node, body: { status: { nodeInfo: { kubeletVersion: `v${version}` } } } }, mergePatch);
      await kube.core.patchNode({ name: node, body: { metadata: { labels: { [NOT_READY_LABEL]: null } } } }, mergePatch);
      await waitFor(`${node} Ready`, () => nodeReady(kube, node), 30_000, 100);
      await reportRunningPods(kube, node);
      // The node controller may mark the pods not ready *after* this, acting late on the NotReady it
      // saw: a real kubelet keeps syncing pod status, so the simulated one reports again a few times
      // (soon after its start, when most marks come); a mark later still is put right by the
      // kubelets' status sync (kubelet-status-sync.ts), half a sync period after it.
      for (const ms of [2_000, 5_000, 15_000, 30_000])
        setTimeout(() => void reportRunningPods(kube, node).catch(() => undefined), ms).unref();
    },

    async clusterVersion() {
      const version = versionInClusterConfiguration((await readClusterConfiguration()).data?.ClusterConfiguration);
      if (!version) throw new Error('kube-system/kubeadm-config has no kubernetesVersion');
      return version;
    },

    controlPlaneVersions: (node) => controlPlaneVersions(kube, node),

    async upgradeControlPlane(node, version, { recordClusterVersion }) {
      if (recordClusterVersion) {
        const cm = await readClusterConfiguration();
        const text = (cm.data?.ClusterConfiguration ?? '').replace(/^kubernetesVersion:.*$/m, `kubernetesVersion: v${version}`);
        await kube.core.patchNamespacedConfigMap(
          { name: 'kubeadm-config', namespace: 'kube-system', body: { data: { ClusterConfiguration: text } } },
          mergePatch,
        );
      }
      // The kubelet replaces a static pod whose manifest changed: a new mirror pod, a new UID.
      const nodeObject = await kube.core.readNode({ name: node });
      for (const component of CONTROL_PLANE_COMPONENTS) {
        const current = await kube.core
          .readNamespacedPod({ name: `${component}-${node}`, namespace: 'kube-system' })
          .catch((err: unknown) => {
            if (statusOf(err) === 404) return undefined;
            throw err;
          });
        if (current?.spec?.containers[0]?.image === componentImage(component, version)) continue;
        await replaceMirrorPod(kube, mirrorPod(nodeObject, component, version));
      }
      // kubeadm ≥ 1.28 moves the addons once every control plane runs the new version.
      const { items } = await kube.core.listNamespacedPod({ namespace: 'kube-system', labelSelector: 'component=kube-apiserver' });
      if (items.length > 0 && items.every((p) => versionOfImage(p.spec?.containers[0]?.image) === version)) {
        await kube.apps.patchNamespacedDaemonSet(
          {
            name: 'kube-proxy',
            namespace: 'kube-system',
            body: {
              spec: { template: { spec: { containers: [{ name: 'kube-proxy', image: `registry.k8s.io/kube-proxy:v${version}` }] } } },
            },
          },
          strategicMergePatch,
        );
      }
    },
  };
}
