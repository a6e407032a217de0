import { defineQuery, defineSignal, defineUpdate } from '@temporalio/workflow';

/**
 * Messages of the fleet workflow (`fleet/<name>`): the operator's handle on a fleet, and the report
 * each cluster's upgrade sends its fleet. Pause, resume and abort use the upgrade's own signals
 * (rollout-messages.ts), so the same words mean the same thing. Wire names are API: never rename.
 */

export type FleetClusterPhase =
  /** Not started: waiting for its stage, a free slot, or the line to move. */
  | 'pending'
  /** Its turn has come; it waits for `skewless fleet approve`. */
  | 'waiting-approval'
  | 'running'
  /** Its upgrade waits for the operator (`skewless resolve <cluster>`): the line stops behind it. */
  | 'blocked'
  /** Its upgrade failed or was aborted: the line stops until `skewless fleet resolve` (retry or skip). */
  | 'failed'
  | 'aborted'
  | 'done'
  | 'skipped';

export interface FleetClusterState {
  cluster: string;
  stage: string;
  stageIndex: number;
  /** The target as the fleet file asks for it; `result.to` is the version it reached. */
  to: string;
  /** The upgrade's workflow id, `upgrade/<cluster>`: every per-cluster command works on it. */
  workflowId: string;
  approve: boolean;
  approvedBy?: string;
  phase: FleetClusterPhase;
  /** Upgrades started for this cluster (a retry starts another). */
  attempts: number;
  /** What the blocked upgrade waits for (`node w2: drain blocked ...`, `halted after canary`). */
  blocked?: string[];
  /** Why it failed or was aborted (the root cause), or what the operator answered. */
  message?: string;
  startedAt?: string;
  finishedAt?: string;
  result?: { from: string; to: string; outcome: string };
}

export type FleetPhase = 'running' | 'line-stopped' | 'paused' | 'done' | 'aborted';

export interface FleetStatus {
  fleet: string;
  phase: FleetPhase;
  paused: boolean;
  maxParallel: number;
  /** In the fleet's order: stage by stage. */
  clusters: FleetClusterState[];
  /** Why no further cluster starts now, if the line is stopped: `user-a blocked: node w2 ...`. */
  line?: string;
  events: string[];
  outcome?: string;
}

/** Child → parent: the cluster's upgrade is blocked (reasons) or moving (none). `at`+`seq` order the reports. */
export interface ClusterReport {
  cluster: string;
  blocked: string[];
  /** Workflow time of the report (ms) and a counter within the run: later reports win, whatever order they arrive in. */
  at: number;
  seq: number;
}

export interface ClusterApproval {
  cluster: string;
  by: string;
  comment?: string;
}

export interface ClusterResolution {
  cluster: string;
  action: 'retry' | 'skip';
  by: string;
  comment?: string;
}

export const fleetStatusQuery = defineQuery<FleetStatus>('fleetStatus');
export const approveClusterUpdate = defineUpdate<FleetClusterState, [ClusterApproval]>('approveCluster');
export const resolveClusterUpdate = defineUpdate<FleetClusterState, [ClusterResolution]>('resolveCluster');
export const clusterReportSignal = defineSignal<[ClusterReport]>('clusterReport');
