import { stringify as stringifyYaml } from 'yaml';
import { compareVersions, parseVersion } from '../../rules/index.js';
import type { RehearsalFacts } from '../../activities/rehearsal.js';
import type { Latencies, PdbSpec, SimDescription, SimNode, WorkloadSpec } from './twin.js';

/**
 * The pure converter of `skewless rehearse`: the facts read from the live cluster
 * (activities/rehearsal.ts) → the description a simulated twin is started from (sim/description.ts).
 * The simulation names things more strictly than Kubernetes (DNS labels) and models one PDB per
 * workload, named after it; `names` maps the twin's names back to the cluster's, so the report
 * speaks of the cluster's nodes and PDBs. What the twin cannot model is listed in `notModelled`.
 */

/** Host command latencies (milliseconds) when no --latencies file is given: a quick rehearsal, not a forecast. */
export const DEFAULT_LATENCIES: Required<Latencies> = {
  aptInstall: 2000,
  // Fetching the archives is counted in aptInstall here; a --latencies file may split it out.
  packageDownload: 0,
  kubeletRestart: 1000,
  kubeadmApply: 5000,
  kubeadmNode: 1000,
  etcdSnapshot: 500,
  reboot: 5000,
};
export const LATENCY_KEYS = Object.keys(DEFAULT_LATENCIES) as (keyof Latencies)[];

export interface TwinOptions {
  /** Merged over DEFAULT_LATENCIES, for every host. */
  latencies?: Latencies;
  sshUser?: string;
  rebootSeconds?: number;
  /** The versions every twin host's package repository offers; else the one read from the cluster. */
  repository?: string[];
}

export interface TwinNames {
  /** twin node name → the cluster's node name */
  nodes: Record<string, string>;
  /** `namespace/twin PDB name` (the workload's twin name) → `namespace/the cluster's PDB name` */
  pdbs: Record<string, string>;
  /** `namespace/twin name` → `namespace/the cluster's name`, for workloads and bare pods */
  workloads: Record<string, string>;
  /**
   * `namespace/twin name` → the cluster's nodes its pods run on (read from the cluster): the twin's
   * scheduler places its copies itself, so a drain blocked on the twin is mapped back by owner.
   */
  clusterNodes?: Record<string, string[]>;
}

export interface TwinDescription {
  description: SimDescription;
  names: TwinNames;
  /** What the twin leaves out or models differently, one sentence each. */
  notModelled: string[];
}

export class TwinInputError extends Error {
  override name = 'TwinInputError';
}

/** Labels the simulation sets on every node itself. */
const SIM_NODE_LABELS = new Set([
  'kubernetes.io/hostname',
  'kubernetes.io/os',
  'kubernetes.io/arch',
  'node-role.kubernetes.io/control-plane',
]);

/** A DNS label made from any Kubernetes name, unique among `taken`. */
function twinName(original: string, taken: Set<string>): string {
  let base =
    original
      .toLowerCase()
      .replace(/[^a-z0-9-]+/g, '-')
      .replace(/^-+|-+$/g, '')
      .slice(0, 58)
      .replace(/-+$/, '') || 'x';
  if (!/^[a-z0-9]/.test(base)) base = `x${base}`;
  let name = base;
  for (let i = 2; taken.has(name); i++) name = `${base}-${i}`;
  taken.add(name);
  return name;
}

const validVersion = (v: string | undefined): string | undefined => {
  if (!v) return undefined;
  try {
    return parseVersion(v).text;
  } catch {
    return undefined;
  }
};

