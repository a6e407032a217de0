import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { compareNatural, planRollout, resolveMaxUnavailable, RuleError, withoutNodes, type PlanNode } from '../../rules/index.js';

const cp = (name: string): PlanNode => ({ name, role: 'control-plane' });
const w = (name: string): PlanNode => ({ name, role: 'worker' });
const workers = (n: number) => Array.from({ length: n }, (_, i) => w(`worker-${i + 1}`));

describe('planRollout', () => {
  it('control planes one at a time, then the canary, then batches, with stage labels', () => {
    const plan = planRollout([cp('cp2'), w('worker-10'), cp('cp1'), ...workers(7), cp('cp3')], {
      canary: 1,
      batchSize: 3,
      maxUnavailable: 2,
    });
    assert.deepEqual(plan.controlPlanes, ['cp1', 'cp2', 'cp3']);
    assert.deepEqual(
      plan.phases.map((p) => [p.kind, p.stage, p.nodes, p.maxUnavailable]),
      [
        ['control-plane', 'control-plane', ['cp1'], 1],
        ['control-plane', 'control-plane', ['cp2'], 1],
        ['control-plane', 'control-plane', ['cp3'], 1],
        ['canary', 'canary', ['worker-1'], 1],
        ['batch', 'batch-1', ['worker-2', 'worker-3', 'worker-4'], 2],
        ['batch', 'batch-2', ['worker-5', 'worker-6', 'worker-7'], 2],
        ['batch', 'batch-3', ['worker-10'], 1],
      ],
    );
    assert.equal(plan.stageLabels['worker-1'], 'canary');
    assert.equal(plan.stageLabels['worker-10'], 'batch-3');
    assert.equal(plan.stageLabels.cp2, 'control-plane');
    assert.equal(Object.keys(plan.stageLabels).length, 11);
  });

  it('is deterministic: shuffled input gives the same plan', () => {
    const nodes = [cp('cp1'), cp('cp2'), ...workers(12)];
    const reversed = [...nodes].reverse();
    assert.deepEqual(planRollout(reversed, { batchSize: 4 }), planRollout(nodes, { batchSize: 4 }));
  });

  it('keeps the listed order when asked', () => {
    const plan = planRollout([cp('cp1'), w('b'), w('a'), w('c')], { order: 'inventory', canary: 1, batchSize: 2 });
    assert.deepEqual(
      plan.phases.slice(1).map((p) => p.nodes),
      [['b'], ['a', 'c']],
    );
  });

  it('defaults: canary 1, maxUnavailable 1, batch size = maxUnavailable', () => {
    const plan = planRollout([cp('cp1'), ...workers(3)]);
    assert.deepEqual(plan.policy, { canary: 1, batchSize: 1, maxUnavailable: 1, order: 'name' });
    assert.deepEqual(
      plan.phases.map((p) => p.stage),
      ['control-plane', 'canary', 'batch-1', 'batch-2'],
    );
  });

  it('resolves a percentage of the workers, rounding down but never to zero', () => {
    assert.equal(resolveMaxUnavailable('10%', 100), 10);
    assert.equal(resolveMaxUnavailable('10%', 7), 1);
    assert.equal(resolveMaxUnavailable('25%', 10), 2);
    assert.equal(resolveMaxUnavailable('3', 10), 3);
    const plan = planRollout([cp('cp1'), ...workers(20)], { maxUnavailable: '10%', canary: 2 });
    assert.deepEqual(
      plan.phases.slice(1).map((p) => p.nodes.length),
      [2, 2, 2, 2, 2, 2, 2, 2, 2, 2],
    );
  });

  it('caps the nodes out at once at maxUnavailable even when batches are bigger', () => {
    const plan = planRollout([cp('cp1'), ...workers(9)], { canary: 3, batchSize: 6, maxUnavailable: 2 });
    assert.deepEqual(
      plan.phases.slice(1).map((p) => [p.nodes.length, p.maxUnavailable]),
      [
        [3, 2],
        [6, 2],
      ],
    );
  });

  it('takes explicit canary nodes and a chosen first control plane', () => {
    const plan = planRollout([cp('cp1'), cp('cp2'), ...workers(4)], { canaryNodes: ['worker-3'], firstControlPlane: 'cp2' });
    assert.deepEqual(plan.controlPlanes, ['cp2', 'cp1']);
    assert.deepEqual(plan.phases.find((p) => p.kind === 'canary')?.nodes, ['worker-3']);
    assert.ok(!plan.phases.filter((p) => p.kind === 'batch').some((p) => p.nodes.includes('worker-3')));
  });

  it('canary 0 goes straight to batches; more canaries than workers takes them all', () => {
    assert.deepEqual(
      planRollout([cp('cp1'), ...workers(2)], { canary: 0 }).phases.map((p) => p.stage),
      ['control-plane', 'batch-1', 'batch-2'],
    );
    assert.deepEqual(
      planRollout([cp('cp1'), ...workers(2)], { canary: 5 }).phases.map((p) => p.stage),
      ['control-plane', 'canary'],
    );
    assert.deepEqual(
      planRollout([cp('cp1')]).phases.map((p) => p.stage),
      ['control-plane'],
    );
  });

  const bad: [string, PlanNode[], object, RegExp][] = [
    ['no control plane', workers(2), {}, /no control-plane node/],
    ['duplicate node', [cp('cp1'), w('a'), w('a')], {}, /node a is listed twice/],
    ['unknown role', [cp('cp1'), { name: 'x', role: 'etcd' as 'worker' }], {}, /role must be/],
    ['nameless node', [cp('cp1'), { role: 'worker' } as PlanNode], {}, /needs a name/],
    ['batch size 0', [cp('cp1'), ...workers(2)], { batchSize: 0 }, /batchSize must be an integer ≥ 1/],
    ['negative canary', [cp('cp1'), ...workers(2)], { canary: -1 }, /canary must be an integer ≥ 0/],
    ['fractional maxUnavailable', [cp('cp1'), ...workers(2)], { maxUnavailable: 1.5 }, /maxUnavailable must be an integer/],
    ['bad percentage', [cp('cp1'), ...workers(2)], { maxUnavailable: '150%' }, /count or a percentage/],
    ['canary that is not a worker', [cp('cp1'), ...workers(2)], { canaryNodes: ['cp1'] }, /canary node cp1 is not a worker/],
    [
      'unknown first control plane',
      [cp('cp1'), ...workers(2)],
      { firstControlPlane: 'worker-1' },
      /firstControlPlane worker-1 is not a control-plane node/,
    ],
    ['unknown order', [cp('cp1')], { order: 'random' }, /order must be/],
  ];
  for (const [name, nodes, policy, message] of bad) {
    it(`refuses ${name}`, () =>
      assert.throws(
        () => planRollout(nodes, policy),
        (err: unknown) => err instanceof RuleError && message.test(err.message),
      ));
  }
});

