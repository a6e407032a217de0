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
  /**
   * The first control plane's kubeadm install of a hop, run by the upgrade itself before `kubeadm
   * upgrade plan`: its holds read first (readPackageHolds) and put back if the install fails
   * (restorePackageHolds), as a node's own installs do, for when the install could not re-hold them.
   */
  firstKubeadmHolds: 'first-kubeadm-holds',
  /**
   * Every rollout starts in one order (Rollout.start): the policy checked, then the search attributes
   * and memo, then the one-rollout guard. A blue/green run wrote its search attributes and memo before
   * the policy check; a run that predates this keeps that order.
   */
  oneStart: 'one-start',
  /**
   * A run with `notify:` sinks starts a notifyWorkflow child at its transitions (workflows/notifier.ts,
   * issue 39): started, waiting for the operator, resumed, hop done, quarantined, finished, failed.
   */
  notifications: 'notifications',
  /** A run with `hooks:` runs them at beforeRun, beforeHop, afterControlPlane, beforeNode, afterNode and afterRun. */
  changeHooks: 'change-hooks',
  /** A run with `exclusions:` holds each phase of nodes (and refuses to start) inside a blackout date. */
  exclusions: 'exclusions',
  /**
   * An upgrade asked to be reversible (input.reversible, issue 36) runs each hop that can be as a trial
   * (workflows/reversible-hop.ts): the control planes emulating N, gate commit-<hop>, then commit or rollback.
   */
  reversibleHops: 'reversible-hops',
  /**
   * A reversible upgrade with `autoCommit` (issue 36): the trial soaks the longer of soakSeconds and
   * phaseSoakSeconds, its probes run again, and with the alert gate clear it commits without the
   * approval of gate commit-<hop> (the gate is recorded approved by `auto-commit`).
   */
  reversibleAutoCommit: 'reversible-auto-commit',
  /**
   * A trial that fails half-way (an activity of the trial failing for good) is rolled back by the run:
   * every control plane the trial started on, in reverse, as `skewless rollback` would; the run ends aborted.
   */
  trialFailureRollback: 'trial-failure-rollback',
  /**
   * A reversible upgrade judges its hops after the readiness report, with the facts it read (etcd's
   * oldest version, the alpha feature gates the control planes turn on): before, without facts.
   */
  reversibleFacts: 'reversible-facts',
  /**
   * Maintain, blue/green, restore and fleet runs read the cluster's `notify:` sinks too (issue 39) and
   * send their events: started, waiting and resumed, finished, failed, aborted (a fleet: its waits and
   * its end, to each cluster's sinks). A run that predates it sends none, as before.
   */
  flowNotifications: 'flow-notifications',
  /**
   * Before each phase of nodes, and before each part of it, checkBatchCapacity: the phase runs in parts
   * of at most maxUnavailable nodes whose evicted pods fit on the nodes that stay schedulable; a node
   * whose pods alone would not fit halts the rollout before any eviction (issue 40).
   */
  batchCapacity: 'batch-capacity',
  /**
   * After each hop's checks, findConcentratedWorkloads, and with policy.rebalance one rebalanceWorkload
   * per Deployment left with every replica on one node (workflows/rebalance.ts, issue 40).
   */
  concentrationReport: 'concentration-report',
  /**
   * No run keeps more than MAX_OPEN_CHILDREN node workflows open (issue 41, rules/open-children.ts):
   * a plan whose maxUnavailable came to more is capped, and a count above it refused at the start.
   * Asked only when the cap changes something, so runs within it record no marker.
   */
  openChildrenCap: 'open-children-cap',
  /**
   * An upgrade continues as new between two waves of a phase (the parts of at most maxUnavailable nodes
   * the capacity window runs) once its history is long, not only between phases: a batch of thousands
   * of nodes adds a few events per node. Asked only when the history is long at such a point.
   */
  continueBetweenWaves: 'continue-between-waves',
} as const;
