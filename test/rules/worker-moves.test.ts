import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  buildRunbook,
  checkRunbook,
  hopWork,
  planRollout,
  planUpgrade,
  planWorkerHops,
  type ClusterInventory,
  type SkewInventory,
} from '../../rules/index.js';

const AVAILABLE = ['1.24.17', '1.25.16', '1.26.15', '1.27.16', '1.28.15', '1.30.14', '1.31.10', '1.32.4', '1.33.7', '1.34.2'];

/** One control plane at `cp` (apiserver, controller-manager, scheduler, kubelet) and workers at their own versions. */
function cluster(cp: string, workers: Record<string, string>): ClusterInventory {
  return {
    apiservers: [{ node: 'cp1', version: cp }],
    controllerManagers: [{ node: 'cp1', version: cp }],
    schedulers: [{ node: 'cp1', version: cp }],
    kubelets: [{ node: 'cp1', version: cp }, ...Object.entries(workers).map(([node, version]) => ({ node, version }))],
  };
}

describe('planWorkerHops: a worker moves as late and as seldom as the skew policy allows', () => {
  const table: [string, string[], SkewInventory, boolean, Record<string, string[]>][] = [
    [
      '1.32 → 1.34: n-3 holds at 1.33 and 1.34, each worker moves once, to the last hop',
      ['1.33.7', '1.34.2'],
      cluster('1.32.4', { w1: '1.32.4', w2: '1.32.4' }),
      false,
      { w1: ['1.34.2'], w2: ['1.34.2'] },
    ],
    [
      '1.30 → 1.34: 1.34 would put a 1.30 kubelet four minors behind, so it moves at 1.33 (the latest legal point), then at 1.34',
      ['1.31.10', '1.32.4', '1.33.7', '1.34.2'],
      cluster('1.30.14', { w1: '1.30.14' }),
      false,
      { w1: ['1.33.7', '1.34.2'] },
    ],
    [
      'a worker already behind moves earlier than the others',
      ['1.33.7', '1.34.2'],
      cluster('1.32.4', { w1: '1.32.4', old: '1.30.14' }),
      false,
      { w1: ['1.34.2'], old: ['1.33.7', '1.34.2'] },
    ],
    [
      'before 1.28 only two minors: 1.24 → 1.27 moves at 1.26 (a 1.24 kubelet under 1.27 would be 3 behind)',
      ['1.25.16', '1.26.15', '1.27.16'],
      cluster('1.24.17', { w1: '1.24.17' }),
      false,
      { w1: ['1.26.15', '1.27.16'] },
    ],
    [
      'across the 1.28 boundary: 1.25 → 1.28 moves once (n-3 from 1.28)',
      ['1.26.15', '1.27.16', '1.28.15'],
      cluster('1.25.16', { w1: '1.25.16' }),
      false,
      { w1: ['1.28.15'] },
    ],
    [
      'a worker already at the last hop does not move (a run finishing what an earlier one left behind)',
      ['1.34.2'],
      cluster('1.34.2', { w1: '1.34.2', w2: '1.33.7' }),
      false,
      { w1: [], w2: ['1.34.2'] },
    ],
    [
      'a worker whose kubelet version is unknown moves at every hop (nothing can be proved of it)',
      ['1.33.7', '1.34.2'],
      cluster('1.32.4', {}),
      false,
      { w9: ['1.33.7', '1.34.2'] },
    ],
    ['workersEveryHop keeps the older plan', ['1.33.7', '1.34.2'], cluster('1.32.4', { w1: '1.32.4' }), true, { w1: ['1.33.7', '1.34.2'] }],
  ];
  for (const [name, hops, state, everyHop, expected] of table) {
    it(name, () => assert.deepEqual(planWorkerHops(hops, state, Object.keys(expected), everyHop), expected));
  }
});

