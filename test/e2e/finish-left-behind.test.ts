import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { historyToJSON } from '@temporalio/common/lib/proto-utils.js';
import { mergePatch } from '../../sim/cluster/kube-clients.js';
import { waitFor } from '../../sim/cluster/wait-for.js';
import { statusQuery, type UpgradeStatus } from '../../workflows/rollout-messages.js';
import { cliAsync, spawnCli } from '../helpers/spawn-cli.js';
import { judgeSimulation, nodeLines } from '../helpers/upgrade-evidence.js';
import { simWorld } from '../helpers/sim-world.js';

// worker-2 runs a pod no controller manages: its drain is refused until the operator decides.
const LAB = `
name: behind
version: 1.32.4
repository: [1.32.4, 1.33.7]
nodes:
  - {name: cp, role: control-plane, count: 2}
  - {name: worker, role: worker, count: 3}
workloads:
  - {kind: Deployment, name: web, replicas: 3, pdb: {maxUnavailable: 1}}
  - {kind: Pod, name: pet, node: worker-2}
`;

const WORKERS = ['worker-1', 'worker-2', 'worker-3'];

/**
 * Runs that leave nodes behind, and the same command finishing them (issue 19 §1), through the real
 * CLI: an upgrade aborted once the control plane moved, then `upgrade --to` the same minor finishing
 * the workers; in that run a node skipped (and one cordoned by hand before it), named in the last line
 * and the exit status 4; then the exact version finishing the skipped node. The runs build on each other.
 */
