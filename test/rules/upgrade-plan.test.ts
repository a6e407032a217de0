import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  applyStep,
  buildRunbook,
  checkRunbook,
  checkSkew,
  inventoryNodes,
  planRollout,
  planUpgrade,
  RuleError,
  type ClusterInventory,
  type RunbookStep,
} from '../../rules/index.js';

const AVAILABLE = ['1.27.16', '1.28.15', '1.29.10', '1.32.4', '1.33.7', '1.34.2'];

function cluster(version: string, cps = 3, workers = 7, extra: Partial<ClusterInventory> = {}): ClusterInventory {
  const cpNames = Array.from({ length: cps }, (_, i) => `cp${i + 1}`);
  const wNames = Array.from({ length: workers }, (_, i) => `worker-${i + 1}`);
  const all = [...cpNames, ...wNames];
  return {
    apiservers: cpNames.map((node) => ({ node, version })),
    controllerManagers: cpNames.map((node) => ({ node, version })),
    schedulers: cpNames.map((node) => ({ node, version })),
    kubelets: all.map((node) => ({ node, version })),
    kubeProxies: all.map((node) => ({ node, version })),
    ...extra,
  };
}

const stepsOf = (steps: RunbookStep[], hop: string) => steps.filter((s) => s.hop === hop);

describe('planUpgrade: 3 control planes and 7 workers, 1.32 → 1.34', () => {
  const plan = planUpgrade({ inventory: cluster('1.32.4'), to: '1.34', available: AVAILABLE, policy: { batchSize: 3, maxUnavailable: 2 } });

  it('goes through two hops, one minor at a time', () => {
    assert.equal(plan.from, '1.32.4');
    assert.deepEqual(plan.hops, ['1.33.7', '1.34.2']);
  });

  it('takes the etcd backup first in every hop', () => {
    for (const hop of plan.hops) assert.equal(stepsOf(plan.steps, hop)[0]?.action, 'backup');
  });

  it('uncordons last on every node it moves, after cordon → drain → kubelet → Ready', () => {
    for (const hop of plan.hops) {
      // the control planes at every hop, the workers once (at the last: n-3 holds at 1.33 with them at 1.32)
      const moving = Object.keys(plan.rollout.stageLabels).filter((n) => hop === '1.34.2' || plan.rollout.controlPlanes.includes(n));
      assert.deepEqual(
        [...new Set(stepsOf(plan.steps, hop).flatMap((s) => (s.node && s.action === 'uncordon' ? [s.node] : [])))].sort(),
        moving.sort(),
      );
      for (const node of moving) {
        const mine = stepsOf(plan.steps, hop)
          .filter((s) => s.node === node)
          .map((s) => s.action);
        assert.equal(mine.at(-1), 'uncordon', `${hop} ${node}: ${mine.join(',')}`);
        const order = ['cordon', 'drain', 'upgrade-kubelet', 'wait-ready', 'uncordon'].map((a) => mine.indexOf(a as RunbookStep['action']));
        assert.ok(
          order.every((i, k) => i >= 0 && (k === 0 || i > (order[k - 1] as number))),
          `${hop} ${node}: ${mine.join(',')}`,
        );
      }
    }
  });

  it('runs kubeadm upgrade apply once per hop, on the first control plane, and upgrade node on the others', () => {
    for (const hop of plan.hops) {
      const cpSteps = stepsOf(plan.steps, hop).filter((s) => s.action === 'upgrade-control-plane');
      assert.deepEqual(
        cpSteps.map((s) => s.node),
        ['cp1', 'cp2', 'cp3'],
      );
      assert.match(cpSteps[0]?.command ?? '', new RegExp(`kubeadm upgrade apply v${hop.replace(/\./g, '\\.')} --yes`));
      assert.ok(cpSteps.slice(1).every((s) => s.command?.endsWith('kubeadm upgrade node')));
      assert.deepEqual(
        cpSteps.map((s) => Boolean(s.addons)),
        [false, false, true],
      );
    }
  });

  it('moves every control plane before any kubelet, and the canary before the batches', () => {
    assert.deepEqual(
      [
        ...new Set(
          stepsOf(plan.steps, '1.33.7')
            .filter((s) => s.action === 'upgrade-kubelet')
            .map((s) => s.stage),
        ),
      ],
      ['control-plane'],
    );
    const hop = stepsOf(plan.steps, '1.34.2');
    const lastCp = hop.findLastIndex((s) => s.action === 'upgrade-control-plane');
    const firstKubelet = hop.findIndex((s) => s.action === 'upgrade-kubelet');
    assert.ok(lastCp < firstKubelet);
    const stages = [...new Set(hop.filter((s) => s.action === 'upgrade-kubelet').map((s) => s.stage))];
    assert.deepEqual(stages, ['control-plane', 'canary', 'batch-1', 'batch-2']);
  });

  it('holds the skew policy after every version change', () => {
    assert.equal(plan.skew.compliant, true);
    // 3 control-plane components and 3 control-plane kubelets per hop, 7 worker kubelets once
    assert.equal(plan.skew.checkedSteps, 2 * (3 + 3) + 7);
  });
});

