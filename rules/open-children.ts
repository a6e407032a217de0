/**
 * The most node child workflows one run of a rollout keeps open at once (issue 41). Temporal's guidance
 * is about 1,000 children per run, and its server refuses a run's 2,001st incomplete child
 * (`limit.numPendingChildExecutions.error`, default 2,000): the workflow task that starts it fails
 * and retries until the run is stuck. A phase's nodes out at once (`maxUnavailable`) are capped at
 * this, so a batch larger than it runs in waves of at most this many within the batch.
 *
 * One place: the plan (rollout-plan.ts), the policy check (policy.ts) and the workflows read it. A test
 * that needs a smaller cap replaces this module in its own workflow bundle, never through an input.
 */
export const MAX_OPEN_CHILDREN = 1_000;
