// The kubelet's static pods on the simulated control-plane hosts, mapped onto the ONE real control
// plane the simulation runs (one etcd, one apiserver, one controller-manager, one scheduler).
//
// A kubeadm control plane runs etcd, kube-apiserver, kube-controller-manager and kube-scheduler as
// static pods: the kubelet starts what /etc/kubernetes/manifests holds and stops what leaves it. An
// operator restoring etcd moves the manifests out, restores, and moves them back. The mapping:
// - etcd: the real etcd is the member of the FIRST control plane (the primary). Its data dir is that
//   host's /var/lib/etcd (the manifest's hostPath), so a restore there (etcdutl into a fresh dir, then
//   a swap) changes what the real etcd serves. It runs while the primary's etcd.yaml is in place.
//   The other control planes' members are modelled, not run: their restored data dirs are real
//   etcdutl output, never served. A restored dir lists every member of --initial-cluster; alone, the
//   real etcd could never reach quorum with members that do not run, so the simulation starts it
//   with --force-new-cluster (etcd's own way to bring one member up as a cluster of one): the data,
//   revision included, is the restored one.
// - kube-apiserver, kube-controller-manager, kube-scheduler: shared, like a load-balanced HA control
//   plane: each real process runs while at least one control plane has its manifest in place.
// The kubelet reacts after the command that moved a manifest (a real one polls every 20 s); stops
// and starts are serialised, etcd before the apiserver, so they never overlap.
import type { StaticPodHooks } from '../hosts/cluster-effects.js';
import type { ControlPlane } from './control-plane.js';
import type { ManagedProcess } from './managed-process.js';

export const STATIC_POD_MANIFESTS = {
  etcd: 'etcd.yaml',
  'kube-apiserver': 'kube-apiserver.yaml',
  'kube-controller-manager': 'kube-controller-manager.yaml',
  'kube-scheduler': 'kube-scheduler.yaml',
} as const;
export type StaticPodName = keyof typeof STATIC_POD_MANIFESTS;
const NAMES = Object.keys(STATIC_POD_MANIFESTS) as StaticPodName[];


export function staticPodModel(cp: ControlPlane, controlPlaneNodes: readonly string[], onError: (err: Error) => void): StaticPodHooks & { settled(): Promise<void> } {
  const primary = controlPlaneNodes[0];
  const everything = new Set<string>(Object.values(STATIC_POD_MANIFESTS));
  const present = new Map<string, Set<string>>(controlPlaneNodes.map((n) => [n, new Set(everything)]));
  const processOf: Record<StaticPodName, ManagedProcess> = {
    etcd: cp.processes.etcd, 'kube-apiserver': cp.processes.apiserver,
    'kube-controller-manager': cp.processes.controllerManager, 'kube-scheduler': cp.processes.scheduler,
  };
  /** Whether the real process of `name` should run, from every host's manifests. */
  const wanted = (name: StaticPodName): boolean => name === 'etcd'
    ? present.get(primary ?? '')?.has(STATIC_POD_MANIFESTS.etcd) ?? false
    : [...present.values()].some((m) => m.has(STATIC_POD_MANIFESTS[name]));
  let queue: Promise<void> = Promise.resolve();

  const apply = async (): Promise<void> => {
    // Stops: the dependants first.
    for (const name of [...NAMES].reverse()) if (!wanted(name) && processOf[name].running) await processOf[name].stop();
    // Starts: etcd first, healthy, then the apiserver ready, then the others.
    if (wanted('etcd') && !processOf.etcd.running) {
      processOf.etcd.start(['--force-new-cluster']);
      await cp.etcdHealthy();
    }
    if (wanted('kube-apiserver') && !processOf['kube-apiserver'].running && processOf.etcd.running) {
      processOf['kube-apiserver'].start();
      await cp.apiserverReady();
    }
    for (const name of ['kube-controller-manager', 'kube-scheduler'] as const) {
      if (wanted(name) && !processOf[name].running && processOf['kube-apiserver'].running) processOf[name].start();
    }
  };

  return {
    changed(node, manifests) {
      if (!present.has(node)) return;
      present.set(node, new Set(manifests));
      queue = queue.then(apply).catch((err: unknown) => onError(err instanceof Error ? err : new Error(String(err))));
    },
    running(node) {
      const m = present.get(node);
      if (!m) return [];
      return NAMES.filter((name) => {
        const hasManifest = m.has(STATIC_POD_MANIFESTS[name]);
        // Another member's etcd is modelled: it runs while its manifest is there.
        if (name === 'etcd') return node === primary ? processOf.etcd.running : hasManifest;
        // A shared process shows on the hosts that have its manifest; while it stops after the last
        // manifest left, on every control plane, so each one's wait for it sees it go.
        const stopping = ![...present.values()].some((x) => x.has(STATIC_POD_MANIFESTS[name]));
        return processOf[name].running && (hasManifest || stopping);
      });
    },
    settled: () => queue,
  };
}
