import type { Activities } from '../activities/index.js';

type InputOf<K extends keyof Activities> = Parameters<Activities[K]>[0];
type Summaries = { [K in keyof Activities]: (input: InputOf<K>) => string };

const v = (version: string) => `v${version.replace(/^v/, '')}`;

/** The transition an event's id names after its workflow id and first run (`waiting/gate/canary-1.33.7/1`); `test` for a test event. */
const transitionOf = (e: { id: string; workflowId: string }) =>
  e.id.startsWith(`${e.workflowId}/`) ? e.id.slice(e.workflowId.length + 1).replace(/^[^/]+\//, '') : e.id === e.workflowId ? 'test' : e.id;

/**
 * One line per activity, as the runbook would say it: the Temporal UI shows it as the activity's
 * summary, so the event list reads `drain w3`, `kubeadm upgrade apply v1.33.7 on cp-1`.
 * Typed over the activity set: a new activity does not compile until it has a line here.
 * Names and versions only: a summary lands in history, so nothing secret may go in.
 */
export const SUMMARY_OF: Summaries = {
  describeWorker: () => 'describe the worker',
  findRunningUpgrade: (i) => `is upgrade/${i.cluster} running?`,
  findRunningRollout: (i) => `is another rollout of ${i.cluster} running?`,
  takeInventory: (i) => `inventory of ${i.cluster}`,
  planDrain: (i) => `plan the drain of ${i.node}`,
  findConcentratedWorkloads: (i) => `workloads left on one node in ${i.cluster}`,
  rebalanceWorkload: (i) => `rebalance Deployment ${i.namespace}/${i.name}`,
  checkBatchCapacity: (i) =>
    i.batches.length === 1 ? `capacity for ${i.batches[0]?.join(',') ?? ''}` : `capacity of ${i.batches.length} batches`,
  availableVersions: (i) => `list available versions on ${i.node}`,
  kubeadmUpgradePlan: (i) => `kubeadm upgrade plan ${v(i.version)} on ${i.node}`,
  checkApiserver: (i) => `check the apiserver of ${i.cluster}`,
  checkControlPlane: (i) => `check the control plane on ${i.node} at ${v(i.version)}`,
  checkNodeReady: (i) => `wait for ${i.node} Ready${i.version ? ` at ${v(i.version)}` : ''}`,
  checkWorkloads: (i) => `check workloads of ${i.cluster}`,
  checkPodsOnNode: (i) => `check pods on ${i.node}`,
  runProbes: (i) => `run probes of ${i.cluster}`,
  checkAlerts: (i) => `check firing alerts of ${i.cluster}`,
  cordonNode: (i) => `cordon ${i.node}`,
  uncordonNode: (i) => `uncordon ${i.node}`,
  quarantineNode: (i) => `quarantine ${i.node} (cordoned at its old version, hop ${v(i.hop)})`,
  setStageLabels: (i) => `label ${Object.keys(i.labels).length} nodes with their stage`,
  clearStageLabels: () => 'clear stage labels',
  drainNode: (i) => `drain ${i.node}${i.force?.length ? ` forcing ${i.force.join(', ')}` : ''}`,
  pointPackageRepository: (i) => `point the package repository of ${i.node} at ${v(i.version).replace(/^(v\d+\.\d+).*/, '$1')}`,
  installPackages: (i) => `install ${i.packages.join(', ')} ${v(i.version)} on ${i.node}`,
  downloadPackages: (i) => `download ${i.packages.join(', ')} ${v(i.version)} on ${i.node} (not installed)`,
  readPackageHolds: (i) => `read the package holds of ${i.node}`,
  restorePackageHolds: (i) => `put back the package holds of ${i.node} (${i.held.join(' ') || 'none'})`,
  kubeadmUpgradeApply: (i) => `kubeadm upgrade apply ${v(i.version)} on ${i.node}`,
  kubeadmUpgradeNode: (i) => `kubeadm upgrade node on ${i.node} (${v(i.version)})`,
  restartKubelet: (i) => `restart kubelet on ${i.node} at ${v(i.version)}`,
  rebootNode: (i) => `reboot ${i.node}`,
  snapshotEtcd: (i) => `etcd snapshot on ${i.node} before ${v(i.hop)}`,
  readEtcdMembers: (i) => `read the etcd members of ${i.controlPlanes.join(', ')} (manifest image, leader)`,
  patchEtcdMember: (i) => `patch etcd on ${i.node} to ${i.tag} (its static-pod manifest)`,
  checkEtcdHealth: (i) =>
    `check etcd: every member up, one leader${i.expect ? `, ${i.expect.member} at ${i.expect.version.replace(/[-_+].*$/, '')}` : ''}`,
  trialControlPlane: (i) => `trial on ${i.node}: ${v(i.version)} emulating ${i.emulates} (kubeadm upgrade apply --patches)`,
  rollbackControlPlane: (i) => `roll ${i.node} back to ${v(i.version)} (kubeadm's backed-up manifests)`,
  commitControlPlane: (i) => `commit ${v(i.version)} on ${i.node}: emulation removed (kubeadm upgrade ${i.first ? 'apply' : 'node'})`,
  downgradePackages: (i) => `put ${i.packages.join(', ')} back to ${v(i.version)} on ${i.node} (a trial rolled back)`,
  planMaintenance: (i) => `plan maintenance of ${i.selector === undefined ? `${i.nodes?.length ?? 0} nodes` : `nodes ${i.selector}`}`,
  runMaintenanceCommand: (i) => `run the maintenance command on ${i.node}`,
  planRestore: (i) =>
    `plan the etcd restore of ${i.cluster} from ${i.hop ? `the snapshot before ${v(i.hop)}` : (i.snapshotPath ?? 'a snapshot')}`,
  placeSnapshot: (i) => `place the etcd snapshot of ${v(i.hop)} on ${i.node}`,
  checkRestoreSnapshot: (i) => `check the etcd snapshot on ${i.node}`,
  stopStaticPods: (i) => `stop the static pods on ${i.node}`,
  restoreEtcdMember: (i) => `etcdutl snapshot restore on ${i.node} (member ${i.member.name})`,
  startStaticPods: (i) => `start the static pods on ${i.node}`,
  verifyEtcdRestore: (i) => `verify etcd's restored revision on ${i.node}`,
  verifyRestoredApiserver: (i) => `wait for the apiserver of ${i.cluster} after the restore`,
  describeClusterForRehearsal: (i) => `describe ${i.cluster} for a rehearsal (names, counts, labels, versions)`,
  planBlueGreen: (i) => `plan replacing pool ${i.from} with pool ${i.to} at ${v(i.version)}`,
  createPoolMachines: (i) => `create ${i.names.length} machine${i.names.length === 1 ? '' : 's'} of pool ${i.pool} at ${v(i.version)}`,
  probeHopPrerequisites: (i) => `check the prerequisites of ${i.hops.map(v).join(', ') || 'no hop'} on ${i.cluster}`,
  predictBlockingDrains: (i) => `predict the drains of ${v(i.hop)} that will block on ${i.cluster}`,
  deletePoolMachines: (i) => `remove ${i.names.length} machine${i.names.length === 1 ? '' : 's'} of pool ${i.pool}`,
  notifySinks: (i) => `list the notification sinks of ${i.cluster}`,
  deliverNotification: (i) => `notify ${i.sink}: ${i.event.kind} (${transitionOf(i.event)})`,
  runChangeHook: (i) => `hook ${i.hook} at ${i.point}${i.event.details.node ? ` of ${String(i.event.details.node)}` : ''}`,
  readinessReport: (i) => `readiness of ${i.cluster} before ${i.hops.map(v).join(', ')} (removed APIs in use, …)`,
};
