import { defineQuery, defineSignal } from '@temporalio/workflow';

/**
 * Messages of the per-node child workflow. The operator talks to the cluster's upgrade workflow;
 * it relays resolutions to the child by workflow id. Wire names are API: never rename.
 */

export type NodePhase =
  | 'pending'
  | 'upgrading-control-plane'
  | 'preparing'
  | 'cordoned'
  | 'draining'
  | 'blocked'
  | 'upgrading'
  | 'verifying'
  | 'done'
  | 'skipped'
  | 'aborted'
  | 'quarantined';

/** What stands in the way of a drain, as DrainBlocked/DrainRefused details report it. */
export interface DrainBlock {
  kind: 'DrainBlocked' | 'DrainRefused';
  message: string;
  pods: { namespace: string; name: string; pdbs?: string[] }[];
}

/**
 * A step of the node's upgrade that failed once its retries were spent (or at once, when retrying
 * cannot help): the node waits for the operator instead of the run failing or moving on.
 */
export interface StepBlock {
  kind: 'StepFailed';
  /** The activity that failed (`installPackages`, `restartKubelet`, ...). */
  step: string;
  /** The step as the runbook says it: `install kubeadm v1.33.7 on worker-2`. */
  summary: string;
  /** The failure type (activities/errors.ts: HostUnreachable, HostKeyMismatch, NodeNotReady, ...), or `Timeout`. */
  failure: string;
  /** The failure's own message, e.g. the host key fingerprint the host presented. */
  message: string;
  /** Why it was not retried further: `not retryable` (retrying cannot help) or `retries spent` (its retry budget ran out). */
  gaveUp: 'not retryable' | 'retries spent' | 'timed out' | 'other';
  /** What the operator may answer: retry (run the step again) and abort always; skip only while the node is untouched. */
  actions: ('retry' | 'skip' | 'abort')[];
  /** Always empty: no pod stands in the way. Kept so that every block has the same shape. */
  pods: DrainBlock['pods'];
}

/**
 * What a node's run left of its packages (PATCH.holdsOnEveryPath): the repository file it pointed at
 * the hop's minor, and on a path that did not finish, the holds it found and put back. A node is left
 * with the holds it had before the run or those a finished step set; the outcome says which were put back.
 */
export interface NodePackagesLeft {
  /** The repository file (its name: `kubernetes.list`, `kubernetes.repo`) and the minor this run pointed it at. */
  repository?: { file: string; minor: string };
  /** The Kubernetes packages held before the run's first package step on the node. */
  heldBefore?: string[];
  /** Held after the run put them back (restorePackageHolds). */
  held?: string[];
  /** Held again after an install that did not finish: by the install itself or by the run's restore. */
  putBack?: string[];
  /** Held before and not now, not put back (dnf: skewless never edits kubernetes.repo's exclude=). */
  notPutBack?: string[];
  /** The restore could not read the node (its failure): the holds are as the last step left them. */
  unchecked?: string;
}

/** Why a node waits for the operator. */
export type NodeBlock = DrainBlock | StepBlock;

export type DrainResolution =
  | { action: 'retry'; by: string; comment?: string }
  | { action: 'skip'; by: string; comment?: string }
  | { action: 'force'; pods: string[]; by: string; comment?: string }
  | { action: 'abort'; by: string; comment?: string };

export interface NodeStatus {
  node: string;
  phase: NodePhase;
  blocked?: NodeBlock;
  /** Pods the operator allowed to be deleted without a controller, by name: recorded in history. */
  forced: string[];
  /** Every resolution of this node's blocks (drains and failed steps), in order. */
  resolutions: DrainResolution[];
  /** Seconds from the first eviction attempt to an empty node, blocked time included. */
  drainSeconds?: number;
}

export const nodeStatusQuery = defineQuery<NodeStatus>('nodeStatus');
/** Parent → child: the operator's answer to the node's block (a drain or a failed step). */
export const drainResolutionSignal = defineSignal<[DrainResolution]>('drainResolution');
