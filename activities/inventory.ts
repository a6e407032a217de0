import { ApplicationFailure } from '@temporalio/activity';
import { parse as parseYaml } from 'yaml';
import {
  auditPdbs,
  compareNatural,
  isLabelKey,
  selectorMatches,
  sinkSubscriptions,
  type ClusterInventory,
  type ComponentVersion,
  type MaintenanceWindow,
  type SinkSubscription,
  type HookSubscription,
  type Exclusion,
  type PackageManager,
  type KubeProxyAddon,
  type PdbFinding,
  type PlanNode,
  STAGE_LABEL,
} from '../rules/index.js';
import { kubeProxyDaemonSetExists } from './kube-proxy-addon.js';
import { barePodsOf, uncontrolledPod, type BarePod } from './bare-pods.js';
import type { ClusterResolver } from './cluster-access.js';
import { drainOptionsOf } from './cluster-config.js';
import { ErrorType, httpStatus, kubeCall } from './errors.js';
import {
  CONTROL_PLANE_COMPONENTS,
  imageVersion,
  isLive,
  nodeFacts,
  pdbFacts,
  pickedLabels,
  podFacts,
  versionOrUndefined,
  type ControlPlaneComponent,
  type InventoryNode,
  type PdbSpecFacts,
  type PodFacts,
} from './inventory-facts.js';
import { DEFAULT_PAGE_SIZE, listAll } from './inventory-pages.js';

export type { InventoryNode } from './inventory-facts.js';

/** The control-plane components' versions on one control-plane node (image tags of its mirror pods). */
export interface ControlPlaneVersions {
  node: string;
  apiserver?: string;
  controllerManager?: string;
  scheduler?: string;
}

/**
 * A PDB as the inventory reports it: its facts (without the selector) and how many live pods it
 * covers. A count, not the pods: the inventory is an activity result in the upgrade's history, and
 * at 1,000 nodes × 10 pods the list alone made it 1.1 MB of a payload Temporal caps at 2 MB.
 */
export interface PdbInventory extends Omit<PdbSpecFacts, 'selector'> {
  coveredPods: number;
}

/** What `takeInventory` returns: plain JSON, no secrets. */
export interface Inventory {
  cluster: string;
  /** kubeadm's record (kube-system/kubeadm-config), normalised; absent when unreadable. */
  clusterVersion?: string;
  nodes: InventoryNode[];
  controlPlane: ControlPlaneVersions[];
  kubeProxies: ComponentVersion[];
  pdbs: PdbInventory[];
  pdbFindings: PdbFinding[];
  /** Ready for checkSkew / planUpgrade: versions per component and the nodes as PlanNodes. */
  skew: ClusterInventory & { nodes: PlanNode[] };
  /** Things that could not be read as expected (an unparsable version, a missing mirror pod). */
  problems: string[];
  /**
   * Pods no controller manages, each a drain that will block until the operator forces or skips it
   * (at most BARE_PODS_LISTED, in node order; `barePodCount` counts them all). Absent in inventories
   * taken before they were listed.
   */
  barePods?: BarePod[];
  barePodCount?: number;
  /** The configuration's addons.kubeProxy and whether kube-system/kube-proxy exists (absent in older inventories). */
  kubeProxyAddon?: KubeProxyAddon;
  /** The cluster's maintenance windows from its configuration (policy, no secret); absent: none. */
  maintenanceWindows?: MaintenanceWindow[];
  /** The configuration's notification sinks by name and events (never a URL or secret); absent: none. */
  notify?: SinkSubscription[];
  /** The configuration's change hooks by name, points and failure policy (never a command or URL); absent: none. */
  hooks?: HookSubscription[];
  /** The configuration's blackout dates; absent: none. */
  exclusions?: Exclusion[];
  /** The nodes' package tools (the configuration's packageManager), for the commands a plan shows. */
  packageManager?: PackageManager;
  /** The configuration's `etcd.patchImageTag` (an image tag, no secret): the etcd patch step's target a plan shows. */
  etcdPatchImageTag?: string;
}

export interface InventoryDeps {
  clusters: ClusterResolver;
  /** Items per list page (default 500); tests make it small to walk `continue` tokens. */
  pageSize?: number;
}

const byNode = <T extends { node: string }>(a: T, b: T) => compareNatural(a.node, b.node);

