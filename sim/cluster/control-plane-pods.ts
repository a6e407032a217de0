import type { V1Node, V1Pod } from '@kubernetes/client-node';

/** The control-plane static pods kubeadm runs on every control-plane node, as mirror pods. */
export const CONTROL_PLANE_COMPONENTS = ['kube-apiserver', 'kube-controller-manager', 'kube-scheduler'] as const;
export type ControlPlaneComponent = (typeof CONTROL_PLANE_COMPONENTS)[number];

export const IMAGE_REPOSITORY = 'registry.k8s.io';
/** kubeadm's etcd image; the description may name another tag per control plane (etcdImageTag). */
export const ETCD_IMAGE_TAG = '3.6.4-0';

export function componentImage(component: string, version: string): string {
  return `${IMAGE_REPOSITORY}/${component}:v${version}`;
}

/** `registry.k8s.io/kube-apiserver:v1.33.7` → `1.33.7`. */
export function versionOfImage(image: string | undefined): string | undefined {
  const tag = image?.split(':').at(-1);
  return tag?.startsWith('v') ? tag.slice(1) : undefined;
}

/**
 * A mirror pod as the kubelet creates it for a static pod: bound to its node, owned by the Node,
 * marked with the mirror annotation so drains skip it.
 */
export function mirrorPod(node: V1Node, component: ControlPlaneComponent | 'etcd', version: string, etcdTag = ETCD_IMAGE_TAG): V1Pod {
  const nodeName = node.metadata?.name as string;
  const image = component === 'etcd' ? `${IMAGE_REPOSITORY}/etcd:${etcdTag}` : componentImage(component, version);
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name: `${component}-${nodeName}`,
      namespace: 'kube-system',
      labels: { component, tier: 'control-plane' },
      annotations: {
        'kubernetes.io/config.mirror': `${component}-${version}`,
        'kubernetes.io/config.source': 'file',
        'kubernetes.io/config.hash': `${component}-${version}`,
      },
      ownerReferences: [{ apiVersion: 'v1', kind: 'Node', name: nodeName, uid: node.metadata?.uid as string, controller: true }],
    },
    spec: {
      nodeName,
      hostNetwork: true,
      priorityClassName: 'system-node-critical',
      tolerations: [{ operator: 'Exists', effect: 'NoExecute' }],
      containers: [{ name: component, image, command: [component] }],
    },
  };
}
