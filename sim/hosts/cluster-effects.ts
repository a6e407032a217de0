/**
 * What a simulated host can do to the simulated cluster. The host simulator (sim/hosts/) decides
 * *when* (a kubelet restart, a kubeadm upgrade, a reboot); the implementation against the real
 * Kubernetes API (sim/cluster/) decides *how* (node status, mirror pods, the kubeadm-config map).
 */
export interface ClusterEffects {
  /** The kubelet on `node` stopped: the node goes NotReady until kubeletStarted. */
  kubeletStopped(node: string): Promise<void>;
  /** The kubelet on `node` runs `version` (`1.33.7`): the node reports it and becomes Ready. */
  kubeletStarted(node: string, version: string): Promise<void>;
  /** The cluster's Kubernetes version as kubeadm records it (kubeadm-config), `1.33.7`. */
  clusterVersion(): Promise<string>;
  /** The versions of the control-plane static pods on `node` (`kube-apiserver` → `1.33.7`); empty on a worker. */
  controlPlaneVersions(node: string): Promise<Record<string, string>>;
  /**
   * `kubeadm upgrade apply` (recordClusterVersion: true) or `kubeadm upgrade node` on a control plane:
   * the node's static pods move to `version`; once every control plane is there, the addons (kube-proxy) follow.
   */
  upgradeControlPlane(node: string, version: string, options: { recordClusterVersion: boolean }): Promise<void>;
}

/** Where the real etcd of the simulation is, and the real tools that talk to it. */
export interface EtcdTools {
  /** The one real etcd (`shared`), the first member (`per-node`): what an endpoint `memberOf` does not know reaches. */
  endpoint: string;
  /** `per-node`: the real members' URLs for the endpoints an etcdctl on `host` names (127.0.0.1 is its own member). */
  memberOf?: (host: string, endpoints: string) => string | undefined;
  etcdctl: string;
  etcdutl: string;
}

/** A static-pod manifest in /etc/kubernetes/manifests: its file name and the image it names. */
export interface ManifestSeen {
  file: string;
  /** `registry.k8s.io/kube-apiserver:v1.33.13`; undefined when the file names none. */
  image?: string;
  /** The whole file (a per-node control plane's mirror pods are made from it). */
  text: string;
}

/**
 * The kubelet's static pods on control-plane hosts (sim/cluster/static-pods.ts): the host tells the
 * model which manifests /etc/kubernetes/manifests holds after a command changed it, and asks which
 * static pods run (for pgrep).
 */
export interface StaticPodHooks {
  /**
   * The manifests now in /etc/kubernetes/manifests on `node`; resolves once the static pods follow
   * (a process stopped, or started and serving), as a kubelet's sync does.
   */
  changed(node: string, manifests: readonly ManifestSeen[]): Promise<void>;
  /** The static pods (`etcd`, `kube-apiserver`, ...) running on `node` now. */
  running(node: string): string[];
}
