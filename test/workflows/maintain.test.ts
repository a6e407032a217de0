import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { WorkflowFailedError } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import type { MaintenancePlanFacts } from '../../activities/maintenance.js';
import { waitFor } from '../../sim/cluster/wait-for.js';
import { maintainWorkflow } from '../../workflows/maintain-workflow.js';
import { maintenanceStatusQuery, type MaintenanceStatus } from '../../workflows/maintenance-messages.js';
import { abortSignal, pauseSignal, resolveDrainUpdate, resumeSignal } from '../../workflows/rollout-messages.js';
import { startDevServer } from '../helpers/temporal-env.js';
import { withMockedWorker } from '../helpers/workers.js';

import { windowBetween } from '../windows/window-clock.js';
import {
  mockMaintenanceCluster as mockCluster,
  MAINTENANCE_WRITES as WRITES,
  MOCK_WORKERS as workers,
} from '../helpers/maintenance-mocks.js';

describe('maintainWorkflow (mocked activities, real dev server)', () => {
  let env: TestWorkflowEnvironment;
  before(async () => {
    env = await startDevServer();
  });
  after(async () => {
    await env?.teardown();
  });

  it('maintains 5 workers: canary then batches of 2, each cordon → drain → OS command → reboot → Ready → uncordon, at most 2 out', async () => {
    const m = mockCluster();
    const result = await withMockedWorker(env, m.acts, 'maintain', (taskQueue) =>
      env.client.workflow.execute(maintainWorkflow, {
        taskQueue,
        workflowId: `maintain/lab-${taskQueue}`,
        args: [{ cluster: 'lab', selector: 'pool=blue', policy: { canary: 1, batchSize: 2, maxUnavailable: 2, verifySeconds: 5 } }],
      }),
    );
    assert.equal(result.phase, 'done', result.outcome);
    assert.deepEqual(Object.fromEntries(Object.entries(result.nodes).map(([n, s]) => [n, [s.stage, s.phase]])), {
      w1: ['canary', 'done'],
      w2: ['batch-1', 'done'],
      w3: ['batch-1', 'done'],
      w4: ['batch-2', 'done'],
      w5: ['batch-2', 'done'],
    });
    assert.deepEqual([...m.reboots].sort(), workers, 'every node rebooted once');
    assert.equal(m.maxOut, 2, 'never more than maxUnavailable nodes cordoned at once, and the batch used both slots');
    assert.equal(m.cordoned.size, 0, 'every node uncordoned');
    assert.deepEqual(m.labels, {}, 'stage labels cleared');
    for (const node of workers) {
      const steps = m.calls.filter(([, i]) => i.node === node).map(([n]) => n);
      assert.deepEqual(
        steps,
        ['cordonNode', 'drainNode', 'runMaintenanceCommand', 'rebootNode', 'checkNodeReady', 'uncordonNode', 'checkPodsOnNode'],
        node,
      );
    }
    // The canary finished before any batch node was cordoned.
    const order = m.calls.map(([n, i]) => `${n} ${String(i.node)}`);
    assert.ok(order.indexOf('checkPodsOnNode w1') < order.indexOf('cordonNode w2'));
    assert.equal(m.calls.filter(([n]) => n === 'checkWorkloads').length, 3, 'workloads checked after each phase');
  });

  it('capacity (issue 40): a batch whose pods do not fit together runs one node at a time; one that fits nowhere halts before its cordon until retried', async () => {
    let halts = 0;
    const none = { milliCpu: 0, memoryBytes: 0, pods: 0 };
    const fit = (nodes: string[], pending: string[] = []) => ({ nodes, evicted: 1, requests: none, pending, headroom: none });
    const m = mockCluster(
      {},
      {
        // batch-1 (w2, w3) fits one at a time; w4 fits nowhere until the operator made room (the first ask).
        checkBatchCapacity: (i) => ({
          batches: (i.batches as string[][]).map((b) =>
            b.includes('w2') && b.length === 2
              ? { size: 1, fit: fit(['w2']) }
              : b[0] === 'w4' && halts++ === 0
                ? { size: 0, fit: fit(['w4'], ['default/big-0']) }
                : { size: b.length, fit: fit(b) },
          ),
        }),
      },
    );
    const result = await withMockedWorker(env, m.acts, 'maintain', async (taskQueue) => {
      const handle = await env.client.workflow.start(maintainWorkflow, {
        taskQueue,
        workflowId: `maintain/lab-${taskQueue}`,
        args: [{ cluster: 'lab', selector: 'pool=blue', policy: { canary: 1, batchSize: 2, maxUnavailable: 2, verifySeconds: 5 } }],
      });
      let status: MaintenanceStatus | undefined;
      await waitFor(
        'halted on capacity',
        async () => (status = await handle.query(maintenanceStatusQuery)).halted?.step === 'capacity',
        30_000,
      );
      assert.equal(status?.halted?.after, 'batch-2');
      assert.deepEqual(status?.halted?.workloads, ['default/big-0']);
      assert.ok(!m.calls.some(([n, i]) => n === 'cordonNode' && i.node === 'w4'), 'w4 not cordoned while halted');
      await handle.executeUpdate(resolveDrainUpdate, { args: [{ action: 'retry', by: 'ops' }] });
      return handle.result();
    });
    assert.equal(result.phase, 'done', result.outcome);
    const order = m.calls.map(([n, i]) => `${n} ${String(i.node)}`);
    assert.ok(order.indexOf('cordonNode w3') > order.indexOf('uncordonNode w2'), 'batch-1 shrunk: w3 cordoned only after w2 was back');
    assert.ok(
      result.events.some((e) => /batch-1: 1 of 2 nodes out at once \(w2\)/.test(e)),
      result.events.join('\n'),
    );
    assert.ok(
      result.events.some((e) => /capacity check before batch-2 resolved by ops: retry/.test(e)),
      result.events.join('\n'),
    );
  });

  it('control planes go one at a time, before any worker, whatever maxUnavailable says', async () => {
    const nodes = [
      { name: 'cp-1', role: 'control-plane' },
      { name: 'cp-2', role: 'control-plane' },
      { name: 'w1', role: 'worker' },
      { name: 'w2', role: 'worker' },
    ].map((n) => ({ ...n, ready: true, unschedulable: false })) as MaintenancePlanFacts['nodes'];
    const m = mockCluster({ nodes });
    const result = await withMockedWorker(env, m.acts, 'maintain', (taskQueue) =>
      env.client.workflow.execute(maintainWorkflow, {
        taskQueue,
        workflowId: `maintain/cp-${taskQueue}`,
        args: [{ cluster: 'lab', nodes: ['cp-1', 'cp-2', 'w1', 'w2'], policy: { canary: 0, maxUnavailable: 2 } }],
      }),
    );
    assert.equal(result.phase, 'done');
    const order = m.calls.map(([n, i]) => `${n} ${String(i.node)}`);
    assert.ok(order.indexOf('uncordonNode cp-1') < order.indexOf('cordonNode cp-2'), 'cp-2 waits for cp-1');
    assert.ok(order.indexOf('uncordonNode cp-2') < order.indexOf('cordonNode w1'), 'workers wait for the control planes');
    assert.equal(m.maxOut, 2, 'the two workers (one batch) go together');
    assert.deepEqual([...m.reboots].sort(), ['cp-1', 'cp-2', 'w1', 'w2']);
  });

  it('refuses a bare pod before any write, naming it; --force-pod lets it go to the drain', async () => {
    const bare = mockCluster({ unmanaged: [{ namespace: 'default', name: 'bare', node: 'w3' }] });
    const err = await withMockedWorker(env, bare.acts, 'maintain', (taskQueue) =>
      env.client.workflow.execute(maintainWorkflow, {
        taskQueue,
        workflowId: `maintain/bare-${taskQueue}`,
        args: [{ cluster: 'lab', nodes: workers }],
      }),
    ).catch((e: unknown) => e);
    assert.ok(err instanceof WorkflowFailedError);
    const cause = err.cause as ApplicationFailure;
    assert.equal(cause.type, 'UnmanagedPods');
    assert.match(cause.message, /default\/bare on w3.*--force-pod/);
    assert.deepEqual(
      bare.calls.filter(([n]) => WRITES.includes(n)),
      [],
      'nothing written',
    );

    const forced = mockCluster({ forced: ['default/bare'] });
    const result = await withMockedWorker(env, forced.acts, 'maintain', (taskQueue) =>
      env.client.workflow.execute(maintainWorkflow, {
        taskQueue,
        workflowId: `maintain/forced-${taskQueue}`,
        args: [{ cluster: 'lab', nodes: workers, policy: { forcePods: ['default/bare'], maxUnavailable: 5, canary: 0 } }],
      }),
    );
    assert.equal(result.phase, 'done');
    assert.deepEqual(result.forced, ['default/bare']);
    for (const [name, input] of forced.calls.filter(([n]) => n === 'drainNode')) assert.deepEqual(input.force, ['default/bare'], name);
  });

  it("refuses while the cluster's upgrade runs, without a configured command, or with a node NotReady: nothing written", async () => {
    const cases: [Record<string, (i: Record<string, unknown>) => unknown>, Partial<MaintenancePlanFacts>, string, RegExp][] = [
      [
        { findRunningRollout: () => ({ running: true, workflowId: 'upgrade/lab', startedAt: '2026-01-01T00:00:00Z' }) },
        {},
        'RolloutRunning',
        /upgrade\/lab is running/,
      ],
      [{}, { hasCommand: false }, 'ClusterConfigInvalid', /maintenance\.command/],
      [{}, { missing: ['w9'] }, 'UnknownNode', /no node w9/],
      [{}, { nodes: [{ name: 'w1', role: 'worker', ready: false, unschedulable: false }] }, 'PreflightBlocked', /w1 is NotReady/],
      [{}, { nodes: [] }, 'PreflightBlocked', /no node of lab matches/],
    ];
    for (const [override, facts, type, message] of cases) {
      const m = mockCluster(facts, override);
      const err = await withMockedWorker(env, m.acts, 'maintain', (taskQueue) =>
        env.client.workflow.execute(maintainWorkflow, {
          taskQueue,
          workflowId: `maintain/refuse-${taskQueue}`,
          args: [{ cluster: 'lab', selector: 'pool=blue' }],
        }),
      ).catch((e: unknown) => e);
      assert.ok(err instanceof WorkflowFailedError, type);
      assert.equal((err.cause as ApplicationFailure).type, type);
      assert.match((err.cause as ApplicationFailure).message, message);
      assert.deepEqual(
        m.calls.filter(([n]) => WRITES.includes(n)),
        [],
        `${type}: nothing written`,
      );
    }
  });

  it("a blocked drain waits for resolve; pause holds the next node; abort compensates this run's cordons and labels only", async () => {
    let drainW2 = 0;
    const m = mockCluster(
      {},
      {
        drainNode: (i) => {
          // w3's drain never gets through: the run is aborted while it waits.
          if (i.node === 'w3')
            throw ApplicationFailure.create({ type: 'DrainBlocked', nonRetryable: true, message: 'stuck', details: [{ pods: [] }] });
          if (i.node === 'w2' && drainW2++ === 0) {
            throw ApplicationFailure.create({
              type: 'DrainBlocked',
              nonRetryable: true,
              message: 'PDB default/web refuses',
              details: [{ pods: [{ namespace: 'default', name: 'web-1', pdbs: ['web'] }] }],
            });
          }
          return { node: i.node, gone: [], skipped: [], warnings: [], resumed: false };
        },
      },
    );
    const status = await withMockedWorker(env, m.acts, 'maintain', async (taskQueue) => {
      const handle = await env.client.workflow.start(maintainWorkflow, {
        taskQueue,
        workflowId: `maintain/ops-${taskQueue}`,
        args: [{ cluster: 'lab', selector: 'pool=blue', policy: { canary: 1, batchSize: 1, maxUnavailable: 1, verifySeconds: 5 } }],
      });
      let s: MaintenanceStatus | undefined;
      await waitFor('w2 blocked', async () => (s = await handle.query(maintenanceStatusQuery)).nodes.w2?.phase === 'blocked', 30_000, 100);
      assert.equal(s?.nodes.w2?.blocked?.kind, 'DrainBlocked');
      await handle.signal(pauseSignal, { by: 'ops' });
      await handle.executeUpdate(resolveDrainUpdate, { args: [{ node: 'w2', action: 'retry', by: 'ops' }] });
      await waitFor('w2 done', async () => (s = await handle.query(maintenanceStatusQuery)).nodes.w2?.phase === 'done', 30_000, 100);
      await new Promise((r) => setTimeout(r, 1000));
      assert.equal((await handle.query(maintenanceStatusQuery)).nodes.w3?.phase, 'pending', 'paused: w3 does not start');
      // w3 blocks too: abort relays to its child and compensates.
      await handle.signal(resumeSignal, { by: 'ops' });
      await waitFor('w3 blocked', async () => (await handle.query(maintenanceStatusQuery)).nodes.w3?.phase === 'blocked', 30_000, 100);
      await handle.signal(abortSignal, { by: 'ops', reason: 'enough' });
      return handle.result();
    });
    assert.equal(status.phase, 'aborted');
    assert.match(status.outcome ?? '', /aborted by ops: enough; maintained: w1, w2/);
    assert.equal(m.cordoned.size, 0, 'compensation uncordoned w3');
    assert.deepEqual(m.labels, {});
    assert.ok(!m.reboots.includes('w3') && !m.reboots.includes('w4'));
    assert.ok(status.events.some((e) => /drain of w2 resolved by ops: retry/.test(e)));
  });
  it("reboots start only inside the cluster's maintenance window: the canary waits for it, nothing is cordoned before it opens", async () => {
    const soon = windowBetween(Date.now() + 8_000, Date.now() + 3_600_000, 'Asia/Kolkata');
    const cordonedAt: number[] = [];
    const m = mockCluster(
      { maintenanceWindows: [soon.window] },
      {
        cordonNode: (i) => {
          cordonedAt.push(Date.now());
          return { cordoned: true, ownedByUs: true, changed: true, node: i.node };
        },
      },
    );
    let seen: MaintenanceStatus | undefined;
    const result = await withMockedWorker(env, m.acts, 'maintain-window', async (taskQueue) => {
      const handle = await env.client.workflow.start(maintainWorkflow, {
        taskQueue,
        workflowId: `maintain/win-${taskQueue}`,
        args: [{ cluster: 'lab', selector: 'pool=blue', policy: { canary: 1, batchSize: 2, maxUnavailable: 2, verifySeconds: 1 } }],
      });
      await waitFor(
        'the canary waiting for the window',
        async () => (seen = await handle.query(maintenanceStatusQuery)).waiting !== undefined,
        30_000,
        100,
      );
      return handle.result();
    });
    assert.deepEqual(seen?.waiting, {
      for: 'maintenance-window',
      phase: 'canary',
      hop: '',
      since: seen?.waiting?.since,
      opensAt: new Date(soon.opensAt).toISOString(),
    });
    assert.equal(seen?.phase, 'waiting');
    assert.equal(result.phase, 'done', result.outcome);
    assert.ok(
      result.events.includes(`canary waits for the maintenance window: opens ${new Date(soon.opensAt).toISOString()}`),
      result.events.join('\n'),
    );
    assert.equal(cordonedAt.length, workers.length);
    assert.ok(
      cordonedAt.every((t) => t >= soon.opensAt),
      `cordons at ${cordonedAt.map((t) => new Date(t).toISOString()).join(', ')}; the window opened ${new Date(soon.opensAt).toISOString()}`,
    );
    assert.deepEqual(m.reboots.sort(), [...workers].sort());
  });

  it('an abort while waiting for the window: nothing cordoned, drained or rebooted', async () => {
    const later = windowBetween(Date.now() + 3_600_000, Date.now() + 7_200_000, 'Asia/Kolkata');
    const m = mockCluster({ maintenanceWindows: [later.window] });
    const result = await withMockedWorker(env, m.acts, 'maintain-window-abort', async (taskQueue) => {
      const handle = await env.client.workflow.start(maintainWorkflow, {
        taskQueue,
        workflowId: `maintain/win-abort-${taskQueue}`,
        args: [{ cluster: 'lab', selector: 'pool=blue', policy: { canary: 1 } }],
      });
      await waitFor(
        'the canary waiting for the window',
        async () => (await handle.query(maintenanceStatusQuery)).waiting !== undefined,
        30_000,
        100,
      );
      await handle.signal(abortSignal, { by: 'test', reason: 'not tonight' });
      return handle.result();
    });
    assert.equal(result.phase, 'aborted');
    assert.equal(result.waiting, undefined);
    assert.deepEqual(
      m.calls.map(([n]) => n).filter((n) => ['cordonNode', 'drainNode', 'runMaintenanceCommand', 'rebootNode'].includes(n)),
      [],
    );
    assert.deepEqual(m.reboots, []);
  });
});
