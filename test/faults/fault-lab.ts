/**
 * The cluster the fault harness upgrades: three control planes and seven workers at 1.32.4, a
 * repository offering 1.33 and 1.34, workloads with PDBs a careless drain would break. Host
 * commands take long enough that a kill can land inside them (the latencies, in ms), and
 * `kubeadm upgrade apply` longer than Temporal takes to give a dead worker's activity to the
 * restarted one (about 25 s), as it does on a real control plane (minutes): a retry can meet it.
 */
export const FAULT_LAB = `
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
  - {name: worker, role: worker, count: 7}
workloads:
  - {kind: Deployment, name: web, replicas: 4, pdb: {minAvailable: 3}}
  - {kind: Deployment, name: api, replicas: 3, pdb: {maxUnavailable: 1}}
  - {kind: StatefulSet, name: db, replicas: 3, pdb: {maxUnavailable: 1}}
  - {kind: DaemonSet, name: node-exporter, namespace: monitoring}
`;

/** The upgrade the harness starts: to the newest 1.34, two hops. */
export const FAULT_TARGET = '1.34';
export const FAULT_HOPS = ['1.33.7', '1.34.2'];
export const FAULT_POLICY = { canary: 1, batchSize: 2, maxUnavailable: 2, verifySeconds: 60 };
