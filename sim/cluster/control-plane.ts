import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { ControlPlaneManifest } from '../hosts/static-pod-manifest.js';
import { freePort } from '../../tooling/free-port.js';
import type { SimBinaries } from './binaries.js';
import { apiserverFlags, auditPolicy, controllerManagerFlags, schedulerFlags } from './component-flags.js';
import { ManagedProcess } from '../../tooling/managed-process.js';
import { EtcdMembers } from './etcd-members.js';
import { NodeComponents } from './node-components.js';
import { ensurePki, WORKER_USER, writeKubeconfig, type Pki } from './pki.js';
import { startTcpBalancer, type TcpBalancer } from './tcp-balancer.js';
import { httpGet, waitFor } from './wait-for.js';

/**
 * The real Kubernetes control plane of the simulation, as plain processes on loopback:
 * etcd → kube-apiserver → kube-controller-manager + kube-scheduler → kwok (simulated kubelets).
 * Two layouts (the description's `controlPlane`): `shared`, one set of processes for every
 * control-plane host; `per-node`, each host's own set, of the release its manifests name, behind
 * one load-balanced endpoint.
 */
interface ControlPlaneBase {
  /** system:masters: the simulation's own components and the tests' manipulations. */
  kubeconfig: string;
  /** The skewless worker's identity (CN=skewless-worker): what RBAC grants it, nothing more. */
  workerKubeconfig: string;
  /** JSON lines of the apiservers' audit logs: every request of the worker's identity (auditEvents()). */
  auditLogPaths(): string[];
  server: string;
  /** Where etcd serves clients: the one etcd (`shared`), the first control plane's member (`per-node`). */
  etcdEndpoint: string;
  pki: Pki;
  kwok: ManagedProcess;
  /** Every process running now, by a name that says what it is (memory reports, pid registries). */
  running(): Record<string, ManagedProcess>;
  /** Stops the apiserver(s) and starts them again (a control-plane fault). */
  restartApiserver(): Promise<void>;
  /** Waits until etcd answers /health (every member's, `per-node`). */
  etcdHealthy(): Promise<void>;
  stop(): Promise<void>;
}

export interface SharedControlPlane extends ControlPlaneBase {
  mode: 'shared';
  /** The one real etcd (the first control plane's member; the others are modelled). */
  etcd: ManagedProcess;
  processes: Record<'etcd' | 'apiserver' | 'controllerManager' | 'scheduler' | 'kwok', ManagedProcess>;
  /** Waits until the apiserver answers /readyz. */
  apiserverReady(): Promise<void>;
}

export interface PerNodeControlPlane extends ControlPlaneBase {
  mode: 'per-node';
  /** Each control-plane host's components, by node name. */
  nodes: ReadonlyMap<string, NodeComponents>;
  /** One real etcd member per control-plane host, at the version its manifest names. */
  etcdMembers: EtcdMembers;
  /** The endpoint in front of the apiservers: it sends new connections to those that run. */
  balancer: TcpBalancer;
}

export type ControlPlane = SharedControlPlane | PerNodeControlPlane;

export interface ControlPlaneOptions {
  stateDir: string;
  binaries: SimBinaries;
  clusterName: string;
  /**
   * kwok deletes a terminating pod when its grace period ends (its deletionTimestamp), as a kubelet
   * does once the containers stopped, instead of at once: drains then take as long as they would.
   */
  honourPodGrace?: boolean;
  /** API Priority and Fairness on, with the default in-flight limits (sim/description.ts priorityAndFairness). */
  priorityAndFairness?: boolean;
  /**
   * etcd's data dir: by default inside the control plane's state dir; the simulation puts it in the
   * first control-plane host's root at /var/lib/etcd, the hostPath of that host's etcd manifest, so a
   * restore on the host (etcdutl into a fresh dir, swap) changes what the real etcd serves.
   */
  etcdDataDir?: string;
  /**
   * Set: a `per-node` control plane, each host starting at these versions (`1.32.13`), its etcd member at
   * `etcd.version` (`3.5.24`) on `etcd.dataDir` (the host's /var/lib/etcd).
   */
  perNode?: {
    node: string;
    versions: Record<ControlPlaneManifest, string>;
    auditLog?: string;
    etcd: { version: string; dataDir: string };
  }[];
}

