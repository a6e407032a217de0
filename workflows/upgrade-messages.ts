import { defineQuery, defineSignal, defineUpdate } from '@temporalio/workflow';
import type { DrainBlock, DrainResolution, NodePhase } from './node-messages.js';

/**
 * Messages of the cluster upgrade workflow (`upgrade/<cluster>`), the operator's handle on it.
 * Wire names are API: never rename them.
 */

export type UpgradePhase = 'inventory' | 'backup' | 'preflight' | 'control-plane' | 'workers' | 'verify' | 'gate' | 'paused' | 'compensating' | 'done' | 'failed' | 'aborted';

export interface NodeState {
  phase: NodePhase;
  stage?: string;
  blocked?: DrainBlock;
  /** The kubelet version when the run started, and the last one this run moved it to. */
  from?: string;
  version?: string;
  /** Workflow time (ISO) the node's first step started and its last step ended. */
  startedAt?: string;
  finishedAt?: string;
  /** Seconds from the start of its drain(s) to the node being empty, blocked time included. */
  drainSeconds?: number;
}

export interface GateState {
  name: string;
  /** Approved by whom and why, once approved; lands in history with the update. */
  approvedBy?: string;
  comment?: string;
  /** Soak gates open by themselves at this time (ISO). */
  opensAt?: string;
}

export interface SnapshotRecord {
  hop: string;
  remotePath: string;
  localPath: string;
  sizeBytes: number;
  sha256: string;
  revision: number;
}

export interface UpgradeStatus {
  cluster: string;
  from: string;
  to: string;
  hops: string[];
  hop?: string;
  phase: UpgradePhase;
  paused: boolean;
  nodes: Record<string, NodeState>;
  gates: GateState[];
  snapshots: SnapshotRecord[];
  /** Human-readable record of what happened, newest last. */
  events: string[];
  outcome?: string;
  /** Nodes the operator skipped: at their old version, handed back uncordoned at the end of the run. */
  skipped: string[];
  /** How many times this upgrade continued as new (history kept short for big clusters). */
  runs: number;
}

export interface Approval {
  gate: string;
  by: string;
  comment?: string;
}

export type NodeDrainResolution = DrainResolution & { node: string };

export interface OperatorAction {
  by: string;
  reason?: string;
}

export const statusQuery = defineQuery<UpgradeStatus>('status');
export const approveUpdate = defineUpdate<GateState, [Approval]>('approve');
export const resolveDrainUpdate = defineUpdate<NodeState, [NodeDrainResolution]>('resolveDrain');
export const pauseSignal = defineSignal<[OperatorAction]>('pause');
export const resumeSignal = defineSignal<[OperatorAction]>('resume');
export const abortSignal = defineSignal<[OperatorAction]>('abort');
/** Child → parent, by workflow id: a node's drain is blocked (block set) or moving again (block absent). */
export const nodeBlockedSignal = defineSignal<[{ node: string; block?: DrainBlock }]>('nodeBlocked');
