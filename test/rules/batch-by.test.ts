import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { batchesWithin, failureDomains, planRollout, RuleError, type PlanNode } from '../../rules/index.js';

const ZONE = 'topology.kubernetes.io/zone';
const cp: PlanNode = { name: 'cp-1', role: 'control-plane' };
const w = (name: string, zone?: string): PlanNode => ({
  name,
  role: 'worker',
  ...(zone === undefined ? {} : { labels: { [ZONE]: zone } }),
});
/** Nine workers, three per zone, the zones interleaved by name (worker-1 in a, worker-2 in b, ...). */
const nine = Array.from({ length: 9 }, (_, i) => w(`worker-${i + 1}`, ['a', 'b', 'c'][i % 3]));

describe('failureDomains', () => {
  it('groups workers by the label, named values first in their order, the rest natural, unlabelled last', () => {
    const nodes = [w('n1', 'z10'), w('n2'), w('n3', 'z2'), w('n4', 'z1'), w('n5', 'z2')];
    assert.deepEqual(
      failureDomains(nodes, ZONE, ['z2']).map((d) => [d.value, d.nodes]),
      [
        ['z2', ['n3', 'n5']],
        ['z1', ['n4']],
        ['z10', ['n1']],
        ['', ['n2']],
      ],
    );
    // A named value no worker carries is passed over.
    assert.deepEqual(
      failureDomains(nodes, ZONE, ['gone', 'z10']).map((d) => d.value),
      ['z10', 'z1', 'z2', ''],
    );
  });

  it('cuts each domain into batches of the size, never across two', () => {
    const cut = batchesWithin(
      [
        { value: 'a', nodes: ['1', '2', '3', '4'] },
        { value: 'b', nodes: ['5'] },
      ],
      3,
    );
    assert.deepEqual(cut, [
      { value: 'a', nodes: ['1', '2', '3'] },
      { value: 'a', nodes: ['4'] },
      { value: 'b', nodes: ['5'] },
    ]);
  });
});

describe('planRollout with batchBy', () => {
  const workerPhases = (policy: Parameters<typeof planRollout>[1]) =>
    planRollout([cp, ...nine], policy)
      .phases.filter((p) => p.kind !== 'control-plane')
      .map((p) => [p.stage, p.domain, p.nodes]);

  it('every batch one zone, the canary from the first zone, the zones in the order asked', () => {
    assert.deepEqual(workerPhases({ batchSize: 3, batchBy: ZONE, batchOrder: ['b', 'c', 'a'] }), [
      ['canary', 'b', ['worker-2']],
      ['batch-1', 'b', ['worker-5', 'worker-8']],
      ['batch-2', 'c', ['worker-3', 'worker-6', 'worker-9']],
      ['batch-3', 'a', ['worker-1', 'worker-4', 'worker-7']],
    ]);
  });

  it('without batchBy the batches mix zones, as before', () => {
    assert.deepEqual(workerPhases({ batchSize: 3 })[1], ['batch-1', undefined, ['worker-2', 'worker-3', 'worker-4']]);
  });

  it("a canary larger than the first zone stays inside it; named canary nodes are the operator's choice", () => {
    assert.deepEqual(workerPhases({ canary: 5, batchSize: 3, batchBy: ZONE })[0], ['canary', 'a', ['worker-1', 'worker-4', 'worker-7']]);
    assert.deepEqual(workerPhases({ canaryNodes: ['worker-2', 'worker-3'], batchBy: ZONE, batchSize: 3 })[0], [
      'canary',
      undefined,
      ['worker-2', 'worker-3'],
    ]);
  });

  it('batchOrder without batchBy is refused', () => {
    assert.throws(
      () => planRollout([cp, ...nine], { batchOrder: ['a'] }),
      (e: unknown) => e instanceof RuleError && /batchOrder .*batchBy/.test(e.message),
    );
  });
});
