import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import { ApplicationFailure } from '@temporalio/common';
import { historyToJSON } from '@temporalio/common/lib/proto-utils.js';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import type { ClusterResolver } from '../../activities/cluster-access.js';
import type { ClusterConfig } from '../../activities/cluster-config.js';
import type { Activities } from '../../activities/index.js';
import { createNotifyActivities } from '../../activities/notify-delivery.js';
import type { NotificationEvent } from '../../contracts/notification-event.js';
import { notificationEventProblems, parseNotifySinks, type SinkSubscription } from '../../rules/index.js';
import { waitFor } from '../../sim/cluster/wait-for.js';
import { clusterUpgradeWorkflow } from '../../workflows/cluster-upgrade-workflow.js';
import { abortSignal, approveUpdate } from '../../workflows/rollout-messages.js';
import { maintainWorkflow } from '../../workflows/maintain-workflow.js';
import { mockMaintenanceCluster } from '../helpers/maintenance-mocks.js';
import { fakeCluster } from '../helpers/fake-cluster.js';
import { startNotifyReceiver, type NotifyReceiver } from '../helpers/notify-receiver.js';
import { untilStatus } from '../helpers/status-polling.js';
import { startDevServer } from '../helpers/temporal-env.js';
import { withMockedWorker } from '../helpers/workers.js';

/**
 * The endings the e2e does not reach (aborted, failed), on the dev server with the cluster mocked but
 * the delivery real: the notifyWorkflow child and deliverNotification POST to a receiver of the test.
 */