describe('planUpgrade 1.32 → 1.34 with workers moving once', () => {
  const inventory = cluster('1.32.4', { 'worker-1': '1.32.4', 'worker-2': '1.32.4', 'worker-3': '1.32.4' });
  const plan = planUpgrade({ inventory, to: '1.34', available: AVAILABLE, policy: { batchSize: 2 } });
  const kubeletHops = (node: string) => plan.steps.filter((s) => s.node === node && s.action === 'upgrade-kubelet').map((s) => s.hop);
  const drainHops = (node: string) => plan.steps.filter((s) => s.node === node && s.action === 'drain').map((s) => s.hop);

  it('moves the control plane through every hop and drains each worker once, at the last hop, straight to 1.34', () => {
    assert.deepEqual(plan.hops, ['1.33.7', '1.34.2']);
    assert.deepEqual(kubeletHops('cp1'), ['1.33.7', '1.34.2']);
    for (const w of ['worker-1', 'worker-2', 'worker-3']) {
      assert.deepEqual(kubeletHops(w), ['1.34.2'], w);
      assert.deepEqual(drainHops(w), ['1.34.2'], w);
      // kubeadm upgrade node of 1.34 on a node whose kubelet is 1.32, the repository pointed at 1.34 directly
      const node = plan.steps.find((s) => s.node === w && s.action === 'upgrade-node');
      assert.match(
        node?.command ?? '',
        /^point kubernetes\.list at v1\.34 && apt-get update -o Dir::Etc::SourceList=\/etc\/apt\/sources\.list\.d\/kubernetes\.list -o Dir::Etc::SourceParts=- && apt-get install kubeadm=1\.34\.2-\* && kubeadm upgrade node$/,
      );
    }
    assert.deepEqual(plan.workerHops, { 'worker-1': ['1.34.2'], 'worker-2': ['1.34.2'], 'worker-3': ['1.34.2'] });
  });

  it('has no workers gate and no worker phase in the hop the workers sit out', () => {
    const first = plan.steps.filter((s) => s.hop === '1.33.7');
    assert.deepEqual(
      first.filter((s) => s.action === 'gate' || s.stage === 'canary' || s.stage.startsWith('batch')),
      [],
    );
    assert.ok(plan.steps.some((s) => s.hop === '1.34.2' && s.action === 'gate' && s.stage === 'control-plane'));
  });

  it('says per hop what moves and which workers stay at which version', () => {
    assert.deepEqual(plan.moves, [
      {
        hop: '1.33.7',
        controlPlanes: ['cp1'],
        workers: [],
        workersStay: [{ version: '1.32.4', nodes: ['worker-1', 'worker-2', 'worker-3'] }],
      },
      { hop: '1.34.2', controlPlanes: ['cp1'], workers: ['worker-1', 'worker-2', 'worker-3'], workersStay: [] },
    ]);
  });

  it('judges every state step by step: 2 control-plane and 2 control-plane-kubelet changes, 3 worker kubelets', () => {
    assert.equal(plan.skew.compliant, true, JSON.stringify(plan.skew.failure));
    assert.equal(plan.skew.checkedSteps, 2 * 2 + 3);
  });

  it('workersEveryHop drains every worker at every hop, as before', () => {
    const old = planUpgrade({ inventory, to: '1.34', available: AVAILABLE, policy: { batchSize: 2, workersEveryHop: true } });
    for (const w of ['worker-1', 'worker-2', 'worker-3'])
      assert.deepEqual(
        old.steps.filter((s) => s.node === w && s.action === 'drain').map((s) => s.hop),
        ['1.33.7', '1.34.2'],
      );
    assert.equal(old.skew.checkedSteps, 2 * (2 + 3));
    assert.deepEqual(
      old.moves.map((m) => m.workers.length),
      [3, 3],
    );
  });
});

describe('the step-by-step check is the proof: it refuses a plan that leaves workers too far behind', () => {
  const inventory = cluster('1.30.14', { w1: '1.30.14' });
  const rollout = planRollout([
    { name: 'cp1', role: 'control-plane' },
    { name: 'w1', role: 'worker' },
  ]);
  const hops = ['1.31.10', '1.32.4', '1.33.7', '1.34.2'];

  it('1.30 → 1.34 with the worker moving only at the last hop breaks at the control plane of 1.34', () => {
    const steps = buildRunbook(hops, rollout, 'apt', inventory, { w1: ['1.34.2'] });
    const check = checkRunbook(inventory, steps);
    assert.equal(check.compliant, false);
    assert.equal(check.failure?.step?.hop, '1.34.2');
    assert.equal(check.failure?.step?.action, 'upgrade-control-plane');
    assert.deepEqual(
      check.failure?.violations.map((v) => `${v.node} ${v.ruleId}`),
      ['w1 node-too-old'],
    );
  });

  it("the planner's moves (1.33, then 1.34) hold in every state", () => {
    const plan = planUpgrade({ inventory, to: '1.34', available: AVAILABLE });
    assert.deepEqual(plan.workerHops, { w1: ['1.33.7', '1.34.2'] });
    assert.equal(plan.skew.compliant, true, JSON.stringify(plan.skew.failure));
    assert.equal(checkRunbook(inventory, buildRunbook(hops, rollout, 'apt', inventory, plan.workerHops)).compliant, true);
  });
});

describe('hopWork: what a hop of a half-done cluster still moves, with the workers the plan moves elsewhere left out', () => {
  const rollout = planRollout([
    { name: 'cp1', role: 'control-plane' },
    { name: 'w1', role: 'worker' },
    { name: 'w2', role: 'worker' },
  ]);
  const state = cluster('1.32.4', { w1: '1.32.4', w2: '1.30.14' });
  const table: [string, string, Record<string, string[]> | undefined, string[]][] = [
    ['no plan: every node below the hop', '1.33.7', undefined, ['cp1', 'w1', 'w2']],
    ['w1 moves only at 1.34: the control plane and w2 at 1.33', '1.33.7', { w1: ['1.34.2'], w2: ['1.33.7', '1.34.2'] }, ['cp1', 'w2']],
    ['at 1.34 both workers', '1.34.2', { w1: ['1.34.2'], w2: ['1.33.7', '1.34.2'] }, ['cp1', 'w1', 'w2']],
  ];
  for (const [name, hop, workerHops, kubelets] of table)
    it(name, () => assert.deepEqual(hopWork(state, hop, rollout, workerHops).kubelets, kubelets));
});
