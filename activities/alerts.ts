import { ApplicationFailure } from '@temporalio/activity';
import { alertsSinceQuery, firingAlertsQuery } from '../rules/readiness/alert-matchers.js';
import type { FiringAlert } from '../rules/readiness/operator-signals.js';
import type { ClusterResolver } from './cluster-access.js';
import type { AlertsConfig } from './cluster-config.js';
import { ErrorType } from './errors.js';
import { cancellationSignal } from './health-poll.js';
import { probeTarget, withBasicAuth } from './health-probes.js';

/**
 * The alert gate's read (issue 21): which alerts the operator's Prometheus has firing that match the
 * configured matchers. It asks as kured does, an instant query of the `ALERTS` series through
 * `/api/v1/query` (Prometheus's alerting rules write it, with or without an Alertmanager), and
 * `ALERTS_FOR_STATE` for when each became active. Read-only; what the firing alerts mean for a phase
 * is rules/readiness/operator-signals.ts's.
 */

export type { FiringAlert } from '../rules/readiness/operator-signals.js';

export interface AlertsResult {
  cluster: string;
  /** False when the cluster configuration has no `alerts:` block: nothing was asked, nothing fires. */
  configured: boolean;
  /** Scheme, host and path of the Prometheus asked: never its user info. */
  prometheus?: string;
  /** The PromQL asked, as the operator can paste it into Prometheus. */
  query?: string;
  firing: FiringAlert[];
  /** How often a phase held by these alerts asks again (alerts.pollSeconds). */
  pollSeconds?: number;
}

interface Sample {
  metric?: Record<string, string>;
  value?: [number, string];
}

const failure = (type: string, message: string, nonRetryable: boolean) => ApplicationFailure.create({ type, message, nonRetryable });

/** One instant query; every way it can fail is typed, in one line, naming Prometheus by scheme, host and path only. */
async function instantQuery(config: AlertsConfig, query: string): Promise<Sample[]> {
  const shown = probeTarget(config.prometheusUrl);
  const base = config.prometheusUrl.endsWith('/') ? config.prometheusUrl : `${config.prometheusUrl}/`;
  const url = new URL('api/v1/query', base);
  url.searchParams.set('query', query);
  const request = withBasicAuth(url.href);
  const timeout = AbortSignal.timeout(config.timeoutSeconds * 1000);
  const cancelled = cancellationSignal();
  let res: Response;
  let text: string;
  try {
    res = await fetch(request.url, {
      headers: { ...request.headers, accept: 'application/json' },
      redirect: 'manual',
      signal: cancelled ? AbortSignal.any([cancelled, timeout]) : timeout,
    });
    text = await res.text();
  } catch (err) {
    if (cancelled?.aborted) throw cancelled.reason;
    const e = err as Error & { cause?: { code?: string; message?: string } };
    const why = timeout.aborted
      ? `no answer within ${config.timeoutSeconds} s`
      : ((e.cause?.code ?? e.cause?.message ?? e.message).split('\n')[0] ?? 'request failed');
    throw failure(ErrorType.PrometheusUnreachable, `Prometheus at ${shown} is unreachable: ${why}`, false);
  }
  let body: { status?: string; error?: string; data?: { resultType?: string; result?: unknown } } | undefined;
  try {
    body = JSON.parse(text) as typeof body;
  } catch {
    body = undefined;
  }
  const said = body?.error ? `: ${body.error.split('\n')[0]?.slice(0, 300)}` : '';
  if (res.status === 401 || res.status === 403)
    throw failure(ErrorType.Forbidden, `Prometheus at ${shown} refused the query: HTTP ${res.status}${said}`, true);
  if (res.status >= 500 || res.status === 429)
    throw failure(ErrorType.PrometheusUnreachable, `Prometheus at ${shown} answered HTTP ${res.status}${said}`, false);
  if (res.status === 400 || res.status === 422)
    throw failure(ErrorType.ClusterConfigInvalid, `alerts.matchers: Prometheus at ${shown} refused the query ${query}${said}`, true);
  if (res.status !== 200 || body?.status !== 'success' || body.data?.resultType !== 'vector' || !Array.isArray(body.data.result))
    throw failure(
      ErrorType.ClusterConfigInvalid,
      `alerts.prometheusUrl ${shown} does not answer as Prometheus's HTTP API (HTTP ${res.status} at ${probeTarget(url.href)})`,
      true,
    );
  return body.data.result as Sample[];
}

/** An alert's identity across ALERTS and ALERTS_FOR_STATE: its labels less the series' name and state. */
function labelsOf(metric: Record<string, string> = {}): Record<string, string> {
  const { __name__: _name, alertstate: _state, ...labels } = metric;
  return labels;
}
const keyOf = (labels: Record<string, string>) => JSON.stringify(Object.entries(labels).sort(([a], [b]) => a.localeCompare(b)));

/**
 * The firing alerts `alerts` selects (name, labels, since), sorted by name. PrometheusUnreachable
 * when it cannot be asked; ClusterConfigInvalid or Forbidden when Prometheus refuses the query.
 */
export async function firingAlerts(alerts: AlertsConfig): Promise<{ query: string; firing: FiringAlert[] }> {
  const query = firingAlertsQuery(alerts.matchers);
  // Both at once; when both fail, the failure reported is always the gate's own query's (Promise.all would race).
  const [asked, askedSince] = await Promise.allSettled([
    instantQuery(alerts, query),
    instantQuery(alerts, alertsSinceQuery(alerts.matchers)),
  ]);
  if (asked.status === 'rejected') throw asked.reason;
  if (askedSince.status === 'rejected') throw askedSince.reason;
  const [firing, since] = [asked.value, askedSince.value];
  const activeAt = new Map(since.map((s) => [keyOf(labelsOf(s.metric)), Number(s.value?.[1])]));
  const result: FiringAlert[] = firing
    .filter((s) => s.metric?.alertname && s.value?.[1] !== '0')
    .map((s) => {
      const all = labelsOf(s.metric);
      const { alertname, ...labels } = all;
      const at = activeAt.get(keyOf(all));
      return {
        name: alertname as string,
        labels,
        ...(at !== undefined && Number.isFinite(at) && at > 0 ? { since: new Date(at * 1000).toISOString() } : {}),
      };
    })
    .sort((a, b) => a.name.localeCompare(b.name) || keyOf(a.labels).localeCompare(keyOf(b.labels)));
  return { query, firing: result };
}

export function createAlertActivities(deps: { clusters: ClusterResolver }) {
  return {
    /**
     * The firing alerts the cluster's `alerts:` block selects (name, labels, since), sorted by name.
     * PrometheusUnreachable (retried) when it cannot be asked; ClusterConfigInvalid or Forbidden (not
     * retried) when Prometheus refuses the query.
     */
    async checkAlerts(input: { cluster: string }): Promise<AlertsResult> {
      const { config } = deps.clusters(input.cluster);
      const alerts = config.alerts;
      if (!alerts) return { cluster: input.cluster, configured: false, firing: [] };
      const { query, firing } = await firingAlerts(alerts);
      return {
        cluster: input.cluster,
        configured: true,
        prometheus: probeTarget(alerts.prometheusUrl),
        query,
        firing,
        pollSeconds: alerts.pollSeconds,
      };
    },
  };
}

export type AlertActivities = ReturnType<typeof createAlertActivities>;
