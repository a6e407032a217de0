import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { ApplicationFailure } from '@temporalio/common';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { Worker } from '@temporalio/worker';
import type { Activities } from '../../activities/index.js';
import { drainResolutionSignal, nodeStatusQuery } from '../../workflows/node-messages.js';
import { nodeUpgradeWorkflow, type NodeStepInput } from '../../workflows/node-upgrade-workflow.js';
import { startDevServer, uniqueTaskQueue, workflowBundle } from '../helpers/temporal-env.js';

type Call = [string, Record<string, unknown>];

/** Mocked activities that record every call; `drains` scripts drainNode's outcomes in order. */
function mockActivities(calls: Call[], drains: ('ok' | 'blocked' | 'refused')[] = ['ok'], cordonOwned = true): Partial<Activities> {
  const record = (name: string) => async (input: Record<string, unknown>) => {
    calls.push([name, input]);
    // The install guide's three holds, found before the first install and found in place afterwards.
    if (name === 'readPackageHolds') return { node: input.node, held: ['kubeadm', 'kubelet', 'kubectl'], via: 'apt-mark' };
    if (name === 'restorePackageHolds') return { node: input.node, held: input.held, putBack: [], missing: [] };
    if (name === 'pointPackageRepository')
      return { node: input.node, file: '/etc/apt/sources.list.d/kubernetes.list', minor: '1.33', changed: true };
    return {};
  };
  let drain = 0;
  return {
    cordonNode: (async (input: Record<string, unknown>) => {
      calls.push(['cordonNode', input]);
      return { cordoned: true, ownedByUs: cordonOwned, changed: cordonOwned };
    }) as unknown as Activities['cordonNode'],
    drainNode: (async (input: Record<string, unknown>) => {
      calls.push(['drainNode', input]);
      const outcome = drains[Math.min(drain++, drains.length - 1)];
      if (outcome === 'blocked') {
        throw ApplicationFailure.create({
          type: 'DrainBlocked',
          nonRetryable: true,
          message: 'drain of w1 blocked: default/web-1 (PDB web)',
          details: [{ pods: [{ namespace: 'default', name: 'web-1', pdbs: ['web'] }] }],
        });
      }
      if (outcome === 'refused') {
        throw ApplicationFailure.create({
          type: 'DrainRefused',
          nonRetryable: true,
          message: 'unmanaged pod default/lonely would be lost for good',
          details: [{ blockers: [{ pod: { namespace: 'default', name: 'lonely', uid: 'u' }, reason: 'unmanaged', override: 'force' }] }],
        });
      }
      return { node: 'w1', gone: [], skipped: [], warnings: [], resumed: false };
    }) as unknown as Activities['drainNode'],
    ...Object.fromEntries(
      [
        'pointPackageRepository',
        'installPackages',
        'downloadPackages',
        'readPackageHolds',
        'restorePackageHolds',
        'kubeadmUpgradeApply',
        'kubeadmUpgradeNode',
        'restartKubelet',
        'checkNodeReady',
        'uncordonNode',
        'checkPodsOnNode',
        'checkControlPlane',
      ].map((n) => [n, record(n)]),
    ),
  } as Partial<Activities>;
}

const base: NodeStepInput = {
  cluster: 'lab',
  node: 'w1',
  role: 'worker',
  version: '1.33.7',
  step: 'node',
  owner: 'upgrade/lab',
  kubeletTimeoutSeconds: 60,
  verifySeconds: 5,
};

