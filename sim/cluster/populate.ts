import type { V1Node } from '@kubernetes/client-node';
import type { SimDescription, SimNode } from '../description.js';
import { waitFor } from './wait-for.js';
import { CONTROL_PLANE_COMPONENTS, mirrorPod } from './control-plane-pods.js';
import { inParallel, statusOf, type KubeClients } from './kube-clients.js';
import { kubeadmClusterConfiguration, kubeProxyDaemonSet, workloadObjects } from './workload-objects.js';

/** The annotation that puts a Node under kwok's simulated kubelet. */
export const KWOK_NODE_ANNOTATION = 'kwok.x-k8s.io/node';
const CONTROL_PLANE_LABEL = 'node-role.kubernetes.io/control-plane';

/** The Node a simulated host registers: kwok's annotation, the labels, Ready once kwok takes it, the kubelet version. */
export function nodeObject(n: SimNode): V1Node {
  const resources = { cpu: '32', memory: '256Gi', pods: '110' };
  return {
    metadata: {
      name: n.name,
      annotations: { [KWOK_NODE_ANNOTATION]: 'fake' },
      labels: {
        ...n.labels,
        'kubernetes.io/hostname': n.name,
        'kubernetes.io/os': 'linux',
        'kubernetes.io/arch': 'amd64',
        ...(n.role === 'control-plane' ? { [CONTROL_PLANE_LABEL]: '' } : {}),
      },
    },
    spec: n.role === 'control-plane' ? { taints: [{ key: CONTROL_PLANE_LABEL, effect: 'NoSchedule' }] } : {},
    // The apiserver accepts status on create; kwok keeps a kubeletVersion that is already set.
    status: {
      // Every simulated host listens on loopback (its own SSH port); kwok keeps addresses set on create.
      addresses: [
        { type: 'InternalIP', address: '127.0.0.1' },
        { type: 'Hostname', address: n.name },
      ],
      capacity: resources,
      allocatable: resources,
      nodeInfo: {
        kubeletVersion: `v${n.kubelet}`,
        kubeProxyVersion: '',
        architecture: 'amd64',
        operatingSystem: 'linux',
        osImage: 'Debian GNU/Linux 12 (bookworm)',
        kernelVersion: '6.1.0-sim',
        containerRuntimeVersion: n.containerRuntime ?? 'containerd://1.7.24',
        bootID: '',
        machineID: '',
        systemUUID: '',
      },
    },
  };
}

async function createOrKeep(create: () => Promise<unknown>): Promise<void> {
  try {
    await create();
  } catch (err) {
    if (statusOf(err) !== 409) throw err; // already there: sim up is re-runnable
  }
}

async function ensureNamespace(kube: KubeClients, name: string): Promise<void> {
  if (name !== 'default' && name !== 'kube-system') {
    await createOrKeep(() => kube.core.createNamespace({ body: { metadata: { name } } }));
  }
  // ServiceAccount admission refuses pods until the controller-manager has made the default account.
  await waitFor(`serviceaccount ${name}/default`, async () => {
    await kube.core.readNamespacedServiceAccount({ name: 'default', namespace: name });
    return true;
  });
}

