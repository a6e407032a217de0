// What the verdict of a reversible hop (rules/hop-reversibility.ts) depends on in the cluster itself,
// read from the control-plane mirror pods (the kubelet's copies of kubeadm's manifests): the oldest
// etcd member's version (its image tag, as the hop prerequisites read it) and the alpha feature gates
// the kube-apiserver, controller-manager and scheduler turn on (`--feature-gates`). Read-only.
import { alphaGatesOn, compareVersions, parseVersion, type ReversibilityFacts } from '../../rules/index.js';
import type { ClusterAccess } from '../cluster-access.js';
import { kubeCall } from '../errors.js';
import { imageTag } from './hop-prerequisites.js';

const FEATURE_GATES = /^--feature-gates=(.*)$/;
const RELEASE = /^v?(\d+\.\d+\.\d+)/;

export async function readReversibilityFacts(access: ClusterAccess, from: string): Promise<ReversibilityFacts> {
  const { items } = await kubeCall('list control-plane pods', () =>
    access.kube.core.listNamespacedPod({ namespace: 'kube-system', labelSelector: 'tier=control-plane' }),
  );
  const etcd: string[] = [];
  const gates: string[] = [];
  for (const pod of items) {
    if (pod.metadata?.deletionTimestamp) continue;
    const container = pod.spec?.containers[0];
    if (pod.metadata?.labels?.component === 'etcd') {
      const release = RELEASE.exec(imageTag(container?.image) ?? '')?.[1];
      if (release) etcd.push(release);
      continue;
    }
    for (const arg of [...(container?.command ?? []), ...(container?.args ?? [])]) {
      const value = FEATURE_GATES.exec(arg)?.[1];
      if (value !== undefined) gates.push(value);
    }
  }
  const oldest = etcd.map((v) => parseVersion(v)).sort(compareVersions)[0];
  const alpha = alphaGatesOn(gates, from);
  return { ...(oldest ? { etcd: oldest.text } : {}), ...(alpha ? { alphaFeatureGates: alpha } : {}) };
}
