/**
 * The CLI's names that a run's own messages repeat (a finish command printed by the workflow must be
 * one the CLI takes): each policy key's flag, and the task queue a worker polls unless told otherwise.
 * client/policy-flags.ts parses the flags from this table; rules/upgrade-command.ts writes them back.
 */
export const POLICY_FLAG = {
  canary: '--canary',
  batchSize: '--batch-size',
  maxUnavailable: '--max-unavailable',
  firstControlPlane: '--first-control-plane',
  batchBy: '--batch-by',
  batchOrder: '--batch-order',
  rebalance: '--rebalance',
  approveWorkers: '--approve-workers',
  approveAfterCanary: '--approve-canary',
  soakSeconds: '--soak',
  phaseSoakSeconds: '--soak-after-phase',
  workersEveryHop: '--workers-every-hop',
  drainTimeoutSeconds: '--drain-timeout',
  onDrainTimeout: '--on-drain-timeout',
  hostRetrySeconds: '--host-retry',
  fixPrerequisites: '--fix-prerequisites',
  acknowledge: '--acknowledge',
  rebootTimeoutSeconds: '--reboot-timeout',
  forcePods: '--force-pod',
} as const;

/** The task queue of a worker and a CLI given none (`--task-queue`, SKEWLESS_TASK_QUEUE). */
export const DEFAULT_TASK_QUEUE = 'skewless';
