import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { WorkflowFailedError } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { createSkewlessWorker } from '../../worker/create-worker.js';
import { proceedSmokeSignal, smokeStatusQuery } from '../../workflows/messages.js';
import { toolchainSmokeWorkflow } from '../../workflows/index.js';
import { SEARCH_ATTRIBUTES } from '../../workflows/search-attributes.js';
import { startDevServer, uniqueTaskQueue, workflowBundle } from '../helpers/temporal-env.js';

const AVAILABLE = ['1.32.4', '1.33.7', '1.34.0-rc.1', '1.34.2'];

describe('toolchain smoke: a real worker on the real dev server', () => {
  let env: TestWorkflowEnvironment;
  before(async () => {
    env = await startDevServer();
  });
  after(async () => {
    await env?.teardown();
  });

  // maxCachedWorkflows 0: every workflow task replays the history from the start, so the
  // query, signal and activity also prove the workflow is replay-safe.
  for (const maxCachedWorkflows of [undefined, 0]) {
    it(`plans hops in the sandbox, waits for a signal, answers a query, runs an activity (cache ${maxCachedWorkflows ?? 'default'})`, async () => {
      const taskQueue = uniqueTaskQueue('smoke');
      const worker = await createSkewlessWorker({
        connection: env.nativeConnection,
        namespace: env.namespace ?? 'default',
        taskQueue,
        workflowBundle: await workflowBundle(),
        ...(maxCachedWorkflows === undefined ? {} : { maxCachedWorkflows }),
      });
      await worker.runUntil(async () => {
        const handle = await env.client.workflow.start(toolchainSmokeWorkflow, {
          taskQueue,
          workflowId: `smoke/${taskQueue}`,
          args: [{ from: '1.32.4', to: '1.34', available: AVAILABLE }],
        });
        let status = await handle.query(smokeStatusQuery);
        assert.deepEqual(status, { phase: 'waiting', hops: ['1.33.7', '1.34.2'] });

        await handle.signal(proceedSmokeSignal, { by: 'alice', comment: 'smoke' });
        const result = await handle.result();
        assert.deepEqual(result, { hops: ['1.33.7', '1.34.2'], proceededBy: 'alice', workerNodeVersion: process.version });
        status = await handle.query(smokeStatusQuery);
        assert.equal(status.phase, 'done');

        const events = (await handle.fetchHistory()).events ?? [];
        assert.ok(
          events.some((e) => e.workflowExecutionSignaledEventAttributes?.signalName === 'proceedSmoke'),
          'the signal is in history',
        );
        assert.ok(
          events.some((e) => e.activityTaskCompletedEventAttributes),
          'the activity completed in history',
        );
      });
    });
  }

  it("fails with the rule's code as an ApplicationFailure when the request is refused", async () => {
    const taskQueue = uniqueTaskQueue('smoke-refused');
    const worker = await createSkewlessWorker({
      connection: env.nativeConnection,
      namespace: env.namespace ?? 'default',
      taskQueue,
      workflowBundle: await workflowBundle(),
    });
    await worker.runUntil(async () => {
      const run = env.client.workflow.execute(toolchainSmokeWorkflow, {
        taskQueue,
        workflowId: `smoke/${taskQueue}`,
        args: [{ from: '1.34.2', to: '1.33', available: AVAILABLE }],
      });
      await assert.rejects(run, (err: unknown) => {
        assert.ok(err instanceof WorkflowFailedError);
        assert.ok(err.cause instanceof ApplicationFailure);
        assert.equal(err.cause.type, 'Downgrade');
        assert.equal(err.cause.nonRetryable, true);
        assert.match(err.cause.message, /refusing to downgrade 1\.34\.2 → 1\.33/);
        return true;
      });
    });
  });

  it("registers skewless's search attributes on the dev server", async () => {
    const { customAttributes } = await env.connection.operatorService.listSearchAttributes({ namespace: env.namespace ?? 'default' });
    for (const key of Object.values(SEARCH_ATTRIBUTES)) assert.ok(customAttributes?.[key.name] !== undefined, `${key.name} registered`);
  });
});
