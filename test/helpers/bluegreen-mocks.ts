import { ApplicationFailure } from '@temporalio/common';
import type { Activities } from '../../activities/index.js';
import { roomForEveryBatch } from './fake-cluster.js';

export type Call = [string, Record<string, unknown>];
/** Activities that change the cluster: none may run before the pre-flight checks passed. */
export const BLUEGREEN_WRITES = [
  'setStageLabels',
  'cordonNode',
  'drainNode',
  'uncordonNode',
  'createPoolMachines',
  'deletePoolMachines',
  'pointPackageRepository',
  'installPackages',
  'kubeadmUpgradeApply',
  'kubeadmUpgradeNode',
  'restartKubelet',
  'snapshotEtcd',
  'clearStageLabels',
];
export const BLUE = ['blue-1', 'blue-2', 'blue-3', 'blue-4'];
export const GREEN = ['green-1', 'green-2', 'green-3', 'green-4'];

type Fn = (input: Record<string, unknown>) => unknown;

/**
 * A cluster in memory for the blue/green workflow: a control plane cp1 and a blue pool of four nodes,
 * all at `version`. The mocked activities change it as the real ones would: versions (the control-plane
 * upgrade), cordons (with owner), which nodes are empty (drained), machines created and deleted, and
 * deletePoolMachines refuses, as the real one, a node that is not cordoned or still has pods.
 */
export function mockBlueGreenCluster(options: { version?: string; override?: Record<string, Fn> } = {}) {
  const v = options.version ?? '1.33.7';
  const apiserver: Record<string, string> = { cp1: v };
  const kubelet: Record<string, string> = { cp1: v, ...Object.fromEntries(BLUE.map((n) => [n, v])) };
  const cordoned = new Map<string, string>();
  const empty = new Set<string>();
  const deleted: string[] = [];
  const calls: Call[] = [];
  const override = options.override ?? {};
  const record = (name: string, fn: Fn) => async (input: Record<string, unknown>) => {
    calls.push([name, input]);
    if (override[name]) return override[name](input);
    return fn(input);
  };
  const inventory = () => ({
    cluster: 'lab',
    nodes: Object.keys(kubelet).map((name) => ({ name, ready: true })),
    pdbFindings: [],
    problems: [],
    skew: {
      apiservers: Object.entries(apiserver).map(([node, version]) => ({ node, version })),
      controllerManagers: Object.entries(apiserver).map(([node, version]) => ({ node, version })),
      schedulers: Object.entries(apiserver).map(([node, version]) => ({ node, version })),
      kubelets: Object.entries(kubelet).map(([node, version]) => ({ node, version })),
      nodes: Object.keys(kubelet).map((name) => ({ name, role: name === 'cp1' ? 'control-plane' : 'worker' })),
    },
  });
  const fns: Record<string, Fn> = {
    findRunningRollout: () => ({ running: false }),
    takeInventory: () => inventory(),
    availableVersions: () => ['1.34.2', '1.33.7'],
    snapshotEtcd: (i) => ({
      remotePath: `/snap-${String(i.hop)}.db`,
      localPath: `/backups/snap-${String(i.hop)}.db`,
      sizeBytes: 1,
      sha256: 'ab'.repeat(32),
      revision: 7,
      totalKeys: 1,
    }),
    kubeadmUpgradePlan: () => ({}),
    pointPackageRepository: () => ({}),
    installPackages: () => ({}),
    readPackageHolds: (i) => ({ node: i.node, held: ['kubeadm', 'kubelet', 'kubectl'], via: 'apt-mark' }),
    restorePackageHolds: (i) => ({ node: i.node, held: i.held, putBack: [], missing: [] }),
    kubeadmUpgradeApply: (i) => {
      apiserver[i.node as string] = i.version as string;
      return {};
    },
    kubeadmUpgradeNode: () => ({}),
    checkControlPlane: () => ({}),
    restartKubelet: (i) => {
      kubelet[i.node as string] = i.version as string;
      return {};
    },
    checkNodeReady: () => ({}),
    checkPodsOnNode: () => ({}),
    checkWorkloads: () => ({}),
    runProbes: () => ({ healthy: true, probes: [], failed: [] }),
    checkAlerts: (i: Record<string, unknown>) => ({ cluster: i.cluster, configured: false, firing: [] }), // no alerts: block
    readinessReport: (i) => ({
      cluster: i.cluster,
      findings: [],
      problems: [],
      looked: { removedApis: { metricsScrapes: 1, auditLogsRead: [], deprecatedSeries: 0, crdsStoredNotServed: 0 } },
    }),
    setStageLabels: (i) => ({ changed: Object.keys(i.labels as object), unchanged: [] }),
    clearStageLabels: () => ({ changed: [], unchanged: [] }),
    cordonNode: (i) => {
      const by = cordoned.get(i.node as string);
      if (by) return { cordoned: true, ownedByUs: by === i.owner, changed: false };
      cordoned.set(i.node as string, i.owner as string);
      return { cordoned: true, ownedByUs: true, changed: true };
    },
    uncordonNode: (i) => {
      const mine = cordoned.get(i.node as string) === i.owner;
      if (mine) cordoned.delete(i.node as string);
      return { uncordoned: mine, changed: mine };
    },
    drainNode: (i) => {
      if (!cordoned.has(i.node as string)) throw ApplicationFailure.nonRetryable(`drain of uncordoned ${String(i.node)}`, 'Invalid');
      empty.add(i.node as string);
      return { node: i.node, gone: [], skipped: [], warnings: [], resumed: false };
    },
    planBlueGreen: (i) => {
      const cp = Object.values(apiserver)[0] as string;
      if (i.from !== 'blue' || i.to !== 'green')
        throw ApplicationFailure.create({ type: 'BlueGreenInvalid', nonRetryable: true, message: `no pool ${String(i.from)}` });
      if ((i.version as string) > cp)
        throw ApplicationFailure.create({
          type: 'BlueGreenInvalid',
          nonRetryable: true,
          message: `version ${String(i.version)} is above the control plane's ${cp}`,
        });
      const count = (i.count as number | undefined) ?? BLUE.length;
      return {
        blue: BLUE.filter((n) => kubelet[n]).map((name) => ({ name, kubelet: kubelet[name], labels: { 'skewless.io/pool': 'blue' } })),
        green: { pool: 'green', names: GREEN.slice(0, count), version: i.version, labels: { 'skewless.io/pool': 'green' } },
        controlPlaneVersion: cp,
        provider: 'simulation',
      };
    },
    createPoolMachines: (i) => {
      for (const n of i.names as string[]) kubelet[n] = i.version as string;
      return { joined: i.names };
    },
    deletePoolMachines: (i) => {
      for (const n of i.names as string[]) {
        if (!cordoned.has(n) || !empty.has(n))
          throw ApplicationFailure.create({ type: 'BlueGreenInvalid', nonRetryable: true, message: `${n} is not drained` });
      }
      for (const n of i.names as string[]) {
        delete kubelet[n];
        cordoned.delete(n);
        deleted.push(n);
      }
      return { deleted: i.names };
    },
  };
  const acts = Object.fromEntries(Object.entries(fns).map(([name, fn]) => [name, record(name, fn)])) as unknown as Partial<Activities>;
  acts.checkBatchCapacity = roomForEveryBatch; // a read, not recorded: the calls list what the run did to the cluster
  /** `name node` of each call, in order: what the assertions on order read. */
  const order = () => calls.map(([n, i]) => `${n}${typeof i.node === 'string' ? ` ${i.node}` : ''}`);
  return { acts, calls, order, apiserver, kubelet, cordoned, empty, deleted };
}