/** The logs dir, the PKI and the audit policy: what both layouts share. */
function commonFiles(options: ControlPlaneOptions) {
  const logs = join(options.stateDir, 'logs');
  mkdirSync(logs, { recursive: true });
  const pki = ensurePki(join(options.stateDir, 'pki'));
  const auditPolicyPath = join(options.stateDir, 'audit-policy.yaml');
  writeFileSync(auditPolicyPath, auditPolicy(WORKER_USER));
  return { logs, pki, auditPolicyPath };
}

/** The one etcd of a shared control plane. */
async function startEtcd(options: ControlPlaneOptions) {
  const { stateDir, binaries } = options;
  const data = options.etcdDataDir ?? join(stateDir, 'etcd-data');
  const { logs, pki, auditPolicyPath } = commonFiles(options);
  const [etcdPort, etcdPeer] = await Promise.all([freePort(), freePort()]);
  const etcdEndpoint = `http://127.0.0.1:${etcdPort}`;
  const etcd = new ManagedProcess(
    'etcd',
    binaries.bin('etcd'),
    [
      '--name=sim',
      `--data-dir=${data}`,
      `--listen-client-urls=${etcdEndpoint}`,
      `--advertise-client-urls=${etcdEndpoint}`,
      `--listen-peer-urls=http://127.0.0.1:${etcdPeer}`,
      `--initial-advertise-peer-urls=http://127.0.0.1:${etcdPeer}`,
      `--initial-cluster=sim=http://127.0.0.1:${etcdPeer}`,
      '--unsafe-no-fsync=true',
      '--auto-compaction-retention=1',
      '--quota-backend-bytes=2147483648',
      '--log-level=warn',
    ],
    join(logs, 'etcd.log'),
  );
  const etcdHealthy = () =>
    waitFor('etcd /health', async () => {
      etcd.assertAlive();
      return (await httpGet(`${etcdEndpoint}/health`)).body.includes('"health":"true"');
    });
  etcd.start();
  try {
    await etcdHealthy();
  } catch (err) {
    await etcd.stop();
    throw err;
  }
  return { logs, pki, etcd, etcdEndpoint, etcdHealthy, auditPolicyPath };
}

type Etcd = Awaited<ReturnType<typeof startEtcd>>;

function kwokProcess(options: ControlPlaneOptions, kubeconfig: string, logs: string): ManagedProcess {
  const { stateDir, binaries } = options;
  // kwok reads ~/.kwok/kwok.yaml when it exists: give it a HOME of its own.
  const kwokHome = join(stateDir, 'kwok-home');
  mkdirSync(kwokHome, { recursive: true });
  return new ManagedProcess(
    'kwok',
    binaries.bin('kwok'),
    [
      `--kubeconfig=${kubeconfig}`,
      `--config=${kwokStages(binaries.kwokStages, stateDir, options.honourPodGrace ?? false)}`,
      '--manage-all-nodes=false',
      '--manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake',
      '--node-lease-duration-seconds=40',
      '--cidr=10.244.0.0/16',
      '--node-ip=10.0.0.1',
    ],
    join(logs, 'kwok.log'),
    { ...process.env, HOME: kwokHome },
  );
}

/** The admin's and the worker's kubeconfigs for `server`. */
function writeKubeconfigs(options: ControlPlaneOptions, pki: Pki, server: string) {
  const kubeconfig = join(options.stateDir, 'admin.kubeconfig');
  writeKubeconfig(kubeconfig, server, pki, options.clusterName);
  const workerKubeconfig = join(options.stateDir, 'worker.kubeconfig');
  writeKubeconfig(workerKubeconfig, server, pki, options.clusterName, 'worker');
  return { kubeconfig, workerKubeconfig };
}

export async function startControlPlane(options: ControlPlaneOptions): Promise<ControlPlane> {
  if (options.perNode) return startPerNode(options, options.perNode);
  const etcd = await startEtcd(options);
  try {
    return await startShared(options, etcd);
  } catch (err) {
    await etcd.etcd.stop();
    throw err;
  }
}

