/**
 * The Temporal server's own count of billable actions: its frontend's `action` counter (Temporal
 * documents it for estimating Cloud actions from a self-hosted server, "Estimate Actions for
 * migration"), read from the dev server's /metrics before and after a run. Unlike the histories
 * (bench/temporal-cost.ts) it holds what leaves no event: queries, heartbeats that reached the
 * server, rejected updates; and it counts the bench's own status queries too.
 */

/** `action_type` → count of the `action` counter for one namespace, from Prometheus text. */
export function parseActionCounter(metrics: string, namespace: string): Record<string, number> {
  const out: Record<string, number> = {};
  for (const line of metrics.split('\n')) {
    const m = /^action\{([^}]*)\}\s+(\S+)/.exec(line);
    if (!m) continue;
    const labels = Object.fromEntries([...(m[1] as string).matchAll(/(\w+)="([^"]*)"/g)].map((x) => [x[1], x[2]]));
    if (labels.namespace !== namespace || (labels.service_name && labels.service_name !== 'frontend')) continue;
    const type = labels.action_type ?? '?';
    out[type] = (out[type] ?? 0) + Number(m[2]);
  }
  return out;
}

/** What grew between two readings, most first; the total under `total`. */
export function actionDelta(
  before: Record<string, number>,
  after: Record<string, number>,
): { total: number; byType: Record<string, number> } {
  const byType = Object.entries(after)
    .map(([k, v]) => [k, v - (before[k] ?? 0)] as const)
    .filter(([, v]) => v > 0)
    .sort(([, a], [, b]) => b - a);
  return { total: byType.reduce((n, [, v]) => n + v, 0), byType: Object.fromEntries(byType) };
}

/** The dev server's counter now, or undefined when it cannot be read (the run's row then has no server count). */
export async function readActionCounter(metricsUrl: string, namespace: string): Promise<Record<string, number> | undefined> {
  try {
    const res = await fetch(metricsUrl, { signal: AbortSignal.timeout(10_000) });
    return res.ok ? parseActionCounter(await res.text(), namespace) : undefined;
  } catch {
    return undefined;
  }
}
