import { createHash } from 'node:crypto';
import type { V1Node, V1Pod } from '@kubernetes/client-node';
import { parse as parseYaml } from 'yaml';
import { statusOf, type KubeClients } from './kube-clients.js';
import { waitFor } from './wait-for.js';

/**
 * The mirror pods of a per-node control plane, as a kubelet makes them from a host's static-pod
 * manifests (pkg/kubelet/config: the pod named `<name>-<node>`, bound to the node, owned by the
 * Node, with the annotations kubernetes.io/config.{hash,mirror,source,seen}). kubeadm's upgrade
 * waits for config.hash to change after it rewrites a manifest, then for phase Running (kwok sets
 * it). The hash here is the md5 of the manifest's bytes, not the kubelet's hash of the decoded pod:
 * kubeadm only compares it with the previous one.
 */

/** kubeadm reads the etcd members' client URLs from this annotation of the etcd mirror pods. */
const ETCD_CLIENT_URLS = 'kubeadm.kubernetes.io/etcd.advertise-client-urls';

export const manifestHash = (text: string): string => createHash('md5').update(text).digest('hex');

/**
 * The mirror pod of manifest `text` on `node`. `etcdEndpoint`: where the node's own etcd member answers
 * (its advertise-client-urls, which kubeadm's etcd client dials: the manifest's https://10.0.0.x:2379 is modelled).
 */
export function mirrorPodOf(text: string, node: V1Node, etcdEndpoint: string): V1Pod {
  const manifest = parseYaml(text) as V1Pod;
  const nodeName = node.metadata?.name as string;
  const name = `${manifest.metadata?.name ?? 'static'}-${nodeName}`;
  const hash = manifestHash(text);
  const annotations: Record<string, string> = {
    ...manifest.metadata?.annotations,
    'kubernetes.io/config.hash': hash,
    'kubernetes.io/config.mirror': hash,
    'kubernetes.io/config.source': 'file',
    'kubernetes.io/config.seen': new Date().toISOString(),
  };
  if (annotations[ETCD_CLIENT_URLS] !== undefined) annotations[ETCD_CLIENT_URLS] = etcdEndpoint;
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name,
      namespace: manifest.metadata?.namespace ?? 'kube-system',
      labels: manifest.metadata?.labels ?? {},
      annotations,
      ownerReferences: [{ apiVersion: 'v1', kind: 'Node', name: nodeName, uid: node.metadata?.uid as string, controller: true }],
    },
    spec: { ...manifest.spec, nodeName } as V1Pod['spec'],
  };
}

/** Deletes pod `name` in kube-system (grace 0, as the kubelet removes a mirror pod) and waits until it is gone. */
export async function deleteMirrorPod(kube: KubeClients, name: string): Promise<void> {
  try {
    await kube.core.deleteNamespacedPod({ name, namespace: 'kube-system', gracePeriodSeconds: 0 });
  } catch (err) {
    if (statusOf(err) === 404) return;
    throw err;
  }
  await waitFor(
    `old ${name} gone`,
    async () => {
      try {
        await kube.core.readNamespacedPod({ name, namespace: 'kube-system' });
        return false;
      } catch (err) {
        if (statusOf(err) === 404) return true;
        throw err;
      }
    },
    30_000,
    100,
  );
}

/** A manifest changed: the old mirror pod goes, the new one comes (a mirror pod's spec cannot change). */
export async function replaceMirrorPod(kube: KubeClients, pod: V1Pod): Promise<void> {
  await deleteMirrorPod(kube, pod.metadata?.name as string);
  await kube.core.createNamespacedPod({ namespace: 'kube-system', body: pod });
}
