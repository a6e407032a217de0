import { proxyActivities } from '@temporalio/workflow';
import type { Activities } from '../activities/index.js';
import { PROFILE_OF } from './activity-options.js';
import { SUMMARY_OF } from './step-summary.js';

/**
 * Every activity, proxied with the profile activity-options.ts gives it and the one-line summary
 * step-summary.ts writes for it, so workflow code calls `activities.drainNode(...)` and never writes
 * timeouts inline. (Object.fromEntries loses the key types; PROFILE_OF and SUMMARY_OF are checked
 * to cover exactly the activity set, so the cast is safe.)
 */
export const activities = Object.fromEntries(
  Object.entries(PROFILE_OF).map(([name, options]) => {
    const key = name as keyof Activities;
    const proxied = proxyActivities<Activities>(options)[key];
    const summarize = SUMMARY_OF[key] as (input: unknown) => string;
    return [name, (input: unknown) => proxied.executeWithOptions({ ...options, summary: summarize(input) }, [input] as never)];
  }),
) as unknown as Activities;
