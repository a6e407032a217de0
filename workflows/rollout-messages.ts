import { defineQuery, defineSignal, defineUpdate } from '@temporalio/workflow';
import type { DrainResolution, NodeBlock, NodePackagesLeft, NodePhase } from './node-messages.js';

/**
 * Messages every rollout shares (the upgrade first: `upgrade/<cluster>`), the operator's handle on it.
 * Wire names are API: never rename them.
 */

export type UpgradePhase =
  | 'inventory'
  | 'backup'
  | 'etcd-patch'
  | 'preflight'
  | 'control-plane'
  | 'workers'
  | 'verify'
  | 'gate'
  | 'paused'
  | 'waiting'
  | 'compensating'
  | 'done'
  | 'failed'
  | 'aborted'
  // A blue/green replacement's own (bluegreen-workflow.ts): a green pool being created, a blue pool being deleted.
  | 'provisioning'
  | 'removing';

export interface NodeState {
  phase: NodePhase;
  stage?: string;
  /** Why the node waits for the operator (`skewless resolve`): a blocked drain or a failed step. */
  blocked?: NodeBlock;
  /** The kubelet version when the run started, and the last one this run moved it to. */
  from?: string;
  version?: string;
  /** Workflow time (ISO) the node's first step started and its last step ended. */
  startedAt?: string;
  finishedAt?: string;
  /** Seconds from the start of its drain(s) to the node being empty, blocked time included. */
  drainSeconds?: number;
  /** Someone else had cordoned the node before this run did: the run moved it and left the cordon theirs. */
  cordonedBySomeoneElse?: boolean;
  /** Its repository file as this run pointed it, and the package holds it put back (node children since PATCH.holdsOnEveryPath). */
  packages?: NodePackagesLeft;
  /**
   * While it drains in rounds (the cluster configuration's drainRules orders): the round, of how many,
   * and its order. Filled by `skewless status` from the drain's heartbeat, never by a workflow.
   */
  drainRound?: { index: number; of: number; order: number };
}

/**
 * A node a finished run leaves out of where it should be: below the target (the operator skipped it),
 * or at the target but out of service (cordoned by someone else, whose cordon the run never lifts).
 */
export interface LeftBehind {
  node: string;
  /** Its kubelet's version as the run leaves it. */
  version?: string;
  why: 'skipped' | 'cordoned-by-someone-else' | 'quarantined';
}

export interface GateState {
  name: string;
  /** Approved by whom and why, once approved; lands in history with the update. */
  approvedBy?: string;
  comment?: string;
  /** Soak gates open by themselves at this time (ISO). */
  opensAt?: string;
}

/**
 * The rollout stopped after a phase of workers because the cluster's workloads are not healthy
 * ("Ready is not working"): no further node starts until the operator retries the check or aborts.
 */
export interface HaltState {
  /** The phase whose nodes were just upgraded (`canary`, `batch-1`, ...; capacity: the phase about to start) and the hop. */
  after: string;
  hop: string;
  /** The check that failed (the workloads, or the operator's own probes) and its failure type (`Unhealthy`). */
  step: 'checkWorkloads' | 'runProbes' | 'quarantineSkew' | 'hook' | 'capacity';
  failure: string;
  message: string;
  /** The workloads that fell short, `Deployment default/web: 1/3 replicas available` (quarantineSkew: the kubelets out of the policy; capacity: the pods that would stay Pending). */
  workloads: string[];
  actions: ('retry' | 'abort')[];
}

/** A disruptive phase held back until the cluster's maintenance window opens (workflows/window-wait.ts). */
export interface WindowWait {
  /** A maintenance window that is closed, or a blackout date (`exclusions:`) the phase may not begin in. */
  for: 'maintenance-window' | 'exclusion';
  /** The exclusion that holds it: its dates, zone, scope and reason. */
  reason?: string;
  /** The phase that waits: `control-plane` (a hop's snapshot, kubeadm and control planes), `canary`, `batch-N`. */
  phase: string;
  /** The upgrade's hop; '' for an OS maintenance run. */
  hop: string;
  /** Workflow time (ISO) the wait began, and the time the next window opens. */
  since: string;
  opensAt: string;
}

export interface SnapshotRecord {
  hop: string;
  remotePath: string;
  localPath: string;
  sizeBytes: number;
  sha256: string;
  revision: number;
}

