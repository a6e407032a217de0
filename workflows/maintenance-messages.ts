import { defineQuery } from '@temporalio/workflow';
import type { RolloutStatus } from './rollout-messages.js';

/**
 * The status of an OS maintenance run (`maintain/<cluster>`). Its operator controls are the upgrade's
 * (approve, resolveDrain, pause, resume, abort: rollout-messages.ts, through the rollout core, rollout.ts);
 * only the status differs. Wire names are API: never rename.
 */
export interface MaintenanceStatus extends RolloutStatus {
  kind: 'maintenance';
  /** What the operator selected: a label selector, or node names. */
  selector?: string;
  requested?: string[];
  /** Pods the operator let go although nothing recreates them (--force-pod), as found on the nodes. */
  forced: string[];
}

/** Same wire name as the upgrade's status query: `skewless status` asks either the same way. */
export const maintenanceStatusQuery = defineQuery<MaintenanceStatus>('status');
