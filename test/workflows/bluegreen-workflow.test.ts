import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { WorkflowFailedError, WorkflowUpdateFailedError, type WorkflowHandle } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { waitFor } from '../../sim/cluster/wait-for.js';
import { bluegreenStatusQuery, REMOVAL_GATE, rollbackUpdate, type BlueGreenStatus } from '../../workflows/bluegreen-messages.js';
import { bluegreenWorkflow } from '../../workflows/bluegreen-workflow.js';
import { abortSignal, approveUpdate, pauseSignal, resolveDrainUpdate, resumeSignal } from '../../workflows/rollout-messages.js';
import { BLUE, BLUEGREEN_WRITES, GREEN, mockBlueGreenCluster } from '../helpers/bluegreen-mocks.js';
import { startDevServer } from '../helpers/temporal-env.js';
import { withMockedWorker } from '../helpers/workers.js';
import type { NotificationEvent } from '../../contracts/notification-event.js';
import { notificationEventProblems } from '../../rules/index.js';

const input = { cluster: 'lab', from: 'blue', to: 'green', version: '1.34.2', policy: { canary: 1, batchSize: 2, verifySeconds: 5 } };
const blocked = (node: string) =>
  ApplicationFailure.create({
    type: 'DrainBlocked',
    nonRetryable: true,
    message: `PDB default/web refuses the eviction of web-1 on ${node}`,
    details: [{ pods: [{ namespace: 'default', name: 'web-1', pdbs: ['web'] }] }],
  });

async function until(handle: WorkflowHandle, what: string, check: (s: BlueGreenStatus) => boolean): Promise<BlueGreenStatus> {
  let last: BlueGreenStatus | undefined;
  await waitFor(what, async () => check((last = await handle.query(bluegreenStatusQuery))), 60_000, 100).catch((err: Error) => {
    throw new Error(`${err.message}\n${JSON.stringify(last?.nodes)}\n${last?.events.join('\n')}`);
  });
  return last as BlueGreenStatus;
}

