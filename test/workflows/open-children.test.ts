import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { after, before, describe, it } from 'node:test';
import type { WorkflowHandle } from '@temporalio/client';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { bundleWorkflowCode, Worker, type WorkflowBundle } from '@temporalio/worker';
import webpack from 'webpack';
import { fakeCluster } from '../helpers/fake-cluster.js';
import { startDevServer, uniqueTaskQueue } from '../helpers/temporal-env.js';
import { workflowsPath } from '../../worker/workflow-bundle.js';
import { upgradeWorkflowId } from '../../contracts/workflow-ids.js';
import { clusterUpgradeWorkflow } from '../../workflows/cluster-upgrade-workflow.js';

/** The cap this file's bundle runs with: fixtures/open-children-3.ts stands in for rules/open-children.ts. */
const CAP = 3;
const standIn = fileURLToPath(new URL('./fixtures/open-children-3.js', import.meta.url));
const histories = fileURLToPath(new URL('../../../test/replay/histories/', import.meta.url));

/** The most node workflows a run of the parent had open at once, counted from its history, and its events. */
async function openChildren(
  handle: WorkflowHandle,
  runId: string,
): Promise<{ most: number; children: number; events: number; next?: string }> {
  const history = await handle.client.getHandle(handle.workflowId, runId).fetchHistory();
  let open = 0;
  let most = 0;
  let children = 0;
  let next: string | undefined;
  for (const e of history.events ?? []) {
    if (e.startChildWorkflowExecutionInitiatedEventAttributes) {
      open++;
      children++;
    }
    if (
      e.childWorkflowExecutionCompletedEventAttributes ||
      e.childWorkflowExecutionFailedEventAttributes ||
      e.childWorkflowExecutionCanceledEventAttributes ||
      e.childWorkflowExecutionTimedOutEventAttributes ||
      e.childWorkflowExecutionTerminatedEventAttributes ||
      e.startChildWorkflowExecutionFailedEventAttributes
    )
      open--;
    most = Math.max(most, open);
    next = e.workflowExecutionContinuedAsNewEventAttributes?.newExecutionRunId ?? next;
  }
  return { most, children, events: history.events?.length ?? 0, ...(next ? { next } : {}) };
}