describe('planUpgrade with fixPrerequisites: the etcd patch step in the runbook (issue 35)', () => {
  const request = { inventory: cluster('1.32.4', 3, 2), to: '1.34', available: AVAILABLE };
  const patchRows = (steps: RunbookStep[]) => steps.filter((s) => s.action === 'etcd-patch');

  it('before the hop that brings etcd 3.6 only: a snapshot, then each control plane to the target, before the hop of its own backup', () => {
    const plan = planUpgrade({ ...request, policy: { fixPrerequisites: true } });
    assert.deepEqual(patchRows(stepsOf(plan.steps, '1.33.7')), [], 'kubeadm 1.33 keeps etcd 3.5: no patch before it');
    const hop = stepsOf(plan.steps, '1.34.2');
    assert.deepEqual(
      hop.slice(0, 5).map((s) => [s.action, s.node]),
      [
        ['backup', 'cp1'],
        ['etcd-patch', 'cp1'],
        ['etcd-patch', 'cp2'],
        ['etcd-patch', 'cp3'],
        ['backup', 'cp1'],
      ],
    );
    assert.match(hop[0]!.detail, /^etcd snapshot on cp1 before the etcd patch/);
    for (const s of patchRows(hop)) {
      assert.match(
        s.detail,
        new RegExp(`^etcd member on ${s.node} to 3\\.5\\.36-0 if below it \\(one member at a time, followers first, the leader last\\)`),
      );
      assert.match(s.command ?? '', /etcd\.yaml → 3\.5\.36-0/);
    }
    assert.equal(plan.skew.compliant, true, 'the rows change no Kubernetes version');
  });

  it("names the configuration's etcd.patchImageTag as the target; a bad one is the rules' refusal naming the key", () => {
    const plan = planUpgrade({ ...request, policy: { fixPrerequisites: true }, etcdPatchImageTag: '3.5.27-0' });
    assert.deepEqual([...new Set(patchRows(plan.steps).map((s) => /to (\S+) if below/.exec(s.detail)?.[1]))], ['3.5.27-0']);
    assert.throws(
      () => planUpgrade({ ...request, policy: { fixPrerequisites: true }, etcdPatchImageTag: '3.6.5-0' }),
      (e: unknown) => e instanceof RuleError && /^etcd\.patchImageTag "3\.6\.5-0"/.test(e.message),
    );
  });

  it('without fixPrerequisites, or with no hop into 1.34, no etcd patch row', () => {
    assert.deepEqual(patchRows(planUpgrade(request).steps), []);
    assert.deepEqual(patchRows(planUpgrade({ ...request, to: '1.33', policy: { fixPrerequisites: true } }).steps), []);
  });
});

