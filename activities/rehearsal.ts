// `skewless rehearse`: what a simulated twin of the cluster needs, read from the live cluster.
// Only names, counts, labels and versions leave it: never images, env, args, annotations, volumes'
// contents, Secrets or ConfigMaps' data.
import type { V1DaemonSet, V1Deployment, V1Node, V1Pod, V1PodDisruptionBudget, V1PodSpec, V1StatefulSet } from '@kubernetes/client-node';
import { compareNatural, selectorMatches, type LabelSelector, type NodeRole, type PackageManager } from '../rules/index.js';
import type { ClusterResolver } from './cluster-access.js';
import type { KubeApi } from './kube-api.js';
import { httpStatus, kubeCall } from './errors.js';
import {
  CONTROL_PLANE_COMPONENTS,
  CONTROL_PLANE_LABEL,
  imageVersion,
  MIRROR_ANNOTATION,
  versionOrUndefined,
  type ControlPlaneComponent,
} from './inventory-facts.js';
import { DEFAULT_PAGE_SIZE, listAll } from './inventory-pages.js';
import { parse as parseYaml } from 'yaml';

export interface RehearsalNode {
  name: string;
  role: NodeRole;
  /** Normalised kubelet version (`1.33.7`); the raw text when it is not one (and a problem is reported). */
  kubelet: string;
  /** Control planes only: the versions of their static pods (image tags of the mirror pods). */
  components?: { apiserver?: string; controllerManager?: string; scheduler?: string };
  labels: Record<string, string>;
}

export interface RehearsalWorkload {
  kind: 'Deployment' | 'StatefulSet' | 'DaemonSet';
  namespace: string;
  name: string;
  /** spec.replicas (DaemonSets: the nodes it is scheduled on). */
  replicas: number;
  /** Whether its pod template mounts an emptyDir (a drain must opt in to losing it). */
  emptyDir: boolean;
  /**
   * The cluster's nodes its live pods run on (its selector's pods): where its drains block on the
   * cluster, whatever the twin's own scheduler does with its copies. Absent in older readings.
   */
  nodes?: string[];
}

export interface RehearsalPdb {
  namespace: string;
  name: string;
  minAvailable?: number | string;
  maxUnavailable?: number | string;
  /** The workloads whose pod template its selector matches (same namespace), `Kind/name`. */
  covers: string[];
  /** Live pods its selector matches. */
  pods: number;
}

export interface RehearsalBarePod {
  namespace: string;
  name: string;
  node: string;
  emptyDir: boolean;
}

/** Everything the twin is built from: plain JSON, names, counts, labels and versions only. */
export interface RehearsalFacts {
  cluster: string;
  /** kubeadm's record (kube-system/kubeadm-config kubernetesVersion). */
  clusterVersion?: string;
  nodes: RehearsalNode[];
  workloads: RehearsalWorkload[];
  pdbs: RehearsalPdb[];
  /** Pods no controller manages (mirror pods excluded): a drain refuses them. */
  barePods: RehearsalBarePod[];
  /** Pods managed by something the twin does not model (a Job, a custom controller): counted per kind. */
  otherPods: Record<string, number>;
  /** What could not be read as expected. */
  problems: string[];
  /** The nodes' package tools (the configuration's packageManager): the twin's hosts get the same. */
  packageManager?: PackageManager;
}

/** Labels the simulation sets itself, or that skewless writes during a run: not copied. */
const TRANSIENT_LABELS = new Set(['skewless.io/stage']);

const hasEmptyDir = (spec: V1PodSpec | undefined) => (spec?.volumes ?? []).some((v) => v.emptyDir !== undefined && v.emptyDir !== null);
const byNs = (a: { namespace: string; name: string }, b: { namespace: string; name: string }) =>
  a.namespace.localeCompare(b.namespace) || compareNatural(a.name, b.name);

export function createRehearsalActivities(deps: { clusters: ClusterResolver; pageSize?: number }) {
  const limit = deps.pageSize ?? DEFAULT_PAGE_SIZE;
  return {
    /**
     * Read-only: the nodes (role, kubelet and control-plane versions, labels), Deployments,
     * StatefulSets and DaemonSets (replicas, emptyDir), PDBs (budget, the workloads they cover), bare
     * pods and the kubeadm cluster version. One paged list per resource type. Every field copied is
     * named in this file's functions; nothing else of an object (images, env, args, annotations) leaves them.
     */
    async describeClusterForRehearsal(input: { cluster: string }): Promise<RehearsalFacts> {
      const { kube, config } = deps.clusters(input.cluster);
      const problems: string[] = [];
      const read = await readClusterObjects(kube, limit);
      const clusterVersion = kubeadmClusterVersion(read.clusterConfig);
      if (!clusterVersion) problems.push('kube-system/kubeadm-config has no readable kubernetesVersion');
      const live = read.pods.filter(
        (p) => !p.metadata?.deletionTimestamp && p.status?.phase !== 'Succeeded' && p.status?.phase !== 'Failed',
      );
      const { workloads, templates } = rehearsalWorkloads(read, live);
      return {
        cluster: input.cluster,
        ...(clusterVersion ? { clusterVersion } : {}),
        nodes: rehearsalNodes(read.nodes, controlPlaneVersions(read.pods, problems), problems),
        workloads: workloads.sort(byNs),
        pdbs: rehearsalPdbs(read.pdbs, templates, live),
        ...podsWithoutWorkload(live),
        problems,
        packageManager: config.packageManager,
      };
    },
  };
}