describe('nodeUpgradeWorkflow (mocked activities, real dev server, no workflow cache)', () => {
  let env: TestWorkflowEnvironment;
  before(async () => {
    env = await startDevServer();
  });
  after(async () => {
    await env?.teardown();
  });

  async function withWorker<T>(acts: Partial<Activities>, body: (taskQueue: string) => Promise<T>): Promise<T> {
    const taskQueue = uniqueTaskQueue('node');
    // maxCachedWorkflows 0: every task replays the history, so these runs also prove replay safety.
    const worker = await Worker.create({
      connection: env.nativeConnection,
      namespace: env.namespace ?? 'default',
      taskQueue,
      workflowBundle: await workflowBundle(),
      activities: acts,
      maxCachedWorkflows: 0,
    });
    return worker.runUntil(body(taskQueue));
  }

  it("upgrades a worker in kubernetes.io's order: kubeadm and the downloads before the cordon, uncordoned last", async () => {
    const calls: Call[] = [];
    const result = await withWorker(mockActivities(calls), (taskQueue) =>
      env.client.workflow.execute(nodeUpgradeWorkflow, { taskQueue, workflowId: `node/${taskQueue}`, args: [base] }),
    );
    assert.equal(result.outcome, 'done');
    assert.deepEqual(
      calls.map(([n]) => n),
      [
        'pointPackageRepository',
        'readPackageHolds',
        'installPackages',
        'kubeadmUpgradeNode',
        'downloadPackages',
        'cordonNode',
        'drainNode',
        'installPackages',
        'restartKubelet',
        'checkNodeReady',
        'uncordonNode',
        'checkPodsOnNode',
      ],
    );
    assert.deepEqual(
      calls[0]?.[1],
      { cluster: 'lab', node: 'w1', version: '1.33.7' },
      "the repository at the hop's minor before the first package",
    );
    assert.deepEqual(calls[1]?.[1], { cluster: 'lab', node: 'w1' }, 'its holds read before the first package');
    assert.deepEqual(calls[2]?.[1].packages, ['kubeadm']);
    assert.deepEqual(calls[4]?.[1], { cluster: 'lab', node: 'w1', version: '1.33.7', packages: ['kubelet', 'kubectl'] });
    assert.deepEqual(calls[7]?.[1].packages, ['kubelet', 'kubectl'], 'installed (from the cache) only once drained');
    assert.equal(calls[5]?.[1].owner, 'upgrade/lab');
    assert.deepEqual(
      result.packages,
      { repository: { file: 'kubernetes.list', minor: '1.33' }, heldBefore: ['kubeadm', 'kubelet', 'kubectl'] },
      'a finished node: nothing put back, its repository named',
    );
  });

  it('runs kubeadm upgrade apply on the first control plane and upgrade node on the others, without draining', async () => {
    const calls: Call[] = [];
    await withWorker(mockActivities(calls), async (taskQueue) => {
      await env.client.workflow.execute(nodeUpgradeWorkflow, {
        taskQueue,
        workflowId: `cp1/${taskQueue}`,
        args: [{ ...base, node: 'cp1', role: 'control-plane', step: 'control-plane', first: true }],
      });
      await env.client.workflow.execute(nodeUpgradeWorkflow, {
        taskQueue,
        workflowId: `cp2/${taskQueue}`,
        args: [{ ...base, node: 'cp2', role: 'control-plane', step: 'control-plane' }],
      });
    });
    assert.deepEqual(
      calls.map(([n, i]) => `${n}:${i.node}`),
      [
        'pointPackageRepository:cp1',
        'readPackageHolds:cp1',
        'installPackages:cp1',
        'kubeadmUpgradeApply:cp1',
        'checkControlPlane:cp1',
        'pointPackageRepository:cp2',
        'readPackageHolds:cp2',
        'installPackages:cp2',
        'kubeadmUpgradeNode:cp2',
        'checkControlPlane:cp2',
      ],
    );
  });

  it('waits when a PDB blocks the drain, reports the pod and PDB, and drains again on retry', async () => {
    const calls: Call[] = [];
    const result = await withWorker(mockActivities(calls, ['blocked', 'ok']), async (taskQueue) => {
      const handle = await env.client.workflow.start(nodeUpgradeWorkflow, { taskQueue, workflowId: `blocked/${taskQueue}`, args: [base] });
      let status = await handle.query(nodeStatusQuery);
      for (let i = 0; status.phase !== 'blocked' && i < 100; i++) {
        await new Promise((r) => setTimeout(r, 100));
        status = await handle.query(nodeStatusQuery);
      }
      assert.equal(status.phase, 'blocked');
      assert.deepEqual(status.blocked?.pods, [{ namespace: 'default', name: 'web-1', pdbs: ['web'] }]);
      assert.ok(
        !calls.some(([n, i]) => n === 'installPackages' && (i.packages as string[]).includes('kubelet')),
        'the kubelet is not installed while the drain is blocked',
      );
      await handle.signal(drainResolutionSignal, { action: 'retry', by: 'alice', comment: 'PDB relaxed' });
      return handle.result();
    });
    assert.equal(result.outcome, 'done');
    assert.equal(calls.filter(([n]) => n === 'drainNode').length, 2);
    assert.deepEqual(result.resolutions, [{ action: 'retry', by: 'alice', comment: 'PDB relaxed' }]);
  });

  it('forces only the named pods, and records who forced them', async () => {
    const calls: Call[] = [];
    const result = await withWorker(mockActivities(calls, ['refused', 'ok']), async (taskQueue) => {
      const handle = await env.client.workflow.start(nodeUpgradeWorkflow, { taskQueue, workflowId: `force/${taskQueue}`, args: [base] });
      for (let i = 0; (await handle.query(nodeStatusQuery)).phase !== 'blocked' && i < 100; i++)
        await new Promise((r) => setTimeout(r, 100));
      assert.equal((await handle.query(nodeStatusQuery)).blocked?.pods[0]?.name, 'lonely');
      await handle.signal(drainResolutionSignal, { action: 'force', pods: ['default/lonely'], by: 'bob' });
      return handle.result();
    });
    const drains = calls.filter(([n]) => n === 'drainNode').map(([, i]) => i.force);
    assert.deepEqual(drains, [[], ['default/lonely']]);
    assert.deepEqual(result.forced, ['default/lonely']);
  });

  it('skip leaves the node cordoned at the old version; a cordon it does not own is never undone', async () => {
    const skipped: Call[] = [];
    const result = await withWorker(mockActivities(skipped, ['blocked']), async (taskQueue) => {
      const handle = await env.client.workflow.start(nodeUpgradeWorkflow, { taskQueue, workflowId: `skip/${taskQueue}`, args: [base] });
      for (let i = 0; (await handle.query(nodeStatusQuery)).phase !== 'blocked' && i < 100; i++)
        await new Promise((r) => setTimeout(r, 100));
      await handle.signal(drainResolutionSignal, { action: 'skip', by: 'carol' });
      return handle.result();
    });
    assert.equal(result.outcome, 'skipped');
    assert.equal(result.cordonedByUs, true, 'the parent uncordons it only if it gives up on the node');
    assert.deepEqual(
      skipped.map(([n]) => n),
      [
        'pointPackageRepository',
        'readPackageHolds',
        'installPackages',
        'kubeadmUpgradeNode',
        'downloadPackages',
        'cordonNode',
        'drainNode',
        'restorePackageHolds',
      ],
      'its kubeadm work done before the cordon, its kubelet never touched; its holds checked as it stops',
    );
    assert.deepEqual(skipped.at(-1)?.[1], { cluster: 'lab', node: 'w1', held: ['kubeadm', 'kubelet', 'kubectl'] });

    const notOurs: Call[] = [];
    await withWorker(mockActivities(notOurs, ['ok'], false), (taskQueue) =>
      env.client.workflow.execute(nodeUpgradeWorkflow, { taskQueue, workflowId: `theirs/${taskQueue}`, args: [base] }),
    );
    assert.ok(!notOurs.some(([n]) => n === 'uncordonNode'), "an operator's cordon stays");
  });
  /** Waits for the node to block, answers `action`, and returns the result. */
  async function blockedThen(acts: Partial<Activities>, id: string, action: 'abort' | 'skip', whileBlocked?: () => void) {
    return withWorker(acts, async (taskQueue) => {
      const handle = await env.client.workflow.start(nodeUpgradeWorkflow, { taskQueue, workflowId: `${id}/${taskQueue}`, args: [base] });
      for (let i = 0; (await handle.query(nodeStatusQuery)).phase !== 'blocked' && i < 100; i++)
        await new Promise((r) => setTimeout(r, 100));
      assert.equal((await handle.query(nodeStatusQuery)).phase, 'blocked');
      whileBlocked?.();
      await handle.signal(drainResolutionSignal, { action, by: 'dana' });
      return handle.result();
    });
  }
  const installFailed = (heldAgain?: string[]) =>
    ApplicationFailure.create({
      type: 'HostCommandFailed',
      nonRetryable: true,
      message: `'apt-get install' on w1 exited 100${heldAgain ? `; ${heldAgain.join(' ')} held again` : ''}`,
      details: [{ node: 'w1', exitCode: 100 }, ...(heldAgain ? [{ heldAgain }] : [])],
    });

  it('a failed kubelet install: the holds are checked before the node waits, and the abort names those the install put back', async () => {
    const calls: Call[] = [];
    const acts = mockActivities(calls);
    acts.installPackages = (async (input: { packages: string[] }) => {
      calls.push(['installPackages', input]);
      if (input.packages.includes('kubelet')) throw installFailed(['kubelet', 'kubectl']);
      return {};
    }) as unknown as Activities['installPackages'];
    const result = await blockedThen(acts, 'failedinstall', 'abort', () => {
      const names = calls.map(([n]) => n);
      assert.deepEqual(names.slice(-2), ['installPackages', 'restorePackageHolds'], 'the holds are put back before the node waits');
    });
    assert.equal(result.outcome, 'aborted');
    assert.deepEqual(
      calls.filter(([n]) => n === 'restorePackageHolds').map(([, i]) => i.held),
      [
        ['kubeadm', 'kubelet', 'kubectl'],
        ['kubeadm', 'kubelet', 'kubectl'],
      ],
      'once before the wait, once as the node stops: the holds found before its first package',
    );
    assert.deepEqual(result.packages?.putBack, ['kubelet', 'kubectl']);
    assert.deepEqual(result.packages?.held, ['kubeadm', 'kubelet', 'kubectl']);
    assert.ok(!calls.some(([n]) => n === 'restartKubelet'), 'no kubelet restart after a failed install');
  });

  it('an install that died with its worker (no holds put back by it): the restore puts them back, and a skip says so', async () => {
    const calls: Call[] = [];
    const acts = mockActivities(calls);
    let lost = ['kubeadm']; // the install lifted the hold, then its worker died: nothing put it back
    acts.installPackages = (async (input: Record<string, unknown>) => {
      calls.push(['installPackages', input]);
      throw installFailed();
    }) as unknown as Activities['installPackages'];
    acts.restorePackageHolds = (async (input: { held: string[] }) => {
      calls.push(['restorePackageHolds', input]);
      const putBack = lost;
      lost = [];
      return { node: 'w1', held: input.held, putBack, missing: [] };
    }) as unknown as Activities['restorePackageHolds'];
    const result = await blockedThen(acts, 'diedinstall', 'skip');
    assert.equal(result.outcome, 'skipped', 'a kubeadm package that failed before the cordon is skippable');
    assert.deepEqual(result.packages?.putBack, ['kubeadm']);
    assert.deepEqual(result.packages?.repository, { file: 'kubernetes.list', minor: '1.33' });
  });

  it('a hold the restore cannot put back (dnf: exclude= is not edited) is reported, not hidden', async () => {
    const calls: Call[] = [];
    const acts = mockActivities(calls);
    acts.installPackages = (async (input: Record<string, unknown>) => {
      calls.push(['installPackages', input]);
      throw installFailed();
    }) as unknown as Activities['installPackages'];
    acts.restorePackageHolds = (async (input: { held: string[] }) => {
      calls.push(['restorePackageHolds', input]);
      return { node: 'w1', held: ['kubeadm', 'kubectl'], putBack: [], missing: ['kubelet'] };
    }) as unknown as Activities['restorePackageHolds'];
    const result = await blockedThen(acts, 'missinghold', 'abort');
    assert.deepEqual(result.packages?.notPutBack, ['kubelet']);
    assert.deepEqual(result.packages?.putBack ?? [], []);
  });
});
