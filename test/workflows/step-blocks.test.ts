import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { WorkflowUpdateFailedError, type WorkflowHandle } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import type { Activities } from '../../activities/index.js';
import { waitFor } from '../../sim/cluster/wait-for.js';
import { clusterUpgradeWorkflow } from '../../workflows/cluster-upgrade-workflow.js';
import { drainResolutionSignal, nodeStatusQuery, type NodeStatus, type StepBlock } from '../../workflows/node-messages.js';
import { nodeUpgradeWorkflow, type NodeStepInput } from '../../workflows/node-upgrade-workflow.js';
import { abortSignal, resolveDrainUpdate, statusQuery, type UpgradeStatus } from '../../workflows/rollout-messages.js';
import { fakeCluster } from '../helpers/fake-cluster.js';
import { untilStatus } from '../helpers/status-polling.js';
import { startDevServer } from '../helpers/temporal-env.js';
import { withMockedWorker } from '../helpers/workers.js';

type Call = [string, Record<string, unknown>];
type Acts = Partial<Activities>;

/** Every node activity succeeds and is recorded, except where `override` says otherwise. */
function nodeActivities(calls: Call[], override: Record<string, (input: Record<string, unknown>) => unknown> = {}): Acts {
  const names = [
    'cordonNode',
    'drainNode',
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
  ];
  return Object.fromEntries(
    names.map((name) => [
      name,
      async (input: Record<string, unknown>) => {
        calls.push([name, input]);
        if (override[name]) return override[name](input);
        if (name === 'readPackageHolds') return { node: input.node, held: ['kubeadm', 'kubelet', 'kubectl'], via: 'apt-mark' };
        if (name === 'restorePackageHolds') return { node: input.node, held: input.held, putBack: [], missing: [] };
        return name === 'cordonNode' ? { cordoned: true, ownedByUs: true, changed: true } : {};
      },
    ]),
  ) as Acts;
}

const failure = (type: string, message: string, nonRetryable = false) => ApplicationFailure.create({ type, message, nonRetryable });
const unreachable = () => failure('HostUnreachable', 'host w1 unreachable: ECONNREFUSED');
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

async function untilNode(handle: WorkflowHandle, check: (s: NodeStatus) => boolean): Promise<NodeStatus> {
  let last: NodeStatus | undefined;
  await waitFor('the node status', async () => check((last = await handle.query(nodeStatusQuery))), 30_000, 100);
  return last as NodeStatus;
}

