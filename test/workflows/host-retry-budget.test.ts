import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { attemptsWithin, drain, hostCommand, kubeletRestart, kubeRead, withHostRetryBudget } from '../../workflows/activity-options.js';

describe("the host retry budget (policy.hostRetrySeconds) as attempts over a profile's backoff", () => {
  it('counts the attempts whose waits fit in the budget', () => {
    // hostCommand waits 2, 4, 8, 16, 32 s, then 60 s each.
    const table: [number, number][] = [
      [0, 1],
      [1.9, 1],
      [2, 2],
      [5.9, 2],
      [6, 3],
      [62, 6],
      [121, 6],
      [122, 7],
      [600, 14],
    ];
    for (const [seconds, attempts] of table) assert.equal(attemptsWithin(hostCommand, seconds), attempts, `${seconds} s`);
    // kubeletRestart waits 5, 10, 20, ... s.
    assert.equal(attemptsWithin(kubeletRestart, 14), 2);
  });

  it('applies to host profiles only, and leaves every profile alone without a budget', () => {
    assert.equal(withHostRetryBudget(hostCommand, undefined), hostCommand);
    assert.equal(withHostRetryBudget(kubeRead, 5), kubeRead);
    assert.equal(withHostRetryBudget(drain, 5), drain);
    const bounded = withHostRetryBudget(hostCommand, 10);
    assert.equal(bounded.retry?.maximumAttempts, 3);
    assert.deepEqual(bounded.retry?.nonRetryableErrorTypes, hostCommand.retry?.nonRetryableErrorTypes, 'what cannot be retried stays so');
    assert.equal(bounded.startToCloseTimeout, hostCommand.startToCloseTimeout, 'an attempt is never cut short');
    assert.equal(hostCommand.retry?.maximumAttempts, 12, 'the shared profile is not changed');
  });
});