/**
 * What every rollout of nodes shares (an upgrade, an OS maintenance run): the part of its status the
 * operator controls read and write (workflows/rollout.ts).
 */
export interface RolloutStatus {
  cluster: string;
  phase: UpgradePhase;
  paused: boolean;
  nodes: Record<string, NodeState>;
  /** Set while the rollout waits for the operator after a failed workload check. */
  halted?: HaltState;
  /** After the last hop checked: Deployments with every running replica on one node (workflows/rebalance.ts). */
  concentrated?: string[];
  gates: GateState[];
  /** Human-readable record of what happened, newest last. */
  events: string[];
  outcome?: string;
  /** Nodes the operator skipped: untouched, handed back uncordoned at the end of the run. */
  skipped: string[];
  /**
   * Nodes whose drain did not finish under onDrainTimeout quarantine: left cordoned at their old version
   * with the label skewless.io/quarantined, out of the rest of the run, and not handed back at its end.
   */
  quarantined?: string[];
  /** Set while a disruptive phase waits for the maintenance window. */
  waiting?: WindowWait;
  /** Nodes whose uncordon failed while the run compensated: still cordoned by it (the outcome names them). */
  uncordonFailed?: string[];
}

export interface UpgradeStatus extends RolloutStatus {
  from: string;
  to: string;
  hops: string[];
  hop?: string;
  snapshots: SnapshotRecord[];
  /** How many times this upgrade continued as new (history kept short for big clusters). */
  runs: number;
  /** Set when the run ends: the nodes it leaves behind (`skewless upgrade` exits 4 when a done run has any). */
  leftBehind?: LeftBehind[];
  /**
   * Node → the hops at which the plan moves it (its kubelet below the hop, a worker at the hops it
   * moves at): what progress counts. Absent in runs that predate it (every node at every hop).
   */
  moves?: Record<string, string[]>;
  /** A reversible hop's trial (issue 36): which way back exists now. Absent: no trial in this run. */
  trial?: TrialState;
}

/** A reversible hop's trial: the control planes at `hop` emulating `emulates`, until committed or rolled back. */
export interface TrialState {
  hop: string;
  emulates: string;
  /** The control planes' version before the trial: what a rollback puts back. */
  from: string;
  /** `trial`: `skewless rollback` takes it back; `committed`: the etcd snapshot is the way back; `rolled-back`: back at `from`. */
  state: 'trial' | 'committed' | 'rolled-back';
  rollbackBy?: string;
  rollbackReason?: string;
  /** Committed by `autoCommit` (no approval) after a soak of this many seconds with the alerts clear and the probes passing. */
  autoCommittedAfterSeconds?: number;
  /** The trial failed on this control plane, and the run rolled it back (PATCH.trialFailureRollback). */
  failedOn?: string;
}

export interface Approval {
  gate: string;
  by: string;
  comment?: string;
}

export type NodeDrainResolution = DrainResolution & { node: string };
/** The answer to a halted rollout (no node named): check again, or abort. */
export type HaltResolution = { node?: undefined; action: 'retry' | 'abort'; by: string; comment?: string };
/** What `resolveDrain` takes: a blocked node's resolution, or (no node) a halted rollout's. */
export type UpgradeResolution = NodeDrainResolution | HaltResolution;

export interface OperatorAction {
  by: string;
  reason?: string;
}

export const statusQuery = defineQuery<UpgradeStatus>('status');
export const approveUpdate = defineUpdate<GateState, [Approval]>('approve');
/** Resolves a blocked node (a drain or a failed step) or, without a node, a halted rollout. The name predates step blocks: it is API. */
export const resolveDrainUpdate = defineUpdate<NodeState | HaltState, [UpgradeResolution]>('resolveDrain');
/** `skewless rollback`: a reversible hop's trial back to N (the control planes' binaries and kubeadm), no etcd restore. */
export const rollbackTrialUpdate = defineUpdate<TrialState, [OperatorAction]>('rollbackTrial');
export const pauseSignal = defineSignal<[OperatorAction]>('pause');
export const resumeSignal = defineSignal<[OperatorAction]>('resume');
export const abortSignal = defineSignal<[OperatorAction]>('abort');
/**
 * Child → parent, by workflow id: a node is blocked (block set) or moving again (block absent; `phase`
 * says where it goes on, absent from children that predate step blocks: they were draining).
 */
export const nodeBlockedSignal = defineSignal<[{ node: string; block?: NodeBlock; phase?: NodePhase }]>('nodeBlocked');
