import { appendFileSync, existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { ComponentVersion } from '../../rules/skew-policy.js';
import type { EmulationInventory } from '../../rules/emulation.js';
import type { ClusterEffects } from '../hosts/cluster-effects.js';
import { versionOfImage } from './control-plane-pods.js';
import type { KubeClients } from './kube-clients.js';

/**
 * The simulation's version history: after every host effect that can move a version (a kubelet
 * start, a control plane's static pods), one JSON line with the whole cluster's versions as the
 * API shows them. Tests judge the skew policy on every recorded state, not only the end state.
 */

export const VERSION_HISTORY_FILE = 'version-history.jsonl';

export interface VersionRecord {
  /** ISO time the state was read. */
  at: string;
  /** `initial`, `kubelet cp-1 1.33.7` or `control-plane cp-1 1.33.7`. */
  cause: string;
  inventory: EmulationInventory;
  /**
   * A per-node control plane's etcd members that answer, each as it reports itself (`/version`): its server
   * version and the cluster version it sees (`3.5.0`: the lowest minor among the members).
   */
  etcd?: { node: string; version: string; cluster: string }[];
  /** Set instead of a meaningful inventory when the state could not be read. */
  error?: string;
}

const COMPONENT_KEYS = {
  'kube-apiserver': 'apiservers',
  'kube-controller-manager': 'controllerManagers',
  'kube-scheduler': 'schedulers',
} as const;

const byNode = (a: ComponentVersion, b: ComponentVersion) => a.node.localeCompare(b.node);

/**
 * The control-plane programs that run, each with the version it reports itself (a per-node control plane)
 * and the minor it emulates (KEP-4330), when it does.
 */
export type LiveComponents = () => Promise<{ node: string; component: keyof typeof COMPONENT_KEYS; version: string; emulated?: string }[]>;

/** A per-node control plane's etcd members, each with the version it reports itself. */
export type LiveEtcd = () => Promise<{ node: string; version: string; cluster: string }[]>;

/**
 * The versions as the cluster shows them: kubelets from Node status, kube-proxy from its
 * DaemonSet's image (on every node), control-plane components from the programs themselves when
 * they run for real (`live`: /version, kubernetes_build_info), else from their mirror pods' images.
 */
export async function readSimInventory(kube: KubeClients, live?: LiveComponents): Promise<EmulationInventory> {
  const [nodes, mirrors, proxy] = await Promise.all([
    kube.core.listNode(),
    // Programs that report their own versions: no mirror pods to read.
    live ? { items: [] } : kube.core.listNamespacedPod({ namespace: 'kube-system', labelSelector: 'tier=control-plane' }),
    kube.apps.readNamespacedDaemonSet({ name: 'kube-proxy', namespace: 'kube-system' }).catch(() => undefined),
  ]);
  const inventory: Required<Omit<EmulationInventory, 'kubectl'>> = {
    apiservers: [],
    controllerManagers: [],
    schedulers: [],
    kubelets: [],
    kubeProxies: [],
  };
  if (live) {
    for (const c of await live())
      inventory[COMPONENT_KEYS[c.component]].push({ node: c.node, version: c.version, ...(c.emulated ? { emulated: c.emulated } : {}) });
  } else {
    for (const pod of mirrors.items) {
      const key = COMPONENT_KEYS[pod.metadata?.labels?.component as keyof typeof COMPONENT_KEYS];
      const version = versionOfImage(pod.spec?.containers[0]?.image);
      if (key && version && pod.spec?.nodeName) inventory[key].push({ node: pod.spec.nodeName, version });
    }
  }
  const proxyVersion = versionOfImage(proxy?.spec?.template.spec?.containers[0]?.image);
  for (const node of nodes.items) {
    const name = node.metadata?.name as string;
    const kubelet = node.status?.nodeInfo?.kubeletVersion?.replace(/^v/, '');
    if (kubelet) inventory.kubelets.push({ node: name, version: kubelet });
    if (proxyVersion) inventory.kubeProxies.push({ node: name, version: proxyVersion });
  }
  for (const list of Object.values(inventory)) list.sort(byNode);
  return inventory;
}

export interface VersionRecorder {
  /** The effects, each version-moving one followed by a recorded state. */
  effects: ClusterEffects;
  path: string;
  /** Records the current state now (e.g. `initial`). */
  record(cause: string): Promise<void>;
  /** Resolves once every recording started so far is on disk. */
  settled(): Promise<void>;
}

/**
 * Wraps `inner` so that kubeletStarted and upgradeControlPlane record the state after they finish.
 * Recording never fails the effect (a host must behave as it would without the recorder): a state
 * that cannot be read is written as a line with `error`. Lines are written one at a time, in order.
 */
export function recordVersions(
  inner: ClusterEffects,
  kube: KubeClients,
  stateDir: string,
  live?: LiveComponents,
  liveEtcd?: LiveEtcd,
): VersionRecorder {
  const path = join(stateDir, VERSION_HISTORY_FILE);
  let queue: Promise<void> = Promise.resolve();
  const record = (cause: string): Promise<void> => {
    queue = queue
      .then(async () => {
        const at = new Date().toISOString();
        let line: VersionRecord;
        try {
          line = { at, cause, inventory: await readSimInventory(kube, live) };
          if (liveEtcd) line.etcd = (await liveEtcd()).sort(byNode);
        } catch (err) {
          line = { at, cause, inventory: { apiservers: [] }, error: err instanceof Error ? err.message : String(err) };
        }
        appendFileSync(path, `${JSON.stringify(line)}\n`);
      })
      .catch((err: unknown) => {
        // Deliberately swallowed (after saying so): a full disk must not fail a host's kubelet start.
        console.error(`version history: could not append to ${path}: ${err instanceof Error ? err.message : String(err)}`);
      });
    return queue;
  };
  const effects: ClusterEffects = {
    kubeletStopped: (node) => inner.kubeletStopped(node),
    clusterVersion: () => inner.clusterVersion(),
    controlPlaneVersions: (node) => inner.controlPlaneVersions(node),
    async kubeletStarted(node, version) {
      await inner.kubeletStarted(node, version);
      await record(`kubelet ${node} ${version}`);
    },
    async upgradeControlPlane(node, version, options) {
      await inner.upgradeControlPlane(node, version, options);
      await record(`control-plane ${node} ${version}`);
    },
  };
  return { effects, path, record, settled: () => queue };
}

/** Every recorded state of a simulation, oldest first (empty when nothing was recorded). */
export function readVersionHistory(stateDir: string): VersionRecord[] {
  const path = join(stateDir, VERSION_HISTORY_FILE);
  if (!existsSync(path)) return [];
  return readFileSync(path, 'utf8')
    .split('\n')
    .filter((l) => l.trim() !== '')
    .map((l) => JSON.parse(l) as VersionRecord);
}