describe('compareNatural', () => {
  it('sorts numbers inside names numerically', () => {
    assert.deepEqual(['n10', 'n2', 'n1', 'm', 'n2a', 'n02'].sort(compareNatural), ['m', 'n1', 'n02', 'n2', 'n2a', 'n10']);
  });
});

describe('withoutNodes', () => {
  const nodes: PlanNode[] = [
    { name: 'cp1', role: 'control-plane' },
    ...['w1', 'w2', 'w3', 'w4', 'w5'].map((name): PlanNode => ({ name, role: 'worker' })),
  ];
  const plan = planRollout(nodes, { canary: 1, batchSize: 2, maxUnavailable: 2 });

  it('takes skipped workers out of their phases and drops a phase left empty', () => {
    const out = withoutNodes(plan, ['w1', 'w3']);
    assert.deepEqual(
      out.phases.map((p) => `${p.stage}:${p.nodes.join(',')}:${p.maxUnavailable}`),
      ['control-plane:cp1:1', 'batch-1:w2:1', 'batch-2:w4,w5:2'],
    );
    assert.deepEqual(Object.keys(out.stageLabels), ['cp1', 'w2', 'w4', 'w5']);
  });

  it('never takes out a control plane, and leaves the plan as it is when nothing is skipped', () => {
    assert.deepEqual(withoutNodes(plan, ['cp1']).phases, plan.phases);
    assert.equal(withoutNodes(plan, []), plan);
  });
});
