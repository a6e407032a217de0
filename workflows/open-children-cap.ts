import { patched } from '@temporalio/workflow';
import { MAX_OPEN_CHILDREN, maxUnavailableAboveCap, type RolloutPlan } from '../rules/index.js';
import { PATCH } from './patches.js';

/**
 * A plan within MAX_OPEN_CHILDREN (rules/open-children.ts), made by `plan`. A run that planned before
 * the cap (PATCH.openChildrenCap, asked only when the cap changed the plan, so no other run's history
 * grows a marker) replays the plan it made then: uncapped.
 */
export function planWithinOpenChildren<T>(plan: (maxOpenChildren: number) => T, rolloutOf: (made: T) => RolloutPlan): T {
  const made = plan(MAX_OPEN_CHILDREN);
  if (rolloutOf(made).policy.cappedFrom === undefined || patched(PATCH.openChildrenCap)) return made;
  return plan(Number.POSITIVE_INFINITY);
}

/**
 * The policy as the start's check judges it: a count of workers out at once above the cap is refused
 * (rules/policy.ts), except in a run that started before the refusal, which goes on as it did.
 */
export function policyAsChecked(policy: unknown): unknown {
  if (!maxUnavailableAboveCap(policy) || patched(PATCH.openChildrenCap)) return policy;
  return { ...(policy as object), maxUnavailable: undefined };
}

/**
 * The plan's one line when the cap made the workers out at once fewer than asked (absent: it did not);
 * `asked`: the key and value that asked, `maxUnavailable 100%`.
 */
export function cappedNote(rollout: RolloutPlan, asked: string): string | undefined {
  const { cappedFrom, maxUnavailable } = rollout.policy;
  if (cappedFrom === undefined) return undefined;
  return (
    `${asked} comes to ${cappedFrom} workers: at most ${maxUnavailable} out at once ` +
    `(one node workflow each, the most one run keeps open); a batch larger than that runs in waves of ${maxUnavailable}`
  );
}
