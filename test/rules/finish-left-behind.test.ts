import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  hopWork,
  planRollout,
  planUpgrade,
  RuleError,
  type ClusterInventory,
  type ComponentVersion,
  type RunbookStep,
} from '../../rules/index.js';

// A cluster an earlier run left half-way: the rules plan the run that finishes it (issue 19, §1).

const AVAILABLE = ['1.32.4', '1.33.7', '1.34.2'];

/** `cp-1..n` and `worker-1..m`, every component at `base`, then the versions `at` names. */
function cluster(base: string, at: Record<string, string> = {}, cps = 3, workers = 4): ClusterInventory {
  const cp = Array.from({ length: cps }, (_, i) => `cp-${i + 1}`);
  const w = Array.from({ length: workers }, (_, i) => `worker-${i + 1}`);
  const list = (nodes: string[], kind: string): ComponentVersion[] =>
    nodes.map((node) => ({ node, version: at[`${kind} ${node}`] ?? at[node] ?? base }));
  return {
    apiservers: list(cp, 'apiserver'),
    controllerManagers: list(cp, 'apiserver'),
    schedulers: list(cp, 'apiserver'),
    kubelets: list([...cp, ...w], 'kubelet'),
    kubeProxies: list([...cp, ...w], 'kube-proxy'),
  };
}

const moved = (steps: RunbookStep[], action: RunbookStep['action']) =>
  steps.filter((s) => s.action === action).map((s) => `${s.hop} ${s.node}`);