/** Brings the API to the described state: nodes Ready, mirror pods, kube-proxy, workloads running. */
export async function populateCluster(kube: KubeClients, d: SimDescription, timeoutMs = 600_000): Promise<void> {
  await ensureNamespace(kube, 'kube-system');
  await createOrKeep(() =>
    kube.core.createNamespacedConfigMap({
      namespace: 'kube-system',
      body: {
        metadata: { name: 'kubeadm-config', namespace: 'kube-system' },
        data: { ClusterConfiguration: kubeadmClusterConfiguration(d.name, d.version) },
      },
    }),
  );

  await inParallel(d.nodes, 32, (n) => createOrKeep(() => kube.core.createNode({ body: nodeObject(n) })));
  await waitFor(
    `${d.nodes.length} nodes Ready without the not-ready taint`,
    async () => {
      const { items } = await kube.core.listNode();
      const ready = items.filter(
        (n) =>
          n.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') &&
          !n.spec?.taints?.some((t) => t.key === 'node.kubernetes.io/not-ready'),
      );
      return ready.length >= d.nodes.length;
    },
    timeoutMs,
    500,
  );

  const nodes = new Map((await kube.core.listNode()).items.map((n) => [n.metadata?.name as string, n]));
  const mirrors = d.nodes
    .filter((n) => n.components)
    .flatMap((n) => {
      const node = nodes.get(n.name) as V1Node;
      const c = n.components as NonNullable<SimNode['components']>;
      const versions = { 'kube-apiserver': c.apiserver, 'kube-controller-manager': c.controllerManager, 'kube-scheduler': c.scheduler };
      return [
        mirrorPod(node, 'etcd', d.version, n.etcdImageTag),
        ...CONTROL_PLANE_COMPONENTS.map((comp) => mirrorPod(node, comp, versions[comp])),
      ];
    });
  await inParallel(mirrors, 16, (pod) => createOrKeep(() => kube.core.createNamespacedPod({ namespace: 'kube-system', body: pod })));
  await createOrKeep(() => kube.apps.createNamespacedDaemonSet({ namespace: 'kube-system', body: kubeProxyDaemonSet(d.version) }));

  for (const ns of new Set(d.workloads.map((w) => w.namespace))) await ensureNamespace(kube, ns);
  await inParallel(d.workloads, 8, async (w) => {
    const o = workloadObjects(w, d.terminationGraceSeconds ?? 1);
    const ns = w.namespace;
    if (o.service) await createOrKeep(() => kube.core.createNamespacedService({ namespace: ns, body: o.service! }));
    if (o.deployment) await createOrKeep(() => kube.apps.createNamespacedDeployment({ namespace: ns, body: o.deployment! }));
    if (o.statefulSet) await createOrKeep(() => kube.apps.createNamespacedStatefulSet({ namespace: ns, body: o.statefulSet! }));
    if (o.daemonSet) await createOrKeep(() => kube.apps.createNamespacedDaemonSet({ namespace: ns, body: o.daemonSet! }));
    if (o.pod) await createOrKeep(() => kube.core.createNamespacedPod({ namespace: ns, body: o.pod! }));
    if (o.pdb) await createOrKeep(() => kube.policy.createNamespacedPodDisruptionBudget({ namespace: ns, body: o.pdb! }));
  });
  await waitForWorkloads(kube, d, timeoutMs);
}

/**
 * Every described workload is fully available and every PDB observed. Reads the controllers'
 * status (a few objects) rather than listing every pod, which costs the apiserver dearly at 10,000 pods.
 */
export async function waitForWorkloads(kube: KubeClients, d: SimDescription, timeoutMs = 600_000): Promise<void> {
  const ready = async (): Promise<string[]> => {
    const missing: string[] = [];
    for (const w of d.workloads) {
      const ref = { name: w.name, namespace: w.namespace };
      if (w.kind === 'Deployment') {
        const s = (await kube.apps.readNamespacedDeployment(ref)).status;
        if ((s?.availableReplicas ?? 0) < w.replicas || (s?.updatedReplicas ?? 0) < w.replicas) missing.push(`${w.kind} ${w.name}`);
      } else if (w.kind === 'StatefulSet') {
        if (((await kube.apps.readNamespacedStatefulSet(ref)).status?.readyReplicas ?? 0) < w.replicas) missing.push(`${w.kind} ${w.name}`);
      } else if (w.kind === 'DaemonSet') {
        const s = (await kube.apps.readNamespacedDaemonSet(ref)).status;
        if (!s || s.desiredNumberScheduled === 0 || (s.numberReady ?? 0) < s.desiredNumberScheduled) missing.push(`${w.kind} ${w.name}`);
      } else {
        const p = await kube.core.readNamespacedPod(ref);
        if (!p.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True')) missing.push(`Pod ${w.name}`);
      }
    }
    const proxy = (await kube.apps.readNamespacedDaemonSet({ name: 'kube-proxy', namespace: 'kube-system' })).status;
    if ((proxy?.numberReady ?? 0) < d.nodes.length) missing.push('DaemonSet kube-proxy');
    return missing;
  };
  let last: string[] = [];
  await waitFor('workloads available', async () => (last = await ready()).length === 0, timeoutMs, 1000).catch((err: Error) => {
    throw new Error(`${err.message} (not yet: ${last.slice(0, 5).join(', ')})`);
  });
  await waitFor(
    'PodDisruptionBudgets observed',
    async () => {
      const { items } = await kube.policy.listPodDisruptionBudgetForAllNamespaces();
      return items.every((p) => (p.status?.observedGeneration ?? 0) >= (p.metadata?.generation ?? 1));
    },
    timeoutMs,
    500,
  );
}
