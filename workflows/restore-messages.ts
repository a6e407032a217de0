import { defineQuery } from '@temporalio/workflow';
import type { EtcdMember, RestoreSnapshot } from '../activities/etcd-restore.js';
import type { GateState } from './rollout-messages.js';

/**
 * Messages of the restore workflow (`restore/<cluster>`). The operator's controls are the upgrade's
 * own wire names (approve, pause, resume, abort: rollout-messages.ts); only the status differs.
 */

export type RestorePhase =
  'planning' | 'checking' | 'gate' | 'stopping' | 'restoring' | 'starting' | 'verifying' | 'done' | 'failed' | 'aborted';

/** Where each control plane is: its member checked, stopped, restored (data dir swapped), started. */
export type MemberPhase = 'pending' | 'checked' | 'stopped' | 'restored' | 'started';

export interface MemberState extends EtcdMember {
  phase: MemberPhase;
  /** Where the data dir it served before the restore was moved (kept: nothing is deleted). */
  previousDataDir?: string;
}

export interface RestoreStatus {
  cluster: string;
  phase: RestorePhase;
  paused: boolean;
  snapshot?: RestoreSnapshot;
  /** What approving the gate gives up, in one sentence: everything written since the snapshot. */
  loses?: string;
  members: MemberState[];
  gates: GateState[];
  /** etcd's revision once restored (≥ the snapshot's revision plus the bump). */
  revision?: number;
  /** Human-readable record of what happened, newest last. */
  events: string[];
  outcome?: string;
}

export interface RestoreInput {
  cluster: string;
  /** The upgrade hop whose snapshot to restore (`1.33.7`), or the snapshot's path on the control planes. */
  hop?: string;
  snapshotPath?: string;
  /** The control planes (default: the nodes labelled node-role.kubernetes.io/control-plane). */
  controlPlanes?: string[];
  /** How long the kubelet may take to stop the static pods, and etcd to answer after the start. */
  stopTimeoutSeconds?: number;
  verifyTimeoutSeconds?: number;
}

export const restoreStatusQuery = defineQuery<RestoreStatus>('restoreStatus');

export { restoreWorkflowId } from '../contracts/workflow-ids.js';
