import { isTransientApiError } from './drain-eviction.js';
import { ErrorType, httpStatus } from './errors.js';

/**
 * A restarted API server listens before its RBAC authorizer has synced, and for that moment refuses
 * (401/403) what it allows: a refusal this soon after the server was seen away is part of the outage.
 * Without such an outage a 403 is what it says (missing RBAC) and fails at once.
 */
const AFTER_OUTAGE_MS = 30_000;

export const isAuthRefusal = (err: unknown): boolean =>
  (err as { type?: unknown })?.type === ErrorType.Forbidden || [401, 403].includes(httpStatus(err) ?? 0);

/**
 * What one wait or drain has seen of the API server being away: a failed call, or a watch whose
 * connection broke (its relist is often the first call to meet the restarted server).
 */
export class ApiOutage {
  #awayAt: number | undefined;

  /** The server was seen away now (a refused connection, a broken watch). */
  sawAway(): void {
    this.#awayAt = Date.now();
  }

  /** Whether a failed call is worth repeating: the server away, or refusing auth just after it was. */
  isPartOf(err: unknown): boolean {
    if (isTransientApiError(err)) {
      this.sawAway();
      return true;
    }
    return isAuthRefusal(err) && this.#awayAt !== undefined && Date.now() - this.#awayAt < AFTER_OUTAGE_MS;
  }
}
