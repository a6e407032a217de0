import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { untilStatus } from '../helpers/status-polling.js';
import { simWorker } from '../helpers/workers.js';
import { clusterUpgradeWorkflow } from '../../workflows/cluster-upgrade-workflow.js';
import { abortSignal, approveUpdate, resolveDrainUpdate, type UpgradeStatus } from '../../workflows/rollout-messages.js';
import type { TestCluster } from '../helpers/sim-cluster.js';
import { uniqueTaskQueue } from '../helpers/temporal-env.js';
import { startClusterWorld } from '../helpers/sim-world.js';
import { sshExec } from '../helpers/ssh-exec.js';

// worker-2 runs a pod no controller manages: its drain is refused until the operator decides.
const LAB = `
name: skipabort
version: 1.32.4
repository: [1.32.4, 1.33.7, 1.34.2]
nodes:
  - {name: cp, role: control-plane, count: 3}
  - {name: worker, role: worker, count: 3}
workloads:
  - {kind: Deployment, name: web, replicas: 3, pdb: {minAvailable: 2}}
  - {kind: Pod, name: pet, node: worker-2}
`;

describe('e2e: skip and abort leave the cluster as the workflow reports it', () => {
  let env: TestWorkflowEnvironment;
  let tc: TestCluster;
  before(async () => {
    [env, tc] = await startClusterWorld(LAB);
  });
  after(async () => {
    await tc?.stop();
    await env?.teardown();
  });

  it('skips the blocked node in the first hop, aborts at the canary gate of the second, and reports versions as they are', async () => {
    const taskQueue = uniqueTaskQueue('skipabort');
    const worker = await simWorker(env, tc.clustersDir, taskQueue);
    const holds = async () =>
      Object.fromEntries(
        await Promise.all(
          ['cp-1', 'cp-2', 'cp-3', 'worker-1', 'worker-2', 'worker-3'].map(async (n) => [
            n,
            (await sshExec(tc.sim.endpoints, n, 'apt-mark showhold')).stdout,
          ]),
        ),
      );
    const holdsBefore = await holds();
    const status = await worker.runUntil(async () => {
      // workersEveryHop: the workers move (and meet a canary gate) at both hops, as before issue 22.
      const handle = await env.client.workflow.start(clusterUpgradeWorkflow, {
        taskQueue,
        workflowId: 'upgrade/skipabort',
        args: [
          {
            cluster: 'skipabort',
            to: '1.34',
            policy: { canary: 1, maxUnavailable: 1, approveAfterCanary: true, verifySeconds: 60, workersEveryHop: true },
          },
        ],
      });
      const until = (what: string, check: (s: UpgradeStatus) => boolean) => untilStatus(handle, what, check, 300_000);
      // Hop 1.33.7: the canary gate, then worker-2 refuses to drain (an unmanaged pod).
      await until('canary gate of 1.33.7', (s) => s.gates.some((g) => g.name === 'canary-1.33.7' && !g.approvedBy));
      await handle.executeUpdate(approveUpdate, { args: [{ gate: 'canary-1.33.7', by: 'ops' }] });
      const blocked = await until('worker-2 blocked', (s) => s.nodes['worker-2']?.phase === 'blocked');
      assert.equal(blocked.nodes['worker-2']?.blocked?.kind, 'DrainRefused');
      assert.deepEqual(
        blocked.nodes['worker-2']?.blocked?.pods.map((p) => p.name),
        ['pet'],
      );
      const w2 = await tc.kube.core.readNode({ name: 'worker-2' });
      assert.equal(w2.spec?.unschedulable, true, 'cordoned while blocked');
      await handle.executeUpdate(resolveDrainUpdate, {
        args: [{ node: 'worker-2', action: 'skip', by: 'ops', comment: 'pet pod owner on holiday' }],
      });
      // Hop 1.34.2: abort at the canary gate.
      await until('canary gate of 1.34.2', (s) => s.gates.some((g) => g.name === 'canary-1.34.2' && !g.approvedBy));
      const mid = await tc.kube.core.readNode({ name: 'worker-2' });
      assert.equal(mid.spec?.unschedulable, true, 'a skipped node stays cordoned while the run goes on');
      assert.equal(mid.status?.nodeInfo?.kubeletVersion, 'v1.32.4');
      await handle.signal(abortSignal, { by: 'ops', reason: 'change freeze' });
      return handle.result();
    });

    assert.equal(status.phase, 'aborted', status.events.join('\n'));
    assert.deepEqual(status.skipped, ['worker-2']);
    assert.deepEqual(await holds(), holdsBefore, 'skipped or aborted, every node holds what it held before the run');
    // The report and the cluster agree, node by node.
    const nodes = (await tc.kube.core.listNode()).items;
    const actual = Object.fromEntries(
      nodes.map((n) => [n.metadata?.name as string, n.status?.nodeInfo?.kubeletVersion?.replace(/^v/, '')]),
    );
    const reported = Object.fromEntries(Object.entries(status.nodes).map(([n, s]) => [n, s.version]));
    assert.deepEqual(reported, actual);
    assert.deepEqual(actual, {
      'cp-1': '1.34.2',
      'cp-2': '1.34.2',
      'cp-3': '1.34.2',
      'worker-1': '1.34.2',
      'worker-2': '1.32.4',
      'worker-3': '1.33.7',
    });
    for (const [node, version] of Object.entries(actual))
      assert.match(
        status.outcome ?? '',
        new RegExp(`${node}[^;]* at ${version.replace(/\./g, '\\.')}|${node}, [^;]* at ${version.replace(/\./g, '\\.')}`),
      );
    assert.match(
      status.outcome ?? '',
      /^aborted by ops: change freeze; .*skipped: worker-2; no node left cordoned by this run; kubernetes\.list on worker-2 points at v1\.33, ahead of its kubelet 1\.32\.4 \(held: kubeadm kubelet kubectl\); finish with: skewless upgrade --cluster skipabort --to 1\.34 --task-queue test-skipabort-\S+ .*$/,
    );
    assert.ok(
      nodes.every((n) => !n.spec?.unschedulable),
      `cordoned: ${nodes
        .filter((n) => n.spec?.unschedulable)
        .map((n) => n.metadata?.name)
        .join(', ')}`,
    );
    assert.ok(
      nodes.every((n) => !n.metadata?.labels?.['skewless.io/stage']),
      'no stage label left',
    );
    assert.ok(
      nodes.every((n) => !Object.keys(n.metadata?.annotations ?? {}).some((k) => k.startsWith('skewless.io/'))),
      'no ownership annotation left',
    );
    const mirrors = (
      await tc.kube.core.listNamespacedPod({ namespace: 'kube-system', labelSelector: 'tier=control-plane,component!=etcd' })
    ).items;
    assert.ok(
      mirrors.every((p) => p.spec?.containers[0]?.image?.endsWith(':v1.34.2')),
      'the control plane keeps the version it reached: no downgrade',
    );
    const pet = await tc.kube.core.readNamespacedPod({ name: 'pet', namespace: 'default' });
    assert.equal(pet.spec?.nodeName, 'worker-2', 'the unmanaged pod was never deleted');
  });
});
