import type { V1DaemonSet, V1Deployment, V1Pod, V1PodDisruptionBudget, V1PodSpec, V1Service, V1StatefulSet } from '@kubernetes/client-node';
import type { WorkloadSpec } from '../description.js';

const PAUSE = 'registry.k8s.io/pause:3.10';

function podSpec(w: WorkloadSpec, graceSeconds: number): V1PodSpec {
  return {
    // kwok deletes terminating pods at once unless the description asks for the grace to be honoured
    // (terminationGraceSeconds); a short grace keeps real-cluster shape either way.
    terminationGracePeriodSeconds: graceSeconds,
    containers: [{ name: 'app', image: PAUSE, ...(w.emptyDir ? { volumeMounts: [{ name: 'scratch', mountPath: '/scratch' }] } : {}) }],
    ...(w.emptyDir ? { volumes: [{ name: 'scratch', emptyDir: {} }] } : {}),
  };
}

const labels = (w: WorkloadSpec) => ({ app: w.name });

/** The API objects that realise one described workload (and its PDB). */
export function workloadObjects(
  w: WorkloadSpec,
  graceSeconds = 1,
): {
  deployment?: V1Deployment;
  statefulSet?: V1StatefulSet;
  service?: V1Service;
  daemonSet?: V1DaemonSet;
  pod?: V1Pod;
  pdb?: V1PodDisruptionBudget;
} {
  const metadata = { name: w.name, namespace: w.namespace, labels: labels(w) };
  const template = { metadata: { labels: labels(w) }, spec: podSpec(w, graceSeconds) };
  const selector = { matchLabels: labels(w) };
  const pdb: V1PodDisruptionBudget | undefined = w.pdb
    ? { metadata: { name: w.name, namespace: w.namespace }, spec: { selector, ...w.pdb } }
    : undefined;
  const withPdb = <T extends object>(o: T) => (pdb ? { ...o, pdb } : o);
  switch (w.kind) {
    case 'Deployment':
      return withPdb({ deployment: { metadata, spec: { replicas: w.replicas, selector, template } } });
    case 'StatefulSet':
      return withPdb({
        service: { metadata, spec: { clusterIP: 'None', selector: labels(w), ports: [{ port: 80, name: 'http' }] } },
        statefulSet: { metadata, spec: { replicas: w.replicas, serviceName: w.name, podManagementPolicy: 'Parallel', selector, template } },
      });
    case 'DaemonSet':
      return withPdb({ daemonSet: { metadata, spec: { selector, template } } });
    case 'Pod':
      return withPdb({ pod: { metadata, spec: { ...podSpec(w, graceSeconds), ...(w.node ? { nodeName: w.node } : {}) } } });
  }
}

/** kubeadm's kube-proxy addon: a DaemonSet on every node, its image tag the kube-proxy version. */
export function kubeProxyDaemonSet(version: string): V1DaemonSet {
  const selector = { matchLabels: { 'k8s-app': 'kube-proxy' } };
  return {
    metadata: { name: 'kube-proxy', namespace: 'kube-system', labels: { 'k8s-app': 'kube-proxy' } },
    spec: {
      selector,
      updateStrategy: { type: 'RollingUpdate', rollingUpdate: { maxUnavailable: '10%' } },
      template: {
        metadata: { labels: { 'k8s-app': 'kube-proxy' } },
        spec: {
          priorityClassName: 'system-node-critical',
          hostNetwork: true,
          tolerations: [{ operator: 'Exists' }],
          terminationGracePeriodSeconds: 1,
          containers: [{ name: 'kube-proxy', image: `registry.k8s.io/kube-proxy:v${version}` }],
        },
      },
    },
  };
}

/** The ClusterConfiguration kubeadm keeps in kube-system/kubeadm-config; its kubernetesVersion is the cluster's. */
export function kubeadmClusterConfiguration(clusterName: string, version: string): string {
  return [
    'apiVersion: kubeadm.k8s.io/v1beta4',
    'kind: ClusterConfiguration',
    `clusterName: ${clusterName}`,
    `kubernetesVersion: v${version}`,
    'controlPlaneEndpoint: control-plane.sim.invalid:6443',
    'certificatesDir: /etc/kubernetes/pki',
    'imageRepository: registry.k8s.io',
    'networking:',
    '  serviceSubnet: 10.96.0.0/16',
    '  podSubnet: 10.244.0.0/16',
    '',
  ].join('\n');
}

export function versionInClusterConfiguration(text: string | undefined): string | undefined {
  const m = /^kubernetesVersion:\s*v?(\S+)\s*$/m.exec(text ?? '');
  return m?.[1];
}
