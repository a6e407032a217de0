/** Least time between two status queries of one follower, while the run's history grows. */
export const MIN_QUERY_GAP_MS = 3_000;

/**
 * When a follower (`watch`) asks the workflow its status again. The description it reads every poll costs
 * the Temporal server alone; a query reaches the worker, which may have to replay the workflow to answer
 * (issue 22: a query every 2 s reaching a workflow in replay ended a worker, temporalio/sdk-core#390).
 * So: a query only once the history grew since the last answer (the state changes only with events),
 * and not sooner than MIN_QUERY_GAP_MS after the last; a run waiting for an approval is not queried at all.
 */
export class QueryPace {
  #answeredAtLength: number | undefined;
  #askedAt = -Infinity;

  constructor(private readonly minGapMs = MIN_QUERY_GAP_MS) {}

  /** Whether to query now, given the history length the description just gave. */
  due(historyLength: number, now: number): boolean {
    if (this.#answeredAtLength === undefined) return true;
    return historyLength !== this.#answeredAtLength && now - this.#askedAt >= this.minGapMs;
  }

  /** A query was sent at `now` for the history at `historyLength`; `answered`: it gave a status. */
  asked(historyLength: number, now: number, answered: boolean): void {
    this.#askedAt = now;
    if (answered) this.#answeredAtLength = historyLength;
  }
}
