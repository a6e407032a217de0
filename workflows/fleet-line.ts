import type { ClusterApproval, ClusterResolution, FleetClusterState, FleetStatus } from './fleet-messages.js';

/**
 * The fleet's line, read from its status alone (no workflow API): which cluster stops it, whether
 * a cluster may start, what the memo shows, and which operator updates are refused.
 */

/** Phases that stop the line: no cluster after it starts until it moves or the operator answers. */
const STOPS_LINE = new Set(['blocked', 'failed', 'aborted']);
const ENDED = new Set(['done', 'skipped']);

export const inFlight = (c: FleetClusterState): boolean => c.phase === 'running' || c.phase === 'blocked';

const stoppedBy = (status: FleetStatus): FleetClusterState | undefined => status.clusters.find((c) => STOPS_LINE.has(c.phase));

/** Its stage's turn (every cluster of earlier stages done or skipped), the line moving, a free slot. */
export function mayStart(status: FleetStatus, c: FleetClusterState): boolean {
  return (
    !status.paused &&
    !stoppedBy(status) &&
    status.clusters.filter(inFlight).length < status.maxParallel &&
    status.clusters.every((o) => o.stageIndex >= c.stageIndex || ENDED.has(o.phase))
  );
}

/** Sets why the line stands (if it does) and the phase it gives a fleet still going. */
export function settleLine(status: FleetStatus): void {
  const stop = stoppedBy(status);
  if (stop)
    status.line = `${stop.cluster} ${stop.phase}: ${stop.phase === 'blocked' ? (stop.blocked ?? []).join('; ') : (stop.message ?? '')}`;
  else delete status.line;
  if (status.phase !== 'done' && status.phase !== 'aborted') status.phase = stop ? 'line-stopped' : status.paused ? 'paused' : 'running';
}

/** What the UI shows of the fleet without a query. */
export function fleetMemo(status: FleetStatus) {
  const names = (phase: string) => status.clusters.filter((c) => c.phase === phase).map((c) => c.cluster);
  return {
    progress: `${status.clusters.filter((c) => ENDED.has(c.phase)).length}/${status.clusters.length} clusters done`,
    running: names('running'),
    blocked: names('blocked'),
    failed: [...names('failed'), ...names('aborted')],
    skipped: names('skipped'),
    line: status.line ?? null,
  };
}

/** The approveCluster validator: throws why the approval is refused, before anything reaches history. */
export function checkApproval(c: FleetClusterState, a: ClusterApproval): void {
  if (!c.approve) throw new Error(`${a.cluster} has no approval gate`);
  if (c.approvedBy || (c.phase !== 'pending' && c.phase !== 'waiting-approval')) throw new Error(`${a.cluster} is already approved`);
  if (!a.by) throw new Error('an approval needs a "by"');
}

/** The resolveCluster validator: only a failed or aborted cluster, once, is retried or skipped. */
export function checkResolution(c: FleetClusterState, r: ClusterResolution, resolved: boolean): void {
  if (r.action !== 'retry' && r.action !== 'skip') throw new Error(`a cluster is retried or skipped, not ${String(r.action)}`);
  if (c.phase === 'blocked')
    throw new Error(`${r.cluster}'s upgrade is blocked, not failed: answer it with "skewless resolve ${r.cluster}"`);
  if (c.phase !== 'failed' && c.phase !== 'aborted')
    throw new Error(`${r.cluster} is ${c.phase}: only a failed or aborted cluster is retried or skipped`);
  if (resolved) throw new Error(`${r.cluster} is already resolved`);
  if (!r.by) throw new Error('a resolution needs a "by"');
}
