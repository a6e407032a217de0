import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { historyToJSON } from '@temporalio/common/lib/proto-utils.js';
import { after, before, describe, it } from 'node:test';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import type { Activities } from '../../activities/index.js';
import { clusterUpgradeWorkflow } from '../../workflows/cluster-upgrade-workflow.js';
import { SEARCH_ATTRIBUTES } from '../../workflows/search-attributes.js';
import {
  approveUpdate,
  pauseSignal,
  resolveDrainUpdate,
  resumeSignal,
  statusQuery,
  type UpgradeStatus,
} from '../../workflows/rollout-messages.js';
import { fakeCluster } from '../helpers/fake-cluster.js';
import { withMockedWorker } from '../helpers/workers.js';
import { waitFor } from '../../sim/cluster/wait-for.js';
import { startDevServer } from '../helpers/temporal-env.js';

const decode = (p: { data?: Uint8Array | null } | null | undefined) =>
  p?.data ? (JSON.parse(Buffer.from(p.data).toString()) as unknown) : undefined;

describe('clusterUpgradeWorkflow: continue-as-new, skip, and what the UI shows (mocked activities, real dev server)', () => {
  let env: TestWorkflowEnvironment;
  before(async () => {
    env = await startDevServer();
  });
  after(async () => {
    await env?.teardown();
  });

  const withWorker = <T>(acts: Partial<Activities>, body: (taskQueue: string) => Promise<T>) => withMockedWorker(env, acts, 'runs', body);
  it('continues as new at every safe point and carries the plan, approvals and progress across runs', async () => {
    // w1 starts two minors behind: under 1.34 it would be four, so the plan moves it at 1.33 and 1.34; w2 once, at 1.34.
    const c = fakeCluster({ versions: { 'kubelet w1': '1.30.14' } });
    const workflowId = 'upgrade/lab-can'; // fixed: the saved histories replay under this id
    let firstRun = '';
    const status = await withWorker(c.acts, async (taskQueue) => {
      const handle = await env.client.workflow.start(clusterUpgradeWorkflow, {
        taskQueue,
        workflowId,
        args: [{ cluster: 'lab', to: '1.34', policy: { approveWorkers: true, continueAsNewAfterEvents: 1 } }],
      });
      firstRun = handle.firstExecutionRunId;
      await waitFor('the workers gate', async () => (await handle.query(statusQuery)).gates.some((g) => g.name === 'workers-1.33.7'));
      await handle.executeUpdate(approveUpdate, { args: [{ gate: 'workers-1.33.7', by: 'ana', comment: 'canary window' }] });
      // The second hop's gate is asked by a later run: the update reaches it by workflow id.
      await waitFor('the second gate', async () =>
        (await env.client.workflow.getHandle(workflowId).query(statusQuery)).gates.some((g) => g.name === 'workers-1.34.2'),
      );
      await env.client.workflow.getHandle(workflowId).executeUpdate(approveUpdate, { args: [{ gate: 'workers-1.34.2', by: 'ben' }] });
      return env.client.workflow.getHandle(workflowId).result() as Promise<UpgradeStatus>;
    });
    assert.equal(status.phase, 'done', status.events.join('\n'));
    // Safe points: before the canary and the batch of each hop, and between the hops.
    assert.ok(status.runs >= 4, `runs: ${status.runs}`);
    assert.deepEqual(
      status.gates.map((g) => `${g.name}:${g.approvedBy}`),
      ['workers-1.33.7:ana', 'workers-1.34.2:ben'],
    );
    assert.deepEqual(
      c.calls.filter(([n]) => n === 'kubeadmUpgradeApply').map(([, i]) => i.version),
      ['1.33.7', '1.34.2'],
      'no step repeated by a new run',
    );
    assert.equal(c.calls.filter(([n]) => n === 'snapshotEtcd').length, 2);
    assert.equal(
      c.calls.filter(([n]) => n === 'takeInventory').length,
      4,
      'plan + one per hop start after a new run + one per post-hop check',
    );
    // A new run is not an ending: nothing is undone on the way (it uncordoned every node and cleared the labels).
    assert.equal(c.calls.filter(([n]) => n === 'clearStageLabels').length, 1, 'the stage labels are cleared once, at the end');
    assert.equal(c.calls.filter(([n]) => n === 'uncordonNode').length, 5, "each node's own uncordon, once a hop it moves in");
    // The workers' moves planned at the start hold in every later run (the plan carried): w2 sat out 1.33 though runs began inside it.
    assert.deepEqual(
      c.calls.filter(([n]) => n === 'kubeadmUpgradeNode').map(([, i]) => `${i.node}@${i.version}`),
      ['w1@1.33.7', 'w1@1.34.2', 'w2@1.34.2'],
    );
    assert.ok(!status.events.some((e) => e.startsWith('compensation')), status.events.join('\n'));
    assert.deepEqual(c.state.kubelet, { cp1: '1.34.2', w1: '1.34.2', w2: '1.34.2' });
    assert.ok(status.events.includes('hop 1.33.7 done'), 'events of earlier runs are kept');
    assert.ok(status.events.includes('workers move at: 1.33.7, 1.34.2: w1; 1.34.2: w2'), status.events.join('\n'));
    // What progress counts, carried across the runs: cp1 and w1 at each hop, w2 once.
    assert.deepEqual(status.moves, { cp1: ['1.33.7', '1.34.2'], w1: ['1.33.7', '1.34.2'], w2: ['1.34.2'] });
    assert.deepEqual(Object.fromEntries(Object.entries(status.nodes).map(([n, s]) => [n, `${s.from}→${s.version}`])), {
      cp1: '1.32.4→1.34.2',
      w1: '1.30.14→1.34.2',
      w2: '1.32.4→1.34.2',
    });

    // The chain: the first run continued as new, the last one completed.
    const runs: { runId: string; status: string }[] = [];
    for await (const wf of env.client.workflow.list({ query: `WorkflowId = '${workflowId}'` }))
      runs.push({ runId: wf.runId, status: wf.status.name });
    assert.equal(runs.length, status.runs + 1);
    assert.equal(runs.filter((r) => r.status === 'CONTINUED_AS_NEW').length, status.runs);

    // SKEWLESS_SAVE_HISTORIES=dir keeps a continued run and the final one for the replay test.
    const dir = process.env.SKEWLESS_SAVE_HISTORIES;
    if (dir) {
      const continued = runs.find((r) => r.status === 'CONTINUED_AS_NEW') as { runId: string };
      const completed = runs.find((r) => r.status === 'COMPLETED') as { runId: string };
      for (const [label, run] of [
        ['continued', continued],
        ['completed', completed],
        ['first', { runId: firstRun }], // the run that planned (the patch markers of planAndCheck)
      ] as const) {
        const history = await env.client.workflow.getHandle(workflowId, run.runId).fetchHistory();
        writeFileSync(`${dir}/upgrade_lab-can@${label}.json`, historyToJSON(history));
      }
    }
  });

  it('skip leaves the node at its old version for the rest of the run, then hands it back uncordoned', async () => {
    const c = fakeCluster({ blockDrainOf: 'w2' });
    let queue = '';
    const status = await withWorker(c.acts, async (taskQueue) => {
      queue = taskQueue;
      const handle = await env.client.workflow.start(clusterUpgradeWorkflow, {
        taskQueue,
        workflowId: `upgrade/skip-${taskQueue}`,
        args: [{ cluster: 'lab', to: '1.34' }],
      });
      await waitFor('w2 blocked', async () => (await handle.query(statusQuery)).nodes.w2?.phase === 'blocked');
      await handle.executeUpdate(resolveDrainUpdate, { args: [{ node: 'w2', action: 'skip', by: 'cy', comment: 'owner away' }] });
      return handle.result();
    });
    assert.equal(status.phase, 'done', status.events.join('\n'));
    assert.deepEqual(status.skipped, ['w2']);
    assert.equal(status.nodes.w2?.phase, 'skipped');
    assert.equal(c.state.kubelet.w2, '1.32.4', 'never upgraded, never downgraded');
    assert.equal(c.state.kubelet.w1, '1.34.2');
    const w2 = c.calls.filter(([, i]) => i.node === 'w2').map(([n]) => n);
    assert.deepEqual(
      w2,
      [
        'pointPackageRepository',
        'readPackageHolds',
        'installPackages',
        'kubeadmUpgradeNode',
        'downloadPackages',
        'cordonNode',
        'drainNode',
        'restorePackageHolds',
        'uncordonNode',
      ],
      'its holds read before its first package, its kubeadm work before the cordon, the blocked drain, its holds checked as it stops; the first hop leaves w2 alone; the end of the run uncordons it',
    );
    assert.equal(
      status.outcome,
      // On the run's own task queue: the default one has no worker here.
      `upgraded to 1.34.2 EXCEPT 1 node left behind: w2 at 1.32.4 (skipped by the operator); kubernetes.list on w2 points at v1.34, ahead of its kubelet 1.32.4 (held: kubeadm kubelet kubectl); finish them with: skewless upgrade --cluster lab --to 1.34.2 --task-queue ${queue}`,
    );
    assert.deepEqual(status.leftBehind, [{ node: 'w2', version: '1.32.4', why: 'skipped' }]);
  });

  it('pause lets the node in flight finish and starts no other until resume', async () => {
    const c = fakeCluster();
    const status = await withWorker(c.acts, async (taskQueue) => {
      const handle = await env.client.workflow.start(clusterUpgradeWorkflow, {
        taskQueue,
        workflowId: `upgrade/pause-${taskQueue}`,
        args: [{ cluster: 'lab', to: '1.33', policy: { approveWorkers: true } }],
      });
      await waitFor('the workers gate', async () => (await handle.query(statusQuery)).gates.length === 1);
      await handle.signal(pauseSignal, { by: 'dee', reason: 'lunch' });
      await handle.executeUpdate(approveUpdate, { args: [{ gate: 'workers-1.33.7', by: 'dee' }] });
      await new Promise((r) => setTimeout(r, 3000)); // long enough for a mocked node to go through
      const paused = await handle.query(statusQuery);
      assert.equal(paused.paused, true);
      assert.ok(!c.calls.some(([n, i]) => n === 'cordonNode' && String(i.node).startsWith('w')), 'no worker started while paused');
      assert.equal((await handle.describe()).memo?.paused, true, 'the list view shows it paused');
      await handle.signal(resumeSignal, { by: 'dee' });
      return handle.result();
    });
    assert.equal(status.phase, 'done');
    assert.deepEqual(
      status.events.filter((e) => /paused|resumed/.test(e)),
      ['paused by dee: lunch', 'resumed by dee'],
    );
    assert.equal(c.state.kubelet.w2, '1.33.7');
  });

  it('shows the runbook in the event list, and cluster, versions and progress in the list view', async () => {
    const c = fakeCluster();
    const workflowId = `upgrade/ui-${Date.now()}`;
    await withWorker(c.acts, (taskQueue) =>
      env.client.workflow.execute(clusterUpgradeWorkflow, { taskQueue, workflowId, args: [{ cluster: 'lab', to: '1.33' }] }),
    );
    const history = await env.client.workflow.getHandle(workflowId).fetchHistory();
    const summaries = (history.events ?? [])
      .filter((e) => e.activityTaskScheduledEventAttributes)
      .map((e) => decode(e.userMetadata?.summary));
    for (const line of [
      'inventory of lab',
      'etcd snapshot on cp1 before v1.33.7',
      'kubeadm upgrade plan v1.33.7 on cp1',
      'label 3 nodes with their stage',
      'check workloads of lab',
      'clear stage labels',
    ]) {
      assert.ok(summaries.includes(line), `${line} in ${JSON.stringify(summaries)}`);
    }
    const childSummaries = (history.events ?? [])
      .filter((e) => e.startChildWorkflowExecutionInitiatedEventAttributes)
      .map((e) => decode(e.userMetadata?.summary));
    assert.ok(childSummaries.includes('w1: drain, kubelet v1.33.7, uncordon'), JSON.stringify(childSummaries));
    const child = await env.client.workflow.getHandle(`${workflowId}/1.33.7/w1`).fetchHistory();
    const childSteps = (child.events ?? [])
      .filter((e) => e.activityTaskScheduledEventAttributes)
      .map((e) => decode(e.userMetadata?.summary));
    assert.deepEqual(childSteps.slice(0, 8), [
      'point the package repository of w1 at v1.33',
      'read the package holds of w1',
      'install kubeadm v1.33.7 on w1',
      'kubeadm upgrade node on w1 (v1.33.7)',
      'download kubelet, kubectl v1.33.7 on w1 (not installed)',
      'cordon w1',
      'drain w1',
      'install kubelet, kubectl v1.33.7 on w1',
    ]);

    const description = await env.client.workflow.getHandle(workflowId).describe();
    assert.equal(description.typedSearchAttributes.get(SEARCH_ATTRIBUTES.fromVersion), '1.32.4');
    assert.equal(description.typedSearchAttributes.get(SEARCH_ATTRIBUTES.targetVersion), '1.33.7');
    assert.equal(description.typedSearchAttributes.get(SEARCH_ATTRIBUTES.phase), 'done');
    const memo = description.memo as Record<string, unknown>;
    assert.equal(memo.progress, '3/3 node upgrades');
    assert.equal(memo.phase, 'done');
  });
});