describe('notifications of runs that end aborted or failed (mocked cluster, real delivery)', () => {
  let env: TestWorkflowEnvironment;
  let rx: NotifyReceiver;
  let notify: ReturnType<typeof createNotifyActivities>;
  before(async () => {
    env = await startDevServer();
    rx = await startNotifyReceiver();
    const sinks = parseNotifySinks([{ name: 'hook', type: 'webhook', url: rx.url('/hook') }]);
    const clusters: ClusterResolver = () => ({ config: { notify: sinks } as ClusterConfig }) as ReturnType<ClusterResolver>;
    notify = createNotifyActivities({ clusters });
  });
  after(async () => {
    await rx?.stop();
    await env?.teardown();
  });
  const events = (workflowId: string) => rx.deliveries.map((d) => d.body as NotificationEvent).filter((e) => e.workflowId === workflowId);
  const withSinks = (c: ReturnType<typeof fakeCluster>, more: Partial<Activities> = {}) => {
    const fake = c.acts as unknown as Record<string, (i: Record<string, unknown>) => Promise<object>>;
    return {
      ...c.acts,
      ...notify,
      takeInventory: async (i: Record<string, unknown>) => ({
        ...(await fake.takeInventory?.(i)),
        notify: [{ name: 'hook', events: ['run.started', 'run.waiting', 'run.aborted', 'run.failed'] }],
      }),
      ...more,
    } as unknown as Partial<Activities>;
  };

  it('an abort at a gate: run.waiting, then run.aborted with the reason and the outcome', async () => {
    const c = fakeCluster();
    await withMockedWorker(env, withSinks(c), 'notify-abort', async (taskQueue) => {
      // A fixed id: its history is kept for the replay test (file names are ids).
      const workflowId = 'upgrade/notify-abort';
      const handle = await env.client.workflow.start(clusterUpgradeWorkflow, {
        taskQueue,
        workflowId,
        args: [{ cluster: 'lab', to: '1.33', policy: { approveWorkers: true } }],
      });
      await untilStatus(handle, 'the workers gate', (s) => s.gates.some((g) => g.name === 'workers-1.33.7'), 60_000);
      await handle.signal(abortSignal, { by: 'ana', reason: 'change freeze' });
      await handle.result();
      await waitFor('run.aborted delivered', () => events(workflowId).some((e) => e.kind === 'run.aborted'), 30_000, 100);
      const got = events(workflowId);
      assert.deepEqual(
        got.map((e) => e.kind),
        ['run.started', 'run.waiting', 'run.aborted'],
      );
      const aborted = got.at(-1) as NotificationEvent;
      assert.match(String(aborted.details.reason), /^aborted by ana/);
      assert.match(String(aborted.details.outcome), /^aborted by ana.*; /);
      for (const e of got) assert.deepEqual(notificationEventProblems(e), [], JSON.stringify(e));
      const dir = process.env.SKEWLESS_SAVE_HISTORIES;
      if (dir) writeFileSync(`${dir}/upgrade_notify-abort@notifications.json`, historyToJSON(await handle.fetchHistory()));
    });
  });

  it('a failure: run.failed with its reason and the command that finishes it', async () => {
    const c = fakeCluster();
    const broken = {
      snapshotEtcd: async () => {
        throw ApplicationFailure.create({ type: 'VerificationFailed', message: 'snapshot hash differs', nonRetryable: true });
      },
    } as unknown as Partial<Activities>;
    await withMockedWorker(env, withSinks(c, broken), 'notify-fail', async (taskQueue) => {
      const workflowId = `upgrade/notify-fail-${taskQueue}`;
      await assert.rejects(
        env.client.workflow.execute(clusterUpgradeWorkflow, { taskQueue, workflowId, args: [{ cluster: 'lab', to: '1.33' }] }),
      );
      await waitFor('run.failed delivered', () => events(workflowId).some((e) => e.kind === 'run.failed'), 30_000, 100);
      const failed = events(workflowId).find((e) => e.kind === 'run.failed') as NotificationEvent;
      assert.match(String(failed.details.reason), /snapshot hash differs/);
      assert.match(failed.command ?? '', /^skewless upgrade --cluster lab --to 1\.33 /);
      assert.deepEqual(notificationEventProblems(failed), []);
    });
  });

  it('continue-as-new at every safe point sends each transition once: the key carries across runs', async () => {
    // As cluster-upgrade-runs' chain: w1 two minors behind moves at 1.33 and 1.34, a new run at every safe point.
    const c = fakeCluster({ versions: { 'kubelet w1': '1.30.14' } });
    const fake = c.acts as unknown as Record<string, (i: Record<string, unknown>) => Promise<object>>;
    const everyKind = {
      takeInventory: async (i: Record<string, unknown>) => ({
        ...(await fake.takeInventory?.(i)),
        notify: [{ name: 'hook', events: ['run.started', 'run.waiting', 'run.resumed', 'hop.done', 'run.finished'] }],
      }),
    } as unknown as Partial<Activities>;
    await withMockedWorker(env, withSinks(c, everyKind), 'notify-can', async (taskQueue) => {
      const workflowId = `upgrade/notify-can-${taskQueue}`;
      const handle = await env.client.workflow.start(clusterUpgradeWorkflow, {
        taskQueue,
        workflowId,
        args: [{ cluster: 'lab', to: '1.34', policy: { approveWorkers: true, continueAsNewAfterEvents: 1 } }],
      });
      for (const gate of ['workers-1.33.7', 'workers-1.34.2']) {
        const latest = env.client.workflow.getHandle(workflowId);
        await untilStatus(latest, `gate ${gate}`, (s) => s.gates.some((g) => g.name === gate), 60_000);
        await latest.executeUpdate(approveUpdate, { args: [{ gate, by: 'ana' }] });
      }
      const result = await env.client.workflow.getHandle(workflowId).result();
      assert.equal(result.phase, 'done', result.outcome);
      assert.ok(result.runs >= 4, `continued as new ${result.runs} times`);
      await waitFor('run.finished delivered', () => events(workflowId).some((e) => e.kind === 'run.finished'), 30_000, 100);
      await new Promise((r) => setTimeout(r, 1_000)); // a late duplicate would land by now
      const got = events(workflowId);
      const ids = got.map((e) => e.id);
      assert.deepEqual(
        ids.filter((id, n) => ids.indexOf(id) !== n),
        [],
        'no event delivered twice',
      );
      assert.ok(
        got.every((e) => e.id.includes(handle.firstExecutionRunId)),
        `every key names the first run: ${ids.join(', ')}`,
      );
      const count = (kind: string) => got.filter((e) => e.kind === kind).length;
      assert.deepEqual(
        ['run.started', 'run.waiting', 'run.resumed', 'hop.done', 'run.finished'].map((k) => `${k} ${count(k)}`),
        ['run.started 1', 'run.waiting 2', 'run.resumed 2', 'hop.done 2', 'run.finished 1'],
      );
    });
  });

  it('a maintenance run sends its events too: started, its gate waited for and approved, finished (PATCH.flowNotifications)', async () => {
    const sinks: SinkSubscription[] = [
      { name: 'hook', events: ['run.started', 'run.waiting', 'run.resumed', 'run.finished', 'run.failed'] },
    ];
    const m = mockMaintenanceCluster({ notify: sinks });
    await withMockedWorker(env, { ...m.acts, ...notify } as Partial<Activities>, 'notify-maintain', async (taskQueue) => {
      // A fixed id: its history is kept for the replay test (file names are ids).
      const workflowId = 'maintain/notify-mnt';
      const handle = await env.client.workflow.start(maintainWorkflow, {
        taskQueue,
        workflowId,
        args: [{ cluster: 'notify-mnt', nodes: ['w1', 'w2'], policy: { canary: 1, approveAfterCanary: true, verifySeconds: 5 } }],
      });
      await untilStatus(handle, 'the canary gate', (s) => s.gates.some((g) => g.name === 'canary-maintenance'), 60_000);
      await waitFor('run.waiting delivered', () => events(workflowId).some((e) => e.kind === 'run.waiting'), 30_000, 100);
      const wait = events(workflowId).find((e) => e.kind === 'run.waiting') as NotificationEvent;
      assert.equal(wait.command, 'skewless approve notify-mnt --workflow maintain --gate canary-maintenance');
      await handle.executeUpdate(approveUpdate, { args: [{ gate: 'canary-maintenance', by: 'ana' }] });
      const result = await handle.result();
      assert.equal(result.phase, 'done', result.outcome);
      await waitFor('run.finished delivered', () => events(workflowId).some((e) => e.kind === 'run.finished'), 30_000, 100);
      const got = events(workflowId).sort((x, y) => x.at.localeCompare(y.at)); // each its own delivery: ordered by when it happened
      assert.deepEqual(
        got.map((e) => e.kind),
        ['run.started', 'run.waiting', 'run.resumed', 'run.finished'],
      );
      assert.deepEqual(got[0]?.details.requested, ['w1', 'w2']);
      assert.equal(got[0]?.details.nodes, 2);
      assert.match(String(got.at(-1)?.details.outcome), /^maintained 2 nodes/);
      for (const e of got) assert.deepEqual(notificationEventProblems(e), [], JSON.stringify(e));
      // SKEWLESS_SAVE_HISTORIES=dir keeps it for the replay test: a history with notification children.
      const dir = process.env.SKEWLESS_SAVE_HISTORIES;
      if (dir) writeFileSync(`${dir}/maintain_notify-mnt@notifications.json`, historyToJSON(await handle.fetchHistory()));
    });
  });
});
