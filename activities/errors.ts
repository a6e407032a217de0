import { ApplicationFailure } from '@temporalio/activity';
import { ACTIVITY_FAILURE, type ActivityFailureType } from '../contracts/failure-types.js';

/**
 * The one map from the outside world to ApplicationFailure types (contracts/failure-types.ts names
 * them): workflows and retry policies branch on these type names.
 */
export const ErrorType = ACTIVITY_FAILURE;
export type ErrorTypeName = ActivityFailureType;

/** The HTTP status of a @kubernetes/client-node ApiException, if it is one. */
export function httpStatus(err: unknown): number | undefined {
  const code = (err as { code?: unknown })?.code;
  return typeof code === 'number' && code >= 100 && code < 600 ? code : undefined;
}

/** Short, secret-free text of an API error body (the Status message when there is one). */
function apiMessage(err: unknown): string {
  const body = (err as { body?: unknown })?.body;
  if (typeof body === 'string') {
    try {
      const status = JSON.parse(body) as { message?: string };
      if (status.message) return status.message;
    } catch {
      // not JSON: fall through to the error's own message
    }
    return body.slice(0, 300);
  }
  return (err as Error)?.message?.split('\n')[0] ?? String(err);
}

/**
 * Whether a 429's body is a Status naming a PodDisruptionBudget: k8s.io/kubernetes eviction.go adds the cause
 * DisruptionBudget (a StatusCause's type is `reason` in JSON) to "Cannot evict pod as it would violate the
 * pod's disruption budget."
 */
export function isBudgetRefusal(err: unknown): boolean {
  const body = (err as { body?: unknown })?.body;
  let status: { message?: string; details?: { causes?: { reason?: string; type?: string }[] } } | undefined;
  try {
    status = typeof body === 'string' ? (JSON.parse(body) as typeof status) : (body as typeof status);
  } catch {
    return false; // not JSON: APF's and max-in-flight's plain-text "Too many requests"
  }
  if (typeof status !== 'object' || status === null) return false;
  return (
    (status.details?.causes ?? []).some((c) => (c.reason ?? c.type) === 'DisruptionBudget') ||
    /disruption budget/i.test(status.message ?? '')
  );
}

/**
 * Maps an error from the Kubernetes API to a typed failure; `what` says what was being done
 * ("cordon worker-3"). Errors that are not API errors pass through unchanged (network errors
 * stay retryable plain errors).
 */
export function kubeFailure(err: unknown, what: string): unknown {
  const status = httpStatus(err);
  if (status === undefined) return err;
  const message = `${what}: HTTP ${status}: ${apiMessage(err)}`;
  switch (status) {
    case 404:
      return ApplicationFailure.create({ type: ErrorType.NotFound, message, nonRetryable: true });
    case 409:
      return ApplicationFailure.create({ type: ErrorType.Conflict, message });
    case 429:
      // The API server's own throttling (throttling.ts) stays a plain retryable error: no PDB refused anything.
      return isBudgetRefusal(err) ? ApplicationFailure.create({ type: ErrorType.EvictionBlocked, message }) : err;
    case 401:
    case 403:
      return ApplicationFailure.create({ type: ErrorType.Forbidden, message, nonRetryable: true });
    case 400:
    case 422:
      return ApplicationFailure.create({ type: ErrorType.Invalid, message, nonRetryable: true });
    default:
      return err;
  }
}

/** Runs an API call and rethrows its failure typed. */
export async function kubeCall<T>(what: string, call: () => Promise<T>): Promise<T> {
  try {
    return await call();
  } catch (err) {
    throw kubeFailure(err, what);
  }
}

/**
 * Controllers write Nodes all the time (the node-lifecycle controller taints a node right after a
 * cordon), so a guarded write often meets a 409: re-read and re-decide a few times here, and leave
 * a persistent conflict to Temporal's retry.
 */
export async function retryOnConflict<T>(step: () => Promise<T>, attempts = 5): Promise<T> {
  for (let i = 1; ; i++) {
    try {
      return await step();
    } catch (err) {
      if (i >= attempts || (err as { type?: string }).type !== ErrorType.Conflict) throw err;
    }
  }
}
