import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { readAuditEvents, type AuditEvent } from './cluster/audit-log.js';
import { ensureSimBinaries, type SimBinaries } from './cluster/binaries.js';
import { startControlPlane, type ControlPlane } from './cluster/control-plane.js';
import { kubeClients, type KubeClients } from './cluster/kube-clients.js';
import { startKubeletStatusSync } from './cluster/kubelet-status-sync.js';
import { kubeEffects } from './cluster/kube-effects.js';
import { WORKER_USER } from './cluster/pki.js';
import { populateCluster } from './cluster/populate.js';
import { prepareRealKubeadmHosts, realKubeadm, type RealKubeadmHosts } from './cluster/real-kubeadm-hosts.js';
import { applyRbacManifest, RBAC_MANIFEST_PATH, readRbacManifest, subjectsOf } from './cluster/rbac-manifest.js';
import { recordVersions, type LiveComponents, type LiveEtcd } from './cluster/version-recorder.js';
import { ETCD_RELEASES, etcdVersionOfTag, kubeadmEtcdTag } from './cluster/etcd-releases.js';
import type { SimDescription, SimNode } from './description.js';
import { CONTROL_PLANE_MANIFESTS, type ControlPlaneManifest } from './hosts/static-pod-manifest.js';
import { modelledAddress, startHostSimulator } from './hosts/host-simulator.js';
import { etcdMemberOf } from './cluster/etcd-members.js';
import type { PackageManager } from './hosts/rpm-archive.js';
import { hostDir } from './hosts/host-state.js';
import { staticPodModel } from './cluster/static-pods.js';
import { startMachineApi, type SimMachines } from './machine-api.js';

type HostSimulator = Awaited<ReturnType<typeof startHostSimulator>>;

/** A running simulated cluster: the real API with kwok kubelets, and one SSH host per node. */
export interface Simulation {
  description: SimDescription;
  stateDir: string;
  kubeconfig: string;
  server: string;
  etcdEndpoint: string;
  kube: KubeClients;
  controlPlane: ControlPlane;
  hosts: HostSimulator;
  /** <stateDir>/version-history.jsonl: the versions after every version-moving host effect (readVersionHistory). */
  versionHistoryPath: string;
  /** Every request the worker's identity made, from the apiserver's audit log. */
  auditEvents(): AuditEvent[];
  /** Resolves once every version state recorded so far is written. */
  versionHistorySettled(): Promise<void>;
  /** Endpoints and paths a client needs (no key material): also written to <stateDir>/simulation.json, kept current as machines come and go. */
  endpoints: SimulationEndpoints;
  /** Machines created and deleted at run time (blue/green), also over HTTP (sim/machine-api.ts). */
  machines: SimMachines;
  /** Calls `listener` after each change of the hosts (endpoints.ssh.hosts); returns the unsubscribe. */
  onEndpointsChanged(listener: () => void): () => void;
  stop(): Promise<void>;
}

export interface SimulationEndpoints {
  cluster: string;
  /** The worker's clusters directory: <dir>/<cluster>.yaml is this cluster's configuration. */
  clustersDir: string;
  /** The worker's kubeconfig: its own identity, limited by RBAC (deploy/rbac.yaml). */
  kubeconfig: string;
  /** system:masters, for people and tests poking at the simulation. */
  adminKubeconfig: string;
  server: string;
  ssh: {
    user: string;
    privateKeyPath: string;
    knownHostsPath: string;
    hosts: { name: string; host: string; port: number; hostKeyFingerprint: string }[];
  };
  /** The machine API (blue/green): the cluster configuration's `provisioning:` names the same. */
  machineApi: { endpoint: string; tokenFile: string };
}

export interface SimulationOptions {
  stateDir: string;
  binaries?: SimBinaries;
  timeoutMs?: number;
}

