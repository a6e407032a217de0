import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { freePort } from '../free-port.js';
import type { SimBinaries } from './binaries.js';
import { ManagedProcess } from './managed-process.js';
import { ensurePki, WORKER_USER, writeKubeconfig, type Pki } from './pki.js';
import { httpGet, waitFor } from './wait-for.js';

/**
 * The real Kubernetes control plane of the simulation, as plain processes on loopback:
 * etcd → kube-apiserver → kube-controller-manager + kube-scheduler → kwok (simulated kubelets).
 */
export interface ControlPlane {
  /** system:masters: the simulation's own components and the tests' manipulations. */
  kubeconfig: string;
  /** The skewless worker's identity (CN=skewless-worker): what RBAC grants it, nothing more. */
  workerKubeconfig: string;
  /** JSON lines of the apiserver's audit log: every request of the worker's identity (auditEvents()). */
  auditLogPath: string;
  server: string;
  etcdEndpoint: string;
  pki: Pki;
  processes: Record<'etcd' | 'apiserver' | 'controllerManager' | 'scheduler' | 'kwok', ManagedProcess>;
  /** Stops the apiserver and starts it again (a control-plane fault). */
  restartApiserver(): Promise<void>;
  /** Waits until etcd answers /health (after a start by the static-pod model). */
  etcdHealthy(): Promise<void>;
  /** Waits until the apiserver answers /readyz. */
  apiserverReady(): Promise<void>;
  stop(): Promise<void>;
}

export interface ControlPlaneOptions {
  stateDir: string;
  binaries: SimBinaries;
  clusterName: string;
  /**
   * kwok deletes a terminating pod when its grace period ends (its deletionTimestamp), as a kubelet
   * does once the containers stopped, instead of at once: drains then take as long as they would.
   */
  honourPodGrace?: boolean;
  /**
   * etcd's data dir: by default inside the control plane's state dir; the simulation puts it in the
   * first control-plane host's root at /var/lib/etcd, the hostPath of that host's etcd manifest, so a
   * restore on the host (etcdutl into a fresh dir, swap) changes what the real etcd serves.
   */
  etcdDataDir?: string;
}

const QPS = ['--kube-api-qps=500', '--kube-api-burst=1000'];