/** The shared world's apiserver (on the real etcd), controller-manager and scheduler, not started. */
function sharedComponents(
  options: ControlPlaneOptions,
  e: Etcd,
  ports: { apiPort: number; kcmPort: number; schedPort: number },
  kubeconfig: string,
  auditLogPath: string,
) {
  const { stateDir, binaries } = options;
  const log = (name: string) => join(e.logs, `${name}.log`);
  const apiserver = new ManagedProcess(
    'kube-apiserver',
    binaries.bin('kube-apiserver'),
    apiserverFlags({
      port: ports.apiPort,
      etcdEndpoint: e.etcdEndpoint,
      pki: e.pki,
      certDir: join(stateDir, 'apiserver-certs'),
      auditPolicy: e.auditPolicyPath,
      auditLog: auditLogPath,
      ...(options.priorityAndFairness ? { priorityAndFairness: true } : {}),
    }),
    log('kube-apiserver'),
  );
  const controllerManager = new ManagedProcess(
    'kube-controller-manager',
    binaries.bin('kube-controller-manager'),
    controllerManagerFlags({ kubeconfig, port: ports.kcmPort, pki: e.pki, stateDir, several: false }),
    log('kube-controller-manager'),
  );
  const scheduler = new ManagedProcess(
    'kube-scheduler',
    binaries.bin('kube-scheduler'),
    schedulerFlags({ kubeconfig, port: ports.schedPort, several: false }),
    log('kube-scheduler'),
  );
  return { apiserver, controllerManager, scheduler };
}

/** Waits for the controller-manager's /healthz and the scheduler's /readyz (each alive meanwhile). */
async function componentsHealthy(
  controllerManager: ManagedProcess,
  kcmPort: number,
  scheduler: ManagedProcess,
  schedPort: number,
): Promise<void> {
  await Promise.all([
    waitFor('kube-controller-manager /healthz', async () => {
      controllerManager.assertAlive();
      return (await httpGet(`https://127.0.0.1:${kcmPort}/healthz`, { rejectUnauthorized: false })).body === 'ok';
    }),
    waitFor('kube-scheduler /readyz', async () => {
      scheduler.assertAlive();
      return (await httpGet(`https://127.0.0.1:${schedPort}/readyz`, { rejectUnauthorized: false })).body === 'ok';
    }),
  ]);
}

async function startShared(options: ControlPlaneOptions, e: Etcd): Promise<SharedControlPlane> {
  const { stateDir } = options;
  const { logs, pki, etcd, etcdEndpoint } = e;
  const [apiPort, kcmPort, schedPort] = await Promise.all([freePort(), freePort(), freePort()]);
  const server = `https://127.0.0.1:${apiPort}`;
  const { kubeconfig, workerKubeconfig } = writeKubeconfigs(options, pki, server);
  const auditLogPath = join(logs, 'audit.log');
  const tls = { ca: readFileSync(pki.caCert), cert: readFileSync(pki.adminCert), key: readFileSync(pki.adminKey) };
  const { apiserver, controllerManager, scheduler } = sharedComponents(
    options,
    e,
    { apiPort, kcmPort, schedPort },
    kubeconfig,
    auditLogPath,
  );
  const kwok = kwokProcess(options, kubeconfig, logs);

  const processes = { etcd, apiserver, controllerManager, scheduler, kwok };
  const started: ManagedProcess[] = [];
  const launch = (p: ManagedProcess) => {
    p.start();
    started.push(p);
  };
  const stop = async () => {
    for (const p of [...started].reverse()) await p.stop();
    started.length = 0;
  };
  const apiserverReady = () =>
    waitFor(
      'kube-apiserver /readyz',
      async () => {
        apiserver.assertAlive();
        return (await httpGet(`${server}/readyz`, tls)).body === 'ok';
      },
      120_000,
    );

  try {
    launch(apiserver);
    await apiserverReady();
    launch(controllerManager);
    launch(scheduler);
    await componentsHealthy(controllerManager, kcmPort, scheduler, schedPort);
    launch(kwok);
  } catch (err) {
    await stop();
    throw err;
  }

  return {
    mode: 'shared',
    kubeconfig,
    workerKubeconfig,
    auditLogPaths: () => [auditLogPath],
    server,
    etcdEndpoint,
    pki,
    etcd,
    kwok,
    processes,
    running: () => Object.fromEntries(Object.entries(processes).filter(([, p]) => p.running)),
    async restartApiserver() {
      await apiserver.stop();
      apiserver.start();
      await apiserverReady();
    },
    etcdHealthy: e.etcdHealthy,
    apiserverReady,
    async stop() {
      await stop();
      await etcd.stop();
      rmSync(join(stateDir, 'apiserver-certs'), { recursive: true, force: true });
    },
  };
}