describe('bluegreenWorkflow (mocked activities, real dev server)', () => {
  let env: TestWorkflowEnvironment;
  before(async () => {
    env = await startDevServer();
  });
  after(async () => {
    await env?.teardown();
  });

  it('control plane first (control planes only), then green created, every blue node cordoned, drained canary first with a blocked drain resolved, removal gate, blue deleted', async () => {
    let blockedOnce = false;
    const m = mockBlueGreenCluster({ override: {} });
    const drain = m.acts.drainNode as unknown as (i: Record<string, unknown>) => Promise<unknown>;
    m.acts.drainNode = (async (i: Record<string, unknown>) => {
      if (i.node === 'blue-2' && !blockedOnce) {
        blockedOnce = true;
        throw blocked('blue-2');
      }
      return drain(i);
    }) as never;
    const result = await withMockedWorker(env, m.acts, 'bluegreen', async (taskQueue) => {
      const handle = await env.client.workflow.start(bluegreenWorkflow, {
        taskQueue,
        workflowId: `bluegreen/lab-${taskQueue}`,
        args: [input],
      });
      const s = await until(handle, 'blue-2 blocked', (st) => st.nodes['blue-2']?.phase === 'blocked');
      assert.equal(s.nodes['blue-2']?.blocked?.kind, 'DrainBlocked');
      assert.equal(s.step, 'draining');
      await handle.executeUpdate(resolveDrainUpdate, { args: [{ node: 'blue-2', action: 'retry', by: 'ops' }] });
      const gate = await until(handle, 'removal gate', (st) => st.gates.some((g) => g.name === REMOVAL_GATE && !g.approvedBy));
      assert.equal(gate.step, 'removal-gate');
      assert.equal(gate.rollback.available, true);
      assert.ok(
        gate.events.some((e) => e.includes('after removal there is no rollback')),
        'the gate says there is no rollback after it',
      );
      assert.deepEqual(m.deleted, [], 'nothing deleted before the approval');
      await handle.executeUpdate(approveUpdate, { args: [{ gate: REMOVAL_GATE, by: 'ops', comment: 'green is fine' }] });
      return handle.result();
    });
    assert.equal(result.phase, 'done', result.outcome);
    assert.equal(result.step, 'done');
    assert.deepEqual(result.controlPlane, { from: '1.33.7', upgrade: 'upgrade/lab' });
    assert.deepEqual(m.apiserver, { cp1: '1.34.2' });
    assert.deepEqual([...m.deleted].sort(), BLUE, 'the blue pool is gone');
    assert.deepEqual(Object.keys(m.kubelet).sort(), ['cp1', ...GREEN].sort(), 'green at the target remains, with the control plane');
    for (const g of GREEN) assert.equal(m.kubelet[g], '1.34.2');
    assert.equal(m.cordoned.size, 0, 'nothing left cordoned');
    const order = m.order();
    // The control plane moved before any green machine; the workers were not touched by that upgrade.
    assert.ok(order.indexOf('kubeadmUpgradeApply cp1') < order.indexOf('createPoolMachines'));
    assert.ok(!order.some((o) => /^(restartKubelet|kubeadmUpgradeNode|installPackages) blue/.test(o)), 'no blue node upgraded in place');
    // Green joined before any blue cordon; every blue node cordoned before the first drain.
    assert.ok(order.indexOf('createPoolMachines') < order.indexOf('cordonNode blue-1'));
    const lastCordon = Math.max(...BLUE.map((n) => order.indexOf(`cordonNode ${n}`)));
    const firstDrain = Math.min(...BLUE.map((n) => order.indexOf(`drainNode ${n}`)));
    assert.ok(lastCordon < firstDrain, 'every blue node cordoned before the first drain');
    // The canary drained and the workloads checked before the batches.
    assert.ok(order.indexOf('drainNode blue-1') < order.indexOf('drainNode blue-2'));
    assert.ok(order.lastIndexOf('checkWorkloads') < order.indexOf('deletePoolMachines'));
    assert.deepEqual(Object.fromEntries(BLUE.map((n) => [n, result.nodes[n]?.stage])), {
      'blue-1': 'canary',
      'blue-2': 'batch-1',
      'blue-3': 'batch-1',
      'blue-4': 'batch-2',
    });
    assert.ok(result.events.some((e) => /drain of blue-2 resolved by ops: retry/.test(e)));
    assert.ok(result.events.some((e) => /gate remove-blue approved by ops: green is fine/.test(e)));
    assert.equal(result.rollback.available, false);
  });

  it('a pause holds the run before green is created; rollback before removal (the rollback update at the removal gate): blue uncordoned, green drained and deleted', async () => {
    const m = mockBlueGreenCluster({ version: '1.34.2' });
    // The inventory answers only once the run is paused: a pause holds it before any machine is created.
    let answer: () => void = () => undefined;
    const answered = new Promise<void>((r) => {
      answer = r;
    });
    const inventory = m.acts.takeInventory as unknown as (i: Record<string, unknown>) => Promise<unknown>;
    m.acts.takeInventory = (async (i: Record<string, unknown>) => {
      await answered;
      return inventory(i);
    }) as never;
    const result = await withMockedWorker(env, m.acts, 'bluegreen', async (taskQueue) => {
      const handle = await env.client.workflow.start(bluegreenWorkflow, {
        taskQueue,
        workflowId: `bluegreen/rb-${taskQueue}`,
        args: [input],
      });
      await handle.signal(pauseSignal, { by: 'ops' });
      answer();
      await until(handle, 'planned', (st) => st.blue.nodes.length === BLUE.length);
      await new Promise((r) => setTimeout(r, 1500));
      assert.ok(!m.calls.some(([n]) => n === 'createPoolMachines'), 'paused: no machine created');
      await handle.signal(resumeSignal, { by: 'ops' });
      await until(handle, 'removal gate', (st) => st.step === 'removal-gate' && st.gates.some((g) => g.name === REMOVAL_GATE));
      assert.equal(m.cordoned.size, BLUE.length, 'every blue node cordoned');
      const after = await handle.executeUpdate(rollbackUpdate, { args: [{ by: 'ops', reason: 'green misbehaves' }] });
      assert.match(after.events.join('\n'), /rollback asked by ops: green misbehaves/);
      return handle.result();
    });
    assert.equal(result.phase, 'aborted');
    assert.equal(result.step, 'rolled-back');
    assert.equal(result.controlPlane?.upgrade, undefined, 'the control plane was at the target: no upgrade');
    assert.ok(!m.calls.some(([n]) => n === 'kubeadmUpgradeApply'));
    assert.deepEqual([...m.deleted].sort(), GREEN, 'green deleted');
    assert.deepEqual(Object.keys(m.kubelet).sort(), [...BLUE, 'cp1'].sort(), 'blue stays');
    assert.equal(m.cordoned.size, 0, 'blue uncordoned, nothing left cordoned');
    const order = m.order();
    assert.ok(
      Math.max(...BLUE.map((n) => order.lastIndexOf(`uncordonNode ${n}`))) < order.indexOf('drainNode green-1'),
      'blue back in service before green drains',
    );
    for (const g of GREEN) assert.ok(order.includes(`cordonNode ${g}`) && order.includes(`drainNode ${g}`), `${g} cordoned and drained`);
    assert.match(
      result.outcome ?? '',
      /rolled back \(rollback asked by ops: green misbehaves\): blue pool blue back in service.*green green-1, green-2, green-3, green-4 drained and deleted/,
    );
  });

  it('sends its events to the notify: sinks: started, waiting at the removal gate, aborted by the rollback (PATCH.flowNotifications)', async () => {
    const m = mockBlueGreenCluster({ version: '1.34.2' });
    const delivered: NotificationEvent[] = [];
    const inventory = m.acts.takeInventory as unknown as (i: Record<string, unknown>) => Promise<object>;
    const acts = {
      ...m.acts,
      takeInventory: async (i: Record<string, unknown>) => ({
        ...(await inventory(i)),
        notify: [{ name: 'hook', events: ['run.started', 'run.waiting', 'run.aborted', 'run.finished'] }],
      }),
      deliverNotification: async (i: { sink: string; event: NotificationEvent }) => {
        delivered.push(i.event);
        return { sink: i.sink, status: 200, answer: 'ok', attempt: 1 };
      },
    } as never;
    const workflowId = await withMockedWorker(env, acts, 'bluegreen', async (taskQueue) => {
      const handle = await env.client.workflow.start(bluegreenWorkflow, {
        taskQueue,
        workflowId: `bluegreen/nt-${taskQueue}`,
        args: [input],
      });
      await until(handle, 'removal gate', (st) => st.step === 'removal-gate' && st.gates.some((g) => g.name === REMOVAL_GATE));
      await handle.executeUpdate(rollbackUpdate, { args: [{ by: 'ops', reason: 'green misbehaves' }] });
      assert.equal((await handle.result()).phase, 'aborted');
      await waitFor('run.aborted delivered', () => delivered.some((e) => e.kind === 'run.aborted'), 30_000, 100);
      return handle.workflowId;
    });
    const mine = delivered.filter((e) => e.workflowId === workflowId).sort((a, b) => a.at.localeCompare(b.at));
    assert.deepEqual(
      mine.map((e) => e.kind),
      ['run.started', 'run.waiting', 'run.aborted'],
    );
    assert.deepEqual([mine[0]?.details.from, mine[0]?.details.to, mine[0]?.details.nodes], ['1.34.2', '1.34.2', BLUE.length]);
    assert.equal(mine[1]?.command, `skewless approve lab --workflow bluegreen --gate ${REMOVAL_GATE}`);
    assert.match(String(mine[2]?.details.reason), /green misbehaves/);
    for (const e of mine) assert.deepEqual(notificationEventProblems(e), [], JSON.stringify(e));
  });

  it('rollback and abort are refused once the removal has started; the removal completes', async () => {
    let release: () => void = () => undefined;
    const held = new Promise<void>((r) => {
      release = r;
    });
    const m = mockBlueGreenCluster({ version: '1.34.2' });
    const del = m.acts.deletePoolMachines as unknown as (i: Record<string, unknown>) => Promise<unknown>;
    m.acts.deletePoolMachines = (async (i: Record<string, unknown>) => {
      await held;
      return del(i);
    }) as never;
    const result = await withMockedWorker(env, m.acts, 'bluegreen', async (taskQueue) => {
      const handle = await env.client.workflow.start(bluegreenWorkflow, {
        taskQueue,
        workflowId: `bluegreen/late-${taskQueue}`,
        args: [input],
      });
      await until(handle, 'removal gate', (st) => st.gates.some((g) => g.name === REMOVAL_GATE));
      await handle.executeUpdate(approveUpdate, { args: [{ gate: REMOVAL_GATE, by: 'ops' }] });
      const s = await until(handle, 'removing', (st) => st.step === 'removing');
      assert.equal(s.rollback.available, false);
      assert.match(s.rollback.how, /after removal there is no rollback/);
      const err = await handle.executeUpdate(rollbackUpdate, { args: [{ by: 'ops' }] }).catch((e: unknown) => e);
      assert.ok(err instanceof WorkflowUpdateFailedError);
      assert.match(err.cause?.message ?? '', /^after removal there is no rollback: the removal of blue pool blue started at /);
      await handle.signal(abortSignal, { by: 'ops', reason: 'too late' });
      await until(handle, 'abort noted', (st) => st.events.some((e) => /abort by ops refused: after removal there is no rollback/.test(e)));
      release();
      return handle.result();
    });
    assert.equal(result.phase, 'done');
    assert.deepEqual([...m.deleted].sort(), BLUE);
    assert.ok(!m.calls.some(([n, i]) => n === 'drainNode' && String(i.node).startsWith('green')), 'green never drained');
  });

  it('abort while a blue drain is blocked rolls back: the blocked child aborts, blue uncordoned, green removed', async () => {
    const m = mockBlueGreenCluster({ version: '1.34.2' });
    const drain = m.acts.drainNode as unknown as (i: Record<string, unknown>) => Promise<unknown>;
    m.acts.drainNode = (async (i: Record<string, unknown>) => {
      if (i.node === 'blue-1') throw blocked('blue-1');
      return drain(i);
    }) as never;
    const result = await withMockedWorker(env, m.acts, 'bluegreen', async (taskQueue) => {
      const handle = await env.client.workflow.start(bluegreenWorkflow, {
        taskQueue,
        workflowId: `bluegreen/abort-${taskQueue}`,
        args: [input],
      });
      await until(handle, 'blue-1 blocked', (st) => st.nodes['blue-1']?.phase === 'blocked');
      await handle.signal(abortSignal, { by: 'ops', reason: 'PDB will not budge' });
      return handle.result();
    });
    assert.equal(result.step, 'rolled-back');
    assert.equal(result.nodes['blue-1']?.phase, 'aborted');
    assert.ok(!m.calls.some(([n, i]) => n === 'drainNode' && i.node === 'blue-2'), 'no other blue node drained');
    assert.equal(m.cordoned.size, 0);
    assert.deepEqual([...m.deleted].sort(), GREEN, 'green drained and deleted');
    assert.match(result.outcome ?? '', /aborted by ops: PDB will not budge/);
  });

  it('a rollback while the control plane moves aborts its upgrade after the step in flight: no green machine, nothing left cordoned', async () => {
    let release: () => void = () => undefined;
    const held = new Promise<void>((r) => {
      release = r;
    });
    const m = mockBlueGreenCluster();
    const apply = m.acts.kubeadmUpgradeApply as unknown as (i: Record<string, unknown>) => Promise<unknown>;
    let inFlight = false;
    m.acts.kubeadmUpgradeApply = (async (i: Record<string, unknown>) => {
      inFlight = true;
      await held;
      return apply(i);
    }) as never;
    const result = await withMockedWorker(env, m.acts, 'bluegreen', async (taskQueue) => {
      try {
        const handle = await env.client.workflow.start(bluegreenWorkflow, {
          taskQueue,
          workflowId: `bluegreen/cp-${taskQueue}`,
          args: [input],
        });
        await until(handle, 'the control-plane phase', (st) => st.step === 'control-plane');
        await waitFor('kubeadm upgrade apply in flight', () => inFlight, 30_000, 100);
        await handle.executeUpdate(rollbackUpdate, { args: [{ by: 'ops', reason: 'not today' }] });
        release();
        return await handle.result();
      } finally {
        release(); // the worker stops only once its activities are done
      }
    });
    assert.equal(result.step, 'rolled-back', result.outcome);
    assert.match(result.events.join('\n'), /the control-plane upgrade upgrade\/lab ended aborted/);
    assert.ok(!m.calls.some(([n]) => n === 'createPoolMachines'), 'no green machine created');
    assert.ok(!m.calls.some(([n, i]) => n === 'cordonNode' && String(i.node).startsWith('blue')), 'no blue node cordoned');
    assert.deepEqual(m.apiserver, { cp1: '1.34.2' }, 'the step in flight finished: no downgrade');
    assert.equal(m.cordoned.size, 0, 'the upgrade compensated its own cordons');
  });

  it('refuses before any write: another rollout running, an unknown pool, green kubelets too old for the control plane', async () => {
    const cases: [Record<string, (i: Record<string, unknown>) => unknown>, Partial<typeof input>, string, RegExp][] = [
      [
        { findRunningRollout: () => ({ running: true, workflowId: 'maintain/lab', startedAt: '2026-01-01T00:00:00Z' }) },
        {},
        'RolloutRunning',
        /maintain\/lab is running/,
      ],
      [{}, { from: 'purple' }, 'BlueGreenInvalid', /no pool purple/],
      // Green more than three minors below the control plane's kubelets would break the skew policy.
      [{}, { version: '1.29.0' }, 'SkewViolation', /green kubelets at 1\.29\.0 break the skew policy/],
    ];
    for (const [override, change, type, message] of cases) {
      const m = mockBlueGreenCluster({ override });
      const err = await withMockedWorker(env, m.acts, 'bluegreen', (taskQueue) =>
        env.client.workflow.execute(bluegreenWorkflow, {
          taskQueue,
          workflowId: `bluegreen/refuse-${taskQueue}`,
          args: [{ ...input, ...change }],
        }),
      ).catch((e: unknown) => e);
      assert.ok(err instanceof WorkflowFailedError, type);
      let cause: unknown = err.cause;
      while (cause && !(cause instanceof ApplicationFailure)) cause = (cause as { cause?: unknown }).cause;
      assert.equal((cause as ApplicationFailure).type, type);
      assert.match((cause as ApplicationFailure).message, message);
      assert.deepEqual(
        m.calls.filter(([n]) => BLUEGREEN_WRITES.includes(n)),
        [],
        `${type}: nothing written`,
      );
    }
  });
});