/** The cluster configuration a worker reads for this simulation (activities/cluster-config.ts). */
function writeClusterConfig(
  e: SimulationEndpoints,
  snapshotsDir: string,
  pools: Record<string, string>,
  packageManager: PackageManager,
  auditLog?: string,
): void {
  mkdirSync(e.clustersDir, { recursive: true });
  mkdirSync(snapshotsDir, { recursive: true });
  const lines = [
    `name: ${e.cluster}`,
    `kubeconfig: ${e.kubeconfig}`,
    `packageManager: ${packageManager}`,
    'ssh:',
    `  user: ${e.ssh.user}`,
    `  privateKeyPath: ${e.ssh.privateKeyPath}`,
    `  knownHostsPath: ${e.ssh.knownHostsPath}`,
    '  sudo: true',
    '  connectTimeoutSeconds: 5',
    '# every simulated host listens on loopback on a port of its own',
    'nodes:',
    ...e.ssh.hosts.map((h) => `  ${h.name}: {address: ${h.host}, port: ${h.port}}`),
    'snapshots:',
    `  dir: ${snapshotsDir}`,
    'drain:',
    // Above the disruption controller's 2-minute hold on an evicted pod's name: a StatefulSet's
    // replacement (same name) is not counted healthy by its PDB until that hold expires.
    '  timeoutSeconds: 300',
    "# machines for blue/green node pools: the simulation's machine API (sim/machine-api.ts)",
    'provisioning:',
    '  provider: simulation',
    `  endpoint: ${e.machineApi.endpoint}`,
    `  tokenFile: ${e.machineApi.tokenFile}`,
    '  joinTimeoutSeconds: 120',
    ...(Object.keys(pools).length
      ? ['pools:', ...Object.entries(pools).map(([pool, selector]) => `  ${pool}: {selector: "${selector}"}`)]
      : []),
    ...(auditLog ? ["# each control plane's apiserver audit log, on its host", 'auditLog:', `  path: ${auditLog}`] : []),
    '',
  ];
  writeFileSync(join(e.clustersDir, `${e.cluster}.yaml`), lines.join('\n'));
}

/**
 * What the worker's identity may do: exactly deploy/rbac.yaml, the manifest operators apply, so every
 * test that runs activities or a worker against the simulation runs under it and a missing
 * permission fails there first. The manifest must bind the identity the simulation issues.
 */
async function grantWorker(kube: KubeClients): Promise<void> {
  const manifest = readRbacManifest();
  if (!subjectsOf(manifest).includes(WORKER_USER))
    throw new Error(`${RBAC_MANIFEST_PATH} binds ${subjectsOf(manifest).join(', ') || 'no one'}, not the worker's user ${WORKER_USER}`);
  await applyRbacManifest(kube, manifest);
}

/** A per-node control plane's programs as they report their versions; the shared one's are read from its mirror pods. */
function liveComponents(cp: ControlPlane): LiveComponents | undefined {
  if (cp.mode !== 'per-node') return undefined;
  return async () => {
    const out: Awaited<ReturnType<LiveComponents>> = [];
    for (const n of cp.nodes.values()) {
      for (const component of CONTROL_PLANE_MANIFESTS) {
        const version = await n.reportedVersion(component);
        const emulated = version ? await n.reportedEmulation(component) : undefined;
        if (version) out.push({ node: n.node, component, version, ...(emulated ? { emulated } : {}) });
      }
    }
    return out;
  };
}

/** A per-node control plane's etcd members as they report their versions (/version). */
function liveEtcd(cp: ControlPlane): LiveEtcd | undefined {
  if (cp.mode !== 'per-node') return undefined;
  return async () => {
    const out: Awaited<ReturnType<LiveEtcd>> = [];
    for (const node of cp.etcdMembers.nodes) {
      const v = await cp.etcdMembers.reportedVersion(node);
      if (v) out.push({ node, version: v.server, cluster: v.cluster });
    }
    return out;
  };
}

/**
 * The etcd version a per-node control plane's member starts at: the description's etcdImageTag, else the one
 * the cluster's kubeadm writes (kubeadm-init.ts puts the described tag into the host's manifest).
 */
function initialEtcdVersion(n: SimNode, clusterVersion: string): string {
  const tag = n.etcdImageTag ?? kubeadmEtcdTag(clusterVersion);
  const version = etcdVersionOfTag(tag);
  if (version === undefined || !ETCD_RELEASES.includes(version))
    throw new Error(`${n.name}: etcdImageTag ${tag} is not an etcd release the per-node simulation runs (${ETCD_RELEASES.join(', ')})`);
  return version;
}

/** A described control plane's versions by the component its manifest runs. */
const manifestVersions = (c: NonNullable<SimNode['components']>): Record<ControlPlaneManifest, string> => ({
  'kube-apiserver': c.apiserver,
  'kube-controller-manager': c.controllerManager,
  'kube-scheduler': c.scheduler,
});

/**
 * Where a per-node control plane's apiserver writes its audit log on its host (a real path of the
 * host's root, so the worker reads it over SSH as on a kubeadm node whose manifest mounts it;
 * kubernetes.io's auditing page uses this path): written into the worker's cluster configuration.
 */
export const AUDIT_LOG = '/var/log/kubernetes/audit/audit.log';

/** A per-node world's control planes (their manifests' versions, audit log and etcd member), or undefined: shared. */
function perNodeControlPlanes(description: SimDescription, stateDir: string) {
  if (description.controlPlane !== 'per-node') return undefined;
  return description.nodes.flatMap((n) =>
    n.components
      ? [
          {
            node: n.name,
            versions: manifestVersions(n.components),
            auditLog: join(hostDir(stateDir, n.name), 'root', AUDIT_LOG),
            etcd: {
              version: initialEtcdVersion(n, description.version),
              dataDir: join(hostDir(stateDir, n.name), 'root', 'var', 'lib', 'etcd'),
            },
          },
        ]
      : [],
  );
}

