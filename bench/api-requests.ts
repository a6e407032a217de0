import type { AuditEvent } from '../sim/cluster/audit-log.js';
import { WORKER_USER } from '../sim/cluster/pki.js';

/**
 * What one run cost the API server, from its audit log (the worker's identity only: the simulation's
 * own controllers and the bench's checks are not the product's load). Issue 41 judges the product by
 * requests per evicted pod plus a constant per node, and by no loop faster than once a second a node.
 */
export interface ApiRequests {
  total: number;
  /** Eviction requests the server accepted (201): the pods the run moved. */
  evictions: number;
  perEvictedPod: number | null;
  /** Per node and hop: what does not scale with the pods. */
  perNodeHop: number;
  /** `verb resource` → count, most first. */
  byKind: Record<string, number>;
}

export function countWorkerRequests(events: readonly AuditEvent[], nodeHops: number): ApiRequests {
  const mine = events.filter((e) => e.user === WORKER_USER);
  const byKind = new Map<string, number>();
  for (const e of mine) {
    const kind = `${e.verb} ${e.apiGroup ? `${e.apiGroup}/` : ''}${e.resource || e.uri.split('?')[0]}`;
    byKind.set(kind, (byKind.get(kind) ?? 0) + 1);
  }
  const evictions = mine.filter((e) => e.verb === 'create' && e.resource === 'pods/eviction' && e.code === 201).length;
  const r1 = (n: number) => Math.round(n * 10) / 10;
  return {
    total: mine.length,
    evictions,
    perEvictedPod: evictions ? r1(mine.length / evictions) : null,
    perNodeHop: r1(mine.length / Math.max(1, nodeHops)),
    byKind: Object.fromEntries([...byKind].sort(([, a], [, b]) => b - a)),
  };
}
