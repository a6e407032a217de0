import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { findRunningRollout } from '../../activities/find-running-rollout.js';
import type { Activities } from '../../activities/index.js';
import { clusterUpgradeWorkflow } from '../../workflows/cluster-upgrade-workflow.js';
import { maintainWorkflow } from '../../workflows/maintain-workflow.js';
import { scheduledUpgradeWorkflow } from '../../workflows/scheduled-upgrade-workflow.js';
import { abortSignal } from '../../workflows/rollout-messages.js';
import { fakeCluster } from '../helpers/fake-cluster.js';
import { mockMaintenanceCluster } from '../helpers/maintenance-mocks.js';
import { untilStatus } from '../helpers/status-polling.js';
import { startDevServer } from '../helpers/temporal-env.js';
import { withMockedWorker } from '../helpers/workers.js';
import { maintainWorkflowId, scheduledUpgradeWorkflowId, upgradeWorkflowId } from '../../contracts/workflow-ids.js';

/**
 * The scheduled run's edges, with mocked cluster activities on the real dev server (the schedule
 * itself and the real cluster are in scheduled-upgrade.test.ts): ending the scheduled run never ends
 * its upgrade, and an upgrade started by hand between the run's check and its start is not doubled.
 */
describe('scheduledUpgradeWorkflow (mocked cluster, real dev server)', () => {
  let env: TestWorkflowEnvironment;
  before(async () => {
    env = await startDevServer();
  });
  after(async () => {
    await env?.teardown();
  });

  it('cancelling or terminating the scheduled run leaves its upgrade running', async () => {
    const c = fakeCluster();
    await withMockedWorker(env, { ...c.acts, findRunningRollout }, 'scheduled', async (taskQueue) => {
      const cluster = 'abandon';
      const upgrade = env.client.workflow.getHandle(upgradeWorkflowId(cluster));
      const start = (n: number) =>
        env.client.workflow.start(scheduledUpgradeWorkflow, {
          taskQueue,
          workflowId: `${scheduledUpgradeWorkflowId(cluster)}-${n}`,
          args: [{ cluster, to: 'next-minor', policy: { approveWorkers: true }, schedule: 'test' }],
        });
      const first = await start(1);
      const waiting = await untilStatus(upgrade, 'the upgrade at its workers gate', (s) => s.gates.some((g) => !g.approvedBy), 60_000);
      assert.equal(waiting.to, '1.33.7', 'the run passed the version next-minor names');
      await first.cancel();
      await assert.rejects(first.result());
      assert.equal((await first.describe()).status.name, 'CANCELLED');
      assert.equal((await upgrade.describe()).status.name, 'RUNNING', 'cancelling the scheduled run did not cancel the upgrade');

      // A second run finds the upgrade (asking Temporal for real) and starts nothing.
      const second = await start(2);
      const skipped = await second.result();
      assert.deepEqual([skipped.outcome, skipped.message], ['skipped', `skipped: upgrade/${cluster} already running`]);

      const third = await start(3);
      await third.terminate('the test ends this run');
      assert.equal((await upgrade.describe()).status.name, 'RUNNING', 'terminating a scheduled run did not end the upgrade');
      await upgrade.signal(abortSignal, { by: 'test' });
      assert.equal((await upgrade.result()).phase, 'aborted');
    });
  });

  it('an upgrade started by hand after the check but before the start: the run ends as skipped, the upgrade is not touched', async () => {
    const c = fakeCluster();
    // The check says "not running" however things are: what a run sees when someone starts an upgrade right after it.
    const stale = async (): ReturnType<Activities['findRunningRollout']> => ({ running: false });
    await withMockedWorker(env, { ...c.acts, findRunningRollout: stale }, 'scheduled-race', async (taskQueue) => {
      const cluster = 'race';
      const byHand = await env.client.workflow.start(clusterUpgradeWorkflow, {
        taskQueue,
        workflowId: upgradeWorkflowId(cluster),
        workflowIdConflictPolicy: 'FAIL',
        args: [{ cluster, to: '1.33', policy: { approveWorkers: true } }],
      });
      await untilStatus(byHand, 'the upgrade by hand at its gate', (s) => s.gates.some((g) => !g.approvedBy), 60_000);
      // next-minor has a hop to plan (1.34.2), so the run gets as far as starting upgrade/race.
      const tried = await env.client.workflow.execute(scheduledUpgradeWorkflow, {
        taskQueue,
        workflowId: `${scheduledUpgradeWorkflowId(cluster)}-1`,
        args: [{ cluster, to: 'next-minor' }],
      });
      assert.deepEqual([tried.outcome, tried.message], ['skipped', 'skipped: upgrade/race already running']);
      const d = await byHand.describe();
      assert.equal(d.status.name, 'RUNNING');
      assert.equal(d.runId, byHand.firstExecutionRunId, 'the same run: nothing replaced it');
      await byHand.signal(abortSignal, { by: 'test' });
      await byHand.result();
    });
  });

  it('an OS maintenance of the cluster running: the scheduled run ends as skipped naming it, the cluster not read', async () => {
    const c = fakeCluster();
    const m = mockMaintenanceCluster();
    await withMockedWorker(env, { ...c.acts, ...m.acts, findRunningRollout }, 'scheduled-busy', async (taskQueue) => {
      const cluster = 'busy';
      const maintenance = await env.client.workflow.start(maintainWorkflow, {
        taskQueue,
        workflowId: maintainWorkflowId(cluster),
        args: [{ cluster, selector: 'pool=blue', policy: { canary: 1, approveAfterCanary: true } }],
      });
      await untilStatus(maintenance, 'the maintenance at its canary gate', (s) => s.gates.some((g) => !g.approvedBy), 60_000);
      const tried = await env.client.workflow.execute(scheduledUpgradeWorkflow, {
        taskQueue,
        workflowId: `${scheduledUpgradeWorkflowId(cluster)}-1`,
        args: [{ cluster, to: 'next-minor' }],
      });
      assert.deepEqual([tried.outcome, tried.message], ['skipped', `skipped: maintain/${cluster} already running`]);
      assert.deepEqual(c.calls, [], 'the scheduled run read nothing of the cluster');
      await assert.rejects(env.client.workflow.getHandle(upgradeWorkflowId(cluster)).describe(), 'no upgrade was started');
      await maintenance.signal(abortSignal, { by: 'test' });
      await maintenance.result();
    });
  });
});
