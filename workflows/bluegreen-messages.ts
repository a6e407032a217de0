import { defineQuery, defineUpdate } from '@temporalio/workflow';
import type { BlueGreenPolicy } from '../rules/index.js';
import type { OperatorAction, RolloutStatus } from './rollout-messages.js';

/**
 * Messages of the blue/green replacement of a node pool (`bluegreen/<cluster>`). Its operator controls
 * are the upgrade's (approve, resolveDrain, pause, resume, abort: rollout-messages.ts, through
 * rollout.ts); the status differs, and `rollback` is the abort that answers: it is refused,
 * with the reason, once the blue pool's removal has started. Wire names are API: never rename.
 */

/**
 * Blue nodes drained first, on their own (canary, default 1), then batches of batchSize (default 1)
 * at once; the gate `canary-bluegreen` (approveAfterCanary) or a soak after the canary; acknowledge
 * and hostRetrySeconds also hold for the control-plane phase. Checked by rules/policy.ts.
 */
export type { BlueGreenPolicy };

export interface BlueGreenInput {
  cluster: string;
  /** The blue pool (drained and removed) and the green pool (created at `version`): pool names of the cluster configuration. */
  from: string;
  to: string;
  version: string;
  /** How many green nodes (default: as many as blue has). */
  count?: number;
  policy?: BlueGreenPolicy;
}

/** Where the replacement is; `phase` (the rollout's) says the same in the words every run shares. */
export type BlueGreenStep =
  | 'preflight'
  | 'control-plane'
  | 'provisioning'
  | 'cordoning'
  | 'draining'
  | 'removal-gate'
  | 'removing'
  | 'rolling-back'
  | 'done'
  | 'rolled-back'
  | 'failed';

export interface BlueGreenStatus extends RolloutStatus {
  kind: 'bluegreen';
  step: BlueGreenStep;
  version: string;
  blue: { pool: string; nodes: string[] };
  /** `joined`: green nodes registered, Ready at `version`, labelled. */
  green: { pool: string; nodes: string[]; joined: string[] };
  /** The control plane's version when the run started, and the upgrade that moved it (`upgrade/<cluster>`), if one had to. */
  controlPlane?: { from: string; upgrade?: string };
  /**
   * How to roll back, in one line, while it can be done (until the blue pool's removal starts: uncordon
   * blue, drain green, delete green); after that, why it cannot.
   */
  rollback: { available: boolean; how: string; by?: string };
  /** Workflow time (ISO) the removal of the blue pool started: from then on there is no rollback. */
  removalStartedAt?: string;
}

/** Same wire name as the upgrade's status query: `skewless status` asks every run the same way. */
export const bluegreenStatusQuery = defineQuery<BlueGreenStatus>('status');
/** The abort of a blue/green run, refused once removal started (the abort signal is then only noted). */
export const rollbackUpdate = defineUpdate<BlueGreenStatus, [OperatorAction]>('rollback');

export { bluegreenWorkflowId } from '../contracts/workflow-ids.js';
/** The approval gate before the blue pool is deleted: after it, no rollback. */
export const REMOVAL_GATE = 'remove-blue';
export const NO_ROLLBACK = 'after removal there is no rollback';
