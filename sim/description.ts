import { readFileSync } from 'node:fs';
import { isDnsLabel } from '../rules/input-shapes.js';
import { parse as parseYaml } from 'yaml';
import { parseVersion } from '../rules/index.js';
import { KUBE_RELEASES } from './cluster/kube-releases.js';
import { REPOSITORY_LAYOUTS, type RepositoryLayout } from './hosts/apt-archive.js';
import { PACKAGE_MANAGERS, type PackageManager } from './hosts/rpm-archive.js';
import { isCommandFault, unsentFault, validateFault, type CommandFault, type Fault } from './hosts/faults.js';
import { extraSourceProblem, type ExtraSource } from './hosts/extra-sources.js';
import { PACKAGES, type PackageName } from './hosts/host-state.js';

/**
 * The simulated cluster's description (YAML): nodes and the versions each reports, workloads with
 * their PDBs, what each host's package repository offers, per-host latencies and faults.
 * `parseDescription` validates it whole and expands node counts into names.
 */

export type Latencies = Partial<
  Record<'aptInstall' | 'packageDownload' | 'kubeletRestart' | 'kubeadmApply' | 'kubeadmNode' | 'etcdSnapshot' | 'reboot', number>
>;

export interface SimNode {
  name: string;
  role: 'control-plane' | 'worker';
  /** kubelet (and kubeadm/kubectl packages) version on this node. */
  kubelet: string;
  /** Control-plane components' versions (control planes only). */
  components?: { apiserver: string; controllerManager: string; scheduler: string };
  labels: Record<string, string>;
  latencies: Latencies;
  faults: Fault[];
  /** Versions the package archive has for this host (pkgs.k8s.io, simulated). */
  repository: string[];
  /**
   * Source files beside Kubernetes' (`sources:`, per node or for every node): `{ file, text, broken }`,
   * e.g. Docker's `docker.list` with `deb [arch=amd64 signed-by=…] https://download.docker.com/linux/debian bookworm stable`;
   * `broken: true` makes every repository the file names answer 404.
   */
  sources: ExtraSource[];
  /**
   * The packages held at the start (`holds:`; default all three, as kubernetes.io's install guide
   * does): apt-mark holds on apt; on dnf all three (kubernetes.repo's `exclude=`) or none (no such line).
   */
  holds?: PackageName[];
  /** Its cgroup hierarchy, as `stat -fc %T /sys/fs/cgroup/` tells it (v2 by default; v1 to test the 1.35 prerequisite). */
  cgroup?: 'v1' | 'v2';
  /** Node.status.nodeInfo.containerRuntimeVersion (default `containerd://1.7.24`). */
  containerRuntime?: string;
  /**
   * Control planes: the tag of the etcd static pod's image (default `3.6.4-0`; `per-node`: what the cluster's kubeadm
   * writes, and the real member starts at the tag's release, one of sim/build/etcd-releases), what kubeadm and the etcd check read.
   */
  etcdImageTag?: string;
  /** Control planes: days kubeadm's leaf certificates have left at the simulation's start (default 365; the CAs 3650). */
  certificateDays?: number;
}

export interface PdbSpec {
  minAvailable?: number | string;
  maxUnavailable?: number | string;
}

export interface WorkloadSpec {
  kind: 'Deployment' | 'StatefulSet' | 'DaemonSet' | 'Pod';
  name: string;
  namespace: string;
  replicas: number;
  pdb?: PdbSpec;
  /** Bare pods only: the node it is bound to. */
  node?: string;
  /** emptyDir volume, so drains must opt in to losing its data. */
  emptyDir?: boolean;
}