describe('finishing what a run left behind', () => {
  const cases: {
    name: string;
    inventory: ClusterInventory;
    to: string;
    hops: string[];
    components: string[];
    kubelets: string[];
    apply: string[];
    canary: string[];
  }[] = [
    {
      name: "aborted after the control planes: the workers finish at the control plane's version, each by name or minor or latest-patch",
      inventory: cluster('1.33.7', { 'kubelet worker-1': '1.32.4', 'kubelet worker-3': '1.32.4', 'kubelet worker-4': '1.32.4' }),
      to: '1.33',
      hops: ['1.33.7'],
      components: [],
      apply: [],
      kubelets: ['1.33.7 worker-1', '1.33.7 worker-3', '1.33.7 worker-4'],
      canary: ['worker-1'],
    },
    {
      name: "aborted after the control planes' components: their kubelets too",
      inventory: cluster('1.32.4', { 'apiserver cp-1': '1.33.7', 'apiserver cp-2': '1.33.7', 'apiserver cp-3': '1.33.7' }),
      to: '1.33.7',
      hops: ['1.33.7'],
      components: [],
      apply: [],
      kubelets: ['1.33.7 cp-1', '1.33.7 cp-2', '1.33.7 cp-3', '1.33.7 worker-1', '1.33.7 worker-2', '1.33.7 worker-3', '1.33.7 worker-4'],
      canary: ['worker-1'],
    },
    {
      name: 'a control plane left half-way: the rest run kubeadm upgrade node, apply has run',
      inventory: cluster('1.32.4', { 'apiserver cp-1': '1.33.7' }),
      to: '1.33',
      hops: ['1.33.7'],
      components: ['1.33.7 cp-2', '1.33.7 cp-3'],
      apply: [],
      kubelets: ['1.33.7 cp-1', '1.33.7 cp-2', '1.33.7 cp-3', '1.33.7 worker-1', '1.33.7 worker-2', '1.33.7 worker-3', '1.33.7 worker-4'],
      canary: ['worker-1'],
    },
    {
      name: 'a skipped worker two minors behind after a two-hop run, and one a minor behind',
      inventory: cluster('1.34.2', { 'kubelet worker-2': '1.32.4', 'kubelet worker-3': '1.33.7' }),
      to: 'latest-patch',
      hops: ['1.34.2'],
      components: [],
      apply: [],
      kubelets: ['1.34.2 worker-2', '1.34.2 worker-3'],
      canary: ['worker-2'],
    },
    {
      name: 'a converged cluster upgrades every node, apply on the first control plane',
      inventory: cluster('1.32.4'),
      to: '1.33',
      hops: ['1.33.7'],
      components: ['1.33.7 cp-1', '1.33.7 cp-2', '1.33.7 cp-3'],
      apply: ['1.33.7 cp-1'],
      kubelets: ['1.33.7 cp-1', '1.33.7 cp-2', '1.33.7 cp-3', '1.33.7 worker-1', '1.33.7 worker-2', '1.33.7 worker-3', '1.33.7 worker-4'],
      canary: ['worker-1'],
    },
    {
      name: 'a half-way control plane on the way to two minors: the first hop finishes it, the second moves all; workers once, at the last',
      inventory: cluster('1.32.4', { 'apiserver cp-1': '1.33.7' }),
      to: '1.34',
      hops: ['1.33.7', '1.34.2'],
      components: ['1.33.7 cp-2', '1.33.7 cp-3', '1.34.2 cp-1', '1.34.2 cp-2', '1.34.2 cp-3'],
      apply: ['1.34.2 cp-1'],
      kubelets: [
        ...['cp-1', 'cp-2', 'cp-3'].map((n) => `1.33.7 ${n}`),
        ...['cp-1', 'cp-2', 'cp-3', 'worker-1', 'worker-2', 'worker-3', 'worker-4'].map((n) => `1.34.2 ${n}`),
      ],
      canary: ['worker-1'],
    },
  ];
  for (const c of cases) {
    it(c.name, () => {
      const plan = planUpgrade({ inventory: c.inventory, to: c.to, available: AVAILABLE });
      assert.deepEqual(plan.hops, c.hops);
      assert.deepEqual(moved(plan.steps, 'upgrade-control-plane'), c.components);
      assert.deepEqual(
        plan.steps
          .filter((s) => s.action === 'upgrade-control-plane' && /kubeadm upgrade apply/.test(s.command ?? ''))
          .map((s) => `${s.hop} ${s.node}`),
        c.apply,
      );
      assert.deepEqual(moved(plan.steps, 'upgrade-kubelet'), c.kubelets);
      assert.deepEqual(plan.rollout.phases.find((p) => p.kind === 'canary')?.nodes ?? [], c.canary);
      // No drain of a node that does not move.
      assert.deepEqual(moved(plan.steps, 'drain'), c.kubelets);
      assert.equal(plan.skew.compliant, true, JSON.stringify(plan.skew.failure));
      // kubeadm upgrade plan runs only in a hop that moves a control plane's components.
      assert.deepEqual(
        [...new Set(plan.steps.filter((s) => s.action === 'preflight').map((s) => s.hop))],
        [...new Set(c.components.map((s) => s.split(' ')[0]))],
      );
    });
  }

  it('the last control plane to move takes the kubeadm addons (kube-proxy), even when the first one had moved', () => {
    const plan = planUpgrade({ inventory: cluster('1.32.4', { 'apiserver cp-1': '1.33.7' }), to: '1.33', available: AVAILABLE });
    assert.deepEqual(
      plan.steps.filter((s) => s.addons).map((s) => s.node),
      ['cp-3'],
    );
  });

  it('a converged cluster at the target has nothing to do', () => {
    for (const to of ['1.33', '1.33.7', 'latest-patch']) {
      const plan = planUpgrade({ inventory: cluster('1.33.7'), to, available: AVAILABLE });
      assert.deepEqual([plan.hops, plan.steps], [[], []], to);
    }
  });

  it('named canaries that have nothing left to do give way to the default canary', () => {
    const inventory = cluster('1.33.7', { 'kubelet worker-3': '1.32.4', 'kubelet worker-4': '1.32.4' });
    const plan = planUpgrade({ inventory, to: '1.33', available: AVAILABLE, policy: { canaryNodes: ['worker-1'] } });
    assert.deepEqual(
      plan.rollout.phases.filter((p) => p.kind !== 'control-plane').map((p) => [p.kind, p.nodes]),
      [
        ['canary', ['worker-3']],
        ['batch', ['worker-4']],
      ],
    );
  });

  it('refuses to finish at a version the repository no longer offers, naming the nodes behind', () => {
    assert.throws(
      () => planUpgrade({ inventory: cluster('1.33.7', { 'kubelet worker-2': '1.32.4' }), to: '1.33', available: ['1.32.4', '1.33.5'] }),
      (err: unknown) => err instanceof RuleError && /^1\.33\.7 is not among the available versions: worker-2 cannot/.test(err.message),
    );
  });

  it('hopWork reads an unknown kubelet as behind, and apply only where the first control plane moves', () => {
    const rollout = planRollout([
      { name: 'cp-1', role: 'control-plane' },
      { name: 'cp-2', role: 'control-plane' },
      { name: 'w', role: 'worker' },
    ]);
    const state = {
      apiservers: [
        { node: 'cp-1', version: '1.33.7' },
        { node: 'cp-2', version: '1.32.4' },
      ],
      kubelets: [{ node: 'cp-1', version: '1.33.7' }],
    };
    assert.deepEqual(hopWork(state, '1.33.7', rollout), { hop: '1.33.7', controlPlanes: ['cp-2'], apply: false, kubelets: ['cp-2', 'w'] });
  });
});
