import { ApplicationFailure, patched } from '@temporalio/workflow';
import { checkPolicy, RuleError, type PolicyKey, type PolicyWording } from '../rules/index.js';
import { policyAsChecked } from './open-children-cap.js';
import { PATCH } from './patches.js';

/**
 * Runs a pure rule inside a workflow. A RuleError is a business outcome (bad input, a refused
 * plan) and fails the workflow with its code as the failure type; anything else is a bug and is
 * rethrown as is, so the workflow task retries until a fixed worker is deployed.
 */
export function applyRule<T>(rule: () => T): T {
  try {
    return rule();
  } catch (err) {
    if (err instanceof RuleError) throw ApplicationFailure.nonRetryable(err.message, err.code);
    throw err;
  }
}

const STARTING: PolicyWording = {
  name: (key) => key,
  fail: (key, message, at = '') => {
    throw new RuleError('InvalidPolicy', `refusing to start: ${key === undefined ? '' : `${key}${at} `}${message}`);
  },
};

/**
 * Refuses to start on a policy the one policy module refuses (a key the flow does not take, a value
 * outside what its activity can honour), as InvalidPolicy. Runs started before it checked only
 * hostRetrySeconds, and go on as they were.
 */
export function refuseBadPolicy(policy: unknown, keys: readonly PolicyKey[]): void {
  if (patched(PATCH.onePolicy)) {
    applyRule(() => checkPolicy(policyAsChecked(policy), STARTING, keys));
    return;
  }
  const retry = (policy as { hostRetrySeconds?: unknown } | undefined)?.hostRetrySeconds;
  if (retry !== undefined && !(typeof retry === 'number' && Number.isFinite(retry) && retry >= 0)) {
    throw ApplicationFailure.nonRetryable(
      `refusing to start: hostRetrySeconds must be a number of seconds ≥ 0, got ${JSON.stringify(retry)}`,
      'InvalidPolicy',
    );
  }
}