export interface SimDescription {
  name: string;
  /** The cluster version kubeadm records (kubeadm-config). */
  version: string;
  nodes: SimNode[];
  workloads: WorkloadSpec[];
  ssh: { user: string };
  rebootSeconds: number;
  /**
   * How the hosts' kubernetes.list names the archive: `per-minor` (default), one minor at a time as
   * kubernetes.io's install guide writes it; `local-mirror`, a site mirror offering every minor at once.
   */
  packageRepository: RepositoryLayout;
  /** The hosts' package tools: `apt` (Debian, default) or `dnf` (the RHEL family, kubernetes.repo). */
  packageManager: PackageManager;
  /**
   * How the control plane runs: `shared` (default), ONE kube-apiserver, controller-manager and
   * scheduler (1.34) for every control-plane host, whatever version their manifests name (a model:
   * cheap, for the many tests about the flows); `per-node`, each control-plane host runs its own
   * three processes of the release its manifests name, behind one load-balanced endpoint, so /version
   * and the HA skew in the middle of a hop are real. `per-node` needs every version the description
   * names to be a built release (KUBE_RELEASES).
   */
  controlPlane: ControlPlaneMode;
  /**
   * When set, the workloads' pods get this termination grace and the simulated kubelet keeps a
   * terminating pod until it is over, so a drain waits as on a real node (the benchmark sets 1).
   * Unset: grace 1, and pods go as soon as they are deleted.
   */
  terminationGraceSeconds?: number;
  /**
   * Node pools (blue/green), pool name → label selector (`skewless.io/pool=blue`): written into the
   * cluster configuration's `pools:` as they are (its loader checks them). Empty when absent.
   */
  pools?: Record<string, string>;
  /**
   * When true, the API server runs API Priority and Fairness as a real one does (its default
   * --max-requests-inflight and --max-mutating-requests-inflight): a test can throttle the worker's
   * identity with a FlowSchema. Unset: off, so a 1,000-node simulation never queues behind it.
   */
  priorityAndFairness?: boolean;
}

export const CONTROL_PLANE_MODES = ['shared', 'per-node'] as const;
export type ControlPlaneMode = (typeof CONTROL_PLANE_MODES)[number];

export class DescriptionError extends Error {
  override name = 'DescriptionError';
}

type Raw = Record<string, unknown>;

function obj(value: unknown, where: string): Raw {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new DescriptionError(`${where} must be a mapping`);
  return value as Raw;
}

function list(value: unknown, where: string): unknown[] {
  if (value === undefined) return [];
  if (!Array.isArray(value)) throw new DescriptionError(`${where} must be a list`);
  return value;
}

function name(value: unknown, where: string): string {
  if (!isDnsLabel(value)) {
    throw new DescriptionError(`${where} must be a DNS label (lowercase letters, digits, '-'), got ${JSON.stringify(value)}`);
  }
  return value;
}

function version(value: unknown, where: string): string {
  try {
    return parseVersion(typeof value === 'number' ? String(value) : value).text;
  } catch (err) {
    throw new DescriptionError(`${where}: ${(err as Error).message}`);
  }
}

function flag(value: unknown, where: string): boolean {
  if (typeof value !== 'boolean') throw new DescriptionError(`${where} must be true or false`);
  return value;
}

function count(value: unknown, where: string, min: number): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min)
    throw new DescriptionError(`${where} must be an integer ≥ ${min}`);
  return value;
}

function latencies(value: unknown, where: string): Latencies {
  if (value === undefined) return {};
  const raw = obj(value, where);
  const out: Latencies = {};
  for (const [k, v] of Object.entries(raw)) {
    if (!['aptInstall', 'packageDownload', 'kubeletRestart', 'kubeadmApply', 'kubeadmNode', 'etcdSnapshot', 'reboot'].includes(k)) {
      throw new DescriptionError(`${where}.${k} is not a known latency`);
    }
    out[k as keyof Latencies] = count(v, `${where}.${k}`, 0);
  }
  return out;
}

function faults(value: unknown, where: string): Fault[] {
  return list(value, where).map((f, i) => {
    const raw = obj(f, `${where}[${i}]`);
    if (!['fail', 'refuse', 'hang', 'slow', 'rebootDuring', 'rotateHostKey'].includes(raw.kind as string)) {
      throw new DescriptionError(`${where}[${i}].kind must be fail, refuse, hang, slow, rebootDuring or rotateHostKey`);
    }
    try {
      validateFault(raw as unknown as Fault);
      // As `sim fault`: one no command skewless sends can match waits for nothing (no maintenance.command yet).
      const unsent = isCommandFault(raw as unknown as Fault) ? unsentFault(raw as unknown as CommandFault) : undefined;
      if (unsent) throw new Error(unsent);
    } catch (err) {
      throw new DescriptionError(`${where}[${i}]: ${(err as Error).message}`);
    }
    return raw as unknown as Fault;
  });
}