const COMPONENTS: readonly ControlPlaneManifest[] = ['kube-apiserver', 'kube-controller-manager', 'kube-scheduler'];

/** Each control plane's components (its apiserver on every etcd member, its own first), not started. */
async function nodeComponents(
  options: ControlPlaneOptions,
  hosts: NonNullable<ControlPlaneOptions['perNode']>,
  etcdMembers: EtcdMembers,
  pki: Pki,
  auditPolicyPath: string,
): Promise<Map<string, NodeComponents>> {
  const nodes = new Map<string, NodeComponents>();
  for (const h of hosts) {
    nodes.set(
      h.node,
      await NodeComponents.create({
        node: h.node,
        stateDir: options.stateDir,
        clusterName: options.clusterName,
        pki,
        // Every member, its own first (kubeadm's apiserver names only its host's member).
        etcdEndpoint: etcdMembers.clientUrls(h.node).join(','),
        auditPolicy: auditPolicyPath,
        ...(h.auditLog ? { auditLog: h.auditLog } : {}),
      }),
    );
  }
  return nodes;
}

/** The per-node world's running processes, by `<node>/<component>` (and kwok). */
function runningPerNode(
  nodes: Map<string, NodeComponents>,
  etcdMembers: EtcdMembers,
  kwok: ManagedProcess,
): Record<string, ManagedProcess> {
  const out: Record<string, ManagedProcess> = {};
  for (const n of nodes.values()) {
    const member = etcdMembers.processOf(n.node);
    if (member) out[`${n.node}/etcd`] = member;
    for (const c of COMPONENTS) {
      const p = n.processOf(c);
      if (p) out[`${n.node}/${c}`] = p;
    }
  }
  if (kwok.running) out.kwok = kwok;
  return out;
}

async function startPerNode(
  options: ControlPlaneOptions,
  hosts: NonNullable<ControlPlaneOptions['perNode']>,
): Promise<PerNodeControlPlane> {
  const { stateDir, clusterName } = options;
  const { logs, pki, auditPolicyPath } = commonFiles(options);
  const etcdMembers = await EtcdMembers.create({
    members: hosts.map((h) => ({ node: h.node, dataDir: h.etcd.dataDir, version: h.etcd.version })),
    logs,
    clusterToken: clusterName,
  });
  const etcdHealthy = async () => {
    await Promise.all(etcdMembers.nodes.map((n) => etcdMembers.waitHealthy(n)));
  };
  const etcdEndpoint = etcdMembers.clientUrl(hosts[0]?.node ?? '');
  await etcdMembers.startAll().catch(async (err: unknown) => {
    await etcdMembers.stopAll();
    throw err;
  });
  const nodes = await nodeComponents(options, hosts, etcdMembers, pki, auditPolicyPath);
  const balancer = await startTcpBalancer([...nodes.values()].map((n) => n.apiserverPort));
  const server = `https://127.0.0.1:${balancer.port}`;
  const { kubeconfig, workerKubeconfig } = writeKubeconfigs(options, pki, server);
  const kwok = kwokProcess(options, kubeconfig, logs);
  const stopAll = async () => {
    await kwok.stop();
    await Promise.all([...nodes.values()].map((n) => n.stopAll()));
    await balancer.stop();
    await etcdMembers.stopAll();
  };
  try {
    // The apiservers one after another (two cores: side by side they only slow each other down),
    // then the controller-managers and schedulers, which elect their leaders among themselves.
    for (const h of hosts) await nodes.get(h.node)?.run('kube-apiserver', h.versions['kube-apiserver']);
    for (const h of hosts) {
      const n = nodes.get(h.node) as NodeComponents;
      await Promise.all([
        n.run('kube-controller-manager', h.versions['kube-controller-manager']),
        n.run('kube-scheduler', h.versions['kube-scheduler']),
      ]);
    }
    kwok.start();
  } catch (err) {
    await stopAll();
    throw err;
  }
  return {
    mode: 'per-node',
    kubeconfig,
    workerKubeconfig,
    auditLogPaths: () => [...nodes.values()].map((n) => n.auditLog),
    server,
    etcdEndpoint,
    pki,
    kwok,
    nodes,
    etcdMembers,
    balancer,
    running: () => runningPerNode(nodes, etcdMembers, kwok),
    async restartApiserver() {
      // Every host's: the whole endpoint goes away for a moment, as the shared one does.
      const versions = [...nodes.values()].map((n) => [n, n.versionOf('kube-apiserver')] as const);
      for (const [n] of versions) await n.stop('kube-apiserver');
      for (const [n, v] of versions) if (v) await n.run('kube-apiserver', v);
    },
    etcdHealthy,
    async stop() {
      await stopAll();
      rmSync(join(stateDir, 'nodes'), { recursive: true, force: true });
    },
  };
}

