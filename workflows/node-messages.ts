import { defineQuery, defineSignal } from '@temporalio/workflow';

/**
 * Messages of the per-node child workflow. The operator talks to the cluster's upgrade workflow;
 * it relays drain resolutions to the child by workflow id. Wire names are API: never rename.
 */

export type NodePhase =
  | 'pending'
  | 'upgrading-control-plane'
  | 'cordoned'
  | 'draining'
  | 'blocked'
  | 'upgrading'
  | 'verifying'
  | 'done'
  | 'skipped'
  | 'aborted';

/** What stands in the way of a drain, as DrainBlocked/DrainRefused details report it. */
export interface DrainBlock {
  kind: 'DrainBlocked' | 'DrainRefused';
  message: string;
  pods: { namespace: string; name: string; pdbs?: string[] }[];
}

export type DrainResolution =
  | { action: 'retry'; by: string; comment?: string }
  | { action: 'skip'; by: string; comment?: string }
  | { action: 'force'; pods: string[]; by: string; comment?: string }
  | { action: 'abort'; by: string; comment?: string };

export interface NodeStatus {
  node: string;
  phase: NodePhase;
  blocked?: DrainBlock;
  /** Pods the operator allowed to be deleted without a controller, by name: recorded in history. */
  forced: string[];
  resolutions: DrainResolution[];
  /** Seconds from the first eviction attempt to an empty node, blocked time included. */
  drainSeconds?: number;
}

export const nodeStatusQuery = defineQuery<NodeStatus>('nodeStatus');
export const drainResolutionSignal = defineSignal<[DrainResolution]>('drainResolution');
