import { join } from 'node:path';
import type { Pki } from './pki.js';

/**
 * The flags of the control-plane programs the simulation runs, one place for both layouts (one
 * shared set, or one set per control-plane host): the same programs, other ports and files.
 */

const QPS = ['--kube-api-qps=500', '--kube-api-burst=1000'];

export interface ApiserverFiles {
  port: number;
  etcdEndpoint: string;
  pki: Pki;
  /** The apiserver's own generated certs (it writes nothing else). */
  certDir: string;
  auditPolicy: string;
  auditLog: string;
  /**
   * kubeadm's authorization: the Node authorizer beside RBAC, and NodeRestriction (a per-node
   * control plane, where nodes' own credentials run the real `kubeadm upgrade node`).
   */
  nodeAuthorizer?: boolean;
}

export function apiserverFlags(f: ApiserverFiles): string[] {
  return [
    `--etcd-servers=${f.etcdEndpoint}`,
    '--bind-address=127.0.0.1',
    `--secure-port=${f.port}`,
    '--advertise-address=127.0.0.1',
    '--endpoint-reconciler-type=none',
    `--tls-cert-file=${f.pki.adminCert}`,
    `--tls-private-key-file=${f.pki.adminKey}`,
    `--client-ca-file=${f.pki.caCert}`,
    '--service-account-issuer=https://kubernetes.default.svc.cluster.local',
    `--service-account-key-file=${f.pki.saPub}`,
    `--service-account-signing-key-file=${f.pki.saKey}`,
    '--service-cluster-ip-range=10.96.0.0/16',
    ...(f.nodeAuthorizer
      ? ['--authorization-mode=Node,RBAC', '--enable-admission-plugins=NodeRestriction']
      : ['--authorization-mode=RBAC']),
    '--allow-privileged=true',
    // A simulation of many nodes: no client-side fairness queues in the way of a 1,000-node test.
    '--enable-priority-and-fairness=false',
    '--max-requests-inflight=0',
    '--max-mutating-requests-inflight=0',
    `--cert-dir=${f.certDir}`,
    '--v=1',
    `--audit-policy-file=${f.auditPolicy}`,
    `--audit-log-path=${f.auditLog}`,
    '--audit-log-format=json',
    '--audit-log-mode=blocking',
    '--audit-log-maxsize=0',
  ];
}

/** Several controller-managers or schedulers take turns, as on a kubeadm HA control plane. */
const leaderElection = (several: boolean) => [`--leader-elect=${several}`];

export function controllerManagerFlags(o: { kubeconfig: string; port: number; pki: Pki; stateDir: string; several: boolean }): string[] {
  return [
    `--kubeconfig=${o.kubeconfig}`,
    '--bind-address=127.0.0.1',
    `--secure-port=${o.port}`,
    '--authorization-always-allow-paths=/healthz,/readyz,/livez,/metrics',
    ...leaderElection(o.several),
    '--controllers=*',
    '--use-service-account-credentials=false',
    `--service-account-private-key-file=${o.pki.saKey}`,
    `--root-ca-file=${o.pki.caCert}`,
    `--cluster-signing-cert-file=${o.pki.caCert}`,
    `--cluster-signing-key-file=${o.pki.caKey}`,
    '--service-cluster-ip-range=10.96.0.0/16',
    '--node-monitor-period=5s',
    // Simulated NotReady comes from kwok's chaos stage at once; a long grace keeps a loaded machine's
    // late lease renewals from flapping 1,000 nodes (kwok never marks such pods Ready again).
    '--node-monitor-grace-period=5m',
    ...QPS,
    '--v=1',
    // Otherwise the controller-manager creates /usr/libexec/kubernetes/... on the machine running the tests.
    `--flex-volume-plugin-dir=${join(o.stateDir, 'flexvolume')}`,
  ];
}

export function schedulerFlags(o: { kubeconfig: string; port: number; several: boolean }): string[] {
  return [
    `--kubeconfig=${o.kubeconfig}`,
    '--bind-address=127.0.0.1',
    `--secure-port=${o.port}`,
    '--authorization-always-allow-paths=/healthz,/readyz,/livez,/metrics',
    ...leaderElection(o.several),
    ...QPS,
    '--v=1',
  ];
}

/**
 * Every request of the worker's identity, once complete (Metadata: who, verb, resource, name, status;
 * never bodies). Nothing else is logged: the simulation's own components would drown it.
 */
export const auditPolicy = (workerUser: string): string => `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived, ResponseStarted]
rules:
- level: Metadata
  users: [${workerUser}]
- level: None
`;