/** One paged list per resource type, side by side, and kubeadm's ClusterConfiguration (undefined: none). */
async function readClusterObjects(kube: KubeApi, limit: number) {
  const [nodes, pods, deployments, statefulSets, daemonSets, pdbs, clusterConfig] = await Promise.all([
    listAll('list nodes', (p) => kube.core.listNode(p), limit),
    listAll('list pods', (p) => kube.core.listPodForAllNamespaces(p), limit),
    listAll('list Deployments', (p) => kube.apps.listDeploymentForAllNamespaces(p), limit),
    listAll('list StatefulSets', (p) => kube.apps.listStatefulSetForAllNamespaces(p), limit),
    listAll('list DaemonSets', (p) => kube.apps.listDaemonSetForAllNamespaces(p), limit),
    listAll('list PodDisruptionBudgets', (p) => kube.policy.listPodDisruptionBudgetForAllNamespaces(p), limit),
    kubeCall('read kube-system/kubeadm-config', async () => {
      try {
        return (await kube.core.readNamespacedConfigMap({ name: 'kubeadm-config', namespace: 'kube-system' })).data?.ClusterConfiguration;
      } catch (err) {
        if (httpStatus(err) === 404) return undefined;
        throw err;
      }
    }),
  ]);
  return { nodes, pods, deployments, statefulSets, daemonSets, pdbs, clusterConfig };
}

/** kubeadm's record of the cluster's version (ClusterConfiguration's kubernetesVersion), if readable. */
function kubeadmClusterVersion(clusterConfig: string | undefined): string | undefined {
  try {
    const raw = (parseYaml(clusterConfig ?? '') as { kubernetesVersion?: unknown } | null)?.kubernetesVersion;
    return versionOrUndefined(typeof raw === 'string' ? raw : undefined);
  } catch {
    return undefined;
  }
}

/** Control-plane versions by node: the image tags of kube-system's mirror pods, nothing else of them. */
function controlPlaneVersions(pods: V1Pod[], problems: string[]): Map<string, NonNullable<RehearsalNode['components']>> {
  const components = new Map<string, NonNullable<RehearsalNode['components']>>();
  for (const p of pods) {
    const m = p.metadata ?? {};
    const component = m.labels?.component as ControlPlaneComponent | undefined;
    if (
      m.namespace !== 'kube-system' ||
      !m.annotations?.[MIRROR_ANNOTATION] ||
      !p.spec?.nodeName ||
      !component ||
      !Object.hasOwn(CONTROL_PLANE_COMPONENTS, component)
    )
      continue;
    const main = p.spec.containers.find((c) => c.name === component) ?? p.spec.containers[0];
    const version = imageVersion(main?.image);
    if (!version) {
      problems.push(`${m.namespace}/${m.name}: its image carries no version tag`);
      continue;
    }
    const entry = components.get(p.spec.nodeName) ?? {};
    entry[CONTROL_PLANE_COMPONENTS[component]] = version;
    components.set(p.spec.nodeName, entry);
  }
  return components;
}

function rehearsalNodes(
  nodes: V1Node[],
  components: Map<string, NonNullable<RehearsalNode['components']>>,
  problems: string[],
): RehearsalNode[] {
  return nodes
    .map((n) => {
      const labels = n.metadata?.labels ?? {};
      const name = n.metadata?.name ?? '';
      const raw = n.status?.nodeInfo?.kubeletVersion ?? '';
      const kubelet = versionOrUndefined(raw) ?? raw;
      if (kubelet === raw && !versionOrUndefined(raw)) problems.push(`node ${name} reports kubelet version ${JSON.stringify(raw)}`);
      const role: NodeRole = CONTROL_PLANE_LABEL in labels ? 'control-plane' : 'worker';
      const cp = components.get(name);
      if (role === 'control-plane' && !cp?.apiserver) problems.push(`control-plane node ${name} has no kube-apiserver mirror pod`);
      return {
        name,
        role,
        kubelet,
        ...(role === 'control-plane' ? { components: cp ?? {} } : {}),
        labels: Object.fromEntries(Object.entries(labels).filter(([k]) => !TRANSIENT_LABELS.has(k))),
      };
    })
    .sort((a, b) => compareNatural(a.name, b.name));
}

