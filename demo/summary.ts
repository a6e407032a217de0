/** The demo's closing summary: plain-text formatting only. */

export interface NodeRow {
  node: string;
  role: string;
  from: string;
  to: string;
  /** The workflow's drainSeconds: first drain attempt to the node being empty, blocked time included, summed over hops. */
  drainSeconds?: number;
  note?: string;
}

export function formatTable(headers: string[], rows: string[][]): string {
  const widths = headers.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: string[]) =>
    cells
      .map((c, i) => (i === cells.length - 1 ? c : c.padEnd(widths[i] ?? 0)))
      .join('  ')
      .trimEnd();
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
