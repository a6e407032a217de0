import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Client } from '@temporalio/client';
import { startOperator } from '../../demo/operator.js';
import type { KubeClients } from '../../sim/cluster/kube-clients.js';
import type { UpgradeStatus } from '../../workflows/rollout-messages.js';

/**
 * The demo's operator against a scripted upgrade status and a scripted API: what it runs with the
 * CLI, what it changes in the cluster, and that a node blocked again after a retry is handled again.
 */

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function world() {
  const status: UpgradeStatus = {
    cluster: 'demo',
    from: '1.32.4',
    to: '1.34',
    hops: ['1.33.7'],
    hop: '1.33.7',
    phase: 'gate',
    paused: false,
    nodes: {
      'cp-1': { phase: 'done', stage: 'control-plane' },
      'worker-1': { phase: 'pending', stage: 'canary' },
    },
    gates: [{ name: 'workers-1.33.7' }],
    snapshots: [],
    events: [],
    skipped: [],
    runs: 0,
  };
  const pdb = { replicas: 2, allowed: 0 };
  const patches: unknown[] = [];
  const cli: string[][] = [];
  const kube = {
    core: {
      listNode: async () => ({
        items: [
          {
            metadata: { name: 'cp-1', labels: { 'node-role.kubernetes.io/control-plane': '' } },
            status: { nodeInfo: { kubeletVersion: 'v1.33.7' }, conditions: [{ type: 'Ready', status: 'True' }] },
          },
        ],
      }),
      listNamespacedPod: async () => ({ items: [] }),
    },
    apps: {
      listDeploymentForAllNamespaces: async () => ({ items: [] }),
      listNamespacedDeployment: async () => ({
        items: [
          { metadata: { name: 'payments' }, spec: { replicas: pdb.replicas, template: { metadata: { labels: { app: 'payments' } } } } },
        ],
      }),
      listNamespacedStatefulSet: async () => ({ items: [] }),
      patchNamespacedDeployment: async (req: { name: string; body: { spec: { replicas: number } } }) => {
        patches.push(req);
        pdb.replicas = req.body.spec.replicas;
        setTimeout(() => (pdb.allowed = pdb.replicas - 2), 300); // the new replica turns Ready
        return {};
      },
    },
    policy: {
      readNamespacedPodDisruptionBudget: async () => ({
        metadata: { name: 'payments', namespace: 'default' },
        spec: { minAvailable: 2, selector: { matchLabels: { app: 'payments' } } },
        status: { currentHealthy: 2, expectedPods: pdb.replicas, disruptionsAllowed: pdb.allowed },
      }),
    },
  } as unknown as KubeClients;
  const client = { workflow: { getHandle: () => ({ query: async () => structuredClone(status) }) } } as unknown as Client;
  const block = () => {
    status.nodes['worker-1'] = {
      phase: 'blocked',
      stage: 'canary',
      blocked: {
        kind: 'DrainBlocked',
        message: 'drain of worker-1 did not finish within 15 s',
        pods: [{ namespace: 'default', name: 'payments-abc', pdbs: ['payments'] }],
      },
    };
  };
  const skewless = async (args: string[]) => {
    cli.push(args);
    if (args[0] === 'approve') {
      const g = status.gates.find((x) => x.name === args[args.indexOf('--gate') + 1]);
      if (!g) return 2;
      g.approvedBy = 'demo-operator';
    }
    if (args[0] === 'resolve') {
      if (status.nodes['worker-1']?.phase !== 'blocked') return 2;
      // The parent learns of the retry a moment after the update returns.
      setTimeout(() => (status.nodes['worker-1'] = { phase: 'draining', stage: 'canary' }), 400);
    }
    return 0;
  };
  return { status, pdb, patches, cli, kube, client, block, skewless };
}

async function until(what: string, check: () => boolean, ms = 10_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(50);
  }
}

describe('the demo operator', () => {
  it(
    'approves a gate after checking, fixes a budget that allows no eviction, retries, and handles a second block',
    { timeout: 30_000 },
    async () => {
      const w = world();
      const lines: string[] = [];
      const op = startOperator({
        client: w.client,
        workflowId: 'upgrade/demo',
        cluster: 'demo',
        kube: w.kube,
        skewless: w.skewless,
        say: (l) => lines.push(l),
        pollMs: 50,
      });
      try {
        await until('the gate approval', () => w.status.gates[0]?.approvedBy !== undefined);
        const approve = w.cli.find((a) => a[0] === 'approve') as string[];
        assert.deepEqual(approve.slice(0, 4), ['approve', 'demo', '--gate', 'workers-1.33.7']);
        assert.match(approve[approve.indexOf('--comment') + 1] as string, /cp-1 Ready at v1\.33\.7/);

        w.block();
        await until('a retry', () => w.cli.some((a) => a[0] === 'resolve'));
        assert.deepEqual(
          w.patches,
          [{ namespace: 'default', name: 'payments', body: { spec: { replicas: 3 } } }],
          'scaled to minAvailable + 1',
        );
        assert.ok(w.pdb.allowed >= 1, 'the retry came after the budget allowed an eviction');
        const retry = w.cli.find((a) => a[0] === 'resolve') as string[];
        assert.deepEqual(retry.slice(0, 6), ['resolve', 'demo', '--node', 'worker-1', '--action', 'retry']);
        assert.ok(
          lines.some((l) =>
            /^\[operator\] PodDisruptionBudget default\/payments: minAvailable 2, 2 of 2 pods healthy, 0 disruption/.test(l),
          ),
          lines.join('\n'),
        );

        // Blocked again after the retry (a transient block, a drain timeout later): handled again, not scaled again.
        await until('the retry to reach the workflow', () => w.status.nodes['worker-1']?.phase === 'draining');
        await sleep(1000);
        w.block();
        await until('a second retry', () => w.cli.filter((a) => a[0] === 'resolve').length === 2);
        assert.equal(w.patches.length, 1);
        await until('the second retry to reach the workflow', () => w.status.nodes['worker-1']?.phase === 'draining');
        assert.equal(op.blocked['worker-1'], 'drain blocked by PDB default/payments: scaled default/payments to 3, retried 2×');
        assert.deepEqual(op.actions, [
          'approved gate workers-1.33.7',
          'scaled Deployment default/payments 2 → 3 so that default/payments allows an eviction',
          'retried the drain of worker-1',
          'retried the drain of worker-1',
        ]);
      } finally {
        await op.stop();
      }
    },
  );
});
