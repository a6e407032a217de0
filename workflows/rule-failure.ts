import { ApplicationFailure } from '@temporalio/workflow';
import { RuleError } from '../rules/index.js';

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