function extraSources(value: unknown, where: string, manager: PackageManager): ExtraSource[] {
  const seen = new Set<string>();
  return list(value, where).map((v, i) => {
    const r = obj(v, `${where}[${i}]`);
    const unknown = Object.keys(r).find((k) => !['file', 'text', 'broken'].includes(k));
    if (unknown) throw new DescriptionError(`${where}[${i}].${unknown} is not a key of a source (file, text, broken)`);
    const source = r as unknown as ExtraSource;
    const problem = extraSourceProblem(manager, source);
    if (problem) throw new DescriptionError(`${where}[${i}]: ${problem}`);
    if (seen.has(source.file)) throw new DescriptionError(`${where}[${i}]: ${source.file} is described twice`);
    seen.add(source.file);
    return {
      file: source.file,
      text: source.text.endsWith('\n') ? source.text : `${source.text}\n`,
      ...(source.broken ? { broken: true } : {}),
    };
  });
}

function holds(value: unknown, where: string, manager: PackageManager): PackageName[] {
  const names = list(value, where).map((p, i) => {
    if (!(PACKAGES as readonly unknown[]).includes(p)) throw new DescriptionError(`${where}[${i}] must be one of ${PACKAGES.join(', ')}`);
    return p as PackageName;
  });
  if (manager === 'dnf' && names.length !== 0 && names.length !== PACKAGES.length)
    throw new DescriptionError(`${where}: a dnf host holds all of ${PACKAGES.join(', ')} (kubernetes.repo's exclude=) or none`);
  return [...new Set(names)];
}

const RUNTIME = /^[a-z0-9-]+:\/\/v?\d+\.\d+\.\d+[-+.0-9A-Za-z]*$/;
const ETCD_TAG = /^\d+\.\d+\.\d+(-\d+)?$/;

/** A node's cgroup, container runtime, etcd image tag and certificates' lifetime (the readiness checks' facts). */
function hostFacts(
  r: Raw,
  where: string,
  role: SimNode['role'],
): Pick<SimNode, 'cgroup' | 'containerRuntime' | 'etcdImageTag' | 'certificateDays'> {
  if (r.cgroup !== undefined && r.cgroup !== 'v1' && r.cgroup !== 'v2') throw new DescriptionError(`${where}.cgroup must be v1 or v2`);
  if (r.containerRuntime !== undefined && (typeof r.containerRuntime !== 'string' || !RUNTIME.test(r.containerRuntime)))
    throw new DescriptionError(`${where}.containerRuntime must look like containerd://2.1.4`);
  if (role === 'worker' && (r.etcdImageTag !== undefined || r.certificateDays !== undefined))
    throw new DescriptionError(`${where}: etcdImageTag and certificateDays are for control planes`);
  if (r.etcdImageTag !== undefined && (typeof r.etcdImageTag !== 'string' || !ETCD_TAG.test(r.etcdImageTag)))
    throw new DescriptionError(`${where}.etcdImageTag must look like 3.5.24-0`);
  return {
    ...(r.cgroup === undefined ? {} : { cgroup: r.cgroup as 'v1' | 'v2' }),
    ...(r.containerRuntime === undefined ? {} : { containerRuntime: r.containerRuntime as string }),
    ...(r.etcdImageTag === undefined ? {} : { etcdImageTag: r.etcdImageTag as string }),
    ...(r.certificateDays === undefined ? {} : { certificateDays: count(r.certificateDays, `${where}.certificateDays`, 0) }),
  };
}

function packageManager(value: unknown): PackageManager {
  if (value === undefined) return 'apt';
  if (!(PACKAGE_MANAGERS as readonly unknown[]).includes(value))
    throw new DescriptionError(`packageManager must be ${PACKAGE_MANAGERS.join(' or ')}`);
  return value as PackageManager;
}

function layout(value: unknown): RepositoryLayout {
  if (value === undefined) return 'per-minor';
  if (!(REPOSITORY_LAYOUTS as readonly unknown[]).includes(value))
    throw new DescriptionError(`packageRepository must be ${REPOSITORY_LAYOUTS.join(' or ')}`);
  return value as RepositoryLayout;
}

