import { Context } from '@temporalio/activity';
import { METRICS } from '../contracts/metric-names.js';
import { httpStatus, isBudgetRefusal } from './errors.js';

/** The API server's own throttling of a request: when to try again, and which priority level refused it. */
export interface Throttle {
  retryAfterMs: number;
  /** UIDs of the FlowSchema and PriorityLevelConfiguration that matched (API Priority and Fairness). */
  flowSchemaUid?: string;
  priorityLevelUid?: string;
}

/** Bounds on a Retry-After we honour: at least a second (no loop faster), at most a minute (a bad header). */
const MIN_RETRY_MS = 1_000;
const MAX_RETRY_MS = 60_000;

function header(err: unknown, name: string): string | undefined {
  const headers = (err as { headers?: Record<string, unknown> })?.headers;
  if (!headers || typeof headers !== 'object') return undefined;
  for (const [k, v] of Object.entries(headers)) if (k.toLowerCase() === name && typeof v === 'string' && v !== '') return v;
  return undefined;
}

/**
 * The API server throttling a request, told apart from a PodDisruptionBudget's refusal, which is also a
 * 429 (both even carry APF's X-Kubernetes-PF-* headers, set on every request APF classifies): a budget's
 * Status names the DisruptionBudget cause; APF's rejection (and max-in-flight's) is a plain-text "Too
 * many requests" with a Retry-After (k8s.io/apiserver filters, tooManyRequests). Undefined otherwise.
 */
export function throttledFor(err: unknown): Throttle | undefined {
  if (httpStatus(err) !== 429 || isBudgetRefusal(err)) return undefined;
  const seconds = Number(header(err, 'retry-after'));
  const retryAfterMs = Math.min(MAX_RETRY_MS, Math.max(MIN_RETRY_MS, Number.isFinite(seconds) ? seconds * 1000 : 0));
  const flowSchemaUid = header(err, 'x-kubernetes-pf-flowschema-uid');
  const priorityLevelUid = header(err, 'x-kubernetes-pf-prioritylevel-uid');
  return { retryAfterMs, ...(flowSchemaUid ? { flowSchemaUid } : {}), ...(priorityLevelUid ? { priorityLevelUid } : {}) };
}

/** Counts one request the API server throttled (skewless_api_throttled); outside an activity, nothing. */
export function countThrottled(cluster: string): void {
  let ctx: Context | undefined;
  try {
    ctx = Context.current();
  } catch {
    return; // deliberate: a direct call from a script or test has no metrics
  }
  ctx.metricMeter
    .createCounter(METRICS.apiThrottled, undefined, 'Requests the API server throttled (429, Priority and Fairness)')
    .add(1, { cluster });
}
