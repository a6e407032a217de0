import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { ApplicationFailure } from '@temporalio/common';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { fakeCluster } from '../helpers/fake-cluster.js';
import { withMockedWorker } from '../helpers/workers.js';
import type { Activities } from '../../activities/index.js';
import { clusterUpgradeWorkflow } from '../../workflows/cluster-upgrade-workflow.js';
import { resolveDrainUpdate, statusQuery, type UpgradeStatus } from '../../workflows/rollout-messages.js';
import { startDevServer } from '../helpers/temporal-env.js';

// Quarantine on drain timeout (issue 22): a worker whose drain did not finish is left cordoned at its
// old version, labelled, and the run goes on; later hops are judged against its old kubelet.

describe('onDrainTimeout quarantine (mocked activities, real dev server)', () => {
  let env: TestWorkflowEnvironment;
  before(async () => {
    env = await startDevServer();
  });
  after(async () => {
    await env?.teardown();
  });

  /** fakeCluster plus the quarantine activity (recorded, with the node's labels kept in memory). */
  const cluster = (options: Parameters<typeof fakeCluster>[0], available?: string[]) => {
    const c = fakeCluster(options);
    const labels: Record<string, string> = {};
    const acts = {
      ...c.acts,
      quarantineNode: async (i: { node: string; hop: string; message: string }) => {
        c.calls.push(['quarantineNode', i]);
        labels[i.node] = i.hop;
        return { labelled: true, recorded: true };
      },
      ...(available ? { availableVersions: async () => available } : {}),
    } as Partial<Activities>;
    return { ...c, acts, labels };
  };
  const until = async (what: string, check: () => Promise<boolean>) => {
    for (let i = 0; i < 300; i++) {
      if (await check()) return;
      await new Promise((r) => setTimeout(r, 100));
    }
    assert.fail(`timed out waiting for ${what}`);
  };

  it('quarantines w1 whose drain timed out at the first hop: the run goes on through 1.34 without it and leaves it cordoned', async () => {
    const c = cluster({ blockDrainOf: 'w1' });
    const status = await withMockedWorker(env, c.acts, 'quarantine', (taskQueue) =>
      env.client.workflow.execute(clusterUpgradeWorkflow, {
        taskQueue,
        workflowId: `upgrade/q-${taskQueue}`,
        args: [{ cluster: 'lab', to: '1.34', policy: { onDrainTimeout: 'quarantine', drainTimeoutSeconds: 5, workersEveryHop: true } }], // a worker at every hop: the quarantine is at the first
      }),
    );
    assert.equal(status.phase, 'done', status.events.join('\n'));
    assert.deepEqual(status.quarantined, ['w1']);
    assert.equal(status.nodes.w1?.phase, 'quarantined');
    assert.deepEqual(c.state.kubelet, { cp1: '1.34.2', w1: '1.32.4', w2: '1.34.2' });
    // Drained once (its first hop), never again; labelled at that hop with the drain's report; never uncordoned.
    const of = (name: string, node: string) => c.calls.filter(([n, i]) => n === name && i.node === node);
    assert.equal(of('drainNode', 'w1').length, 1);
    assert.deepEqual(
      of('quarantineNode', 'w1').map(([, i]) => [i.hop, i.message]),
      [['1.33.7', 'drain of w1 blocked']],
    );
    assert.deepEqual(c.labels, { w1: '1.33.7' });
    assert.equal(of('uncordonNode', 'w1').length, 0, 'a quarantined node is not handed back');
    assert.equal(of('restartKubelet', 'w1').length, 0);
    assert.deepEqual(status.leftBehind, [{ node: 'w1', version: '1.32.4', why: 'quarantined' }]);
    assert.match(status.outcome ?? '', /^upgraded to 1\.34\.2 EXCEPT 1 node left behind: w1 at 1\.32\.4 QUARANTINED, left cordoned/);
    assert.ok(
      status.events.some((e) => /^w1 quarantined at 1\.32\.4: its kubelet stays within the skew policy through 1\.34\.2$/.test(e)),
      status.events.join('\n'),
    );
    assert.ok(status.events.some((e) => /^w1 quarantined: drain of w1 blocked; stays cordoned at its old version/.test(e)));
  });

  it('still waits for the operator on a refused drain (a pod no controller manages): forcing is never automatic', async () => {
    const c = cluster({});
    const drainNode = c.acts.drainNode as (i: { node: string }) => Promise<unknown>;
    c.acts.drainNode = (async (i: { node: string }) => {
      if (i.node === 'w2')
        throw ApplicationFailure.create({
          type: 'DrainRefused',
          nonRetryable: true,
          message: 'drain of w2 refused: default/pet has no controller',
          details: [{ blockers: [{ pod: { namespace: 'default', name: 'pet' } }] }],
        });
      return drainNode(i);
    }) as unknown as Activities['drainNode'];
    await withMockedWorker(env, c.acts, 'quarantine', async (taskQueue) => {
      const handle = await env.client.workflow.start(clusterUpgradeWorkflow, {
        taskQueue,
        workflowId: `upgrade/q-refused-${taskQueue}`,
        args: [{ cluster: 'lab', to: '1.33', policy: { onDrainTimeout: 'quarantine' } }],
      });
      await until('w2 blocked', async () => (await handle.query(statusQuery)).nodes.w2?.phase === 'blocked');
      await handle.executeUpdate(resolveDrainUpdate, { args: [{ node: 'w2', action: 'skip', by: 'eve' }] });
      const status = await handle.result();
      assert.equal(status.phase, 'done');
      assert.deepEqual(status.skipped, ['w2']);
      assert.equal(status.quarantined, undefined);
      assert.equal(c.calls.filter(([n]) => n === 'quarantineNode').length, 0);
    });
  });

  const FOUR_HOPS = ['1.36.0', '1.35.0', '1.34.2', '1.33.7', '1.32.4'];

  it('halts before the hop that would put the quarantined kubelet four minors behind, until the operator moved it and retried', async () => {
    const c = cluster({ blockDrainOf: 'w1', blockDrainAt: '1.32.4' }, FOUR_HOPS);
    await withMockedWorker(env, c.acts, 'quarantine', async (taskQueue) => {
      const handle = await env.client.workflow.start(clusterUpgradeWorkflow, {
        taskQueue,
        workflowId: `upgrade/q-skew-${taskQueue}`,
        args: [{ cluster: 'lab', to: '1.36', policy: { onDrainTimeout: 'quarantine' } }],
      });
      const halted = async () => (await handle.query(statusQuery)).halted !== undefined;
      await until('the halt before 1.36.0', halted);
      let s: UpgradeStatus = await handle.query(statusQuery);
      assert.equal(s.halted?.step, 'quarantineSkew');
      assert.equal(s.halted?.hop, '1.36.0');
      assert.deepEqual(s.halted?.workloads, [
        'w1 kubelet 1.32.4: kubelet may be at most 3 minors older than the newest kube-apiserver (1.36)',
      ]);
      assert.equal(c.state.apiserver.cp1, '1.35.0', 'the control plane waits at the hop before');
      assert.ok(s.events.some((e) => /^w1 quarantined at 1\.32\.4: hop 1\.36\.0 would break the skew policy/.test(e)));
      // Retried with nothing changed: the same halt again, the control plane still not moved.
      await handle.executeUpdate(resolveDrainUpdate, { args: [{ action: 'retry', by: 'eve' }] });
      await until('the halt again', async () => {
        const now = await handle.query(statusQuery);
        return now.halted !== undefined && now.events.filter((e) => e.startsWith('halted after quarantine')).length === 2;
      });
      assert.equal(c.state.apiserver.cp1, '1.35.0');
      // The operator moves w1's kubelet by hand, then retries: the hop goes on.
      c.state.kubelet.w1 = '1.33.7';
      await handle.executeUpdate(resolveDrainUpdate, { args: [{ action: 'retry', by: 'eve', comment: 'w1 moved by hand' }] });
      s = await handle.result();
      assert.equal(s.phase, 'done', s.events.join('\n'));
      assert.equal(c.state.apiserver.cp1, '1.36.0');
      assert.deepEqual(s.leftBehind, [{ node: 'w1', version: '1.33.7', why: 'quarantined' }]);
      assert.ok(s.events.includes('skew check of the quarantined nodes before 1.36.0 resolved by eve: retry (w1 moved by hand)'));
    });
  });

  it('an abort at that halt leaves the quarantined node cordoned (compensation uncordons the others only)', async () => {
    const c = cluster({ blockDrainOf: 'w1', blockDrainAt: '1.32.4' }, FOUR_HOPS);
    await withMockedWorker(env, c.acts, 'quarantine', async (taskQueue) => {
      const handle = await env.client.workflow.start(clusterUpgradeWorkflow, {
        taskQueue,
        workflowId: `upgrade/q-abort-${taskQueue}`,
        args: [{ cluster: 'lab', to: '1.36', policy: { onDrainTimeout: 'quarantine' } }],
      });
      await until('the halt', async () => (await handle.query(statusQuery)).halted !== undefined);
      const before = c.calls.length;
      await handle.executeUpdate(resolveDrainUpdate, { args: [{ action: 'abort', by: 'eve' }] });
      const s = await handle.result();
      assert.equal(s.phase, 'aborted');
      const uncordoned = c.calls
        .slice(before)
        .filter(([n]) => n === 'uncordonNode')
        .map(([, i]) => i.node);
      assert.deepEqual(uncordoned.sort(), ['cp1', 'w2']);
      assert.equal(c.state.apiserver.cp1, '1.35.0');
      assert.match(
        s.outcome ?? '',
        /; QUARANTINED \(left cordoned\): w1; no other node left cordoned by this run; kubernetes\.list on w1 points at v1\.\d+, ahead of its kubelet [\d.]+ \(held: kubeadm kubelet kubectl\); finish with: /,
      );
    });
  });
});