describe('e2e: an upgrade finishes the nodes an earlier run left behind', () => {
  const world = simWorld(LAB, 'behind');
  const cliEnv = () => world.cliEnv();
  const cli = (...args: string[]) => cliAsync(args, cliEnv());
  const handle = () => world.env.client.workflow.getHandle('upgrade/behind');
  const status = () => handle().query(statusQuery);
  const until = async <T>(what: string, probe: () => Promise<T | undefined>, timeoutMs = 180_000): Promise<T> => {
    let found: T | undefined;
    await waitFor(what, async () => (found = await probe().catch(() => undefined)) !== undefined, timeoutMs, 250);
    return found as T;
  };
  const kubelets = async () =>
    Object.fromEntries((await world.tc.kube.core.listNode()).items.map((n) => [n.metadata?.name, n.status?.nodeInfo?.kubeletVersion]));
  const applies = () =>
    world.tc.sim.hosts.commandLog('cp-1').filter((e) => /kubeadm upgrade apply/.test(e.command) && e.exitCode === 0).length;

  /** The finish command the aborted run printed: the next run is started with it, as the operator would. */
  let finishWith = '';

  it('an abort once the control plane moved: exit 1, and the last line names the workers left at 1.32.4 and the command that finishes them', async () => {
    const run = spawnCli(['upgrade', '--cluster', 'behind', '--to', '1.33', '--approve-workers', '--drain-timeout', '120'], cliEnv());
    await until('the workers gate', async () =>
      (await status()).gates.some((g) => g.name === 'workers-1.33.7' && !g.approvedBy) ? true : undefined,
    );
    const aborted = await cli('abort', 'behind', '--by', 'dana', '--comment', 'change freeze');
    assert.equal(aborted.code, 0, aborted.stderr);
    const ended = await run.exited;
    assert.equal(ended.code, 1, ended.stdout + ended.stderr);
    const last = ended.stdout.trimEnd().split('\n').at(-1) ?? '';
    assert.match(last, /^behind: aborted by dana: change freeze; /);
    assert.match(last, /worker-1, worker-2, worker-3 at 1\.32\.4/);
    // The run's own task queue (not the default one: no worker serves that) and its policy.
    finishWith = /; finish with: (.*)$/.exec(last)?.[1] ?? '';
    assert.equal(
      finishWith,
      `skewless upgrade --cluster behind --to 1.33 --task-queue ${world.taskQueue} --approve-workers --drain-timeout 120`,
    );
    const versions = await kubelets();
    assert.deepEqual(versions, {
      'cp-1': 'v1.33.7',
      'cp-2': 'v1.33.7',
      'worker-1': 'v1.32.4',
      'worker-2': 'v1.32.4',
      'worker-3': 'v1.32.4',
    });
    assert.equal(applies(), 1);
  });

  it('`plan` and `upgrade --to` the same minor move only the workers; a skipped node and one cordoned by hand are named, exit 4', async () => {
    const plan = await cli('plan', '--cluster', 'behind', '--to', '1.33');
    assert.equal(plan.code, 0, plan.stdout + plan.stderr);
    assert.match(plan.stdout, /^Finish at 1\.33\.7: the control plane is there, worker-1, worker-2, worker-3 below it/);
    assert.match(plan.stdout, /control-plane +cp-1 \(already at 1\.33\.7\)/);
    assert.doesNotMatch(plan.stdout, /nothing to upgrade|kubeadm upgrade apply|kubeadm upgrade plan/);
    for (const w of WORKERS) assert.match(plan.stdout, new RegExp(`drain ${w}\\b`));
    assert.doesNotMatch(plan.stdout, /drain cp-\d/);

    // Someone cordons worker-3 by hand before the run: the run moves it and leaves their cordon.
    await world.tc.kube.core.patchNode({ name: 'worker-3', body: { spec: { unschedulable: true } } }, mergePatch);
    // The printed command as it stands: no SKEWLESS_TASK_QUEUE behind it.
    const { SKEWLESS_TASK_QUEUE: _queue, ...withoutQueue } = cliEnv();
    const run = spawnCli(finishWith.split(' ').slice(1), withoutQueue);
    // Its policy is the first run's: the workers gate waits for approval again, in the new run (the
    // aborted run's status, answered until the new one starts, still shows its gate unapproved).
    await until('the new run at the workers gate', async () => {
      const s = await status();
      return s.phase !== 'aborted' && s.gates.some((g) => g.name === 'workers-1.33.7' && !g.approvedBy) ? true : undefined;
    });
    const approved = await cli('approve', 'behind', '--gate', 'workers-1.33.7');
    assert.equal(approved.code, 0, approved.stderr);
    await until('worker-2 blocked by its bare pod', async () =>
      (await status()).nodes['worker-2']?.phase === 'blocked' ? true : undefined,
    );
    const skipped = await cli('resolve', 'behind', '--node', 'worker-2', '--action', 'skip', '--by', 'dana', '--comment', 'pet owner away');
    assert.equal(skipped.code, 0, skipped.stderr);
    const ended = await run.exited;
    assert.equal(ended.code, 4, ended.stdout + ended.stderr);
    const last = ended.stdout.trimEnd().split('\n').at(-1) ?? '';
    assert.equal(
      last,
      'behind: upgraded to 1.33.7 EXCEPT 2 nodes left behind: worker-2 at 1.32.4 (skipped by the operator), ' +
        'worker-3 at 1.33.7 left cordoned (cordoned by someone else before this run cordoned it); ' +
        'kubernetes.list on worker-2 points at v1.33, ahead of its kubelet 1.32.4 (held: kubeadm kubelet kubectl); ' +
        `finish them with: skewless upgrade --cluster behind --to 1.33.7 --task-queue ${world.taskQueue} --approve-workers --drain-timeout 120`,
    );
    // status gives the same exit status for the same outcome as the upgrade that followed it.
    const statusText = await cli('status', 'behind');
    assert.equal(statusText.code, 4, statusText.stdout + statusText.stderr);
    // The header spans what this finishing run moved (the workers' kubelets from 1.32.4), not its apiservers' 1.33.7 → 1.33.
    assert.match(statusText.stdout, /^behind: 1\.32\.4 → 1\.33\.7, hop 1\.33\.7 \(1\.33\.7\), done$/m);
    const statusJson = await cli('status', 'behind', '--output', 'json');
    assert.equal(statusJson.code, 4, statusJson.stderr);
    const result = (await handle().result()) as UpgradeStatus;
    assert.ok(
      result.events.includes(
        'the drain of worker-2 will block on default/pet (no controller): skewless resolve behind --node worker-2 --action skip|force when it does',
      ),
      result.events.join('\n'),
    );
    assert.deepEqual(result.leftBehind, [
      { node: 'worker-2', version: '1.32.4', why: 'skipped' },
      { node: 'worker-3', version: '1.33.7', why: 'cordoned-by-someone-else' },
    ]);
    // The control planes were already there: no kubeadm run, no drain, no node workflow of theirs.
    assert.equal(applies(), 1);
    for (const cp of ['cp-1', 'cp-2']) assert.deepEqual([result.nodes[cp]?.phase, result.nodes[cp]?.startedAt], ['done', undefined], cp);
    // SKEWLESS_SAVE_HISTORIES=dir keeps this finishing run's history for the replay test (test/replay/histories).
    const dir = process.env.SKEWLESS_SAVE_HISTORIES;
    if (dir) writeFileSync(`${dir}/upgrade_behind@finish-left-behind.json`, historyToJSON(await handle().fetchHistory()));
    assert.deepEqual(await nodeLines(world.tc.kube), [
      'cp-1 v1.33.7 schedulable',
      'cp-2 v1.33.7 schedulable',
      'worker-1 v1.33.7 schedulable',
      'worker-2 v1.32.4 schedulable',
      'worker-3 v1.33.7 cordoned',
    ]);
  });

  it('`upgrade --to` the exact version then finishes the skipped node alone, exit 0; the skew policy held in every state of the three runs', async () => {
    await world.tc.kube.core.deleteNamespacedPod({ name: 'pet', namespace: 'default', gracePeriodSeconds: 0 });
    await world.tc.kube.core.patchNode({ name: 'worker-3', body: { spec: { unschedulable: false } } }, mergePatch);
    const ended = await cli('upgrade', '--cluster', 'behind', '--to', '1.33.7');
    assert.equal(ended.code, 0, ended.stdout + ended.stderr);
    assert.equal(ended.stdout.trimEnd().split('\n').at(-1), 'behind: upgraded to 1.33.7');
    // Its bar counts the one node upgrade it does, not the control planes and workers already there.
    assert.match(ended.stdout, /^\[#{20}\] 1\/1 node upgrades, hop 1\.33\.7 of 1\.33\.7, done$/m);
    const result = (await handle().result()) as UpgradeStatus;
    assert.deepEqual(
      Object.entries(result.nodes)
        .filter(([, n]) => n.startedAt)
        .map(([name]) => name),
      ['worker-2'],
      'only the node left behind moved',
    );
    assert.deepEqual(
      await nodeLines(world.tc.kube),
      ['cp-1', 'cp-2', ...WORKERS].map((n) => `${n} v1.33.7 schedulable`),
    );

    const verdict = await judgeSimulation(world.tc.sim);
    assert.deepEqual(verdict.problems, []);
    assert.deepEqual(verdict.versionsSeen['kubelets worker-2'], ['1.32.4', '1.33.7']);

    // Nothing is left: the same command now refuses, naming the version every node is at.
    const again = await cli('upgrade', '--cluster', 'behind', '--to', '1.33');
    assert.equal(again.code, 1, again.stdout + again.stderr);
    assert.match(again.stderr, /nothing to upgrade: the control plane and every node are already at 1\.33\.7/);
  });

  it('the refused no-op start hides neither the last run that started from status, nor the earlier runs from history', async () => {
    const status = await cli('status', 'behind');
    assert.equal(status.code, 1, status.stdout + status.stderr);
    assert.match(
      status.stdout,
      /^ {2}refused before touching anything; the last run that started: \S+, completed: upgraded to 1\.33\.7 \(skewless history behind --run \S+\)$/m,
    );
    const listed = await cli('history', 'behind', '--output', 'json');
    assert.equal(listed.code, 0, listed.stderr);
    const executions = (
      JSON.parse(listed.stdout) as { executions: { firstRunId: string; started: string; state: string; shown: boolean }[] }
    ).executions;
    assert.deepEqual(
      executions.map((e) => [e.state, e.shown]),
      [
        ['COMPLETED', false],
        ['COMPLETED', false],
        ['COMPLETED', false],
        ['FAILED', true],
      ],
    );
    const text = await cli('history', 'behind');
    assert.match(
      text.stdout,
      /^upgrade\/behind: 4 executions Temporal still holds \(another: skewless history behind --run RUN_ID\|START\)$/m,
    );
    // The aborted first run, by its run id and by its start time: who aborted it, and why.
    for (const run of [executions[0]!.firstRunId, executions[0]!.started]) {
      const first = await cli('history', 'behind', '--run', run);
      assert.equal(first.code, 0, first.stderr);
      assert.match(first.stdout, /abort by dana/);
      assert.match(first.stdout, new RegExp(`^ {2}\\* ${executions[0]!.started} {2}${executions[0]!.firstRunId} {2}completed`, 'm'));
    }
    const unknown = await cli('history', 'behind', '--run', 'no-such-run');
    assert.equal(unknown.code, 2);
    assert.match(unknown.stderr, /^skewless: --run no-such-run: no run of this id or start time/);
  });
});
