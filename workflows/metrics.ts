import { metricMeter } from '@temporalio/workflow';

/**
 * skewless's own metrics: their names (the worker serves them in Prometheus form next to the SDK's
 * `temporal_*` metrics, worker/metrics.ts) and the workflow-side helpers that record them.
 *
 * The workflow `metricMeter` is replay-safe: it records nothing while a workflow task replays
 * history, and recording adds no command to history, so these calls need no `patched()`.
 * The worker adds `namespace`, `task_queue` and `workflow_type` to every value.
 */
export const METRICS = {
  /** Counter: node upgrades finished (the node's kubelet at the hop's version), labels cluster, role. */
  nodesUpgraded: 'skewless_nodes_upgraded',
  /** Histogram (seconds): from a node's first eviction to an empty node, blocked time included; labels cluster, role. */
  drainSeconds: 'skewless_drain_seconds',
  /** Counter: eviction requests a PodDisruptionBudget refused (recorded by the drain activity); label cluster. */
  evictionsRefused: 'skewless_evictions_refused',
  /** Gauge: nodes of an upgrade waiting for the operator (`skewless resolve`); label cluster. */
  blockedNodes: 'skewless_blocked_nodes',
  /** Histogram (seconds): how long a gate held the rollout; labels cluster, gate (workers|canary), by (approval|soak). */
  gateWaitSeconds: 'skewless_gate_wait_seconds',
} as const;

/** Bucket bounds (seconds) for the two histograms: a drain or a gate takes seconds to hours. */
export const SECONDS_BUCKETS = [1, 5, 10, 30, 60, 120, 300, 600, 1800, 3600, 7200, 14400, 43200, 86400];

type Role = 'control-plane' | 'worker';

/** One node upgraded to the hop's version. */
export function countNodeUpgraded(cluster: string, role: Role): void {
  metricMeter.createCounter(METRICS.nodesUpgraded, undefined, 'Node upgrades finished (one per node and hop)').add(1, { cluster, role });
}

/** A finished drain and how long it took (workflow time). */
export function recordDrainSeconds(cluster: string, role: Role, seconds: number): void {
  metricMeter.createHistogram(METRICS.drainSeconds, 'float', 's', 'Seconds from the first eviction to an empty node').record(Math.max(0, seconds), { cluster, role });
}

/** How many nodes of this upgrade wait for the operator now. */
export function setBlockedNodes(cluster: string, nodes: Record<string, { phase: string } | undefined>): void {
  const count = Object.values(nodes).filter((n) => n?.phase === 'blocked').length;
  metricMeter.createGauge(METRICS.blockedNodes, 'int', undefined, 'Nodes waiting for the operator').set(count, { cluster });
}

/** A gate passed (or given up on abort) after this many seconds; `gate` is its name (`canary-1.33.7`), labelled by kind only. */
export function recordGateWait(cluster: string, gate: string, by: 'approval' | 'soak', seconds: number): void {
  const kind = gate.replace(/-[^-]*$/, '');
  metricMeter.createHistogram(METRICS.gateWaitSeconds, 'float', 's', 'Seconds a gate held the rollout').record(Math.max(0, seconds), { cluster, gate: kind, by });
}