function controlPlaneMode(value: unknown): ControlPlaneMode {
  if (value === undefined) return 'shared';
  if (!(CONTROL_PLANE_MODES as readonly unknown[]).includes(value))
    throw new DescriptionError(`controlPlane must be ${CONTROL_PLANE_MODES.join(' or ')}`);
  return value as ControlPlaneMode;
}

/** A per-node control plane runs the real release of every version it may meet: each must be built. */
function checkReleases(clusterVersion: string, nodes: readonly SimNode[]): void {
  const named = new Map<string, string>([[clusterVersion, 'version']]);
  for (const n of nodes) {
    named.set(n.kubelet, named.get(n.kubelet) ?? `${n.name}'s kubelet`);
    for (const v of [...Object.values(n.components ?? {}), ...n.repository])
      named.set(v, named.get(v) ?? `${n.name}'s components or repository`);
  }
  for (const [v, where] of named) {
    if (!KUBE_RELEASES.includes(v)) {
      throw new DescriptionError(`controlPlane: per-node runs real releases only (${KUBE_RELEASES.join(', ')}); ${where} names ${v}`);
    }
  }
}

/** What a node takes from the description's top level unless it says otherwise. */
interface NodeDefaults {
  clusterVersion: string;
  repository: string[];
  latencies: SimNode['latencies'];
  manager: PackageManager;
  sources: SimNode['sources'];
}

/** The `i`th entry of `nodes:`, as its `count` copies (`name-1`, `name-2`, …; one without a count keeps its name). */
function describedNodes(n: unknown, i: number, d: NodeDefaults): SimNode[] {
  const where = `nodes[${i}]`;
  const r = obj(n, where);
  const role = r.role;
  if (role !== 'control-plane' && role !== 'worker') throw new DescriptionError(`${where}.role must be control-plane or worker`);
  const base = name(r.name, `${where}.name`);
  const copies = r.count === undefined ? 1 : count(r.count, `${where}.count`, 1);
  const kubelet = version(r.kubelet ?? d.clusterVersion, `${where}.kubelet`);
  const c = r.components === undefined ? {} : obj(r.components, `${where}.components`);
  if (role === 'worker' && r.components !== undefined) throw new DescriptionError(`${where}: workers run no control-plane components`);
  const nodes: SimNode[] = [];
  for (let k = 1; k <= copies; k++) {
    nodes.push({
      name: copies === 1 && r.count === undefined ? base : `${base}-${k}`,
      role,
      kubelet,
      ...(role === 'control-plane'
        ? {
            components: {
              apiserver: version(c.apiserver ?? d.clusterVersion, `${where}.components.apiserver`),
              controllerManager: version(c.controllerManager ?? d.clusterVersion, `${where}.components.controllerManager`),
              scheduler: version(c.scheduler ?? d.clusterVersion, `${where}.components.scheduler`),
            },
          }
        : {}),
      labels: (r.labels === undefined ? {} : obj(r.labels, `${where}.labels`)) as Record<string, string>,
      latencies: { ...d.latencies, ...latencies(r.latencies, `${where}.latencies`) },
      faults: faults(r.faults, `${where}.faults`),
      repository:
        r.repository === undefined
          ? d.repository
          : list(r.repository, `${where}.repository`).map((v, j) => version(v, `${where}.repository[${j}]`)),
      sources: r.sources === undefined ? d.sources : extraSources(r.sources, `${where}.sources`, d.manager),
      ...(r.holds === undefined ? {} : { holds: holds(r.holds, `${where}.holds`, d.manager) }),
      ...hostFacts(r, where, role),
    });
  }
  return nodes;
}

/** The nodes' names, each once; at least one control plane. */
function checkedNodeNames(nodes: readonly SimNode[]): Set<string> {
  const seen = new Set<string>();
  for (const n of nodes) {
    if (seen.has(n.name)) throw new DescriptionError(`node ${n.name} is described twice`);
    seen.add(n.name);
  }
  if (!nodes.some((n) => n.role === 'control-plane')) throw new DescriptionError('the cluster needs at least one control-plane node');
  return seen;
}

