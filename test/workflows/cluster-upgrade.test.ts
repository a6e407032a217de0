import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { WorkflowFailedError, WorkflowUpdateFailedError } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { fakeCluster } from '../helpers/fake-cluster.js';
import { withMockedWorker } from '../helpers/workers.js';
import type { Activities } from '../../activities/index.js';
import { clusterUpgradeWorkflow } from '../../workflows/cluster-upgrade-workflow.js';
import { abortSignal, resolveDrainUpdate, statusQuery } from '../../workflows/rollout-messages.js';
import { startDevServer } from '../helpers/temporal-env.js';

describe('clusterUpgradeWorkflow (mocked activities, real dev server)', () => {
  let env: TestWorkflowEnvironment;
  before(async () => {
    env = await startDevServer();
  });
  after(async () => {
    await env?.teardown();
  });

  const withWorker = <T>(acts: Partial<Activities>, body: (taskQueue: string) => Promise<T>) =>
    withMockedWorker(env, acts, 'upgrade', body);

  it('upgrades 1.32 → 1.34 in two hops: snapshot first, kubeadm apply once per hop, every kubelet at the target', async () => {
    const c = fakeCluster();
    const status = await withWorker(c.acts, (taskQueue) =>
      env.client.workflow.execute(clusterUpgradeWorkflow, {
        taskQueue,
        workflowId: `upgrade/lab-${taskQueue}`,
        args: [{ cluster: 'lab', to: '1.34' }],
      }),
    );
    assert.equal(status.phase, 'done');
    assert.deepEqual(status.hops, ['1.33.7', '1.34.2']);
    assert.deepEqual(
      c.calls.filter(([n]) => n === 'kubeadmUpgradeApply').map(([, i]) => `${i.node}@${i.version}`),
      ['cp1@1.33.7', 'cp1@1.34.2'],
    );
    assert.deepEqual(c.state.kubelet, { cp1: '1.34.2', w1: '1.34.2', w2: '1.34.2' });
    // The control plane's kubelet moves at each hop; the workers once, straight to 1.34 (n-3 holds at 1.33 with them at 1.32).
    assert.deepEqual(
      c.calls.filter(([n]) => n === 'drainNode').map(([, i]) => i.node),
      ['cp1', 'cp1', 'w1', 'w2'],
    );
    // Each worker's package repository is pointed at 1.34 directly, and its packages are 1.34's.
    for (const w of ['w1', 'w2'])
      assert.deepEqual(
        c.calls
          .filter(([n, i]) => (n === 'pointPackageRepository' || n === 'installPackages') && i.node === w)
          .map(([n, i]) => `${n}@${i.version}`),
        ['pointPackageRepository@1.34.2', 'installPackages@1.34.2', 'installPackages@1.34.2'],
        w,
      );
    assert.deepEqual(
      status.snapshots.map((s) => s.hop),
      ['1.33.7', '1.34.2'],
    );
    // Within each hop: the snapshot before any change, the control plane before any kubelet.
    for (const hop of status.hops) {
      const names = c.calls.filter(([, i]) => i.hop === hop || i.version === hop).map(([n]) => n);
      assert.equal(names[0], 'snapshotEtcd', hop);
      assert.ok(names.indexOf('kubeadmUpgradeApply') < names.indexOf('restartKubelet'), hop);
    }
    assert.equal(c.calls.at(-1)?.[0], 'clearStageLabels');
    assert.ok(c.calls.filter(([n]) => n === 'cordonNode').every(([, i]) => String(i.owner).startsWith('upgrade/lab-')));
  });

  it('finishes a control plane left half-way: kubeadm upgrade node on the control planes below the hop, apply not again', async () => {
    const c = fakeCluster({ controlPlanes: 3, versions: { 'apiserver cp1': '1.33.7' } });
    const status = await withWorker(c.acts, (taskQueue) =>
      env.client.workflow.execute(clusterUpgradeWorkflow, {
        taskQueue,
        workflowId: `upgrade/halfway-${taskQueue}`,
        args: [{ cluster: 'lab', to: '1.33' }],
      }),
    );
    assert.equal(status.phase, 'done', status.events.join('\n'));
    const ran = (name: string) => c.calls.filter(([n]) => n === name).map(([, i]) => `${i.node}@${i.version}`);
    assert.deepEqual(ran('kubeadmUpgradeApply'), []);
    assert.deepEqual(ran('kubeadmUpgradeNode'), ['cp2@1.33.7', 'cp3@1.33.7', 'w1@1.33.7', 'w2@1.33.7']);
    assert.deepEqual(c.state.apiserver, { cp1: '1.33.7', cp2: '1.33.7', cp3: '1.33.7' });
    assert.deepEqual(c.state.kubelet, { cp1: '1.33.7', cp2: '1.33.7', cp3: '1.33.7', w1: '1.33.7', w2: '1.33.7' });
    assert.equal(status.outcome, 'upgraded to 1.33.7');
  });

  it('finishes workers an aborted run left behind without draining the nodes already there', async () => {
    const c = fakeCluster({ versions: { 'apiserver cp1': '1.33.7', 'kubelet cp1': '1.33.7', 'kubelet w1': '1.33.7' } });
    let workflowId = '';
    const status = await withWorker(c.acts, (taskQueue) => {
      workflowId = `upgrade/behind-${taskQueue}`;
      return env.client.workflow.execute(clusterUpgradeWorkflow, { taskQueue, workflowId, args: [{ cluster: 'lab', to: '1.33' }] });
    });
    assert.equal(status.phase, 'done', status.events.join('\n'));
    // What the run did, as the memo (status without a worker) says it: w2's kubelet 1.32.4 → 1.33.7,
    // one node upgrade; not the apiservers' 1.33.7 → 1.33, nor every node of the hop.
    const memo = (await env.client.workflow.getHandle(workflowId).describe()).memo as Record<string, unknown>;
    assert.deepEqual([memo.from, memo.to, memo.progress], ['1.32.4', '1.33.7', '1/1 node upgrades']);
    assert.deepEqual(
      c.calls
        .filter(([n]) => ['drainNode', 'kubeadmUpgradeApply', 'kubeadmUpgradePlan', 'restartKubelet'].includes(n))
        .map(([n, i]) => `${n} ${i.node}`),
      ['drainNode w2', 'restartKubelet w2'],
    );
    assert.deepEqual(c.state.kubelet, { cp1: '1.33.7', w1: '1.33.7', w2: '1.33.7' });
    assert.deepEqual(
      status.snapshots.map((s) => s.hop),
      ['1.33.7'],
      'a snapshot first, as every hop',
    );
  });

  it('starts every node again at each hop: in the second hop a node done in the first shows pending until it moves', async () => {
    const c = fakeCluster({ blockDrainOf: 'w1', blockDrainAt: '1.33.7' });
    await withWorker(c.acts, async (taskQueue) => {
      const handle = await env.client.workflow.start(clusterUpgradeWorkflow, {
        taskQueue,
        workflowId: `upgrade/phases-${taskQueue}`,
        // every worker at every hop: the second hop starts the nodes done in the first again
        args: [{ cluster: 'lab', to: '1.34', policy: { canary: 1, workersEveryHop: true } }],
      });
      for (let i = 0; (await handle.query(statusQuery)).nodes.w1?.phase !== 'blocked' && i < 200; i++)
        await new Promise((r) => setTimeout(r, 100));
      const s = await handle.query(statusQuery);
      assert.equal(s.hop, '1.34.2');
      assert.deepEqual(Object.fromEntries(Object.entries(s.nodes).map(([n, x]) => [n, x.phase])), {
        cp1: 'done',
        w1: 'blocked',
        w2: 'pending',
      });
      await handle.signal(abortSignal, { by: 'eve' });
      await handle.executeUpdate(resolveDrainUpdate, { args: [{ node: 'w1', action: 'abort', by: 'eve' }] }).catch(() => undefined);
      await handle.result();
    });
  });

  it('refuses to start on a PDB that blocks every drain unless acknowledged, touching nothing', async () => {
    const c = fakeCluster({ pdbFinding: true });
    await withWorker(c.acts, async (taskQueue) => {
      await assert.rejects(
        env.client.workflow.execute(clusterUpgradeWorkflow, {
          taskQueue,
          workflowId: `upgrade/pdb-${taskQueue}`,
          args: [{ cluster: 'lab', to: '1.33' }],
        }),
        (err: unknown) =>
          err instanceof WorkflowFailedError &&
          err.cause instanceof ApplicationFailure &&
          err.cause.type === 'PreflightBlocked' &&
          /default\/solo/.test(err.cause.message),
      );
    });
    assert.deepEqual([...new Set(c.calls.map(([n]) => n))], ['findRunningRollout', 'takeInventory', 'availableVersions']);
  });

  it('refuses to start while another rollout of the cluster runs, before reading the cluster', async () => {
    const c = fakeCluster();
    // Temporal as the activity sees it: these workflows run; the caller names what is not "another".
    const running = ['upgrade/lab', 'maintain/lab'];
    const findRunningRollout = async (i: { cluster: string; ignore?: string[] }) => {
      c.calls.push(['findRunningRollout', i]);
      const other = running.find((id) => !(i.ignore ?? []).includes(id));
      return other ? { running: true, workflowId: other, startedAt: '2026-11-30T05:00:00.000Z' } : { running: false };
    };
    await withWorker({ ...c.acts, findRunningRollout }, async (taskQueue) => {
      await assert.rejects(
        env.client.workflow.execute(clusterUpgradeWorkflow, {
          taskQueue,
          workflowId: 'upgrade/lab',
          args: [{ cluster: 'lab', to: '1.33' }],
        }),
        (err: unknown) =>
          err instanceof WorkflowFailedError &&
          err.cause instanceof ApplicationFailure &&
          err.cause.type === 'RolloutRunning' &&
          /maintain\/lab of lab is running \(since 2026-11-30T05:00:00.000Z\)/.test(err.cause.message),
      );
    });
    assert.deepEqual(
      c.calls.map(([n]) => n),
      ['findRunningRollout'],
      'nothing read or written after the refusal',
    );
    assert.deepEqual(c.calls[0]?.[1], { cluster: 'lab', ignore: ['upgrade/lab', 'upgrade/lab'] }, 'its own run is not another rollout');
  });

  it('waits on a blocked drain, rejects resolutions for nodes that are not blocked, and compensates on abort', async () => {
    const c = fakeCluster({ blockDrainOf: 'w2' });
    const status = await withWorker(c.acts, async (taskQueue) => {
      const handle = await env.client.workflow.start(clusterUpgradeWorkflow, {
        taskQueue,
        workflowId: `upgrade/block-${taskQueue}`,
        args: [{ cluster: 'lab', to: '1.33', policy: { canary: 1 } }],
      });
      for (let i = 0; (await handle.query(statusQuery)).nodes.w2?.phase !== 'blocked' && i < 200; i++)
        await new Promise((r) => setTimeout(r, 100));
      const blocked = await handle.query(statusQuery);
      assert.equal(blocked.nodes.w2?.phase, 'blocked');
      assert.equal(blocked.nodes.w2?.blocked?.pods[0]?.name, 'solo-0');
      await assert.rejects(
        handle.executeUpdate(resolveDrainUpdate, { args: [{ node: 'w1', action: 'retry', by: 'eve' }] }),
        WorkflowUpdateFailedError,
      );
      await handle.executeUpdate(resolveDrainUpdate, {
        args: [{ node: 'w2', action: 'abort', by: 'eve', comment: 'PDB owner unavailable' }],
      });
      return handle.result();
    });
    assert.equal(status.phase, 'aborted');
    assert.match(status.events.join('\n'), /drain of w2 resolved by eve: abort \(PDB owner unavailable\)/);
    const uncordoned = c.calls.filter(([n]) => n === 'uncordonNode').map(([, i]) => i.node);
    assert.ok(uncordoned.includes('w2'), 'the blocked node is uncordoned by compensation');
    assert.ok(
      c.calls.filter(([n]) => n === 'uncordonNode').every(([, i]) => String(i.owner).startsWith('upgrade/block-')),
      'only our cordons',
    );
    assert.equal(c.calls.filter(([n]) => n === 'clearStageLabels').length, 1);
    assert.equal(c.state.kubelet.w2, '1.32.4', 'no downgrade, no upgrade of the aborted node');
  });

  it('an abort while a node is blocked tells that node to abort too, and compensates', async () => {
    const c = fakeCluster({ blockDrainOf: 'w1' });
    let queue = '';
    const status = await withWorker(c.acts, async (taskQueue) => {
      queue = taskQueue;
      const handle = await env.client.workflow.start(clusterUpgradeWorkflow, {
        taskQueue,
        workflowId: `upgrade/abort-${taskQueue}`,
        args: [{ cluster: 'lab', to: '1.33' }],
      });
      for (let i = 0; (await handle.query(statusQuery)).nodes.w1?.phase !== 'blocked' && i < 200; i++)
        await new Promise((r) => setTimeout(r, 100));
      await handle.signal(abortSignal, { by: 'frank', reason: 'maintenance window over' });
      return handle.result();
    });
    assert.equal(status.phase, 'aborted');
    assert.match(
      status.outcome ?? '',
      // The run's own task queue: the default one has no worker here.
      new RegExp(
        `^aborted by frank: maintenance window over; cp1 at 1\\.33\\.7; w1, w2 at 1\\.32\\.4; no node left cordoned by this run; kubernetes\\.list on w1 points at v1\\.33, ahead of its kubelet 1\\.32\\.4 \\(held: kubeadm kubelet kubectl\\); finish with: skewless upgrade --cluster lab --to 1\\.33 --task-queue ${queue}$`,
      ),
    );
    assert.ok(c.calls.some(([n, i]) => n === 'uncordonNode' && i.node === 'w1'));
    assert.ok(!c.calls.some(([n, i]) => n === 'restartKubelet' && i.node === 'w2'), 'no node starts after the abort');
  });

  it('an abort once every node reached the target names no finish command: nothing is left to finish', async () => {
    const c = fakeCluster();
    const status = await withWorker(c.acts, async (taskQueue) => {
      const handle = await env.client.workflow.start(clusterUpgradeWorkflow, {
        taskQueue,
        workflowId: `upgrade/all-there-${taskQueue}`,
        args: [{ cluster: 'lab', to: '1.33', policy: { canary: 1, phaseSoakSeconds: 8 } }],
      });
      // The soak after the last batch (one follows each phase): every node is at 1.33.7, the run has not ended.
      for (let i = 0; i < 900; i++) {
        const s = await handle.query(statusQuery);
        if (Object.values(s.nodes).every((n) => n.version === '1.33.7') && s.gates.some((g) => g.opensAt)) break;
        await new Promise((r) => setTimeout(r, 100));
      }
      await handle.signal(abortSignal, { by: 'frank', reason: 'late' });
      return handle.result();
    });
    assert.equal(status.phase, 'aborted');
    assert.match(status.outcome ?? '', /^aborted by frank: late; cp1, w1, w2 at 1\.33\.7; /);
    assert.doesNotMatch(status.outcome ?? '', /finish/);
  });
});
