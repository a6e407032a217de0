import { metricMeter } from '@temporalio/workflow';

/**
 * The workflow-side helpers that record skewless's own metrics (names in contracts/metric-names.ts).
 * The workflow `metricMeter` is replay-safe: it records nothing while a workflow task replays
 * history, and recording adds no command to history, so these calls need no `patched()`.
 */
import { METRICS } from '../contracts/metric-names.js';

export { METRICS, SECONDS_BUCKETS } from '../contracts/metric-names.js';

type Role = 'control-plane' | 'worker';

/** One node upgraded to the hop's version. */
export function countNodeUpgraded(cluster: string, role: Role): void {
  metricMeter.createCounter(METRICS.nodesUpgraded, undefined, 'Node upgrades finished (one per node and hop)').add(1, { cluster, role });
}

/** A finished drain and how long it took (workflow time). */
export function recordDrainSeconds(cluster: string, role: Role, seconds: number): void {
  metricMeter
    .createHistogram(METRICS.drainSeconds, 'float', 's', 'Seconds from the first eviction to an empty node')
    .record(Math.max(0, seconds), { cluster, role });
}

/** How many nodes of this upgrade wait for the operator now. */
export function setBlockedNodes(cluster: string, nodes: Record<string, { phase: string } | undefined>): void {
  const count = Object.values(nodes).filter((n) => n?.phase === 'blocked').length;
  metricMeter.createGauge(METRICS.blockedNodes, 'int', undefined, 'Nodes waiting for the operator').set(count, { cluster });
}

/** A gate passed (or given up on abort) after this many seconds; `gate` is its name (`canary-1.33.7`), labelled by kind only. */
export function recordGateWait(cluster: string, gate: string, by: 'approval' | 'soak' | 'alerts', seconds: number): void {
  const kind = gate.replace(/-[^-]*$/, '');
  metricMeter
    .createHistogram(METRICS.gateWaitSeconds, 'float', 's', 'Seconds a gate held the rollout')
    .record(Math.max(0, seconds), { cluster, gate: kind, by });
}
