// A `skewless worker` told to stop (SIGTERM, as `docker compose stop` sends) finishes the activity it is
// running before it exits: the host command runs to its end (not cut off with its channel closed) and
// the activity's completion reaches Temporal. The grace is SHUTDOWN_GRACE_SECONDS; the host command
// here takes a few seconds (a `slow` fault), well inside it.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { SHUTDOWN_GRACE_SECONDS } from '../../worker/create-worker.js';
import { planClusterWorkflow } from '../../workflows/index.js';
import type { TestCluster } from '../helpers/sim-cluster.js';
import { startClusterWorld } from '../helpers/sim-world.js';
import { spawnCli, type RunningCli } from '../helpers/spawn-cli.js';
import { uniqueTaskQueue, temporalVars } from '../helpers/temporal-env.js';

const DESCRIPTION = `
name: stoptest
version: 1.32.4
repository: [1.32.4, 1.33.7]
nodes:
  - {name: cp, role: control-plane}
`;
const MADISON_MS = 6000;

const cleanEnv = () =>
  Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('TEMPORAL_') && !k.startsWith('SKEWLESS_')));

async function waitFor<T>(what: string, probe: () => Promise<T | undefined> | T | undefined, timeoutMs = 60_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await probe();
    if (v !== undefined) return v;
    assert.ok(Date.now() < deadline, `timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

describe('skewless worker on SIGTERM', () => {
  let env: TestWorkflowEnvironment;
  let tc: TestCluster;
  let worker: RunningCli | undefined;
  before(async () => {
    [env, tc] = await startClusterWorld(DESCRIPTION);
  });
  after(async () => {
    if (worker && worker.child.exitCode === null && worker.child.signalCode === null) worker.child.kill('SIGKILL');
    await tc?.stop();
    await env?.teardown();
  });

  it(`lets the activity in flight finish (within ${SHUTDOWN_GRACE_SECONDS} s) before exiting 0`, async () => {
    const taskQueue = uniqueTaskQueue('worker-shutdown');
    tc.sim.hosts.setFault('cp', { kind: 'slow', command: 'apt-cache madison', ms: MADISON_MS });
    worker = spawnCli(['worker', '--clusters-dir', tc.clustersDir, '--task-queue', taskQueue], { ...cleanEnv(), ...temporalVars(env) });
    const running = worker;
    await waitFor('the worker to poll', () => (running.stderr().includes('skewless worker: task queue') ? true : undefined));

    const handle = await env.client.workflow.start(planClusterWorkflow, {
      taskQueue,
      workflowId: `plan/stoptest/${taskQueue}`,
      args: [{ cluster: 'stoptest', to: '1.33' }],
    });
    try {
      // availableVersions has started on the worker: its `apt-cache madison` is running on the host.
      await waitFor('availableVersions to be running', async () => {
        const { raw } = await handle.describe();
        return raw.pendingActivities?.some((p) => p.activityType?.name === 'availableVersions' && p.lastStartedTime != null)
          ? true
          : undefined;
      });
      await new Promise((r) => setTimeout(r, 500)); // the SSH command is under way
      running.child.kill('SIGTERM');
      const exit = await running.exited;
      assert.equal(exit.code, 0, exit.stderr);
      assert.match(exit.stderr, new RegExp(`skewless worker: SIGTERM, finishing the tasks in flight \\(up to ${SHUTDOWN_GRACE_SECONDS} s`));
      assert.match(exit.stderr, /skewless worker: stopped/);

      // The host ran the command to its end and its client was still there to hear the exit status.
      const madison = tc.sim.hosts.commandLog('cp').filter((e) => e.command.startsWith('apt-cache madison'));
      assert.equal(madison.length, 1, JSON.stringify(madison));
      assert.equal(madison[0]!.exitCode, 0, JSON.stringify(madison[0]));
      assert.ok(!madison[0]!.hungUp, 'the channel was not closed under the command');
      assert.ok(madison[0]!.durationMs >= MADISON_MS - 100, JSON.stringify(madison[0]));

      // And Temporal recorded the activity as completed by the stopping worker, with the versions it read.
      const events = (await handle.fetchHistory()).events ?? [];
      const scheduled = events.find((e) => e.activityTaskScheduledEventAttributes?.activityType?.name === 'availableVersions');
      assert.ok(scheduled, 'availableVersions was scheduled');
      const completed = events.find((e) => String(e.activityTaskCompletedEventAttributes?.scheduledEventId) === String(scheduled.eventId));
      const failed = events.find(
        (e) => e.activityTaskFailedEventAttributes || e.activityTaskTimedOutEventAttributes || e.activityTaskCanceledEventAttributes,
      );
      assert.ok(
        completed,
        `no completion of availableVersions in the history${failed ? `; found ${JSON.stringify(failed).slice(0, 300)}` : ''}`,
      );
    } finally {
      await handle.terminate('test over').catch(() => undefined);
    }
  });
});
