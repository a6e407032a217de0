/**
 * The clusters the fault harness upgrades, 1.32 → 1.34 (two hops, the only minors whose real
 * releases the simulation builds), one per world.
 *
 * `shared`: three control planes and a pool of workers at 1.32.4, the control-plane programs shared
 * (sim/cluster/static-pods.ts), workloads with PDBs a careless drain would break. Host commands take
 * long enough that a kill can land inside them (the latencies, in ms), and `kubeadm upgrade apply`
 * longer than Temporal takes to give a dead worker's activity to the restarted one (about 25 s), as it
 * does on a real control plane (minutes): a retry can meet it. The upgrade is made long enough for
 * the kills asked by adding workers (`workersFor`), not by slowing commands or adding hops: more
 * workers are more drains, installs and kubelet restarts to kill into (the targets themselves), the
 * latencies stay those of the 40-kill runs that pass, and no other minor has a real release here.
 *
 * `per-node`: each control plane runs its own real kube-apiserver, controller-manager, scheduler and
 * etcd member at the release its manifests name, and the real kubeadm of each minor runs on the hosts
 * (`upgrade apply` on the first control plane, `upgrade node` on the others and on the workers).
 */
export type FaultWorld = 'shared' | 'per-node';
export const FAULT_WORLDS: readonly FaultWorld[] = ['shared', 'per-node'];

export interface FaultLab {
  description: string;
  to: string;
  hops: string[];
  policy: Record<string, unknown>;
  acknowledgedBy?: { by: string; reason: string };
}

export const FAULT_POLICY = { canary: 1, batchSize: 2, maxUnavailable: 2, verifySeconds: 60 };

/**
 * Workers for a run of `kills`: 7 up to 4 kills, then 8 for every 5 kills (160 for 100). Measured on
 * `--kills 100 --seed 3` (3 + 80 nodes): the kill loop kills every ~22 s (a targeted kill waits for its
 * moment, the worker restarts) while the upgrade moves a worker every ~13 s, kills and all (batches of
 * two); 3 + 25 and 3 + 80 upgrades both ended before their 50th kill.
 */
export const workersFor = (kills: number): number => Math.max(7, Math.ceil(kills * 1.6));

const sharedLab = (workers: number) => `
name: faults
version: 1.32.4
repository: [1.32.4, 1.33.0, 1.33.7, 1.34.0, 1.34.2]
rebootSeconds: 1
latencies:
  aptInstall: 1500
  kubeletRestart: 1500
  kubeadmApply: 30000
  kubeadmNode: 1000
nodes:
  - {name: cp, role: control-plane, count: 3}
  - {name: worker, role: worker, count: ${workers}}
workloads:
  - {kind: Deployment, name: web, replicas: 4, pdb: {minAvailable: 3}}
  - {kind: Deployment, name: api, replicas: 3, pdb: {maxUnavailable: 1}}
  - {kind: StatefulSet, name: db, replicas: 3, pdb: {maxUnavailable: 1}}
  - {kind: DaemonSet, name: node-exporter, namespace: monitoring}
`;

/**
 * Per-node: the real releases on the control planes (what costs the machine); the workers are kwok's
 * nodes, sized for the kills as in the shared world. `controlPlanes` 2 keeps the suite's version small
 * (still one real `upgrade node` per hop on cp-2).
 */
const perNodeLab = (controlPlanes: number, workers: number) => `
name: faults
version: 1.32.13
repository: [1.32.13, 1.33.13, 1.34.4]
controlPlane: per-node
rebootSeconds: 1
latencies: {aptInstall: 1500, kubeletRestart: 1500}
nodes:
  - {name: cp, role: control-plane, count: ${controlPlanes}}
  - {name: worker, role: worker, count: ${workers}}
workloads:
  - {kind: Deployment, name: web, replicas: 4, pdb: {minAvailable: 3}}
  - {kind: Deployment, name: api, replicas: 3, pdb: {maxUnavailable: 1}}
  - {kind: DaemonSet, name: node-exporter, namespace: monitoring}
`;

export function faultLab(world: FaultWorld, kills: number, size?: { controlPlanes?: number; workers?: number }): FaultLab {
  if (world === 'shared')
    return { description: sharedLab(size?.workers ?? workersFor(kills)), to: '1.34', hops: ['1.33.7', '1.34.2'], policy: FAULT_POLICY };
  const controlPlanes = size?.controlPlanes ?? 3;
  // 1.34 on the real etcd 3.5.24 members kubeadm 1.32 wrote is held by the readiness check (etcd wants 3.5.26
  // before 3.6 for clusters whose membership changed); acknowledged, as in test/e2e/upgrade.test.ts.
  const acknowledge = Array.from({ length: controlPlanes }, (_, i) => `etcd-version:cp-${i + 1}`);
  return {
    description: perNodeLab(controlPlanes, size?.workers ?? workersFor(kills)),
    to: '1.34',
    hops: ['1.33.13', '1.34.4'],
    policy: { ...FAULT_POLICY, acknowledge },
    acknowledgedBy: { by: 'fault harness', reason: 'members never changed: no 3.5 upgrade blocker applies' },
  };
}