describe('a node step that fails for good waits for the operator (mocked activities, real dev server)', () => {
  let env: TestWorkflowEnvironment;
  before(async () => {
    env = await startDevServer();
  });
  after(async () => {
    await env?.teardown();
  });
  const withWorker = <T>(acts: Acts, body: (taskQueue: string) => Promise<T>) => withMockedWorker(env, acts, 'steps', body);

  it("an unreachable host is retried within the operator's budget, then blocks; retry runs only that step again", async () => {
    const calls: Call[] = [];
    let hostUp = false;
    const acts = nodeActivities(calls, {
      installPackages: () => {
        if (!hostUp) throw unreachable();
        return {};
      },
    });
    const result = await withWorker(acts, async (taskQueue) => {
      // 3 s of backoff on a host command (2 s, then 4 s): two attempts, then the operator is asked.
      const handle = await env.client.workflow.start(nodeUpgradeWorkflow, {
        taskQueue,
        workflowId: `unreachable/${taskQueue}`,
        args: [{ ...base, hostRetrySeconds: 3 }],
      });
      const blocked = await untilNode(handle, (s) => s.phase === 'blocked');
      const block = blocked.blocked as StepBlock;
      assert.deepEqual(
        { kind: block.kind, step: block.step, failure: block.failure, gaveUp: block.gaveUp, actions: block.actions },
        {
          kind: 'StepFailed',
          step: 'installPackages',
          failure: 'HostUnreachable',
          gaveUp: 'retries spent',
          actions: ['retry', 'skip', 'abort'],
        },
      );
      assert.equal(block.summary, 'install kubeadm v1.33.7 on w1');
      assert.match(block.message, /ECONNREFUSED/);
      assert.equal(calls.filter(([n]) => n === 'installPackages').length, 2, 'two attempts within a 3 s budget');
      await new Promise((r) => setTimeout(r, 1500));
      assert.equal(calls.filter(([n]) => n === 'installPackages').length, 2, 'no attempt while waiting for the operator');
      hostUp = true;
      await handle.signal(drainResolutionSignal, { action: 'retry', by: 'ops', comment: 'host is back' });
      return handle.result();
    });
    assert.equal(result.outcome, 'done');
    assert.deepEqual(
      calls.map(([n]) => n),
      [
        'pointPackageRepository',
        'readPackageHolds',
        'installPackages',
        'installPackages',
        'restorePackageHolds',
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
    assert.deepEqual(result.resolutions, [{ action: 'retry', by: 'ops', comment: 'host is back' }]);
  });

  it('a changed host key blocks at once (never retried) and offers no skip in a failed kubeadm upgrade node; abort stops the node', async () => {
    const calls: Call[] = [];
    const acts = nodeActivities(calls, {
      kubeadmUpgradeNode: () => {
        throw failure(
          'HostKeyMismatch',
          'host w1 presented host key SHA256:abc, which does not match known_hosts; refusing to connect',
          true,
        );
      },
    });
    const result = await withWorker(acts, async (taskQueue) => {
      const handle = await env.client.workflow.start(nodeUpgradeWorkflow, { taskQueue, workflowId: `hostkey/${taskQueue}`, args: [base] });
      const block = (await untilNode(handle, (s) => s.phase === 'blocked')).blocked as StepBlock;
      assert.equal(block.failure, 'HostKeyMismatch');
      assert.equal(block.gaveUp, 'not retryable');
      assert.match(block.message, /SHA256:abc/);
      assert.deepEqual(block.actions, ['retry', 'abort'], 'a failed kubeadm upgrade node may have written half its files: no skip');
      await handle.signal(drainResolutionSignal, { action: 'abort', by: 'ops' });
      return handle.result();
    });
    assert.equal(result.outcome, 'aborted');
    assert.equal(result.cordonedByUs, false, 'kubeadm upgrade node runs before the cordon: nothing to compensate');
    assert.equal(calls.filter(([n]) => n === 'kubeadmUpgradeNode').length, 1, 'one attempt: a changed key is never retried silently');
    assert.ok(!calls.some(([n]) => n === 'cordonNode' || n === 'restartKubelet' || n === 'uncordonNode'), 'nothing after the failed step');
  });

  it('skip before anything moved leaves the node at its old version, never cordoned', async () => {
    const calls: Call[] = [];
    const acts = nodeActivities(calls, {
      installPackages: () => {
        throw failure('HostCommandFailed', 'apt-get install exited 100: E: Unable to locate package', true);
      },
    });
    const result = await withWorker(acts, async (taskQueue) => {
      const handle = await env.client.workflow.start(nodeUpgradeWorkflow, { taskQueue, workflowId: `skip/${taskQueue}`, args: [base] });
      await untilNode(handle, (s) => s.phase === 'blocked');
      await handle.signal(drainResolutionSignal, { action: 'skip', by: 'ops' });
      return handle.result();
    });
    assert.equal(result.outcome, 'skipped');
    assert.equal(result.cordonedByUs, false, 'the kubeadm package comes before the cordon');
    assert.deepEqual(
      calls.map(([n]) => n),
      ['pointPackageRepository', 'readPackageHolds', 'installPackages', 'restorePackageHolds', 'restorePackageHolds'],
      'the holds put back before the node waits, and checked again as it stops',
    );
  });

  it('a node not Ready after the kubelet restart waits; retry once it recovers goes on from that step', async () => {
    const calls: Call[] = [];
    let ready = false;
    const acts = nodeActivities(calls, {
      restartKubelet: () => {
        if (!ready) throw failure('NodeNotReady', 'w1 was not Ready at kubelet v1.33.7 within 60 s (Ready: false, kubelet v1.33.7)', true);
        return {};
      },
    });
    const result = await withWorker(acts, async (taskQueue) => {
      const handle = await env.client.workflow.start(nodeUpgradeWorkflow, { taskQueue, workflowId: `notready/${taskQueue}`, args: [base] });
      const s = await untilNode(handle, (st) => st.phase === 'blocked');
      assert.equal((s.blocked as StepBlock).step, 'restartKubelet');
      ready = true;
      await handle.signal(drainResolutionSignal, { action: 'retry', by: 'ops' });
      return handle.result();
    });
    assert.equal(result.outcome, 'done');
    assert.equal(calls.filter(([n]) => n === 'restartKubelet').length, 2);
    assert.equal(calls.filter(([n]) => n === 'installPackages').length, 2, 'packages are not installed again');
  });

  it('while a node waits on a failed step no other node starts; force and a late skip are refused; retry finishes the run', async () => {
    const c = fakeCluster();
    c.state.kubelet.w3 = '1.32.4';
    let hostUp = false;
    const acts: Acts = {
      ...c.acts,
      takeInventory: (async (i: { cluster: string }) => {
        const inv = await (c.acts.takeInventory as Activities['takeInventory'])(i);
        inv.skew.nodes = [...(inv.skew.nodes ?? []), { name: 'w3', role: 'worker' }];
        return inv;
      }) as Activities['takeInventory'],
      kubeadmUpgradeNode: (async (i: { node: string; version: string }) => {
        c.calls.push(['kubeadmUpgradeNode', i]);
        if (i.node === 'w1' && !hostUp) throw unreachable();
        return {};
      }) as unknown as Activities['kubeadmUpgradeNode'],
    };
    const status = await withWorker(acts, async (taskQueue) => {
      // One batch of three workers, two at a time: w1 and w2 start together, w3 when one of them is done.
      const handle = await env.client.workflow.start(clusterUpgradeWorkflow, {
        taskQueue,
        workflowId: `upgrade/stepblock-${taskQueue}`,
        args: [{ cluster: 'lab', to: '1.33', policy: { canary: 0, batchSize: 3, maxUnavailable: 2, hostRetrySeconds: 0 } }],
      });
      const s = await untilStatus(
        handle,
        'w1 blocked and w2 done',
        (st) => st.nodes.w1?.phase === 'blocked' && st.nodes.w2?.phase === 'done',
        60_000,
      );
      assert.equal(s.nodes.w1?.blocked?.kind, 'StepFailed');
      assert.ok(
        s.events.some((e) => /^w1 blocked: kubeadm upgrade node on w1 \(v1\.33\.7\) failed \(HostUnreachable, retries spent\)/.test(e)),
        s.events.join('\n'),
      );
      assert.deepEqual((await handle.describe()).memo?.blocked, ['w1']);
      await new Promise((r) => setTimeout(r, 2000));
      assert.ok(!c.calls.some(([, i]) => i.node === 'w3'), 'w3 does not start while w1 waits on a failed step');
      assert.equal((await handle.query(statusQuery)).nodes.w3?.phase, 'pending');
      await assert.rejects(
        handle.executeUpdate(resolveDrainUpdate, { args: [{ node: 'w1', action: 'force', pods: ['default/x'], by: 'ops' }] }),
        (err: unknown) =>
          err instanceof WorkflowUpdateFailedError &&
          /^force is for blocked drains; w1 is blocked on a failed step \(kubeadmUpgradeNode\): retry or abort$/.test(
            err.cause?.message ?? '',
          ),
      );
      await assert.rejects(
        handle.executeUpdate(resolveDrainUpdate, { args: [{ node: 'w1', action: 'skip', by: 'ops' }] }),
        (err: unknown) =>
          err instanceof WorkflowUpdateFailedError && /^skip is not offered once w1 has started to move/.test(err.cause?.message ?? ''),
      );
      hostUp = true;
      await handle.executeUpdate(resolveDrainUpdate, { args: [{ node: 'w1', action: 'retry', by: 'ops', comment: 'sshd restarted' }] });
      return handle.result();
    });
    assert.equal(status.phase, 'done', status.events.join('\n'));
    assert.deepEqual(c.state.kubelet, { cp1: '1.33.7', w1: '1.33.7', w2: '1.33.7', w3: '1.33.7' });
    assert.ok(status.events.includes('kubeadmUpgradeNode of w1 resolved by ops: retry (sshd restarted)'), status.events.join('\n'));
    const w3Start = c.calls.findIndex(([, i]) => i.node === 'w3');
    const w1Retry = c.calls.findLastIndex(([n, i]) => n === 'kubeadmUpgradeNode' && i.node === 'w1');
    assert.ok(w1Retry < w3Start, 'w3 started only after w1 moved on');
    assert.equal(
      c.calls.filter(([n, i]) => n === 'kubeadmUpgradeNode' && i.node === 'w1').length,
      2,
      'hostRetrySeconds 0: one attempt, then the retry',
    );
  });

  it('an abort while a node waits on a failed step stops that node and compensates', async () => {
    const c = fakeCluster();
    const acts: Acts = {
      ...c.acts,
      restartKubelet: (async (i: { node: string; version: string }) => {
        if (i.node === 'w1') throw failure('NodeNotReady', 'w1 not Ready', true);
        return c.acts.restartKubelet?.(i as never);
      }) as unknown as Activities['restartKubelet'],
    };
    const status = await withWorker(acts, async (taskQueue) => {
      const handle = await env.client.workflow.start(clusterUpgradeWorkflow, {
        taskQueue,
        workflowId: `upgrade/stepabort-${taskQueue}`,
        args: [{ cluster: 'lab', to: '1.33' }],
      });
      await untilStatus(handle, 'w1 blocked', (st) => st.nodes.w1?.phase === 'blocked', 60_000);
      await handle.signal(abortSignal, { by: 'ops', reason: 'node hardware' });
      return handle.result();
    });
    assert.equal(status.phase, 'aborted');
    assert.equal(status.nodes.w1?.phase, 'aborted');
    assert.ok(
      c.calls.some(([n, i]) => n === 'uncordonNode' && i.node === 'w1'),
      'compensation uncordons w1',
    );
    assert.ok(!c.calls.some(([n, i]) => n === 'cordonNode' && i.node === 'w2'), 'the batch after the canary never started');
  });

  it('a worker skipped before its cordon is reported as never cordoned, not as staying cordoned', async () => {
    const c = fakeCluster();
    const acts: Acts = {
      ...c.acts,
      // The worker's kubeadm package, installed before its cordon (kubernetes.io's order), fails on w1.
      installPackages: (async (i: { node: string }) => {
        c.calls.push(['installPackages', i]);
        if (i.node === 'w1') throw failure('HostCommandFailed', 'apt-get install exited 100: E: Unable to locate package', true);
        return {};
      }) as unknown as Activities['installPackages'],
    };
    const status = await withWorker(acts, async (taskQueue) => {
      const handle = await env.client.workflow.start(clusterUpgradeWorkflow, {
        taskQueue,
        workflowId: `upgrade/skipuncordoned-${taskQueue}`,
        args: [{ cluster: 'lab', to: '1.33', policy: { hostRetrySeconds: 0 } }],
      });
      await untilStatus(handle, 'w1 blocked', (st) => st.nodes.w1?.phase === 'blocked', 60_000);
      await handle.executeUpdate(resolveDrainUpdate, { args: [{ node: 'w1', action: 'skip', by: 'ops' }] });
      return handle.result();
    });
    assert.equal(status.nodes.w1?.phase, 'skipped', status.events.join('\n'));
    assert.ok(!c.calls.some(([n, i]) => n === 'cordonNode' && i.node === 'w1'), 'w1 was never cordoned');
    assert.ok(
      status.events.includes('w1 skipped by the operator before its cordon: never cordoned, stays in service at 1.32.4'),
      status.events.join('\n'),
    );
    assert.ok(!status.events.some((e) => /^w1 .*stays cordoned/.test(e)), status.events.join('\n'));
  });

  it('a workload unavailable after a phase halts the rollout naming it; retry checks again and the next phase starts', async () => {
    const c = fakeCluster();
    let healthy = false;
    const acts: Acts = {
      ...c.acts,
      checkWorkloads: (async (i: Record<string, unknown>) => {
        c.calls.push(['checkWorkloads', i]);
        if (healthy) return {};
        throw ApplicationFailure.create({
          type: 'Unhealthy',
          message: '1 workload(s) unhealthy: Deployment default/web (1/3 replicas available)',
          details: [
            { healthy: false, unhealthy: [{ kind: 'Deployment', namespace: 'default', name: 'web', reason: '1/3 replicas available' }] },
          ],
        });
      }) as unknown as Activities['checkWorkloads'],
    };
    let handle: WorkflowHandle<typeof clusterUpgradeWorkflow> | undefined;
    const status = await withWorker(acts, async (taskQueue) => {
      handle = await env.client.workflow.start(clusterUpgradeWorkflow, {
        taskQueue,
        workflowId: `upgrade/halt-${taskQueue}`,
        args: [{ cluster: 'lab', to: '1.33', policy: { verifySeconds: 1 } }],
      });
      const s = await untilStatus(handle, 'halted after the canary', (st) => st.halted !== undefined, 60_000);
      assert.deepEqual(
        { after: s.halted?.after, failure: s.halted?.failure, workloads: s.halted?.workloads },
        { after: 'canary', failure: 'Unhealthy', workloads: ['Deployment default/web: 1/3 replicas available'] },
      );
      assert.equal((await handle.describe()).memo?.halted, 'canary');
      await new Promise((r) => setTimeout(r, 1500));
      assert.ok(!c.calls.some(([n, i]) => n === 'cordonNode' && i.node === 'w2'), 'the next batch waits');
      await assert.rejects(
        handle.executeUpdate(resolveDrainUpdate, { args: [{ action: 'skip', by: 'ops' } as never] }),
        WorkflowUpdateFailedError,
      );
      healthy = true;
      await handle.executeUpdate(resolveDrainUpdate, { args: [{ action: 'retry', by: 'ops', comment: 'web rolled back' }] });
      return handle.result();
    });
    assert.equal(status.phase, 'done', status.events.join('\n'));
    assert.equal(status.halted, undefined);
    assert.equal(c.state.kubelet.w2, '1.33.7');
    assert.ok(status.events.includes('workload check after canary resolved by ops: retry (web rolled back)'), status.events.join('\n'));
    assert.equal((await handle?.describe())?.memo?.halted, undefined, 'the list view no longer shows it halted');
    // A resolution without a node when nothing is halted is refused.
    const c2 = fakeCluster({ blockDrainOf: 'w1' });
    await withWorker(c2.acts, async (taskQueue) => {
      const h = await env.client.workflow.start(clusterUpgradeWorkflow, {
        taskQueue,
        workflowId: `upgrade/nohalt-${taskQueue}`,
        args: [{ cluster: 'lab', to: '1.33' }],
      });
      await untilStatus(h, 'w1 blocked', (st) => st.nodes.w1?.phase === 'blocked', 60_000);
      await assert.rejects(
        h.executeUpdate(resolveDrainUpdate, { args: [{ action: 'retry', by: 'ops' }] }),
        (err: unknown) =>
          err instanceof WorkflowUpdateFailedError && err.cause?.message === 'the upgrade is not halted: name the blocked node',
      );
      await h.executeUpdate(resolveDrainUpdate, { args: [{ node: 'w1', action: 'abort', by: 'ops' }] });
      const r = (await h.result()) as UpgradeStatus;
      assert.equal(r.phase, 'aborted');
    });
  });

  it("the operator's probes run after the control plane and after each phase; a failing one halts the rollout there until retried", async () => {
    const c = fakeCluster();
    const probeRuns: string[] = [];
    let failing = true;
    const acts: Acts = {
      ...c.acts,
      runProbes: (async (i: Record<string, unknown>) => {
        c.calls.push(['runProbes', i]);
        probeRuns.push(c.calls.filter(([n]) => n === 'restartKubelet').length.toString());
        if (!failing) return { healthy: true, probes: [], failed: [] };
        throw ApplicationFailure.create({ type: 'Unhealthy', message: 'probe(s) failing: checkout (status 503, expected 200)' });
      }) as unknown as Activities['runProbes'],
    };
    const status = await withWorker(acts, async (taskQueue) => {
      const handle = await env.client.workflow.start(clusterUpgradeWorkflow, {
        taskQueue,
        workflowId: `upgrade/probes-${taskQueue}`,
        args: [{ cluster: 'lab', to: '1.33', policy: { verifySeconds: 1 } }],
      });
      const s = await untilStatus(handle, 'halted after the control plane', (st) => st.halted !== undefined, 60_000);
      assert.deepEqual(
        { after: s.halted?.after, step: s.halted?.step, failure: s.halted?.failure, message: s.halted?.message },
        {
          after: 'control-plane',
          step: 'runProbes',
          failure: 'Unhealthy',
          message: 'probe(s) failing: checkout (status 503, expected 200)',
        },
      );
      assert.ok(!c.calls.some(([n, i]) => n === 'cordonNode' && i.node === 'w1'), 'no worker starts while halted');
      failing = false;
      await handle.executeUpdate(resolveDrainUpdate, { args: [{ action: 'retry', by: 'ops' }] });
      return handle.result();
    });
    assert.equal(status.phase, 'done', status.events.join('\n'));
    // After the control plane (failed, then retried) and after each worker phase, each after that phase's kubelets.
    const phases = new Set(Object.values(status.nodes).flatMap((n) => (n.stage === 'control-plane' ? [] : [n.stage]))).size;
    assert.equal(probeRuns.length, 2 + phases, probeRuns.join(','));
    assert.ok(status.events.includes('workload check after control-plane resolved by ops: retry'), status.events.join('\n'));
    const order = c.calls.map(([n]) => n);
    assert.ok(order.indexOf('runProbes') > order.indexOf('restartKubelet'), 'the first probes run once the control plane kubelet moved');
    assert.ok(order.lastIndexOf('runProbes') > order.lastIndexOf('checkWorkloads'), 'after a phase the probes follow the workload check');
  });

  it('an uncordon that fails while compensating is named in the outcome, from the status, not from the events', async () => {
    const c = fakeCluster();
    const acts: Acts = {
      ...c.acts,
      checkWorkloads: (async () => {
        throw ApplicationFailure.create({ type: 'Unhealthy', message: 'Deployment default/web (0/3 available)' });
      }) as unknown as Activities['checkWorkloads'],
      uncordonNode: (async (i: { node: string }) => {
        c.calls.push(['uncordonNode', i]);
        // w2 never moves (the rollout halts after the canary): its only uncordon is the compensation's.
        if (i.node === 'w2') throw ApplicationFailure.nonRetryable('the apiserver refused: 403', 'Forbidden');
        return { uncordoned: true, changed: true };
      }) as unknown as Activities['uncordonNode'],
    };
    const status = await withWorker(acts, async (taskQueue) => {
      const handle = await env.client.workflow.start(clusterUpgradeWorkflow, {
        taskQueue,
        workflowId: `upgrade/stuck-${taskQueue}`,
        args: [{ cluster: 'lab', to: '1.33', policy: { verifySeconds: 1 } }],
      });
      await untilStatus(handle, 'halted', (st) => st.halted !== undefined, 60_000);
      await handle.executeUpdate(resolveDrainUpdate, { args: [{ action: 'abort', by: 'ops' }] });
      return handle.result();
    });
    assert.equal(status.phase, 'aborted');
    assert.deepEqual(status.uncordonFailed, ['w2']);
    assert.match(status.outcome ?? '', /; STILL CORDONED \(uncordon failed\): w2(;|$)/, status.outcome);
  });

  it('abort answers a halted rollout: compensated, no later phase', async () => {
    const c = fakeCluster();
    const acts: Acts = {
      ...c.acts,
      checkWorkloads: (async () => {
        throw ApplicationFailure.create({ type: 'Unhealthy', message: 'DaemonSet kube-system/agent (2/3 pods ready)' });
      }) as unknown as Activities['checkWorkloads'],
    };
    const status = await withWorker(acts, async (taskQueue) => {
      const handle = await env.client.workflow.start(clusterUpgradeWorkflow, {
        taskQueue,
        workflowId: `upgrade/haltabort-${taskQueue}`,
        args: [{ cluster: 'lab', to: '1.33', policy: { verifySeconds: 1 } }],
      });
      await untilStatus(handle, 'halted', (st) => st.halted !== undefined, 60_000);
      await handle.executeUpdate(resolveDrainUpdate, { args: [{ action: 'abort', by: 'ops', comment: 'agent broken' }] });
      return handle.result();
    });
    assert.equal(status.phase, 'aborted');
    assert.match(status.outcome ?? '', /^aborted by ops: agent broken; /);
    assert.ok(!c.calls.some(([n, i]) => n === 'cordonNode' && i.node === 'w2'));
    assert.equal(c.calls.filter(([n]) => n === 'clearStageLabels').length, 1, 'compensated');
  });
});
