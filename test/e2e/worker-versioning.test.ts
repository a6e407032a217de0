// Worker Versioning on the real dev server: two builds of `skewless worker` side by side, the second
// with a changed workflow command sequence (two-builds/build-two-workflows.ts). An upgrade started on
// build 1 finishes on build 1 while build 2 is current, the next upgrade runs on build 2, and neither
// worker logs a replay or non-determinism error. Build 2 is a second copy of the product (the compiled
// code and bin/, as an installation holds them) whose workflow bundle is the changed code; build 2 is
// made current the way docs/deployment.md's release says, with the Temporal CLI.
import assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { cpSync, mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { Client } from '@temporalio/client';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { bundleWorkflowCode } from '@temporalio/worker';
import { workerDeploymentName } from '../../contracts/worker-deployment.js';
import { nodeWorkflowId, upgradeWorkflowId } from '../../contracts/workflow-ids.js';
import { workflowBuildId } from '../../tooling/build-info.js';
import { ensureTemporalBinary } from '../../tooling/temporal-binary.js';
import { statusQuery } from '../../workflows/rollout-messages.js';
import { waitFor } from '../../sim/cluster/wait-for.js';
import { repoRoot } from '../helpers/run-cli.js';
import type { TestCluster } from '../helpers/sim-cluster.js';
import { startClusterWorld } from '../helpers/sim-world.js';
import { cliAsync } from '../helpers/spawn-cli.js';
import { temporalVars, uniqueTaskQueue } from '../helpers/temporal-env.js';
import { tempDir } from '../helpers/temp-dir.js';

const CLUSTER = 'twobuilds';
const DESCRIPTION = `
name: ${CLUSTER}
version: 1.32.4
repository: [1.32.4, 1.33.7, 1.34.2]
nodes:
  - {name: cp, role: control-plane}
  - {name: w1, role: worker}
`;
/** What the product ships of dist/ (package.json `files`): enough for `skewless worker`. */
const PRODUCT = ['activities', 'client', 'contracts', 'rules', 'tooling', 'worker', 'workflows'];

/** A second installation of skewless whose workflow bundle is build 2's code; returns its root. */
async function buildTwo(): Promise<string> {
  const root = tempDir('build-two');
  for (const d of PRODUCT) cpSync(join(repoRoot, 'dist', d), join(root, 'dist', d), { recursive: true });
  cpSync(join(repoRoot, 'bin'), join(root, 'bin'), { recursive: true });
  cpSync(join(repoRoot, 'package.json'), join(root, 'package.json'));
  symlinkSync(join(repoRoot, 'node_modules'), join(root, 'node_modules'));
  const quiet = () => undefined;
  const { code } = await bundleWorkflowCode({
    workflowsPath: join(repoRoot, 'dist', 'test', 'e2e', 'two-builds', 'build-two-workflows.js'),
    logger: { log: quiet, trace: quiet, debug: quiet, info: quiet, warn: quiet, error: (m) => console.error(m) },
  });
  mkdirSync(join(root, 'dist'), { recursive: true });
  writeFileSync(join(root, 'dist', 'workflow-bundle.js'), code); // after the copy: newer than every workflow module
  return root;
}

interface RunningWorker {
  child: ChildProcess;
  log(): string;
}

/** `skewless worker` of the installation at ROOT, once its start-up line (its build and whether it is current) is out. */
async function startWorker(root: string, env: NodeJS.ProcessEnv, clustersDir: string): Promise<RunningWorker> {
  const child = spawn(process.execPath, [join(root, 'bin', 'skewless.js'), 'worker', '--clusters-dir', clustersDir], { env, cwd: root });
  let log = '';
  child.stdout?.on('data', (d: Buffer) => (log += d.toString()));
  child.stderr?.on('data', (d: Buffer) => (log += d.toString()));
  await waitFor('the worker to start', () => log.includes('skewless worker: task queue') || child.exitCode !== null, 90_000, 100);
  assert.equal(child.exitCode, null, log);
  return { child, log: () => log };
}

/** The build id of every workflow task a run completed: which worker build wrote its history. */
async function buildsOf(client: Client, workflowId: string): Promise<string[]> {
  const history = await client.workflow.getHandle(workflowId).fetchHistory();
  return (history.events ?? [])
    .filter((e) => e.workflowTaskCompletedEventAttributes)
    .map((e) => e.workflowTaskCompletedEventAttributes?.deploymentVersion?.buildId ?? '(unversioned)');
}

/** The first command the run's code gave: a timer (build 2's change) or an activity (build 1). */
async function firstCommand(client: Client, workflowId: string): Promise<'timer' | 'activity' | 'other'> {
  const history = await client.workflow.getHandle(workflowId).fetchHistory();
  const first = (history.events ?? []).find((e) => e.timerStartedEventAttributes || e.activityTaskScheduledEventAttributes);
  return first?.timerStartedEventAttributes ? 'timer' : first?.activityTaskScheduledEventAttributes ? 'activity' : 'other';
}

const oneBuild = (builds: string[]) => [...new Set(builds)];

describe('two builds of the worker: a run stays on the build that started it, new runs take the current one', () => {
  let env: TestWorkflowEnvironment;
  let tc: TestCluster;
  let rootTwo: string;
  const workers: RunningWorker[] = [];
  const taskQueue = uniqueTaskQueue('two-builds');
  const vars = (): NodeJS.ProcessEnv => ({ ...process.env, ...temporalVars(env), SKEWLESS_TASK_QUEUE: taskQueue, USER: 'dana' });

  before(async () => {
    [env, tc, rootTwo] = await startClusterWorld(DESCRIPTION, buildTwo());
  });
  after(async () => {
    for (const w of workers) if (w.child.exitCode === null && w.child.signalCode === null) w.child.kill('SIGKILL');
    await tc?.stop();
    await env?.teardown();
  });

  it('an upgrade started on build 1 finishes on build 1 while build 2 is current; the next runs on build 2', async () => {
    const deployment = workerDeploymentName(taskQueue);
    const one = workflowBuildId() as string;
    const two = workflowBuildId(join(rootTwo, 'dist', 'workflow-bundle.js')) as string;
    assert.notEqual(one, two);

    // Build 1, the first worker of its deployment, makes itself current; run A starts on it and waits at its canary gate.
    const w1 = await startWorker(repoRoot, vars(), tc.clustersDir);
    workers.push(w1);
    assert.match(w1.log(), new RegExp(`build ${one} of deployment ${deployment} \\(current: takes new runs\\)`));
    const a = await cliAsync(['upgrade', '--cluster', CLUSTER, '--to', '1.33', '--approve-canary', '--detach'], vars());
    assert.equal(a.code, 0, a.stderr + w1.log());
    const handleA = env.client.workflow.getHandle(upgradeWorkflowId(CLUSTER));
    const runA = (await handleA.describe()).runId;
    let gate = '';
    await waitFor(
      'run A at its canary gate',
      async () => {
        const s = await handleA.query(statusQuery);
        gate = s.gates.find((g) => !g.approvedBy && !g.opensAt)?.name ?? '';
        return gate !== '';
      },
      180_000,
      500,
    );

    // Build 2 joins beside it (registered, not current), then the operator makes it current.
    const w2 = await startWorker(rootTwo, vars(), tc.clustersDir);
    workers.push(w2);
    assert.match(w2.log(), new RegExp(`build ${two} of deployment ${deployment} \\(registered; build ${one} is current`));
    const setCurrent = () =>
      spawnSync(
        ensureTemporalBinary(),
        ['worker', 'deployment', 'set-current-version', '--deployment-name', deployment, '--build-id', two, '--yes'],
        {
          encoding: 'utf8',
          timeout: 60_000,
          env: { ...process.env, TEMPORAL_ADDRESS: env.address, TEMPORAL_NAMESPACE: env.namespace ?? 'default' },
        },
      );
    // The server refuses while build 2 has not yet polled every task queue type build 1 polls ("missing active
    // task queues"): a worker just registered, as an operator switching at once would meet it. Asked again, briefly.
    let set = setCurrent();
    for (let tries = 1; set.status !== 0 && /missing active task queues/.test(set.stderr) && tries < 30; tries++) {
      await new Promise((r) => setTimeout(r, 1000));
      set = setCurrent();
    }
    assert.equal(set.status, 0, set.stderr + set.stdout);
    const movedAt = (await env.client.workflow.getHandle(upgradeWorkflowId(CLUSTER)).fetchHistory()).events?.length ?? 0;

    // Run A goes on, on build 1: its gate approved after the switch, its canary and its end are build 1's work.
    const approved = await cliAsync(['approve', CLUSTER, '--gate', gate, '--by', 'dana'], vars());
    assert.equal(approved.code, 0, approved.stderr);
    const doneA = await handleA.result();
    assert.equal(doneA.phase, 'done', JSON.stringify(doneA.events));
    const eventsA = (await handleA.fetchHistory()).events ?? [];
    assert.ok(eventsA.length > movedAt, 'run A wrote history after build 2 became current');
    assert.deepEqual(oneBuild(await buildsOf(env.client, upgradeWorkflowId(CLUSTER))), [one], 'run A: every task on build 1');
    for (const node of ['cp', 'w1'])
      assert.deepEqual(
        oneBuild(await buildsOf(env.client, nodeWorkflowId(upgradeWorkflowId(CLUSTER), node, '1.33.7'))),
        [one],
        `A's ${node} on build 1`,
      );
    assert.equal(await firstCommand(env.client, upgradeWorkflowId(CLUSTER)), 'activity');

    // Run B, started now, is build 2's: its history shows build 2's changed command sequence.
    const b = await cliAsync(['upgrade', '--cluster', CLUSTER, '--to', '1.34'], vars());
    assert.equal(b.code, 0, b.stderr + b.stdout + w2.log());
    const runB = (await handleA.describe()).runId;
    assert.notEqual(runB, runA);
    assert.deepEqual(oneBuild(await buildsOf(env.client, upgradeWorkflowId(CLUSTER))), [two], 'run B: every task on build 2');
    for (const node of ['cp', 'w1'])
      assert.deepEqual(
        oneBuild(await buildsOf(env.client, nodeWorkflowId(upgradeWorkflowId(CLUSTER), node, '1.34.2'))),
        [two],
        `B's ${node} on build 2`,
      );
    assert.equal(await firstCommand(env.client, upgradeWorkflowId(CLUSTER)), 'timer', "build 2's change ran");

    // The CLI's status names the build a run is on.
    const status = await cliAsync(['status', CLUSTER], vars());
    assert.match(status.stdout, new RegExp(`build: ${two} \\(pinned, deployment ${deployment}\\)`), status.stdout + status.stderr);
    const statusA = await cliAsync(['status', CLUSTER, '--output', 'json'], vars());
    assert.deepEqual((JSON.parse(statusA.stdout) as { run: { build: unknown } }).run.build, { id: two, deployment, behavior: 'pinned' });

    for (const w of [w1, w2]) assert.doesNotMatch(w.log(), /nondetermin|replay|DeterminismViolation|TMPRL1100/i, w.log());
  });
});
