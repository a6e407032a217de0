/**
 * Patch ids of workflow changes that alter the command sequence of running executions
 * (CONVENTIONS.md §12): `patched(PATCH.x)` inside workflow code, never at module top level.
 * Removal goes patched → deprecatePatch → delete, once no open run predates the patch.
 */
export const PATCH = {
  /** Disruptive phases wait for the cluster's maintenance window (workflows/window-wait.ts). */
  maintenanceWindows: 'maintenance-windows',
  /** An upgrade started by a fleet reports to it when it is blocked and when it moves again (fleet-messages.ts). */
  fleetReports: 'fleet-reports',
  /** An upgrade refuses to start while another rollout of its cluster (maintain, restore, bluegreen) runs. */
  exclusiveRollouts: 'exclusive-rollouts',
  /**
   * Continue-as-new leaves an upgrade without its compensation: the run is not ending. Before, the
   * ContinueAsNew unwinding through the upgrade's catch uncordoned every node of the plan one by one
   * and cleared the stage labels (1,000 activities at 1,000 nodes, found by bench/).
   */
  continueWithoutCompensation: 'continue-without-compensation',
  /**
   * Each node's package repository is pointed at the hop's minor before its first package of the hop
   * (pointPackageRepository): nodes set up by kubernetes.io's guide offer one minor at a time.
   */
  hopRepository: 'hop-repository',
  /**
   * Each hop moves only what is below it (rules/hop-work.ts): the control planes whose components and
   * the nodes whose kubelets an earlier run left behind, never draining a node already there; node
   * phases start again at each hop, and nodes this run leaves behind are named in its result.
   */
  finishLeftBehind: 'finish-left-behind',
  /**
   * The policy is checked at the start by the one policy module (rules/policy.ts: every key within the
   * limits of the activity it feeds), not only hostRetrySeconds: a run started before would not have refused.
   */
  onePolicy: 'one-policy',
  /**
   * The cluster configuration's `probes[]` run after every phase of nodes (and an upgrade's control
   * plane), halting the rollout when one fails, like the workload check.
   */
  operatorProbes: 'operator-probes',
  /**
   * `plan --cluster` asks the worker for the readiness report of its hops (issue 21: removed APIs in
   * use, …) after the plan: one more activity in the plan workflow's history.
   */
  readinessFindings: 'readiness-findings',
  /**
   * An upgrade's pre-flight asks for the readiness report of its hops: removed APIs in use and hop
   * prerequisites refuse the start until acknowledged (policy.acknowledge), drains that will block are noted.
   */
  readinessGate: 'readiness-gate',
  /**
   * kured's alert gate around every phase (workflows/alert-gate.ts): the cluster's `alerts:` asked
   * before a phase (a firing alert holds it) and after (one firing halts): one or two more activities a phase.
   */
  alertGate: 'alert-gate',
  /** A soak after every phase (policy.phaseSoakSeconds), not only after the canary: a timer more a phase. */
  phaseSoak: 'phase-soak',
  /**
   * Workers move once when the skew policy allows (issue 22, rules/worker-moves.ts): the plan says at
   * which hops each worker's kubelet moves (carried across continue-as-new as plan.workerHops), and a
   * hop in which no worker moves has no workers' gate and no worker phase. A run that predates it
   * plans every worker at every hop (workersEveryHop).
   */
  workersOnce: 'workers-once',
  /**
   * A worker's upgrade does before its cordon what needs no drain, in kubernetes.io's order: the hop's
   * repository, the kubeadm package and `kubeadm upgrade node`, and the kubelet and kubectl packages
   * downloaded but not installed; cordoned, it only drains, installs them, restarts the kubelet and checks.
   */
  workBeforeCordon: 'work-before-cordon',
  /**
   * With policy.fixPrerequisites, before the hop whose kubeadm brings etcd 3.6: an etcd snapshot, then
   * every stacked member below the target 3.5 patch moved one at a time (readEtcdMembers,
   * patchEtcdMember, checkEtcdHealth: issue 35, rules/etcd-patch.ts).
   */
  etcdPatch: 'etcd-patch',
  /**
   * A node's package holds are read before its first package install of the hop (readPackageHolds) and
   * put back on every path that does not finish (restorePackageHolds): after a failed install before
   * the node waits for the operator, and when it is skipped, aborted or quarantined. The node's result
   * carries what was put back and where its repository file points, for the run's outcome.
   */
  holdsOnEveryPath: 'holds-on-every-path',
} as const;
