import { ApplicationFailure } from '@temporalio/common';
import type { Activities } from '../../activities/index.js';

/** checkBatchCapacity of a cluster with room for everything: every batch fits whole (not recorded: a read). */
export const roomForEveryBatch = async (i: { batches: string[][] }) => ({
  batches: i.batches.map((nodes) => {
    const none = { milliCpu: 0, memoryBytes: 0, pods: 0 };
    return { size: nodes.length, fit: { nodes, evicted: 0, requests: none, pending: [], headroom: none } };
  }),
});

/**
 * A cluster that lives in memory: the mocked activities change its versions as the real ones would,
 * so the workflow's post-hop skew checks see the effect of its own steps.
 */
/**
 * `blockDrainAt`: block `blockDrainOf` only while its kubelet is at this version (a hop other than the first).
 * `versions`: the starting versions of nodes, e.g. `{ 'apiserver cp2': '1.33.7', 'kubelet w1': '1.33.7' }`; `controlPlanes` adds cp2, cp3, ...
 * `workers`: how many workers, w1, w2, ... (default 2).
 */
export function fakeCluster(
  options: {
    blockDrainOf?: string;
    blockDrainAt?: string;
    pdbFinding?: boolean;
    controlPlanes?: number;
    workers?: number;
    versions?: Record<string, string>;
    barePods?: { namespace: string; name: string; node: string }[];
  } = {},
) {
  const v = '1.32.4';
  const cps = Array.from({ length: options.controlPlanes ?? 1 }, (_, i) => `cp${i + 1}`);
  const workers = Array.from({ length: options.workers ?? 2 }, (_, i) => `w${i + 1}`);
  const at = (kind: string, node: string) => options.versions?.[`${kind} ${node}`] ?? v;
  const state = {
    apiserver: Object.fromEntries(cps.map((n) => [n, at('apiserver', n)])) as Record<string, string>,
    kubelet: Object.fromEntries([...cps, ...workers].map((n) => [n, at('kubelet', n)])) as Record<string, string>,
  };
  const calls: [string, Record<string, unknown>][] = [];
  const rec = (name: string, input: Record<string, unknown>) => calls.push([name, input]);
  const inventory = () => ({
    nodes: Object.keys(state.kubelet).map((name) => ({ name, ready: true })),
    pdbFindings: options.pdbFinding
      ? [{ namespace: 'default', name: 'solo', severity: 'error', message: 'PDB default/solo blocks every drain' }]
      : [],
    problems: [],
    ...(options.barePods ? { barePods: options.barePods, barePodCount: options.barePods.length } : {}),
    skew: {
      apiservers: Object.entries(state.apiserver).map(([node, version]) => ({ node, version })),
      controllerManagers: Object.entries(state.apiserver).map(([node, version]) => ({ node, version })),
      schedulers: Object.entries(state.apiserver).map(([node, version]) => ({ node, version })),
      kubelets: Object.entries(state.kubelet).map(([node, version]) => ({ node, version })),
      nodes: [...cps.map((name) => ({ name, role: 'control-plane' })), ...workers.map((name) => ({ name, role: 'worker' }))],
    },
  });
  const acts = {
    findRunningRollout: async (i: Record<string, unknown>) => (rec('findRunningRollout', i), { running: false }),
    takeInventory: async (i: Record<string, unknown>) => (rec('takeInventory', i), inventory()),
    // No `notify:` sinks (a fleet reads each cluster's at its turn): no event is sent.
    notifySinks: async (i: Record<string, unknown>) => (rec('notifySinks', i), []),
    availableVersions: async (i: Record<string, unknown>) => (rec('availableVersions', i), ['1.34.2', '1.33.7', '1.32.4']),
    snapshotEtcd: async (i: { hop: string }) => (
      rec('snapshotEtcd', i),
      {
        remotePath: `/var/lib/skewless/snapshots/etcd-${i.hop}.db`,
        localPath: `/backups/etcd-${i.hop}.db`,
        sizeBytes: 1024,
        sha256: 'ab'.repeat(32),
        revision: 42,
        totalKeys: 7,
      }
    ),
    kubeadmUpgradePlan: async (i: Record<string, unknown>) => (rec('kubeadmUpgradePlan', i), {}),
    setStageLabels: async (i: Record<string, unknown>) => (rec('setStageLabels', i), { changed: [], unchanged: [] }),
    clearStageLabels: async (i: Record<string, unknown>) => (rec('clearStageLabels', i), { cleared: [] }),
    pointPackageRepository: async (i: { node: string; version: string }) => (
      rec('pointPackageRepository', i),
      { node: i.node, file: '/etc/apt/sources.list.d/kubernetes.list', minor: i.version.split('.').slice(0, 2).join('.'), changed: true }
    ),
    installPackages: async (i: Record<string, unknown>) => (rec('installPackages', i), {}),
    downloadPackages: async (i: Record<string, unknown>) => (rec('downloadPackages', i), {}),
    // The install guide's holds on every node, found and left as they are.
    readPackageHolds: async (i: { node: string }) => (
      rec('readPackageHolds', i),
      { node: i.node, held: ['kubeadm', 'kubelet', 'kubectl'], via: 'apt-mark' }
    ),
    restorePackageHolds: async (i: { node: string; held: string[] }) => (
      rec('restorePackageHolds', i),
      { node: i.node, held: i.held, putBack: [], missing: [] }
    ),
    kubeadmUpgradeApply: async (i: { node: string; version: string }) => (
      rec('kubeadmUpgradeApply', i),
      (state.apiserver[i.node] = i.version),
      {}
    ),
    kubeadmUpgradeNode: async (i: { node: string; version: string }) => (
      rec('kubeadmUpgradeNode', i),
      state.apiserver[i.node] && (state.apiserver[i.node] = i.version),
      {}
    ),
    checkControlPlane: async (i: Record<string, unknown>) => (rec('checkControlPlane', i), {}),
    cordonNode: async (i: Record<string, unknown>) => (rec('cordonNode', i), { cordoned: true, ownedByUs: true, changed: true }),
    drainNode: async (i: { node: string }) => {
      rec('drainNode', i);
      if (i.node === options.blockDrainOf && (options.blockDrainAt === undefined || state.kubelet[i.node] === options.blockDrainAt)) {
        throw ApplicationFailure.create({
          type: 'DrainBlocked',
          nonRetryable: true,
          message: `drain of ${i.node} blocked`,
          details: [{ pods: [{ namespace: 'default', name: 'solo-0', pdbs: ['solo'] }] }],
        });
      }
      return {};
    },
    restartKubelet: async (i: { node: string; version: string }) => (rec('restartKubelet', i), (state.kubelet[i.node] = i.version), {}),
    checkNodeReady: async (i: Record<string, unknown>) => (rec('checkNodeReady', i), {}),
    uncordonNode: async (i: Record<string, unknown>) => (rec('uncordonNode', i), { uncordoned: true, changed: true }),
    checkPodsOnNode: async (i: Record<string, unknown>) => (rec('checkPodsOnNode', i), {}),
    checkWorkloads: async (i: Record<string, unknown>) => (rec('checkWorkloads', i), {}),
    checkBatchCapacity: roomForEveryBatch,
    findConcentratedWorkloads: async () => ({ concentrated: [] }), // a read, not recorded
    runProbes: async (i: Record<string, unknown>) => (rec('runProbes', i), { healthy: true, probes: [], failed: [] }),
    // The alert gate (issue 21): a cluster without an `alerts:` block.
    checkAlerts: async (i: { cluster: string }) => (rec('checkAlerts', i), { cluster: i.cluster, configured: false, firing: [] }),
    // plan --cluster's readiness report (issue 21): a cluster with nothing that holds a hop.
    readinessReport: async (i: { cluster: string }) => (
      rec('readinessReport', i),
      {
        cluster: i.cluster,
        findings: [],
        problems: [],
        looked: { removedApis: { metricsScrapes: 1, auditLogsRead: [], deprecatedSeries: 0, crdsStoredNotServed: 0 } },
      }
    ),
  } as unknown as Partial<Activities>;
  return { state, calls, acts };
}