describe('checkRunbook names the first step that would break the policy', () => {
  it('a stray old kubelet that would fall 4 minors behind', () => {
    const inventory = cluster('1.32.4', 1, 2, {});
    inventory.kubelets?.push({ node: 'old-mini-pc', version: '1.29.10' });
    const plan = planUpgrade({ inventory, to: '1.33', available: AVAILABLE });
    assert.equal(plan.skew.compliant, false);
    const failure = plan.skew.failure;
    assert.equal(failure?.step?.action, 'upgrade-control-plane');
    assert.equal(failure?.step?.node, 'cp1');
    assert.equal(failure?.step?.hop, '1.33.7');
    assert.deepEqual(
      failure?.violations.map((v) => `${v.component}/${v.node}/${v.ruleId}`),
      ['kubelet/old-mini-pc/node-too-old'],
    );
  });

  it('an operator kubectl left two minors behind by the second hop', () => {
    const inventory = cluster('1.32.4', 1, 1, { kubectl: [{ node: 'laptop', version: '1.32.0' }] });
    const plan = planUpgrade({ inventory, to: '1.34', available: AVAILABLE });
    assert.equal(plan.skew.failure?.step?.hop, '1.34.2');
    assert.equal(plan.skew.failure?.step?.action, 'upgrade-control-plane');
    assert.equal(plan.skew.failure?.violations[0]?.ruleId, 'kubectl-skew');
  });

  it('a cluster already out of policy fails at the current state', () => {
    const inventory = cluster('1.32.4', 1, 1);
    inventory.kubelets = [
      { node: 'cp1', version: '1.32.4' },
      { node: 'worker-1', version: '1.33.0' },
    ];
    const plan = planUpgrade({ inventory, to: '1.33', available: AVAILABLE });
    assert.equal(plan.skew.failure?.stepIndex, -1);
    assert.equal(plan.skew.failure?.violations[0]?.ruleId, 'node-newer-than-apiserver');
  });

  it("refuses kubeadm's per-node order in HA: a control-plane kubelet moved before the other apiservers", () => {
    const inventory = cluster('1.32.4', 2, 0);
    const rollout = planRollout([
      { name: 'cp1', role: 'control-plane' },
      { name: 'cp2', role: 'control-plane' },
    ]);
    const naive = buildRunbook(['1.33.7'], rollout);
    // Reorder to "cp1: apply, then its kubelet" before cp2's components.
    const cp1Kubelet = naive.findIndex((s) => s.action === 'upgrade-kubelet' && s.node === 'cp1');
    const cp2Components = naive.findIndex((s) => s.action === 'upgrade-control-plane' && s.node === 'cp2');
    const reordered = [...naive];
    const [moved] = reordered.splice(cp1Kubelet, 1);
    reordered.splice(cp2Components, 0, moved as RunbookStep);
    const result = checkRunbook(inventory, reordered);
    assert.equal(result.failure?.step?.action, 'upgrade-kubelet');
    assert.equal(result.failure?.violations[0]?.ruleId, 'node-newer-than-apiserver');
    assert.equal(checkRunbook(inventory, naive).compliant, true);
  });

  it('judges a kubelet step by the moved kubelet and kubectl alone, as a whole check of every step would', () => {
    // The whole state judged after every step, as checkRunbook did before it judged only what a kubelet step moves.
    const whole = (inventory: ClusterInventory, steps: readonly RunbookStep[]) => {
      let state = inventory;
      for (const [i, step] of steps.entries()) {
        state = applyStep(state, step);
        const r = checkSkew(state, { topology: 'kubeadm' });
        if (!r.compliant) return { stepIndex: i, violations: r.violations };
      }
      return undefined;
    };
    const inventory = cluster('1.32.4', 2, 40, { kubectl: [{ node: 'worker-7', version: '1.32.4' }] });
    const steps = buildRunbook(['1.33.7', '1.34.2'], planRollout(inventoryNodes(inventory), { batchSize: 5 }));
    assert.equal(checkRunbook(inventory, steps).compliant, true);
    assert.equal(whole(inventory, steps), undefined);
    // worker-7 (with a kubectl) moved to 1.34 before any apiserver of 1.34: both checks name the same step and rule.
    const early = steps.findIndex((s) => s.action === 'upgrade-kubelet' && s.hop === '1.34.2' && s.node === 'worker-7');
    const reordered = [...steps];
    const [moved] = reordered.splice(early, 1);
    reordered.splice(
      steps.findIndex((s) => s.hop === '1.34.2'),
      0,
      moved as RunbookStep,
    );
    const fast = checkRunbook(inventory, reordered).failure;
    assert.deepEqual(fast && { stepIndex: fast.stepIndex, violations: fast.violations }, whole(inventory, reordered));
    assert.deepEqual(
      fast?.violations.map((v) => `${v.component}/${v.node}/${v.ruleId}`),
      ['kubelet/worker-7/node-newer-than-apiserver'], // its kubectl, 1.34 against 1.33, is within one minor
    );
  });

  it('crosses the 1.28 boundary with kubelets two minors behind', () => {
    const inventory = cluster('1.27.16', 1, 2);
    inventory.kubelets = inventory.kubelets?.map((k) => (k.node === 'worker-2' ? { ...k, version: '1.25.16' } : k));
    const plan = planUpgrade({ inventory, to: '1.29', available: AVAILABLE });
    assert.deepEqual(plan.hops, ['1.28.15', '1.29.10']);
    assert.equal(plan.skew.compliant, true, JSON.stringify(plan.skew.failure));
  });
});

