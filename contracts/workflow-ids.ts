/**
 * Every workflow id skewless starts or looks up: business keys, never random, so a second start of the
 * same run is refused by Temporal and an operator's command finds the run by the cluster's name alone.
 *
 * The rollouts (each flow that cordons, drains, reboots or restores) run under one fixed id per cluster,
 * and only one of them may run on a cluster at a time. Their node children carry the rollout's id
 * as a prefix: `upgrade/<cluster>/<hop>/<node>`, `maintain/<cluster>/<node>`, `bluegreen/<cluster>/<node>`.
 */
export const ROLLOUT_KINDS = ['upgrade', 'maintain', 'restore', 'bluegreen'] as const;
export type RolloutKind = (typeof ROLLOUT_KINDS)[number];

export const rolloutWorkflowId = (kind: RolloutKind, cluster: string) => `${kind}/${cluster}`;
export const upgradeWorkflowId = (cluster: string) => rolloutWorkflowId('upgrade', cluster);
export const maintainWorkflowId = (cluster: string) => rolloutWorkflowId('maintain', cluster);
export const restoreWorkflowId = (cluster: string) => rolloutWorkflowId('restore', cluster);
export const bluegreenWorkflowId = (cluster: string) => rolloutWorkflowId('bluegreen', cluster);

/** A node's child of a rollout: the upgrade's carries the hop (one child per node and hop), the others do not. */
export const nodeWorkflowId = (rolloutId: string, node: string, hop?: string) =>
  hop === undefined ? `${rolloutId}/${node}` : `${rolloutId}/${hop}/${node}`;

/** The rollout kind a rollout's (or its node child's) id starts with; undefined for any other id. */
export function rolloutKindOfWorkflowId(workflowId: string): RolloutKind | undefined {
  const head = workflowId.split('/')[0];
  return (ROLLOUT_KINDS as readonly string[]).includes(head ?? '') ? (head as RolloutKind) : undefined;
}

/** The node and hop an upgrade's node child's id ends with (`upgrade/<cluster>/<hop>/<node>`); undefined for any other id. */
export function upgradeNodeOfWorkflowId(workflowId: string): { cluster: string; hop: string; node: string } | undefined {
  const [kind, cluster, hop, node, ...rest] = workflowId.split('/');
  if (kind !== 'upgrade' || !cluster || !hop || !node || rest.length > 0) return undefined;
  return { cluster, hop, node };
}

/** A fleet's run: its clusters' upgrades are its children under their own `upgrade/<cluster>`. */
export const fleetWorkflowId = (fleet: string) => `fleet/${fleet}`;
export const isFleetWorkflowId = (workflowId: string) => workflowId.startsWith('fleet/');

/** `skewless rehearse`'s read of the live cluster (read-only, one at a time per cluster). */
export const rehearseWorkflowId = (cluster: string) => `rehearse/${cluster}`;

/** `skewless plan --cluster`'s read: one per call, so two plans may read at once. `at` an ISO time, `nonce` any short unique text. */
export const planWorkflowId = (cluster: string, at: string, nonce: string) => `plan/${cluster}/${at}-${nonce}`;

/** What a schedule starts: Temporal appends the time of each run to this id. */
export const scheduledUpgradeWorkflowId = (cluster: string) => `scheduled-upgrade/${cluster}`;

/** Not a workflow id: the Temporal Schedule of a cluster's upgrades when the operator names none. */
export const upgradeScheduleId = (cluster: string) => `upgrade-schedule/${cluster}`;

/** One notification's delivery (workflows/notify-workflow.ts): its idempotency key, so a transition is sent once. */
export const notifyWorkflowId = (key: string) => `notify/${key}`;

/** `skewless notify test`'s delivery: one per call. `at` an ISO time, `nonce` any short unique text. */
export const notifyTestWorkflowId = (cluster: string, at: string, nonce: string) => `notify/test/${cluster}/${at}-${nonce}`;