async function readClusterVersion(list: () => Promise<{ data?: Record<string, string> }>, problems: string[]): Promise<string | undefined> {
  let text: string | undefined;
  try {
    text = (await list()).data?.ClusterConfiguration;
  } catch (err) {
    if (httpStatus(err) !== 404) throw err;
    problems.push('kube-system/kubeadm-config not found: is this a kubeadm cluster?');
    return undefined;
  }
  let raw: unknown;
  try {
    raw = (parseYaml(text ?? '') as { kubernetesVersion?: unknown } | null)?.kubernetesVersion;
  } catch {
    raw = undefined;
  }
  const version = versionOrUndefined(typeof raw === 'string' ? raw : undefined);
  if (!version)
    problems.push(`kube-system/kubeadm-config ClusterConfiguration has no valid kubernetesVersion (${JSON.stringify(raw ?? null)})`);
  return version;
}

/** Control-plane versions from kube-system mirror pods; kube-proxy versions from its DaemonSet's pods. */
function componentVersions(pods: PodFacts[], problems: string[]) {
  const controlPlane = new Map<string, ControlPlaneVersions>();
  const kubeProxies: ComponentVersion[] = [];
  const seen = new Set<string>();
  for (const p of pods) {
    if (p.namespace !== 'kube-system' || !p.node || p.terminating) continue;
    const component = p.labels.component as ControlPlaneComponent | undefined;
    if (p.mirror && component && Object.hasOwn(CONTROL_PLANE_COMPONENTS, component)) {
      const version = imageVersion(p.image);
      if (!version) {
        problems.push(`${p.namespace}/${p.name}: image ${JSON.stringify(p.image ?? '')} carries no version tag`);
        continue;
      }
      const entry = controlPlane.get(p.node) ?? { node: p.node };
      entry[CONTROL_PLANE_COMPONENTS[component]] = version;
      controlPlane.set(p.node, entry);
    } else if (p.labels['k8s-app'] === 'kube-proxy' && isLive(p)) {
      const version = imageVersion(p.image);
      if (!version) {
        problems.push(`${p.namespace}/${p.name}: image ${JSON.stringify(p.image ?? '')} carries no version tag`);
        continue;
      }
      // During a DaemonSet rollout a node may briefly run two; both versions count for skew.
      if (!seen.has(`${p.node} ${version}`)) kubeProxies.push({ node: p.node, version });
      seen.add(`${p.node} ${version}`);
    }
  }
  return { controlPlane: [...controlPlane.values()].sort(byNode), kubeProxies: kubeProxies.sort(byNode) };
}

function pdbInventory(pdbs: PdbSpecFacts[], pods: PodFacts[]): PdbInventory[] {
  const byNamespace = new Map<string, PodFacts[]>();
  for (const p of pods) {
    if (!isLive(p)) continue;
    const list = byNamespace.get(p.namespace);
    if (list) list.push(p);
    else byNamespace.set(p.namespace, [p]);
  }
  return pdbs.map(({ selector, ...facts }) => ({
    ...facts,
    coveredPods: (byNamespace.get(facts.namespace) ?? []).filter((p) => selectorMatches(selector, p.labels)).length,
  }));
}

function planNodes(nodes: InventoryNode[]): PlanNode[] {
  return nodes.map((n) => {
    const labels = { ...n.labels, ...(n.stage === undefined ? {} : { [STAGE_LABEL]: n.stage }) };
    return { name: n.name, role: n.role, ...(Object.keys(labels).length === 0 ? {} : { labels }) };
  });
}

type Kube = ReturnType<ClusterResolver>['kube'];

/** The node labels an inventory keeps (batch-by's), each a label key. */
function checkLabelKeys(keys: unknown): string[] | undefined {
  if (keys === undefined) return undefined;
  if (!Array.isArray(keys) || !keys.every(isLabelKey))
    throw ApplicationFailure.create({ type: ErrorType.Invalid, message: 'labelKeys must be a list of label keys', nonRetryable: true });
  return keys;
}

