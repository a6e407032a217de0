import { proxyActivities, type ActivityInterfaceFor } from '@temporalio/workflow';
import type { Activities } from '../activities/index.js';
import { PROFILE_OF } from './activity-options.js';

/**
 * Every activity, proxied with the profile activity-options.ts gives it, so workflow code calls
 * `activities.drainNode(...)` and never writes timeouts inline. (Object.fromEntries loses the key
 * types; PROFILE_OF is checked to cover exactly the activity set, so the cast is safe.)
 */
export const activities = Object.fromEntries(
  Object.entries(PROFILE_OF).map(([name, options]) => [name, proxyActivities<Activities>(options)[name as keyof Activities]]),
) as unknown as ActivityInterfaceFor<Activities>;
