import type { Client } from '@temporalio/client';

/** The demo's closing summary: plain text, pure formatting, plus drain times read from history. */

export interface NodeRow {
  node: string;
  role: string;
  from: string;
  to: string;
  /** Seconds from the first drain attempt to the node being empty, summed over hops; undefined when unknown. */
  drainSeconds?: number;
  note?: string;
}

export function formatTable(headers: string[], rows: string[][]): string {
  const widths = headers.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: string[]) => cells.map((c, i) => (i === cells.length - 1 ? c : c.padEnd(widths[i] ?? 0))).join('  ').trimEnd();
  return [line(headers), line(widths.map((w) => '-'.repeat(w))), ...rows.map(line)].join('\n');
}

export function nodeTable(rows: NodeRow[]): string {
  return formatTable(
    ['node', 'role', 'from', 'to', 'drain', 'note'],
    rows.map((r) => [r.node, r.role, r.from, r.to, r.drainSeconds === undefined ? '-' : `${r.drainSeconds.toFixed(1)} s`, r.note ?? '']),
  );
}

export function formatDuration(ms: number): string {
  const s = Math.round(ms / 1000);
  return s < 60 ? `${s} s` : `${Math.floor(s / 60)} min ${String(s % 60).padStart(2, '0')} s`;
}

/** The Temporal Web UI's page of one workflow run. */
export function uiLink(uiUrl: string, namespace: string, workflowId: string, runId: string): string {
  return `${uiUrl}/namespaces/${encodeURIComponent(namespace)}/workflows/${encodeURIComponent(workflowId)}/${runId}/history`;
}

const seconds = (t: { seconds?: unknown; nanos?: number | null } | null | undefined) =>
  t ? Number(t.seconds ?? 0) + (t.nanos ?? 0) / 1e9 : undefined;

/**
 * Drain time of one node in one hop, from its child workflow's history: the first `drainNode`
 * scheduled to the `drainNode` that completed, so time spent blocked and waiting for the operator
 * counts. Undefined when the node had no drain in that hop.
 */
export async function drainSecondsFromHistory(client: Client, childWorkflowId: string): Promise<number | undefined> {
  const history = await client.workflow.getHandle(childWorkflowId).fetchHistory();
  const drains = new Map<string, number>();
  let first: number | undefined;
  let done: number | undefined;
  for (const e of history.events ?? []) {
    const t = seconds(e.eventTime);
    if (t === undefined) continue;
    if (e.activityTaskScheduledEventAttributes?.activityType?.name === 'drainNode') {
      drains.set(String(e.eventId), t);
      first ??= t;
    }
    const completed = e.activityTaskCompletedEventAttributes;
    if (completed && drains.has(String(completed.scheduledEventId))) done = t;
  }
  return first !== undefined && done !== undefined ? done - first : undefined;
}