export function twinDescription(
  cluster: string,
  read: { facts: RehearsalFacts; repository?: { node: string; versions: string[] } },
  options: TwinOptions = {},
): TwinDescription {
  const { facts } = read;
  const version = clusterVersionOf(cluster, facts);
  const repository = options.repository ?? read.repository?.versions;
  if (!repository || repository.length === 0)
    throw new TwinInputError("the package repository's versions are unknown: pass --repository VERSION,...");
  const twin = new TwinBuilder(version);
  const latencies: Latencies = { ...DEFAULT_LATENCIES, ...options.latencies };
  const nodes = facts.nodes.map((n) => twin.node(n, repository, latencies));
  // Workloads, and each PDB on the workload(s) it covers: the twin's PDB carries the workload's name.
  for (const w of facts.workloads) twin.workload(w);
  for (const p of facts.pdbs) twin.pdb(p);
  for (const b of facts.barePods) twin.barePod(b);
  for (const [kind, count] of Object.entries(facts.otherPods).sort()) {
    twin.notModelled.push(`${count} pod(s) managed by a ${kind}: the twin has no such controller`);
  }
  return {
    // No node pools: blue/green is not rehearsed (yet); the simulation reads an absent `pools` as none.
    description: {
      name: cluster,
      version,
      nodes,
      workloads: twin.workloads,
      ssh: { user: options.sshUser ?? 'skewless' },
      rebootSeconds: options.rebootSeconds ?? 3,
      // One minor per host, as the install guide sets nodes up: the rehearsal meets the repository switch of each hop.
      packageRepository: 'per-minor',
      packageManager: facts.packageManager ?? 'apt',
      controlPlane: 'shared',
      pools: {},
    },
    names: twin.names,
    notModelled: twin.notModelled,
  };
}

/** The cluster's version: kubeadm's record, else its oldest kube-apiserver. */
function clusterVersionOf(cluster: string, facts: RehearsalFacts): string {
  const apiservers = facts.nodes.flatMap((n) => (n.components?.apiserver ? [n.components.apiserver] : []));
  const version =
    validVersion(facts.clusterVersion) ?? [...apiservers].sort((x, y) => compareVersions(parseVersion(x), parseVersion(y)))[0];
  if (!version)
    throw new TwinInputError(`cluster ${cluster} has no readable kubeadm version and no kube-apiserver mirror pod: nothing to model`);
  return version;
}

type FactNode = RehearsalFacts['nodes'][number];
type FactWorkload = RehearsalFacts['workloads'][number];
type FactPdb = RehearsalFacts['pdbs'][number];
type FactBarePod = RehearsalFacts['barePods'][number];

/** The twin's nodes and workloads as they are named, and what of the cluster it leaves out. */
class TwinBuilder {
  readonly notModelled: string[] = [];
  readonly names: TwinNames = { nodes: {}, pdbs: {}, workloads: {} };
  readonly workloads: WorkloadSpec[] = [];
  private readonly nodeNames = new Set<string>();
  private readonly twinOfNode = new Map<string, string>();
  /** Twin names taken, per namespace. */
  private readonly taken = new Map<string, Set<string>>();
  private readonly twinOfWorkload = new Map<string, WorkloadSpec>();

  constructor(private readonly version: string) {}

  node(n: FactNode, repository: string[], latencies: Latencies): SimNode {
    const name = twinName(n.name, this.nodeNames);
    this.twinOfNode.set(n.name, name);
    this.names.nodes[name] = n.name;
    const kubelet = validVersion(n.kubelet);
    if (!kubelet) throw new TwinInputError(`node ${n.name} reports kubelet version ${JSON.stringify(n.kubelet)}: not a Kubernetes version`);
    const labels = Object.fromEntries(Object.entries(n.labels).filter(([k]) => !SIM_NODE_LABELS.has(k)));
    const node: SimNode = { name, role: n.role, kubelet, labels, latencies, faults: [], repository, sources: [] };
    if (n.role === 'control-plane') node.components = this.controlPlaneComponents(n);
    return node;
  }

  /** A control plane's component versions as read; one not read runs at the cluster's version (said). */
  private controlPlaneComponents(n: FactNode): NonNullable<SimNode['components']> {
    const c = n.components ?? {};
    const missing = (['apiserver', 'controllerManager', 'scheduler'] as const).filter((k) => !validVersion(c[k]));
    if (missing.length)
      this.notModelled.push(`control plane ${n.name}: no version read for ${missing.join(', ')}; the twin runs them at ${this.version}`);
    return {
      apiserver: validVersion(c.apiserver) ?? this.version,
      controllerManager: validVersion(c.controllerManager) ?? this.version,
      scheduler: validVersion(c.scheduler) ?? this.version,
    };
  }

  private addWorkload(namespace: string, original: string, spec: Omit<WorkloadSpec, 'name' | 'namespace'>): WorkloadSpec {
    const set = this.taken.get(namespace) ?? new Set<string>();
    this.taken.set(namespace, set);
    const w: WorkloadSpec = { ...spec, name: twinName(original, set), namespace };
    this.names.workloads[`${namespace}/${w.name}`] = `${namespace}/${original}`;
    this.workloads.push(w);
    return w;
  }

