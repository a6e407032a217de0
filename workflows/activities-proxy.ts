import { proxyActivities } from '@temporalio/workflow';
import type { Activities } from '../activities/index.js';
import { PROFILE_OF, withHostRetryBudget } from './activity-options.js';
import { SUMMARY_OF } from './step-summary.js';

/**
 * Every activity, proxied with the profile activity-options.ts gives it and the one-line summary
 * step-summary.ts writes for it, so workflow code calls `activities.drainNode(...)` and never writes
 * timeouts inline. (Object.fromEntries loses the key types; PROFILE_OF and SUMMARY_OF are checked
 * to cover exactly the activity set, so the cast is safe.)
 */
function proxied(hostRetrySeconds?: number): Activities {
  return Object.fromEntries(
    Object.entries(PROFILE_OF).map(([name, profile]) => {
      const key = name as keyof Activities;
      const options = withHostRetryBudget(profile, hostRetrySeconds);
      const proxy = proxyActivities<Activities>(options)[key];
      const summarize = SUMMARY_OF[key] as (input: unknown) => string;
      // executeWithOptions: the summary differs per call (it names the node and version).
      return [name, (input: unknown) => proxy.executeWithOptions({ ...options, summary: summarize(input) }, [input] as never)];
    }),
  ) as unknown as Activities;
}

export const activities = proxied();

/** The activities with the operator's host retry budget (policy.hostRetrySeconds) on host steps; the defaults without one. */
export const activitiesWithin = (hostRetrySeconds: number | undefined): Activities =>
  hostRetrySeconds === undefined ? activities : proxied(hostRetrySeconds);
