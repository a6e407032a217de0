import type { DrainResolution, NodePackagesLeft } from './node-messages.js';

// What the node child is asked to do (nodeUpgradeWorkflow's input) and what it answers.

export interface NodeStepInput {
  cluster: string;
  node: string;
  role: 'control-plane' | 'worker';
  /** Target Kubernetes version of this hop, `1.33.7` (empty for `maintain`: no version changes). */
  version: string;
  /**
   * `control-plane`: kubeadm upgrade apply/node of the static pods; `node`: drain, packages, kubelet;
   * `maintain` (OS maintenance): drain, the configured OS upgrade command, reboot, Ready, uncordon;
   * `drain` (blue/green: a node leaving the cluster): cordon and drain, and the node stays cordoned.
   */
  step: 'control-plane' | 'node' | 'maintain' | 'drain';
  /** The control plane that runs `kubeadm upgrade apply` (the others run `upgrade node`). */
  first?: boolean;
  /** Owner recorded on cordons: the cluster upgrade's workflow id, stable across continue-as-new. */
  owner: string;
  drainTimeoutSeconds?: number;
  kubeletTimeoutSeconds: number;
  /** How long health checks may wait for Ready and rollouts to converge. */
  verifySeconds: number;
  /** How long a host step keeps retrying before the node is reported blocked (UpgradePolicy.hostRetrySeconds). */
  hostRetrySeconds?: number;
  /** Pods (`namespace/name`) the operator let go before the start (maintain --force-pod): the drain deletes them. */
  force?: string[];
  /** `maintain`: how long the node may take to come back over SSH and Ready after its reboot. */
  rebootTimeoutSeconds?: number;
  /**
   * `quarantine` (an upgrade's worker with policy onDrainTimeout quarantine): a drain that did not finish
   * within drainTimeoutSeconds labels the node, records an Event on it and ends the node 'quarantined',
   * cordoned at its old version, instead of waiting for the operator. Absent: wait (every run before it).
   */
  onDrainTimeout?: 'quarantine';
}

export interface NodeStepResult {
  node: string;
  outcome: 'done' | 'skipped' | 'aborted' | 'quarantined';
  /** Whether this run cordoned the node (and so must uncordon it if the upgrade is abandoned). */
  cordonedByUs: boolean;
  /** Whether the node was cordoned (by this run or already by someone else); false: skipped before its cordon. Absent in older runs. */
  cordoned?: boolean;
  forced: string[];
  resolutions: DrainResolution[];
  /** Seconds from the first eviction attempt to an empty node, blocked time included. */
  drainSeconds?: number;
  /** A quarantined node: the drain's report (the pods left, the PDBs in their way) and those pods. */
  quarantine?: { message: string; pods: string[] };
  /** Its repository file as the run pointed it, and on a path that did not finish the holds put back (PATCH.holdsOnEveryPath). */
  packages?: NodePackagesLeft;
}

/** What a flow's policy sets of every node step it starts (the upgrade's, maintenance's and blue/green's alike). */
export type NodeStepPolicy = Pick<NodeStepInput, 'verifySeconds' | 'drainTimeoutSeconds' | 'hostRetrySeconds'>;

/**
 * The node step's policy from a flow's: the same keys, each absent when the flow's policy leaves it
 * unset (a child's input then reads as it did before the key existed).
 */
export function nodeStepPolicy(policy: { verifySeconds: number; drainTimeoutSeconds?: number; hostRetrySeconds?: number }): NodeStepPolicy {
  return {
    verifySeconds: policy.verifySeconds,
    ...(policy.drainTimeoutSeconds ? { drainTimeoutSeconds: policy.drainTimeoutSeconds } : {}),
    ...(policy.hostRetrySeconds === undefined ? {} : { hostRetrySeconds: policy.hostRetrySeconds }),
  };
}