/** The cluster as one list call per resource type (paged) reads it: nodes, pods, PDBs, and the kubeadm-config ConfigMap's version. */
function readCluster(kube: Kube, limit: number, problems: string[], labelKeys?: readonly string[]) {
  return Promise.all([
    listAll(
      'list nodes',
      async (p) => {
        const r = await kube.core.listNode(p);
        return { items: r.items.map((n) => ({ ...nodeFacts(n), ...pickedLabels(n, labelKeys) })), metadata: r.metadata };
      },
      limit,
    ),
    listAll(
      'list pods',
      async (p) => {
        const r = await kube.core.listPodForAllNamespaces(p);
        // Beside each pod's facts, the drain's facts of the few with no controller (bare pods).
        return { items: r.items.map((pod) => ({ facts: podFacts(pod), uncontrolled: uncontrolledPod(pod) })), metadata: r.metadata };
      },
      limit,
    ),
    listAll(
      'list PodDisruptionBudgets',
      async (p) => {
        const r = await kube.policy.listPodDisruptionBudgetForAllNamespaces(p);
        return { items: r.items.map(pdbFacts), metadata: r.metadata };
      },
      limit,
    ),
    kubeCall('read kube-system/kubeadm-config', () =>
      readClusterVersion(() => kube.core.readNamespacedConfigMap({ name: 'kubeadm-config', namespace: 'kube-system' }), problems),
    ),
  ]);
}

export function createInventoryActivities(deps: InventoryDeps) {
  const limit = deps.pageSize ?? DEFAULT_PAGE_SIZE;
  return {
    /**
     * One list call per resource type (paged), never a GET per node: nodes, pods, PDBs and the
     * kubeadm-config ConfigMap. Read-only, so retrying is always safe.
     */
    async takeInventory(input: { cluster: string; labelKeys?: string[] }): Promise<Inventory> {
      const { kube, config } = deps.clusters(input.cluster);
      const problems: string[] = [];
      const labelKeys = checkLabelKeys(input.labelKeys);
      const [nodeList, listed, pdbList, clusterVersion] = await readCluster(kube, limit, problems, labelKeys);
      const pods = listed.map((p) => p.facts);
      const bare = barePodsOf(
        listed.flatMap((p) => p.uncontrolled ?? []),
        drainOptionsOf(config),
      );
      const nodes = nodeList.sort((a, b) => compareNatural(a.name, b.name));
      for (const n of nodes) {
        if (!versionOrUndefined(n.kubeletVersion))
          problems.push(`node ${n.name} reports kubelet version ${JSON.stringify(n.kubeletVersion)}, not a Kubernetes version`);
      }
      const { controlPlane, kubeProxies } = componentVersions(pods, problems);
      for (const n of nodes) {
        if (n.role === 'control-plane' && !controlPlane.some((c) => c.node === n.name && c.apiserver)) {
          problems.push(`control-plane node ${n.name} has no kube-apiserver mirror pod`);
        }
      }
      const pdbs = pdbInventory(pdbList, pods).sort((a, b) => a.namespace.localeCompare(b.namespace) || a.name.localeCompare(b.name));
      const pick = (key: 'apiserver' | 'controllerManager' | 'scheduler') =>
        controlPlane.flatMap((c) => (c[key] ? [{ node: c.node, version: c[key] }] : []));
      return {
        cluster: input.cluster,
        ...(clusterVersion === undefined ? {} : { clusterVersion }),
        nodes,
        controlPlane,
        kubeProxies,
        pdbs,
        pdbFindings: auditPdbs(pdbs),
        skew: {
          apiservers: pick('apiserver'),
          controllerManagers: pick('controllerManager'),
          schedulers: pick('scheduler'),
          kubelets: nodes.filter((n) => versionOrUndefined(n.kubeletVersion)).map((n) => ({ node: n.name, version: n.kubeletVersion })),
          kubeProxies,
          nodes: planNodes(nodes),
        },
        problems,
        ...bare,
        ...(config.maintenanceWindows?.length ? { maintenanceWindows: config.maintenanceWindows } : {}),
        ...(config.notify?.length ? { notify: sinkSubscriptions(config.notify) } : {}),
        ...(config.exclusions?.length ? { exclusions: config.exclusions } : {}),
        ...(config.hooks?.length ? { hooks: config.hooks.map(({ name, at, onFailure }) => ({ name, at, onFailure })) } : {}),
        packageManager: config.packageManager,
        kubeProxyAddon: { mode: config.addons?.kubeProxy ?? 'auto', daemonSet: await kubeProxyDaemonSetExists(kube) },
        ...(config.etcd.patchImageTag === undefined ? {} : { etcdPatchImageTag: config.etcd.patchImageTag }),
      };
    },
  };
}

export type InventoryActivities = ReturnType<typeof createInventoryActivities>;