  workload(w: FactWorkload): void {
    // kubeadm's kube-proxy: the simulation runs its own, at the cluster version.
    if (w.kind === 'DaemonSet' && w.namespace === 'kube-system' && w.name === 'kube-proxy') return;
    const spec = this.addWorkload(w.namespace, w.name, {
      kind: w.kind,
      replicas: w.kind === 'DaemonSet' ? 1 : w.replicas,
      ...(w.emptyDir ? { emptyDir: true } : {}),
    });
    if (w.nodes) (this.names.clusterNodes ??= {})[`${w.namespace}/${spec.name}`] = w.nodes;
    this.twinOfWorkload.set(`${w.namespace}/${w.kind}/${w.name}`, spec);
  }

  /** The budget on each workload it covers (once its workloads are added); one it cannot model is said. */
  pdb(p: FactPdb): void {
    const budget: PdbSpec =
      p.minAvailable !== undefined
        ? { minAvailable: p.minAvailable }
        : p.maxUnavailable !== undefined
          ? { maxUnavailable: p.maxUnavailable }
          : {};
    if (Object.keys(budget).length === 0) {
      this.notModelled.push(`PDB ${p.namespace}/${p.name} sets neither minAvailable nor maxUnavailable`);
      return;
    }
    const covered = p.covers.map((c) => this.twinOfWorkload.get(`${p.namespace}/${c}`)).filter((w): w is WorkloadSpec => w !== undefined);
    if (covered.length === 0) {
      this.notModelled.push(`PDB ${p.namespace}/${p.name} covers no Deployment, StatefulSet or DaemonSet (${p.pods} pod(s)): left out`);
      return;
    }
    if (covered.length > 1)
      this.notModelled.push(`PDB ${p.namespace}/${p.name} covers ${p.covers.join(', ')}: the twin gives each its own copy of the budget`);
    for (const w of covered) {
      if (w.pdb) {
        this.notModelled.push(
          `${w.kind} ${p.namespace}/${this.names.workloads[`${p.namespace}/${w.name}`]?.split('/')[1]} is covered by more than one PDB: the twin keeps ${this.names.pdbs[`${p.namespace}/${w.name}`]} only`,
        );
        continue;
      }
      w.pdb = budget;
      this.names.pdbs[`${p.namespace}/${w.name}`] = `${p.namespace}/${p.name}`;
    }
  }

  /** A pod no controller manages, as a Pod workload bound to the twin of its node. */
  barePod(b: FactBarePod): void {
    const node = this.twinOfNode.get(b.node);
    if (!node) {
      this.notModelled.push(`pod ${b.namespace}/${b.name} is bound to ${b.node}, which is no node the twin has`);
      return;
    }
    this.addWorkload(b.namespace, b.name, { kind: 'Pod', replicas: 1, node, ...(b.emptyDir ? { emptyDir: true } : {}) });
  }
}

/** The description as sim/description.ts reads it (`--save-description`, and the check that it parses). */
export function descriptionYaml(d: SimDescription): string {
  const doc = {
    name: d.name,
    version: d.version,
    ssh: d.ssh,
    rebootSeconds: d.rebootSeconds,
    packageRepository: d.packageRepository,
    packageManager: d.packageManager,
    nodes: d.nodes.map((n) => ({
      name: n.name,
      role: n.role,
      kubelet: n.kubelet,
      ...(n.components ? { components: n.components } : {}),
      ...(Object.keys(n.labels).length ? { labels: n.labels } : {}),
      latencies: n.latencies,
      repository: n.repository,
    })),
    workloads: d.workloads.map((w) => ({
      kind: w.kind,
      name: w.name,
      namespace: w.namespace,
      ...(w.kind === 'Deployment' || w.kind === 'StatefulSet' ? { replicas: w.replicas } : {}),
      ...(w.pdb ? { pdb: w.pdb } : {}),
      ...(w.node ? { node: w.node } : {}),
      ...(w.emptyDir ? { emptyDir: true } : {}),
    })),
  };
  return `# A simulated twin for \`skewless rehearse\` (sim/description.ts): names, counts, labels and versions only.\n# Latencies are milliseconds per host command.\n${stringifyYaml(doc)}`;
}