describe('planUpgrade: inventory shape', () => {
  it('derives roles when nodes are not listed', () => {
    const plan = planUpgrade({ inventory: cluster('1.33.7', 2, 2), to: '1.34', available: AVAILABLE });
    assert.deepEqual(plan.rollout.controlPlanes, ['cp1', 'cp2']);
    assert.deepEqual(Object.keys(plan.rollout.stageLabels).sort(), ['cp1', 'cp2', 'worker-1', 'worker-2']);
  });

  it('upgrades from the oldest apiserver of a half-done HA cluster', () => {
    const inventory = cluster('1.33.7', 2, 1);
    inventory.apiservers = [
      { node: 'cp1', version: '1.34.2' },
      { node: 'cp2', version: '1.33.7' },
    ];
    const plan = planUpgrade({ inventory, to: '1.34', available: AVAILABLE });
    assert.equal(plan.from, '1.33.7');
    assert.deepEqual(plan.hops, ['1.34.2']);
  });

  it('has no steps when already at the target', () => {
    const plan = planUpgrade({ inventory: cluster('1.34.2', 1, 1), to: '1.34', available: AVAILABLE });
    assert.deepEqual(plan.hops, []);
    assert.deepEqual(plan.steps, []);
    assert.equal(plan.skew.compliant, true);
  });

  const bad: [string, ClusterInventory, RegExp][] = [
    [
      'control plane without an apiserver',
      {
        ...cluster('1.33.7', 1, 1),
        nodes: [
          { name: 'cp1', role: 'control-plane' },
          { name: 'cp9', role: 'control-plane' },
        ],
      },
      /control-plane node cp9 has no kube-apiserver/,
    ],
    [
      'apiserver node listed as worker',
      { ...cluster('1.33.7', 1, 0), nodes: [{ name: 'cp1', role: 'worker' }] },
      /cp1 runs a kube-apiserver but is listed as a worker/,
    ],
    [
      'apiserver node missing from nodes',
      { ...cluster('1.33.7', 2, 0), nodes: [{ name: 'cp1', role: 'control-plane' }] },
      /kube-apiserver node cp2 is missing/,
    ],
    ['bad version', cluster('1.33', 1, 0), /apiservers\[0\] \(cp1\): invalid Kubernetes version/],
  ];
  for (const [name, inventory, message] of bad) {
    it(`refuses ${name}`, () =>
      assert.throws(
        () => planUpgrade({ inventory, to: '1.34', available: AVAILABLE }),
        (err: unknown) => err instanceof RuleError && message.test(err.message),
      ));
  }
});