/** What the hosts' etcdctl and etcdutl reach: the shared etcd, or (per-node) each control plane's own member. */
function hostEtcd(controlPlane: ControlPlane, controlPlaneNodes: string[], binaries: SimBinaries) {
  return {
    endpoint: controlPlane.etcdEndpoint,
    ...(controlPlane.mode === 'per-node' ? { memberOf: etcdMemberOf(controlPlane.etcdMembers, controlPlaneNodes, modelledAddress) } : {}),
    etcdctl: binaries.bin('etcdctl'),
    etcdutl: binaries.bin('etcdutl'),
  };
}

/** A described node as the host simulator runs it. */
function hostSpec(n: SimNode, description: SimDescription, perNode: boolean) {
  return {
    name: n.name,
    role: n.role,
    repository: n.repository,
    packageRepository: description.packageRepository,
    packageManager: description.packageManager,
    installed: { kubeadm: n.kubelet, kubelet: n.kubelet, kubectl: n.kubelet },
    ...(n.components ? { components: manifestVersions(n.components) } : {}),
    latencies: n.latencies,
    faults: n.faults,
    sources: n.sources,
    ...(n.holds ? { held: n.holds } : {}),
    ...(n.cgroup ? { cgroup: n.cgroup } : {}),
    // per-node: the seeded manifest already names the tag the member starts at (kubeadm init rewrites it alike).
    ...(n.etcdImageTag || (perNode && n.role === 'control-plane')
      ? { etcdImageTag: n.etcdImageTag ?? kubeadmEtcdTag(description.version) }
      : {}),
    ...(n.certificateDays === undefined ? {} : { certificateDays: n.certificateDays }),
  };
}

/** What a worker needs to reach the simulation (simulation.json, and the cluster configuration written from it). */
function simulationEndpoints(
  cluster: string,
  clustersDir: string,
  controlPlane: ControlPlane,
  hosts: HostSimulator,
  machines: SimMachines,
  sshHosts: SimulationEndpoints['ssh']['hosts'],
): SimulationEndpoints {
  return {
    cluster,
    clustersDir,
    kubeconfig: controlPlane.workerKubeconfig,
    adminKubeconfig: controlPlane.kubeconfig,
    server: controlPlane.server,
    ssh: { user: hosts.user, privateKeyPath: hosts.clientKeyPath, knownHostsPath: hosts.knownHostsPath, hosts: sshHosts },
    machineApi: { endpoint: machines.endpoint, tokenFile: machines.tokenFile },
  };
}

export async function startSimulation(description: SimDescription, options: SimulationOptions): Promise<Simulation> {
  const { stateDir } = options;
  mkdirSync(stateDir, { recursive: true });
  const binaries = options.binaries ?? ensureSimBinaries();
  // `shared`: the real etcd is the first control plane's member: it serves that host's /var/lib/etcd.
  const controlPlaneNodes = description.nodes.filter((n) => n.role === 'control-plane').map((n) => n.name);
  const primary = controlPlaneNodes[0];
  const etcdDataDir = primary === undefined ? undefined : join(hostDir(stateDir, primary), 'root', 'var', 'lib', 'etcd');
  const perNode = perNodeControlPlanes(description, stateDir);
  // kubeadm's files name this run's ports (the endpoint, each apiserver's): a per-node world starts afresh.
  if (perNode && existsSync(join(stateDir, 'hosts')))
    throw new Error(`${stateDir} holds hosts of an earlier run: a per-node simulation starts in an empty state dir`);
  const controlPlane = await startControlPlane({
    stateDir: join(stateDir, 'cluster'),
    binaries,
    clusterName: description.name,
    honourPodGrace: description.terminationGraceSeconds !== undefined,
    ...(description.priorityAndFairness ? { priorityAndFairness: true } : {}),
    ...(etcdDataDir ? { etcdDataDir } : {}),
    ...(perNode ? { perNode } : {}),
  });
  const parts: SimulationParts = { controlPlane };
  try {
    return await assembleSimulation(description, options, binaries, controlPlaneNodes, perNode !== undefined, parts);
  } catch (err) {
    await stopParts({ ...parts, recorder: undefined }); // a start that failed waits for no version record
    throw err;
  }
}

/** What a simulation runs, as far as it started: stopped in this order. */
interface SimulationParts {
  controlPlane: ControlPlane;
  statusSync?: { stop(): void };
  recorder?: ReturnType<typeof recordVersions>;
  hosts?: HostSimulator;
  kubeadmHosts?: RealKubeadmHosts;
  machines?: SimMachines;
}

