import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  checkPolicy,
  MAX_OPEN_CHILDREN,
  planRollout,
  planUpgrade,
  RuleError,
  UPGRADE_POLICY_KEYS,
  type ClusterInventory,
  type PlanNode,
  type RolloutPlan,
  type RolloutPolicy,
} from '../../rules/index.js';
import { policyFromFlags, PLAN_FLAG_KEYS } from '../../client/policy-flags.js';
import { UsageError } from '../../client/cli-support.js';

const WORKERS = 2_500;
const nodes: PlanNode[] = [
  ...['cp-1', 'cp-2', 'cp-3'].map((name): PlanNode => ({ name, role: 'control-plane' })),
  ...Array.from({ length: WORKERS }, (_, i): PlanNode => ({ name: `worker-${i + 1}`, role: 'worker' })),
];

/**
 * The most node workflows open at once while `plan` runs, as the workflow runs it (rollout.ts,
 * capacity-window.ts): phases one after another, each in waves of at most its maxUnavailable, a node's
 * workflow open from its start to its end. Counted, not read off one field: a phase whose width
 * exceeded its nodes, or a node in two phases, would show.
 */
function mostOpen(plan: RolloutPlan): { most: number; waves: number; nodes: number } {
  let most = 0;
  let waves = 0;
  let count = 0;
  for (const phase of plan.phases) {
    for (let i = 0; i < phase.nodes.length; i += Math.max(1, phase.maxUnavailable)) {
      const wave = phase.nodes.slice(i, i + Math.max(1, phase.maxUnavailable));
      most = Math.max(most, wave.length);
      waves++;
      count += wave.length;
    }
  }
  return { most, waves, nodes: count };
}

describe('no run keeps more than MAX_OPEN_CHILDREN node workflows open (rules/open-children.ts, issue 41)', () => {
  it('is 1,000: Temporal’s guidance per run, half its hard limit of 2,000 pending children', () => {
    assert.equal(MAX_OPEN_CHILDREN, 1_000);
  });

  const cases: [string, RolloutPolicy, { most: number; batches: number; cappedFrom?: number }][] = [
    ['batches of 100, 100 out at once', { batchSize: 100, maxUnavailable: 100 }, { most: 100, batches: 25 }],
    ['batches of 1,000, 1,000 out at once', { batchSize: 1_000, maxUnavailable: 1_000 }, { most: 1_000, batches: 3 }],
    // One batch of 2,499 (after the canary): run in three waves of at most 1,000 within it.
    [
      'one batch of 2,500 at maxUnavailable 100%',
      { batchSize: 2_500, maxUnavailable: '100%' },
      { most: 1_000, batches: 1, cappedFrom: 2_500 },
    ],
    ['one batch of 2,500, one at a time', { batchSize: 2_500 }, { most: 1, batches: 1 }],
    // The batch size follows the capped maxUnavailable: batches of 1,000, each checked before the next.
    ['maxUnavailable 100% alone', { maxUnavailable: '100%' }, { most: 1_000, batches: 3, cappedFrom: 2_500 }],
    ['maxUnavailable 50% alone', { maxUnavailable: '50%' }, { most: 1_000, batches: 3, cappedFrom: 1_250 }],
  ];
  for (const [name, policy, want] of cases) {
    it(`a 2,500-worker plan, ${name}: at most ${want.most} open at once`, () => {
      const plan = planRollout(nodes, policy);
      const open = mostOpen(plan);
      assert.equal(open.most, want.most);
      assert.ok(open.most <= MAX_OPEN_CHILDREN);
      assert.equal(open.nodes, WORKERS + 3, 'every node once');
      assert.equal(plan.phases.filter((p) => p.kind === 'batch').length, want.batches);
      assert.equal(plan.policy.cappedFrom, want.cappedFrom);
      assert.ok(plan.policy.maxUnavailable <= MAX_OPEN_CHILDREN);
    });
  }

  it('without the cap (a run that planned before it, replayed) the plan is what it was: 2,499 open at once', () => {
    const plan = planRollout(nodes, { batchSize: 2_500, maxUnavailable: '100%' }, { maxOpenChildren: Number.POSITIVE_INFINITY });
    assert.equal(mostOpen(plan).most, 2_499);
    assert.equal(plan.policy.cappedFrom, undefined);
  });

  it('a blue/green batch size above the cap (its maxUnavailable) is capped too, and said', () => {
    const plan = planRollout(nodes.slice(3), { batchSize: 1_500, maxUnavailable: 1_500 }, { requireControlPlane: false });
    assert.deepEqual(
      [mostOpen(plan).most, plan.policy.maxUnavailable, plan.policy.batchSize, plan.policy.cappedFrom],
      [1_000, 1_000, 1_500, 1_500],
    );
  });

  it('planUpgrade carries the cap into the runbook’s plan', () => {
    const inventory: ClusterInventory = {
      apiservers: [{ node: 'cp-1', version: '1.33.7' }],
      controllerManagers: [{ node: 'cp-1', version: '1.33.7' }],
      schedulers: [{ node: 'cp-1', version: '1.33.7' }],
      kubelets: nodes.filter((n) => n.name !== 'cp-2' && n.name !== 'cp-3').map((n) => ({ node: n.name, version: '1.33.7' })),
      nodes: nodes.filter((n) => n.name !== 'cp-2' && n.name !== 'cp-3'),
    };
    const plan = planUpgrade({ inventory, to: '1.34', available: ['1.33.7', '1.34.2'], policy: { maxUnavailable: '100%' } });
    assert.equal(mostOpen(plan.rollout).most, 1_000);
    assert.equal(plan.rollout.policy.cappedFrom, 2_500);
  });

  it('a count above the cap is refused in one line naming the key; a percentage is not', () => {
    for (const v of [1_001, '1001', 2_500]) {
      assert.throws(
        () => checkPolicy({ maxUnavailable: v }, undefined, UPGRADE_POLICY_KEYS),
        (err: unknown) =>
          err instanceof RuleError &&
          err.code === 'InvalidPolicy' &&
          !err.message.includes('\n') &&
          /^maxUnavailable must be an integer from 1 to 1000 \(the most node workflows one run keeps open; a percentage is capped at it\), got (1001|2500)$/.test(
            err.message,
          ),
        String(v),
      );
    }
    assert.deepEqual(checkPolicy({ maxUnavailable: 1_000 }, undefined, UPGRADE_POLICY_KEYS), { maxUnavailable: 1_000 });
    assert.deepEqual(checkPolicy({ maxUnavailable: '100%' }, undefined, UPGRADE_POLICY_KEYS), { maxUnavailable: '100%' });
    assert.throws(
      () => policyFromFlags({ 'max-unavailable': '1500' }, PLAN_FLAG_KEYS),
      (err: unknown) => err instanceof UsageError && /^--max-unavailable must be an integer from 1 to 1000 .*got 1500$/.test(err.message),
    );
  });
});
