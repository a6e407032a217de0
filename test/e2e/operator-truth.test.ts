import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import type { Worker } from '@temporalio/worker';
import { mergePatch } from '../../sim/cluster/kube-clients.js';
import { waitFor } from '../../sim/cluster/wait-for.js';
import type { UpgradeStatus } from '../../workflows/rollout-messages.js';
import { repoRoot, type CliResult } from '../helpers/run-cli.js';
import type { TestCluster } from '../helpers/sim-cluster.js';
import { cliAsync, spawnCli, type RunningCli } from '../helpers/spawn-cli.js';
import { untilStatus } from '../helpers/status-polling.js';
import { uniqueTaskQueue, temporalVars } from '../helpers/temporal-env.js';
import { simWorker } from '../helpers/workers.js';
import { startClusterWorld } from '../helpers/sim-world.js';

// The workers' kubelet restart takes 3 s, so a node spends seconds in its upgrade step: long enough
// for `status` to be asked while it is there.
const LAB = `
name: truth
version: 1.32.4
repository: [1.32.4, 1.33.7]
rebootSeconds: 1
nodes:
  - {name: cp, role: control-plane}
  - {name: worker, role: worker, count: 2, latencies: {kubeletRestart: 3000}}
workloads:
  - {kind: DaemonSet, name: agent}
`;
const WORKERS_GATE = 'workers-1.33.7';
const CANARY_GATE = 'canary-1.33.7';

/**
 * What the operator sees must be true: the real CLI, the real dev server, a worker in this process
 * that the test stops and starts, and a simulated 1+2 cluster. A status without a worker, a refused
 * upgrade (the skew policy broken by an old kubelet), an attached upgrade interrupted, a node's own
 * phase, who acted in Temporal's history, a node cordoned by hand, and output into a closed pipe.
 * The steps build on each other, in order.
 */
