import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import type { Worker } from '@temporalio/worker';
import { waitFor } from '../../sim/cluster/wait-for.js';
import { abortSignal } from '../../workflows/rollout-messages.js';
import type { ScheduledUpgradeResult } from '../../workflows/scheduled-upgrade-workflow.js';
import { cliAsync } from '../helpers/spawn-cli.js';
import type { TestCluster } from '../helpers/sim-cluster.js';
import { untilStatus } from '../helpers/status-polling.js';
import { uniqueTaskQueue, temporalVars } from '../helpers/temporal-env.js';
import { simWorker } from '../helpers/workers.js';
import { failureChain } from '../helpers/upgrade-evidence.js';
import { startClusterWorld } from '../helpers/sim-world.js';

const LAB = `
name: sched
version: 1.32.4
repository: [1.32.4, 1.32.6, 1.33.7]
rebootSeconds: 1
nodes:
  - {name: cp, role: control-plane, count: 1}
  - {name: worker, role: worker, count: 2}
workloads:
  - {kind: Deployment, name: web, replicas: 2, pdb: {maxUnavailable: 1}}
`;

const SCHEDULE = 'upgrade-schedule/sched';

/**
 * Upgrades started by a Temporal Schedule, on the real dev server with a real worker in this
 * process and a simulated 1+2 node cluster, driven through the real `skewless` CLI (asynchronously:
 * the worker runs here). The steps build on each other, in order.
 */