/** The `i`th entry of `workloads:`; a bare Pod's `node` must be a described node. */
function describedWorkload(w: unknown, i: number, nodeNames: Set<string>): WorkloadSpec {
  const where = `workloads[${i}]`;
  const r = obj(w, where);
  if (!['Deployment', 'StatefulSet', 'DaemonSet', 'Pod'].includes(r.kind as string)) {
    throw new DescriptionError(`${where}.kind must be Deployment, StatefulSet, DaemonSet or Pod`);
  }
  const kind = r.kind as WorkloadSpec['kind'];
  const spec: WorkloadSpec = {
    kind,
    name: name(r.name, `${where}.name`),
    namespace: r.namespace === undefined ? 'default' : name(r.namespace, `${where}.namespace`),
    replicas: kind === 'Deployment' || kind === 'StatefulSet' ? count(r.replicas ?? 1, `${where}.replicas`, 0) : 1,
  };
  if (r.pdb !== undefined) {
    const pdb = obj(r.pdb, `${where}.pdb`);
    if ((pdb.minAvailable === undefined) === (pdb.maxUnavailable === undefined)) {
      throw new DescriptionError(`${where}.pdb needs exactly one of minAvailable or maxUnavailable`);
    }
    spec.pdb = pdb as PdbSpec;
  }
  if (r.node !== undefined) {
    if (kind !== 'Pod') throw new DescriptionError(`${where}.node is only for bare Pods`);
    spec.node = name(r.node, `${where}.node`);
    if (!nodeNames.has(spec.node)) throw new DescriptionError(`${where}.node ${spec.node} is not a described node`);
  }
  if (r.emptyDir !== undefined) spec.emptyDir = r.emptyDir === true;
  return spec;
}

/** `pools:`, each a label selector by pool name. */
function describedPools(value: unknown): Record<string, string> {
  const pools: Record<string, string> = {};
  for (const [pool, selector] of Object.entries(value === undefined ? {} : obj(value, 'pools'))) {
    name(pool, `pools.${pool}`);
    if (typeof selector !== 'string' || selector === '' || /[\n\r{}#'"]/.test(selector))
      throw new DescriptionError(`pools.${pool} must be a label selector such as skewless.io/pool=blue`);
    pools[pool] = selector;
  }
  return pools;
}

export function parseDescription(text: string, source = 'description'): SimDescription {
  let doc: unknown;
  try {
    doc = parseYaml(text);
  } catch (err) {
    throw new DescriptionError(`${source} is not valid YAML: ${(err as Error).message.split('\n')[0]}`);
  }
  const raw = obj(doc, source);
  const clusterVersion = version(raw.version, 'version');
  const repository = list(raw.repository, 'repository').map((v, i) => version(v, `repository[${i}]`));
  const defaultLatencies = latencies(raw.latencies, 'latencies');
  const manager = packageManager(raw.packageManager);
  const defaults = {
    clusterVersion,
    repository,
    latencies: defaultLatencies,
    manager,
    sources: extraSources(raw.sources, 'sources', manager),
  };
  const nodes = list(raw.nodes, 'nodes').flatMap((n, i) => describedNodes(n, i, defaults));
  const nodeNames = checkedNodeNames(nodes);
  const workloads = list(raw.workloads, 'workloads').map((w, i) => describedWorkload(w, i, nodeNames));
  const mode = controlPlaneMode(raw.controlPlane);
  if (mode === 'per-node') checkReleases(clusterVersion, nodes);
  const ssh = raw.ssh === undefined ? {} : obj(raw.ssh, 'ssh');
  const pools = describedPools(raw.pools);
  return {
    name: name(raw.name, 'name'),
    version: clusterVersion,
    nodes,
    workloads,
    ssh: { user: ssh.user === undefined ? 'skewless' : name(ssh.user, 'ssh.user') },
    rebootSeconds: raw.rebootSeconds === undefined ? 3 : count(raw.rebootSeconds, 'rebootSeconds', 0),
    packageRepository: layout(raw.packageRepository),
    packageManager: manager,
    controlPlane: mode,
    ...(raw.terminationGraceSeconds === undefined
      ? {}
      : { terminationGraceSeconds: count(raw.terminationGraceSeconds, 'terminationGraceSeconds', 0) }),
    ...(raw.priorityAndFairness === undefined ? {} : { priorityAndFairness: flag(raw.priorityAndFairness, 'priorityAndFairness') }),
    pools,
  };
}

export function readDescription(path: string): SimDescription {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    throw new DescriptionError(`cannot read ${path}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
  }
  return parseDescription(text, path);
}