async function stopParts(p: SimulationParts): Promise<void> {
  await p.machines?.close();
  await p.hosts?.stop();
  await p.kubeadmHosts?.stop();
  await p.recorder?.settled();
  p.statusSync?.stop();
  await p.controlPlane.stop();
}

/** On a started control plane: the cluster's objects, the version recorder, the hosts, the machine API and the worker's configuration. */
async function assembleSimulation(
  description: SimDescription,
  options: SimulationOptions,
  binaries: SimBinaries,
  controlPlaneNodes: string[],
  perNode: boolean,
  parts: SimulationParts,
): Promise<Simulation> {
  const { stateDir } = options;
  const { controlPlane } = parts;
  const kube = kubeClients(controlPlane.kubeconfig);
  await grantWorker(kube);
  await populateCluster(kube, description, options.timeoutMs);
  parts.statusSync = startKubeletStatusSync(controlPlane.kubeconfig, kube);
  const recorder = recordVersions(kubeEffects(kube), kube, stateDir, liveComponents(controlPlane), liveEtcd(controlPlane));
  parts.recorder = recorder;
  await recorder.record('initial');
  const staticPods = staticPodModel(controlPlane, controlPlaneNodes, {
    onError: (err) => console.error(`[sim/static-pods] ${err.message}`),
    // Each restart at another version is a state of the cluster the skew policy must hold in.
    onRestarted: (node, component, version) => void recorder.record(`static-pod ${node} ${component} ${version}`),
    kube,
  });
  const hosts = await startHostSimulator({
    stateDir,
    staticPods,
    ...(controlPlane.mode === 'per-node' ? { realKubeadm } : {}),
    user: description.ssh.user,
    rebootSeconds: description.rebootSeconds,
    effects: recorder.effects,
    etcd: hostEtcd(controlPlane, controlPlaneNodes, binaries),
    hosts: description.nodes.map((n) => hostSpec(n, description, perNode)),
  });
  parts.hosts = hosts;
  if (controlPlane.mode === 'per-node') {
    parts.kubeadmHosts = await prepareRealKubeadmHosts({
      stateDir,
      description,
      controlPlane,
      noticeManifests: (h) => hosts.noticeManifests(h),
      kube,
    });
  }
  const { machines, endpoints, onEndpointsChanged } = await startMachinesAndEndpoints(description, stateDir, kube, hosts, recorder, parts);
  return {
    description,
    stateDir,
    kubeconfig: controlPlane.kubeconfig,
    server: controlPlane.server,
    etcdEndpoint: controlPlane.etcdEndpoint,
    kube,
    controlPlane,
    hosts,
    versionHistoryPath: recorder.path,
    versionHistorySettled: recorder.settled,
    auditEvents: () => readAuditEvents(controlPlane.auditLogPaths()),
    endpoints,
    machines,
    onEndpointsChanged,
    stop: () => stopParts(parts),
  };
}

/**
 * The machine API (blue/green), and the endpoints a worker needs, written to simulation.json and the
 * worker's cluster configuration, and rewritten (listeners told) as machines come and go.
 */
async function startMachinesAndEndpoints(
  description: SimDescription,
  stateDir: string,
  kube: KubeClients,
  hosts: HostSimulator,
  recorder: ReturnType<typeof recordVersions>,
  parts: SimulationParts,
) {
  const { controlPlane } = parts;
  const clustersDir = join(stateDir, 'clusters');
  const listeners = new Set<() => void>();
  const sshHosts = () =>
    hosts.hosts.map((h) => ({ name: h.name, host: '127.0.0.1', port: h.port, hostKeyFingerprint: h.hostKeyFingerprint }));
  const machines = await startMachineApi({
    stateDir,
    description,
    kube,
    hosts,
    clusterConfigPath: join(clustersDir, `${description.name}.yaml`),
    recordVersions: recorder.record,
    onHostsChanged: () => {
      endpoints.ssh.hosts = sshHosts();
      writeFileSync(join(stateDir, 'simulation.json'), JSON.stringify(endpoints, null, 2));
      for (const l of listeners) l();
    },
  });
  parts.machines = machines;
  const endpoints = simulationEndpoints(description.name, clustersDir, controlPlane, hosts, machines, sshHosts());
  writeFileSync(join(stateDir, 'simulation.json'), JSON.stringify(endpoints, null, 2));
  writeClusterConfig(
    endpoints,
    join(stateDir, 'snapshots'),
    description.pools ?? {},
    description.packageManager,
    controlPlane.mode === 'per-node' ? AUDIT_LOG : undefined,
  );
  const onEndpointsChanged = (listener: () => void) => {
    listeners.add(listener);
    return () => void listeners.delete(listener);
  };
  return { machines, endpoints, onEndpointsChanged };
}