describe('a run never keeps more node workflows open than MAX_OPEN_CHILDREN (mocked activities, a cap of 3)', () => {
  let env: TestWorkflowEnvironment;
  let bundle: WorkflowBundle;
  before(async () => {
    [env, bundle] = await Promise.all([
      startDevServer(),
      bundleWorkflowCode({
        workflowsPath,
        webpackConfigHook: (config) => ({
          ...config,
          plugins: [...(config.plugins ?? []), new webpack.NormalModuleReplacementPlugin(/[\\/]rules[\\/]open-children\.js$/, standIn)],
        }),
        logger: { log() {}, trace() {}, debug() {}, info() {}, warn() {}, error: console.error },
      }),
    ]);
  });
  after(async () => {
    await env?.teardown();
  });

  /** Upgrades 1 control plane and 8 workers to 1.33 in one batch of 7 after the canary, maxUnavailable 100%; samples describe() meanwhile. */
  async function upgrade(name: string, policy: Record<string, unknown>) {
    const c = fakeCluster({ workers: 8 });
    const taskQueue = uniqueTaskQueue(name);
    const worker = await Worker.create({
      connection: env.nativeConnection,
      namespace: env.namespace ?? 'default',
      taskQueue,
      workflowBundle: bundle,
      activities: c.acts,
    });
    return worker.runUntil(async () => {
      const handle = await env.client.workflow.start(clusterUpgradeWorkflow, {
        taskQueue,
        workflowId: upgradeWorkflowId(`${name}-${taskQueue}`),
        args: [{ cluster: 'lab', to: '1.33', policy: { canary: 1, batchSize: 8, maxUnavailable: '100%', ...policy } }],
      });
      // describe() as an operator's tool reads it, while the run goes: pendingChildren of whichever run is current.
      const sampled: number[] = [];
      let done = false;
      const sampling = (async () => {
        while (!done) {
          const d = await env.client.workflow.getHandle(handle.workflowId).describe();
          sampled.push(d.raw.pendingChildren?.length ?? 0);
          await new Promise((r) => setTimeout(r, 20));
        }
      })();
      const status = await handle.result().finally(() => (done = true));
      await sampling;
      const runs: Awaited<ReturnType<typeof openChildren>>[] = [];
      for (let runId: string | undefined = handle.firstExecutionRunId; runId;) {
        const run = await openChildren(handle, runId);
        runs.push(run);
        runId = run.next;
      }
      return { status, runs, sampled, calls: c.calls };
    });
  }

  it('runs a batch of 7 in waves of at most 3, says so once, and moves every worker once', async () => {
    const { status, runs, sampled, calls } = await upgrade('waves', {});
    assert.equal(status.phase, 'done', status.events.join('\n'));
    assert.equal(runs.length, 1);
    // The cap is reached (the wave is full) and never passed; the control plane and the canary are one each.
    assert.equal(runs[0]?.most, CAP);
    assert.ok(Math.max(...sampled) <= CAP, `describe() saw ${Math.max(...sampled)} pending children`);
    assert.deepEqual(
      status.events.filter((e) => /at most 3 out at once/.test(e)),
      [
        'maxUnavailable 100% comes to 8 workers: at most 3 out at once (one node workflow each, the most one run keeps open); a batch larger than that runs in waves of 3',
      ],
    );
    const drained = calls.filter(([n]) => n === 'drainNode').map(([, i]) => String(i.node));
    assert.deepEqual([...drained].sort(), ['cp1', 'w1', 'w2', 'w3', 'w4', 'w5', 'w6', 'w7', 'w8'].sort());
    // Three capacity checks for the batch of 7 (3 + 3 + 1), each of at most 3 nodes.
    const asked = calls.filter(([n]) => n === 'checkBatchCapacity');
    assert.ok(asked.length === 0 || asked.every(([, i]) => (i.batches as string[][])[0]!.length <= CAP));
    console.log(`[open-children] one run: ${runs[0]?.events} events, ${runs[0]?.children} node workflows, most open ${runs[0]?.most}`);
  });

  it('continues as new between two waves of the batch, each run within the cap, and every worker still moves once', async () => {
    const { status, runs, calls } = await upgrade('waves-can', { continueAsNewAfterEvents: 1 });
    assert.equal(status.phase, 'done', status.events.join('\n'));
    const between = status.events.filter((e) => /continued as new at \d+ events between two waves of a phase/.test(e));
    // Before the batch (after the canary), then between its waves 1-2 and 2-3.
    assert.equal(between.length, 2, status.events.join('\n'));
    assert.ok(runs.length >= 4, `${runs.length} runs`);
    for (const [i, run] of runs.entries()) assert.ok(run.most <= CAP, `run ${i + 1} had ${run.most} open`);
    const drained = calls.filter(([n]) => n === 'drainNode').map(([, i]) => String(i.node));
    assert.deepEqual([...drained].sort(), ['cp1', 'w1', 'w2', 'w3', 'w4', 'w5', 'w6', 'w7', 'w8'].sort());
    assert.equal(status.runs, runs.length - 1);
  });

  it('runs that planned before the cap replay under it as they ran (the patches: 7 open at once; no continue between waves)', async () => {
    // Saved from runs of the code before issue 41's cap (main at 7a723bf), mocked activities as above:
    // maxUnavailable 100% of 8 workers opened 7 node workflows at once; waves of 3 with continueAsNewAfterEvents 1
    // went on through the batch. Under a cap of 3 both would plan or continue otherwise, but for the patches.
    for (const [file, id] of [
      ['upgrade_old-cap@before-open-children-cap.json', 'upgrade/old-cap'],
      ['upgrade_old-waves@before-continue-between-waves.json', 'upgrade/old-waves'],
    ] as const) {
      const history = JSON.parse(readFileSync(`${histories}/${file}`, 'utf8'));
      await Worker.runReplayHistory({ workflowBundle: bundle }, history, id);
    }
  });
});