/**
 * One kwok plays every simulated kubelet, through 4 pod and 4 node stage workers by default. Real kubelets
 * work side by side, one per node: at 1,000 nodes on a full machine, 4 workers at ~0.4 s per API call
 * left pods Pending up to 88 s after the scheduler bound them (docs/benchmark.md, H), and nodes waited for an
 * operator on the simulation. More workers; kwok's CPU was not the limit (0.05-0.36 of a core then).
 * A configuration file gets none of kwok's defaults (a missing parallelism is 0 and kwok exits): every
 * option below is kwok v0.8.0's default (its pkg/apis/config/v1alpha1/zz_generated.defaults.go) but the
 * two stage workers.
 */
const KWOK_OPTIONS = `apiVersion: config.kwok.x-k8s.io/v1alpha1
kind: KwokConfiguration
options:
  podPlayStageParallelism: 16
  nodePlayStageParallelism: 16
  nodeLeaseParallelism: 4
  podsOnNodeSyncParallelism: 1
  enablePodsOnNodeSyncListPager: true
  enablePodsOnNodeSyncStreamWatch: false
  enableDebuggingHandlers: true
  enableProfilingHandler: true
  enableContentionProfiling: false
`;

/**
 * kwok's pod-delete stage deletes by name whatever carries a deletionTimestamp. A mirror pod deleted
 * with grace 0 (a static-pod manifest change) is gone at once, but a busy kwok may act on the old
 * event late and delete the *new* mirror pod of the same name, leaving a control plane without an
 * apiserver. Mirror pods are the kubelet's, not kwok's: the stage leaves them alone.
 */
function kwokStages(stagesPath: string, stateDir: string, honourPodGrace: boolean): string {
  let stages = readFileSync(stagesPath, 'utf8');
  const anchor = /(name: pod-delete\n[\s\S]*?- key: '\.metadata\.deletionTimestamp'\n(\s*)operator: 'Exists'\n)/;
  if (!anchor.test(stages)) throw new Error(`${stagesPath}: kwok's pod-delete stage has an unexpected shape`);
  stages = stages.replace(
    anchor,
    (_m, head: string, indent: string) =>
      `${head}${indent.slice(2)}- key: '.metadata.annotations["kubernetes.io/config.mirror"]'\n${indent}operator: 'DoesNotExist'\n`,
  );
  // kwok's delay: a timestamp minus now, so the pod goes when its grace period is over.
  if (honourPodGrace) stages = withDelayFrom(stages, stagesPath, 'pod-delete', '.metadata.deletionTimestamp');
  // kwok completes a Job's pod as soon as it runs; a pod annotated `pod-complete.stage.kwok.x-k8s.io/delay: 1h`
  // (kwok's own annotation form, as its node-not-ready stage reads) runs that long, until a test completes it.
  stages = withDelayFrom(stages, stagesPath, 'pod-complete', '.metadata.annotations["pod-complete.stage.kwok.x-k8s.io/delay"]');
  const out = join(stateDir, 'kwok-stages.yaml');
  writeFileSync(out, `${stages.trimEnd()}\n---\n${KWOK_OPTIONS}`);
  return out;
}

/** A kwok stage's action delayed by what `expression` reads of the object (kwok's `delay.durationFrom`). */
function withDelayFrom(stages: string, stagesPath: string, stage: string, expression: string): string {
  const next = new RegExp(`(name: ${stage}\\n[\\s\\S]*?\\n(\\s*)next:\\n)`);
  if (!next.test(stages)) throw new Error(`${stagesPath}: kwok's ${stage} stage has no next:`);
  return stages.replace(
    next,
    (_m, head: string, indent: string) =>
      `${head.slice(0, head.length - `${indent}next:\n`.length)}${indent}delay:\n${indent}  durationMilliseconds: 0\n${indent}  durationFrom:\n${indent}    expressionFrom: '${expression}'\n${indent}next:\n`,
  );
}