type Template = { kind: RehearsalWorkload['kind']; namespace: string; name: string; labels: Record<string, string> };
type WorkloadObject = {
  metadata?: { namespace?: string; name?: string };
  spec?: { selector?: unknown; template?: { metadata?: { labels?: Record<string, string> }; spec?: V1PodSpec } };
};

/** The Deployments, StatefulSets and DaemonSets (with the nodes their live pods run on), and their pod templates' labels. */
function rehearsalWorkloads(
  read: { deployments: V1Deployment[]; statefulSets: V1StatefulSet[]; daemonSets: V1DaemonSet[] },
  live: V1Pod[],
): { workloads: RehearsalWorkload[]; templates: Template[] } {
  const templates: Template[] = [];
  const workloads: RehearsalWorkload[] = [];
  const add = (kind: RehearsalWorkload['kind'], o: WorkloadObject, replicas: number) => {
    const namespace = o.metadata?.namespace ?? 'default';
    const name = o.metadata?.name ?? '';
    templates.push({ kind, namespace, name, labels: o.spec?.template?.metadata?.labels ?? {} });
    const selector = o.spec?.selector as LabelSelector | undefined;
    const nodes = [
      ...new Set(
        live
          .filter((p) => p.metadata?.namespace === namespace && selector !== undefined && selectorMatches(selector, p.metadata?.labels))
          .flatMap((p) => (p.spec?.nodeName ? [p.spec.nodeName] : [])),
      ),
    ].sort(compareNatural);
    workloads.push({ kind, namespace, name, replicas, emptyDir: hasEmptyDir(o.spec?.template?.spec), nodes });
  };
  for (const d of read.deployments) add('Deployment', d, d.spec?.replicas ?? 1);
  for (const s of read.statefulSets) add('StatefulSet', s, s.spec?.replicas ?? 1);
  for (const d of read.daemonSets) add('DaemonSet', d, d.status?.desiredNumberScheduled ?? 0);
  return { workloads, templates };
}

/** Each budget, the workloads its selector covers and how many live pods it matches. */
function rehearsalPdbs(pdbs: V1PodDisruptionBudget[], templates: Template[], live: V1Pod[]): RehearsalPdb[] {
  return pdbs
    .map((p) => {
      const namespace = p.metadata?.namespace ?? 'default';
      const selector = p.spec?.selector as LabelSelector | undefined;
      // An empty or absent selector matches nothing here (policy/v1 says an empty one selects every pod in the namespace; rare).
      const matches = (labels: Record<string, string> | undefined) => selector !== undefined && selectorMatches(selector, labels);
      return {
        namespace,
        name: p.metadata?.name ?? '',
        ...(p.spec?.minAvailable === undefined ? {} : { minAvailable: p.spec.minAvailable as number | string }),
        ...(p.spec?.maxUnavailable === undefined ? {} : { maxUnavailable: p.spec.maxUnavailable as number | string }),
        covers: templates.filter((t) => t.namespace === namespace && matches(t.labels)).map((t) => `${t.kind}/${t.name}`),
        pods: live.filter((x) => x.metadata?.namespace === namespace && matches(x.metadata?.labels)).length,
      };
    })
    .sort(byNs);
}

/** Live pods no modelled controller manages: bare pods (a drain refuses them), and the others counted per owner kind. */
function podsWithoutWorkload(live: V1Pod[]): { barePods: RehearsalBarePod[]; otherPods: Record<string, number> } {
  const barePods: RehearsalBarePod[] = [];
  const otherPods: Record<string, number> = {};
  for (const p of live) {
    const m = p.metadata ?? {};
    if (m.annotations?.[MIRROR_ANNOTATION]) continue; // static pods come with the node
    const owner = m.ownerReferences?.find((o) => o.controller === true);
    if (!owner) {
      if (p.spec?.nodeName)
        barePods.push({ namespace: m.namespace ?? 'default', name: m.name ?? '', node: p.spec.nodeName, emptyDir: hasEmptyDir(p.spec) });
    } else if (!['ReplicaSet', 'StatefulSet', 'DaemonSet'].includes(owner.kind)) {
      otherPods[owner.kind] = (otherPods[owner.kind] ?? 0) + 1;
    }
  }
  return { barePods: barePods.sort(byNs), otherPods };
}
