/**
 * skewless's own metrics: their names, which the worker serves in Prometheus form next to the SDK's
 * `temporal_*` metrics (worker/metrics.ts), the workflows record (workflows/metrics.ts) and the drain
 * activity counts (activities/drain-context.ts). Dashboards depend on them: add, never rename.
 * The worker adds `namespace`, `task_queue` and `workflow_type` to every value.
 */
export const METRICS = {
  /** Counter: node upgrades finished (the node's kubelet at the hop's version), labels cluster, role. */
  nodesUpgraded: 'skewless_nodes_upgraded',
  /** Histogram (seconds): from a node's first eviction to an empty node, blocked time included; labels cluster, role. */
  drainSeconds: 'skewless_drain_seconds',
  /** Counter: eviction requests a PodDisruptionBudget refused (recorded by the drain activity); label cluster. */
  evictionsRefused: 'skewless_evictions_refused',
  /** Counter: requests the API server throttled (429 of Priority and Fairness, not a PDB's), retried after Retry-After; label cluster. */
  apiThrottled: 'skewless_api_throttled',
  /** Gauge: nodes of an upgrade waiting for the operator (`skewless resolve`); label cluster. */
  blockedNodes: 'skewless_blocked_nodes',
  /** Histogram (seconds): how long a gate held the rollout; labels cluster, gate (workers|canary), by (approval|soak). */
  gateWaitSeconds: 'skewless_gate_wait_seconds',
} as const;

/** Bucket bounds (seconds) for the two histograms: a drain or a gate takes seconds to hours. */
export const SECONDS_BUCKETS = [1, 5, 10, 30, 60, 120, 300, 600, 1800, 3600, 7200, 14400, 43200, 86400];
