/**
 * The workflow ids of a cluster's rollouts: each flow that cordons, drains, reboots or restores
 * runs under one fixed id per cluster, and only one of them may run on a cluster at a time.
 */
export const ROLLOUT_KINDS = ['upgrade', 'maintain', 'restore', 'bluegreen'] as const;
export type RolloutKindName = (typeof ROLLOUT_KINDS)[number];

export const rolloutWorkflowId = (kind: RolloutKindName, cluster: string) => `${kind}/${cluster}`;