describe('e2e: what the operator sees is true', () => {
  let env: TestWorkflowEnvironment;
  let tc: TestCluster;
  let worker: Worker | undefined;
  let running: Promise<void> | undefined;
  /** The attached `skewless upgrade` that the operator interrupts. */
  let upgrade: RunningCli | undefined;
  const taskQueue = uniqueTaskQueue('truth');
  const cliEnv = () => ({ ...process.env, ...temporalVars(env), SKEWLESS_TASK_QUEUE: taskQueue, USER: 'dana' });
  const cli = (...args: string[]) => cliAsync(args, cliEnv());
  const timed = async (...args: string[]): Promise<CliResult & { seconds: number }> => {
    const start = Date.now();
    const r = await cli(...args);
    return { ...r, seconds: (Date.now() - start) / 1000 };
  };
  const handle = () => env.client.workflow.getHandle('upgrade/truth');
  const until = (what: string, check: (s: UpgradeStatus) => boolean) => untilStatus(handle(), what, check, 180_000);
  const startWorker = async () => {
    worker = await simWorker(env, tc.clustersDir, taskQueue);
    running = worker.run();
  };
  const stopWorker = async () => {
    worker?.shutdown();
    await running;
    worker = running = undefined;
  };
  const kubelet = (node: string, version: string) =>
    tc.kube.core.patchNodeStatus({ name: node, body: { status: { nodeInfo: { kubeletVersion: version } } } }, mergePatch);
  const events = async () => (await handle().fetchHistory()).events ?? [];
  /** `skewless ARGS` whose stdout reader has gone before it writes (`skewless ... | head -0`). */
  const intoClosedPipe = (args: string[]) =>
    new Promise<CliResult>((resolve) => {
      const child = spawn(process.execPath, [join(repoRoot, 'bin', 'skewless.js'), ...args], { env: cliEnv(), cwd: repoRoot });
      child.stdout.destroy();
      let stderr = '';
      child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
      child.on('close', (code) => resolve({ code, stdout: '', stderr }));
    });

  before(async () => {
    [env, tc] = await startClusterWorld(LAB);
  });
  after(async () => {
    upgrade?.child.kill('SIGKILL');
    await stopWorker();
    await tc?.stop();
    await env?.teardown();
  });

  it('with no worker polling, status answers within seconds from what Temporal holds and says so in one line', async () => {
    const start = await cli('upgrade', '--cluster', 'truth', '--to', '1.33', '--detach');
    assert.equal(start.code, 0, start.stderr);

    const text = await timed('status', 'truth');
    assert.equal(text.code, 0, text.stdout + text.stderr);
    assert.equal(text.stderr, '');
    assert.ok(text.seconds < 10, `answered in ${text.seconds} s`);
    assert.equal(
      text.stdout,
      `truth: upgrade/truth running; not yet started by a worker\n  no worker polls task queue ${taskQueue}: nodes and gates need one ("skewless worker --clusters-dir DIR")\n`,
    );
    const json = await timed('status', 'truth', '--output', 'json');
    assert.equal(json.code, 0, json.stderr);
    const s = JSON.parse(json.stdout);
    assert.deepEqual(
      [s.run.workflowId, s.run.state, s.run.taskQueue, s.noWorker],
      ['upgrade/truth', 'RUNNING', taskQueue, `no worker polls task queue ${taskQueue}`],
    );
    // Detached, the start is all there is to say: its pre-flight has not run yet.
    assert.match(
      start.stdout,
      /^started upgrade\/truth to 1\.33 \(detached: the worker checks it before it touches anything; "skewless watch truth" says whether it passed\)\n$/,
    );
  });

  it('watch without a worker says so within seconds; Ctrl-C stops it and says how to re-attach', async () => {
    const watch = spawnCli(['watch', 'truth'], cliEnv());
    try {
      await waitFor('watch says no worker polls', () => watch.stderr().includes(`no worker polls task queue ${taskQueue}`), 15_000, 100);
      assert.equal(
        watch.stderr(),
        `skewless: no worker polls task queue ${taskQueue}; the upgrade waits for a worker ("skewless worker --clusters-dir DIR"); ` +
          'Temporal holds: upgrade/truth running; not yet started by a worker\n',
      );
    } finally {
      watch.child.kill('SIGINT');
    }
    const watched = await watch.exited;
    assert.equal(watched.code, 130, 'Ctrl-C: 130, as for any interrupted command');
    assert.match(
      watched.stderr,
      /^skewless: stopped following upgrade\/truth; the upgrade goes on in Temporal: re-attach with "skewless watch truth"$/m,
    );
  });

  it('a refused upgrade: status says failed with the refusal and exits 1', async () => {
    // worker-2's kubelet 1.29: 3 minors behind is allowed now, 4 behind the next apiserver is not.
    await kubelet('worker-2', 'v1.29.0');
    await startWorker();
    await assert.rejects(handle().result(), /Workflow execution failed/);

    const text = await cli('status', 'truth');
    assert.equal(text.code, 1, text.stdout + text.stderr);
    assert.match(text.stdout, /^truth: 1\.29\.0 → 1\.33\.7, hop - \(1\.33\.7\), failed$/m);
    assert.match(text.stdout, /^ {2}failed: refusing to start: .* breaks the skew policy: .*kubelet on worker-2 at 1\.29\.0/m);
    assert.doesNotMatch(text.stdout, /inventory/);
    const json = await cli('status', 'truth', '--output', 'json');
    assert.equal(json.code, 1, json.stderr);
    const s = JSON.parse(json.stdout);
    assert.equal(s.phase, 'failed');
    assert.equal(s.run.state, 'FAILED');
    assert.equal(s.failure.type, 'SkewViolation');
    assert.match(s.failure.message, /^refusing to start: /);
  });

  it('with its worker stopped, status of the refused upgrade still answers within seconds, with the failure', async () => {
    await stopWorker(); // still listed as the queue's poller for minutes: the query's deadline answers
    const stopped = await timed('status', 'truth').finally(startWorker);
    assert.equal(stopped.code, 1, stopped.stdout + stopped.stderr);
    assert.ok(stopped.seconds < 15, `answered in ${stopped.seconds} s`);
    assert.match(stopped.stdout, /^truth: upgrade\/truth failed; as last recorded: 1\.29\.0 → 1\.33\.7, failed, 0\/3 node upgrades$/m);
    assert.match(stopped.stdout, new RegExp(`^ {2}no worker answered on task queue ${taskQueue} within 5 s`, 'm'));
    assert.match(stopped.stdout, /^ {2}failed: refusing to start: /m);
    assert.equal(stopped.stderr, '');
  });

  it('plan --cluster gives one verdict on a broken skew policy: the upgrade would refuse to start', async () => {
    const plan = await cli('plan', '--cluster', 'truth', '--to', '1.33');
    assert.equal(plan.code, 1, plan.stderr);
    assert.match(plan.stdout, /^Skew policy: BROKEN at /m);
    assert.doesNotMatch(plan.stdout, /nothing would stop/);
    assert.match(plan.stdout, /^Pre-flight \(truth\): the upgrade would refuse to start:\n {2}the skew policy: .+ breaks it/m);
    const planJson = await cli('plan', '--cluster', 'truth', '--to', '1.33', '--output', 'json');
    assert.equal(planJson.code, 1, planJson.stderr);
    assert.match(JSON.parse(planJson.stdout).refusals[0], /^the skew policy: /);
  });

  it('an attached upgrade refused by its pre-flight never says started, in text or JSON', async () => {
    try {
      const refused = await cli('upgrade', '--cluster', 'truth', '--to', '1.33');
      assert.equal(refused.code, 1, refused.stdout + refused.stderr);
      assert.equal(refused.stdout, 'checking upgrade/truth to 1.33: inventory, skew and pre-flight on the worker\n');
      assert.match(refused.stderr, /^skewless: upgrade of truth failed: refusing to start: .*kubelet on worker-2 at 1\.29\.0[^\n]*\n$/);
      const refusedJson = await cli('upgrade', '--cluster', 'truth', '--to', '1.33', '--output', 'json');
      assert.equal(refusedJson.code, 1, refusedJson.stderr);
      const types = refusedJson.stdout
        .trim()
        .split('\n')
        .map((line) => (JSON.parse(line) as { type: string }).type);
      assert.ok(!types.includes('started') && !types.includes('progress'), types.join(', '));
      assert.equal(types.at(-1), 'failed');
    } finally {
      await kubelet('worker-2', 'v1.32.4');
    }
  });

  it('an attached upgrade says started once its pre-flight passed, then follows it', async () => {
    // Cordoned by hand before the run: not this run's to undo.
    await tc.kube.core.patchNode({ name: 'worker-2', body: { spec: { unschedulable: true } } }, mergePatch);
    upgrade = spawnCli(
      ['upgrade', '--cluster', 'truth', '--to', '1.33', '--canary', '1', '--approve-workers', '--approve-canary'],
      cliEnv(),
    );
    await waitFor('the upgrade following the run', () => /node upgrades/.test(upgrade?.stdout() ?? ''), 60_000, 100);
    assert.match(
      upgrade.stdout(),
      /^checking upgrade\/truth to 1\.33: inventory, skew and pre-flight on the worker\nstarted upgrade\/truth to 1\.33\n/,
    );
  });

  it('Ctrl-C on the attached upgrade leaves it running and says how to re-attach, exit 130', async () => {
    await until('the workers gate', (s) => s.gates.some((g) => g.name === WORKERS_GATE && !g.approvedBy));
    upgrade?.child.kill('SIGINT');
    const interrupted = await upgrade?.exited;
    assert.equal(interrupted?.code, 130, interrupted?.stderr);
    assert.equal(
      interrupted?.stderr,
      'skewless: stopped following upgrade/truth; the upgrade goes on in Temporal: re-attach with "skewless watch truth"\n',
    );
    assert.equal((await handle().describe()).status.name, 'RUNNING');
  });

  it("Temporal's own identity of an operator's update is its --by, of a start without --by user@host", async () => {
    const approve = await cli('approve', 'truth', '--gate', WORKERS_GATE, '--by', 'sam');
    assert.equal(approve.code, 0, approve.stderr);
    const accepted = (await events()).find(
      (e) => e.workflowExecutionUpdateAcceptedEventAttributes?.acceptedRequest?.input?.name === 'approve',
    );
    assert.equal(accepted?.workflowExecutionUpdateAcceptedEventAttributes?.acceptedRequest?.meta?.identity, 'sam');
    const started = (await events())[0]?.workflowExecutionStartedEventAttributes;
    assert.equal(started?.identity, `dana@${hostname()}`, 'no --by: the login name and host');
  });

  it('status shows a node in flight at the step its own node workflow is in, not the parent\'s "draining"', async () => {
    const seen: string[] = [];
    for (const deadline = Date.now() + 120_000; ;) {
      const r = await cli('status', 'truth', '--output', 'json');
      assert.equal(r.code, 0, r.stderr);
      const phase = (JSON.parse(r.stdout) as UpgradeStatus).nodes['worker-1']?.phase ?? '?';
      if (seen.at(-1) !== phase) seen.push(phase);
      if (phase === 'upgrading' || phase === 'verifying') break;
      assert.notEqual(phase, 'done', `worker-1 finished while status showed it ${seen.join(' → ')}`);
      assert.ok(Date.now() < deadline, `status showed worker-1 ${seen.join(' → ')}`);
    }
  });

  it('watch of a running upgrade whose worker stopped says within seconds that no worker answers, with what Temporal holds', async () => {
    // The stopped worker stays listed as the queue's poller for minutes: silence, not the poller list, is the sign.
    await stopWorker();
    const started = Date.now();
    const watch = spawnCli(['watch', 'truth'], cliEnv());
    try {
      await waitFor('watch says no worker answers', () => watch.stderr().includes('no worker answered'), 20_000, 100);
      const seconds = (Date.now() - started) / 1000;
      assert.ok(seconds < 15, `said after ${seconds} s`);
      assert.match(
        watch.stderr(),
        new RegExp(
          `^skewless: no worker answered on task queue ${taskQueue} within 5 s \\(a worker polled it recently: stopped or overloaded\\?\\); ` +
            'the upgrade waits for a worker \\("skewless worker --clusters-dir DIR"\\); ' +
            'Temporal holds: upgrade/truth running; as last recorded: 1\\.32\\.4 → 1\\.33\\.7, hop 1\\.33\\.7, [^\\n]*\\d/3 node upgrades[^\\n]*\\n$',
        ),
      );
      const json = await cli('status', 'truth', '--output', 'json');
      assert.equal(json.code, 0, json.stderr);
      const s = JSON.parse(json.stdout);
      assert.match(s.noWorker, new RegExp(`^no worker answered on task queue ${taskQueue} within 5 s`));
      assert.equal(s.recorded.hop, '1.33.7');
    } finally {
      watch.child.kill('SIGINT');
      await watch.exited;
      await startWorker();
    }
  });

  it("after an abort, history says the node cordoned by hand was left cordoned; the abort's identity is its --by", async () => {
    await until('the canary gate', (s) => s.gates.some((g) => g.name === CANARY_GATE && !g.approvedBy));
    const abort = await cli('abort', 'truth', '--by', 'erin', '--comment', 'enough');
    assert.equal(abort.code, 0, abort.stderr);
    const result = await handle().result();
    assert.equal(result.phase, 'aborted', result.events.join('\n'));

    const history = await cli('history', 'truth');
    assert.equal(history.code, 0, history.stderr);
    assert.match(
      history.stdout,
      /^\S+ {2}worker-2 +uncordonNode: uncordon worker-2 +[\d.]+ s {2}left cordoned: cordoned by someone else$/m,
    );
    assert.equal((await tc.kube.core.readNode({ name: 'worker-2' })).spec?.unschedulable, true, 'still cordoned, as its owner left it');
    const signal = (await events()).find((e) => e.workflowExecutionSignaledEventAttributes?.signalName === 'abort');
    assert.equal(signal?.workflowExecutionSignaledEventAttributes?.identity, 'erin');
  });

  it('status of the aborted upgrade shows its outcome and exits 1', async () => {
    const status = await cli('status', 'truth');
    assert.equal(status.code, 1, status.stdout + status.stderr);
    assert.match(status.stdout, /^truth: 1\.32\.4 → 1\.33\.7, hop 1\.33\.7 \(1\.33\.7\), aborted$/m);
    assert.match(status.stdout, /^ {2}aborted by erin: enough; /m);
  });

  it('status and history into a pipe whose reader is gone end quietly with their own exit status', async () => {
    const status = await intoClosedPipe(['status', 'truth']);
    assert.deepEqual([status.code, status.stderr], [1, ''], "the aborted run's 1, and no EPIPE stack");
    const history = await intoClosedPipe(['history', 'truth']);
    assert.deepEqual([history.code, history.stderr], [0, '']);
    // As the operator types it.
    const head = await new Promise<CliResult>((resolve) => {
      const child = spawn(
        'bash',
        ['-c', `node ${JSON.stringify(join(repoRoot, 'bin', 'skewless.js'))} history truth | head -1; exit "\${PIPESTATUS[0]}"`],
        { env: cliEnv(), cwd: repoRoot },
      );
      let [stdout, stderr] = ['', ''];
      child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
      child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
      child.on('close', (code) => resolve({ code, stdout, stderr }));
    });
    assert.deepEqual([head.code, head.stderr], [0, '']);
    // The refused runs before the aborted one are executions of the same id, listed first.
    assert.match(
      head.stdout,
      /^upgrade\/truth: \d+ executions Temporal still holds \(another: skewless history truth --run RUN_ID\|START\)\n$/,
    );
  });

  it('status of a run no worker has answered yet gives one classification, noWorker, in text and JSON', async () => {
    // Stopped but still listed: the new run's first workflow task stays open.
    await stopWorker();
    const start = await cli('upgrade', '--cluster', 'truth', '--to', '1.33', '--detach');
    assert.equal(start.code, 0, start.stderr);
    const json = await cli('status', 'truth', '--output', 'json');
    assert.equal(json.code, 0, json.stderr);
    const s = JSON.parse(json.stdout);
    assert.equal(s.noAnswer, undefined);
    assert.match(s.noWorker, new RegExp(`^no worker (has answered|answered|polls) (on )?task queue ${taskQueue}`));
    assert.equal(s.run.state, 'RUNNING');
    const text = await cli('status', 'truth');
    assert.match(
      text.stdout,
      new RegExp(`^ {2}no worker (has answered|answered|polls) (on )?task queue ${taskQueue}.*: nodes and gates need one`, 'm'),
    );
    assert.doesNotMatch(text.stdout, /no answer from the run yet/);
  });
});