describe('schedules: a Temporal Schedule starts upgrades, one per cluster at a time', () => {
  let env: TestWorkflowEnvironment;
  let tc: TestCluster;
  let worker: Worker;
  let running: Promise<void>;
  const taskQueue = uniqueTaskQueue('schedules');
  const cliEnv = () => ({ ...process.env, ...temporalVars(env), SKEWLESS_TASK_QUEUE: taskQueue, USER: 'dana' });
  const cli = async (...args: string[]) => {
    const r = await cliAsync(args, cliEnv());
    return { ...r, detail: `skewless ${args.join(' ')}: exit ${r.code}\n--- stdout\n${r.stdout}--- stderr\n${r.stderr}` };
  };
  const schedule = () => env.client.schedule.getHandle(SCHEDULE);
  const runsOfSchedule = async () => (await schedule().describe()).info.recentActions.map((a) => a.action.workflow);
  const resultOf = (run: { workflowId: string; firstExecutionRunId: string }) =>
    env.client.workflow.getHandle(run.workflowId, run.firstExecutionRunId).result() as Promise<ScheduledUpgradeResult>;
  /** Every execution of upgrade/sched the server knows, open or closed. */
  const upgradeExecutions = async () => {
    const out: { runId: string; status: string; parent?: string }[] = [];
    for await (const w of env.client.workflow.list({ query: 'WorkflowId = "upgrade/sched"' })) {
      out.push({
        runId: w.runId,
        status: w.status.name,
        ...(w.parentExecution?.workflowId ? { parent: w.parentExecution.workflowId } : {}),
      });
    }
    return out;
  };
  const untilExecutions = async (check: (e: Awaited<ReturnType<typeof upgradeExecutions>>) => boolean) => {
    let last: Awaited<ReturnType<typeof upgradeExecutions>> = [];
    await waitFor('the list of upgrade/sched executions', async () => check((last = await upgradeExecutions())), 15_000, 250).catch(
      (err: Error) => assert.fail(`${err.message}: ${JSON.stringify(last)}`),
    );
    return last;
  };
  const kubelets = async () =>
    Object.fromEntries((await tc.kube.core.listNode()).items.map((n) => [n.metadata?.name, n.status?.nodeInfo?.kubeletVersion]));

  before(async () => {
    [env, tc] = await startClusterWorld(LAB);
    worker = await simWorker(env, tc.clustersDir, taskQueue);
    running = worker.run();
  });
  after(async () => {
    await schedule()
      .delete()
      .catch(() => undefined);
    worker?.shutdown();
    await running;
    await tc?.stop();
    await env?.teardown();
  });

  it('fires by itself every 5 s and starts upgrade/sched to the latest patch, which completes', async () => {
    const created = await cli(
      'schedule',
      'create',
      '--cluster',
      'sched',
      '--to',
      'latest-patch',
      '--every',
      '5s',
      '--canary',
      '1',
      '--note',
      'patch Tuesdays',
      '--output',
      'json',
    );
    assert.equal(created.code, 0, created.detail);
    const c = JSON.parse(created.stdout);
    assert.equal(c.scheduleId, SCHEDULE);
    assert.equal(c.overlap, 'SKIP');
    assert.deepEqual(c.when, ['every 5s']);

    // Nobody triggers it: the schedule's own interval starts the first run.
    let first: { workflowId: string; firstExecutionRunId: string } | undefined;
    await waitFor('the schedule to fire by itself', async () => (first = (await runsOfSchedule())[0]) !== undefined, 60_000, 250);
    assert.ok(first);
    assert.match(first.workflowId, /^scheduled-upgrade\/sched-/);
    // Later times come while this run goes on: SKIP lets none of them start a second run.
    const result = await resultOf(first).catch((err: unknown) => assert.fail(failureChain(err)));
    await schedule().pause('the test checks what the first run did');
    assert.equal(result.outcome, 'upgraded', JSON.stringify(result));
    assert.equal(result.target, 'latest-patch');
    assert.deepEqual(result.upgrade && { from: result.upgrade.from, to: result.upgrade.to, phase: result.upgrade.phase }, {
      from: '1.32.4',
      to: '1.32.6',
      phase: 'done',
    });
    assert.match(result.message, /^upgrade\/sched: upgraded to 1\.32\.6$/);

    // The kubelets moved, and the upgrade is the ordinary upgrade/sched, a child of the scheduled run.
    assert.deepEqual(await kubelets(), { 'cp-1': 'v1.32.6', 'worker-1': 'v1.32.6', 'worker-2': 'v1.32.6' });
    // (The list view follows the server a moment later.)
    const executions = await untilExecutions((e) => e.length === 1 && e[0]?.status === 'COMPLETED');
    assert.deepEqual(executions[0], { runId: result.upgrade?.runId, status: 'COMPLETED', parent: first.workflowId });
    const described = await schedule().describe();
    assert.ok(
      described.info.numActionsSkippedOverlap >= 1 || described.info.recentActions.length === 1,
      'no second run while the first went on',
    );
    assert.equal((await runsOfSchedule()).filter((r) => r.workflowId !== first?.workflowId).length, 0, 'SKIP: no other run started');

    // `schedule describe` shows the run and what it did.
    const text = await cli('schedule', 'describe', SCHEDULE);
    assert.equal(text.code, 0, text.detail);
    assert.match(text.stdout, /^upgrade-schedule\/sched: upgrade sched to latest-patch/m);
    assert.match(text.stdout, /overlap: SKIP: never two upgrades of one cluster/);
    assert.match(text.stdout, /state: paused \(the test checks what the first run did\)/);
    assert.ok(text.stdout.includes(`${first.workflowId}: completed: upgrade/sched: upgraded to 1.32.6`), text.detail);
    const json = await cli('schedule', 'describe', '--cluster', 'sched', '--output', 'json');
    assert.equal(json.code, 0, json.detail);
    const d = JSON.parse(json.stdout);
    assert.deepEqual(
      d.recentRuns.map((r: { workflowId: string; outcome: string }) => [r.workflowId, r.outcome]),
      [[first.workflowId, 'upgraded']],
    );
    assert.deepEqual(d.policy, { canary: 1 });
  });

  it('a trigger when the cluster is already at the latest patch ends as nothing to do, starting no upgrade', async () => {
    const before = (await runsOfSchedule()).length;
    const r = await cli('schedule', 'trigger', SCHEDULE);
    assert.equal(r.code, 0, r.detail);
    let run: { workflowId: string; firstExecutionRunId: string } | undefined;
    await waitFor('the triggered run', async () => (run = (await runsOfSchedule())[before]) !== undefined, 30_000, 250);
    const result = await resultOf(run as NonNullable<typeof run>);
    assert.equal(result.outcome, 'nothing-to-do', JSON.stringify(result));
    assert.equal(result.message, 'nothing to do: latest-patch: 1.32.6 is already the newest 1.32 release the repository offers');
    assert.equal((await upgradeExecutions()).length, 1, 'no upgrade started');
  });

  it('a trigger while an upgrade started by hand runs starts nothing second: the scheduled run ends as skipped', async () => {
    const started = await cli('upgrade', '--cluster', 'sched', '--to', 'next-minor', '--approve-workers', '--detach');
    assert.equal(started.code, 0, started.detail);
    const manual = env.client.workflow.getHandle('upgrade/sched');
    try {
      const s = await untilStatus(manual, 'the upgrade by hand planned', (st) => st.hops.length > 0, 120_000);
      assert.equal(s.to, '1.33.7', 'next-minor named the version');
      const manualRun = (await manual.describe()).runId;
      const before = (await runsOfSchedule()).length;
      const r = await cli('schedule', 'trigger', '--cluster', 'sched', '--output', 'json');
      assert.equal(r.code, 0, r.detail);
      assert.deepEqual(JSON.parse(r.stdout), { scheduleId: SCHEDULE, action: 'triggered' });
      let run: { workflowId: string; firstExecutionRunId: string } | undefined;
      await waitFor('the triggered run', async () => (run = (await runsOfSchedule())[before]) !== undefined, 30_000, 250);
      const result = await resultOf(run as NonNullable<typeof run>);
      assert.equal(result.outcome, 'skipped', JSON.stringify(result));
      assert.equal(result.message, 'skipped: upgrade/sched already running');
      // Only the upgrade started by hand runs; the one from the first test has ended.
      const executions = await untilExecutions((e) => e.length === 2);
      assert.deepEqual(
        executions.filter((e) => e.status === 'RUNNING').map((e) => e.runId),
        [manualRun],
        JSON.stringify(executions),
      );
      assert.equal(executions.length, 2, JSON.stringify(executions));
      assert.equal((await manual.describe()).status.name, 'RUNNING', 'the upgrade by hand goes on');
      const text = await cli('schedule', 'describe', SCHEDULE);
      assert.ok(text.stdout.includes(`${run?.workflowId}: completed: skipped: upgrade/sched already running`), text.detail);
    } finally {
      await manual.signal(abortSignal, { by: 'schedules test' }).catch(() => undefined);
      await manual.result().catch(() => undefined);
    }
  });
});