export async function startControlPlane(options: ControlPlaneOptions): Promise<ControlPlane> {
  const { stateDir, binaries, clusterName } = options;
  const logs = join(stateDir, 'logs');
  const data = options.etcdDataDir ?? join(stateDir, 'etcd-data');
  mkdirSync(logs, { recursive: true });
  const pki = ensurePki(join(stateDir, 'pki'));
  const [etcdPort, etcdPeer, apiPort, kcmPort, schedPort] = await Promise.all([freePort(), freePort(), freePort(), freePort(), freePort()]);
  const server = `https://127.0.0.1:${apiPort}`;
  const etcdEndpoint = `http://127.0.0.1:${etcdPort}`;
  const kubeconfig = join(stateDir, 'admin.kubeconfig');
  writeKubeconfig(kubeconfig, server, pki, clusterName);
  const workerKubeconfig = join(stateDir, 'worker.kubeconfig');
  writeKubeconfig(workerKubeconfig, server, pki, clusterName, 'worker');
  const auditLogPath = join(logs, 'audit.log');
  const auditPolicy = join(stateDir, 'audit-policy.yaml');
  writeFileSync(auditPolicy, AUDIT_POLICY);
  const tls = { ca: readFileSync(pki.caCert), cert: readFileSync(pki.adminCert), key: readFileSync(pki.adminKey) };
  const log = (name: string) => join(logs, `${name}.log`);

  const etcd = new ManagedProcess('etcd', binaries.bin('etcd'), [
    '--name=sim', `--data-dir=${data}`,
    `--listen-client-urls=${etcdEndpoint}`, `--advertise-client-urls=${etcdEndpoint}`,
    `--listen-peer-urls=http://127.0.0.1:${etcdPeer}`, `--initial-advertise-peer-urls=http://127.0.0.1:${etcdPeer}`,
    `--initial-cluster=sim=http://127.0.0.1:${etcdPeer}`,
    '--unsafe-no-fsync=true', '--auto-compaction-retention=1', '--quota-backend-bytes=2147483648', '--log-level=warn',
  ], log('etcd'));
  const apiserver = new ManagedProcess('kube-apiserver', binaries.bin('kube-apiserver'), [
    `--etcd-servers=${etcdEndpoint}`,
    '--bind-address=127.0.0.1', `--secure-port=${apiPort}`,
    '--advertise-address=127.0.0.1', '--endpoint-reconciler-type=none',
    `--tls-cert-file=${pki.adminCert}`, `--tls-private-key-file=${pki.adminKey}`, `--client-ca-file=${pki.caCert}`,
    '--service-account-issuer=https://kubernetes.default.svc.cluster.local',
    `--service-account-key-file=${pki.saPub}`, `--service-account-signing-key-file=${pki.saKey}`,
    '--service-cluster-ip-range=10.96.0.0/16',
    '--authorization-mode=RBAC', '--allow-privileged=true',
    // A simulation of many nodes: no client-side fairness queues in the way of a 1,000-node test.
    '--enable-priority-and-fairness=false', '--max-requests-inflight=0', '--max-mutating-requests-inflight=0',
    `--cert-dir=${join(stateDir, 'apiserver-certs')}`, '--v=1',
    `--audit-policy-file=${auditPolicy}`, `--audit-log-path=${auditLogPath}`, '--audit-log-format=json', '--audit-log-mode=blocking',
    '--audit-log-maxsize=0',
  ], log('kube-apiserver'));
  const controllerManager = new ManagedProcess('kube-controller-manager', binaries.bin('kube-controller-manager'), [
    `--kubeconfig=${kubeconfig}`,
    '--bind-address=127.0.0.1', `--secure-port=${kcmPort}`,
    '--authorization-always-allow-paths=/healthz,/readyz,/livez,/metrics',
    '--leader-elect=false', "--controllers=*", '--use-service-account-credentials=false',
    `--service-account-private-key-file=${pki.saKey}`, `--root-ca-file=${pki.caCert}`,
    `--cluster-signing-cert-file=${pki.caCert}`, `--cluster-signing-key-file=${pki.caKey}`,
    '--service-cluster-ip-range=10.96.0.0/16',
    '--node-monitor-period=5s',
    // Simulated NotReady comes from kwok's chaos stage at once; a long grace keeps a loaded machine's
    // late lease renewals from flapping 1,000 nodes (kwok never marks such pods Ready again).
    '--node-monitor-grace-period=5m', ...QPS, '--v=1',
    // Otherwise the controller-manager creates /usr/libexec/kubernetes/... on the machine running the tests.
    `--flex-volume-plugin-dir=${join(stateDir, 'flexvolume')}`,
  ], log('kube-controller-manager'));
  const scheduler = new ManagedProcess('kube-scheduler', binaries.bin('kube-scheduler'), [
    `--kubeconfig=${kubeconfig}`,
    '--bind-address=127.0.0.1', `--secure-port=${schedPort}`,
    '--authorization-always-allow-paths=/healthz,/readyz,/livez,/metrics', '--leader-elect=false', ...QPS, '--v=1',
  ], log('kube-scheduler'));
  // kwok reads ~/.kwok/kwok.yaml when it exists: give it a HOME of its own.
  const kwokHome = join(stateDir, 'kwok-home');
  mkdirSync(kwokHome, { recursive: true });
  const kwok = new ManagedProcess('kwok', binaries.bin('kwok'), [
    `--kubeconfig=${kubeconfig}`, `--config=${kwokStages(binaries.kwokStages, stateDir, options.honourPodGrace ?? false)}`,
    '--manage-all-nodes=false', '--manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake',
    '--node-lease-duration-seconds=40', '--cidr=10.244.0.0/16', '--node-ip=10.0.0.1',
  ], log('kwok'), { ...process.env, HOME: kwokHome });

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
    waitFor('kube-apiserver /readyz', async () => {
      apiserver.assertAlive();
      return (await httpGet(`${server}/readyz`, tls)).body === 'ok';
    }, 120_000);

  const etcdHealthy = () =>
    waitFor('etcd /health', async () => {
      etcd.assertAlive();
      return (await httpGet(`${etcdEndpoint}/health`)).body.includes('"health":"true"');
    });

  try {
    launch(etcd);
    await etcdHealthy();
    launch(apiserver);
    await apiserverReady();
    launch(controllerManager);
    launch(scheduler);
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
    launch(kwok);
  } catch (err) {
    await stop();
    throw err;
  }

  return {
    kubeconfig,
    workerKubeconfig,
    auditLogPath,
    server,
    etcdEndpoint,
    pki,
    processes,
    async restartApiserver() {
      await apiserver.stop();
      apiserver.start();
      await apiserverReady();
    },
    etcdHealthy,
    apiserverReady,
    async stop() {
      await stop();
      rmSync(join(stateDir, 'apiserver-certs'), { recursive: true, force: true });
    },
  };
}

/**
 * Every request of the worker's identity, once complete (Metadata: who, verb, resource, name, status;
 * never bodies). Nothing else is logged: the simulation's own components would drown it.
 */
const AUDIT_POLICY = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived, ResponseStarted]
rules:
- level: Metadata
  users: [${WORKER_USER}]
- level: None
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
  stages = stages.replace(anchor, (_m, head: string, indent: string) =>
    `${head}${indent.slice(2)}- key: '.metadata.annotations["kubernetes.io/config.mirror"]'\n${indent}operator: 'DoesNotExist'\n`);
  if (honourPodGrace) {
    // kwok's delay: a timestamp minus now, so the pod goes when its grace period is over.
    const next = /(name: pod-delete\n[\s\S]*?\n(\s*)next:\n)/;
    if (!next.test(stages)) throw new Error(`${stagesPath}: kwok's pod-delete stage has no next:`);
    stages = stages.replace(next, (_m, head: string, indent: string) =>
      `${head.slice(0, head.length - `${indent}next:\n`.length)}${indent}delay:\n${indent}  durationMilliseconds: 0\n${indent}  durationFrom:\n${indent}    expressionFrom: '.metadata.deletionTimestamp'\n${indent}next:\n`);
  }
  const out = join(stateDir, 'kwok-stages.yaml');
  writeFileSync(out, stages);
  return out;
}
