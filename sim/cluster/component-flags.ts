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
  /** The release this apiserver is (`1.32.13`): what it serves beyond its defaults (RUNTIME_CONFIG). */
  version?: string;
  /**
   * The minor it emulates (`1.32`, KEP-4330), whose RUNTIME_CONFIG it then takes: the operator's
   * `--runtime-config` stays in the manifest through a trial, and 1.33.13 emulating 1.32 serves 1.32's
   * authentication.k8s.io/v1beta1 with it (docs/reversible-hops.md).
   */
  emulated?: string;
  /** API Priority and Fairness as a real API server runs it (its default in-flight limits); off otherwise. */
  priorityAndFairness?: boolean;
}

/**
 * Beta APIs a per-node apiserver serves beyond its defaults, by minor: what an operator enables with
 * `--runtime-config`, so a client can call an API the next minor removes and the hop's readiness
 * check meets it for real (issue 21). Modelled: only that the flag is set; the serving, the
 * deprecation metric and the audit annotations are the real apiserver's. 1.32 serves
 * authentication.k8s.io/v1beta1 SelfSubjectReview (removed in 1.33: its prerelease-lifecycle data,
 * k8s.io/api authentication/v1beta1/zz_generated.prerelease-lifecycle.go; served per
 * pkg/registry/authentication/rest/storage_authentication.go; docs/research/readiness-sources.md §2).
 * No flag for 1.33 and 1.34: nothing is enabled there that would then be silently dropped.
 */
export const RUNTIME_CONFIG: Readonly<Record<string, string>> = { '1.32': 'authentication.k8s.io/v1beta1=true' };

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
    // A simulation of many nodes: no fairness queues in the way of a 1,000-node test, unless asked for.
    ...(f.priorityAndFairness
      ? ['--enable-priority-and-fairness=true']
      : ['--enable-priority-and-fairness=false', '--max-requests-inflight=0', '--max-mutating-requests-inflight=0']),
    `--cert-dir=${f.certDir}`,
    '--v=1',
    `--audit-policy-file=${f.auditPolicy}`,
    `--audit-log-path=${f.auditLog}`,
    '--audit-log-format=json',
    '--audit-log-mode=blocking',
    '--audit-log-maxsize=0',
    ...runtimeConfig(f.emulated ?? f.version),
  ];
}

function runtimeConfig(version: string | undefined): string[] {
  const minor = version?.split('.').slice(0, 2).join('.');
  const value = minor === undefined ? undefined : RUNTIME_CONFIG[minor];
  return value ? [`--runtime-config=${value}`] : [];
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
 * never bodies), and anyone's request to an API RUNTIME_CONFIG enables (rare: a test's client of a
 * removed API, whose k8s.io/deprecated annotation the readiness check reads). Nothing else is
 * logged: the simulation's own components would drown it.
 */
export const auditPolicy = (workerUser: string): string => `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived, ResponseStarted]
rules:
- level: Metadata
  users: [${workerUser}]
- level: Metadata
  resources: [{group: authentication.k8s.io, resources: [selfsubjectreviews]}]
- level: None
`;
