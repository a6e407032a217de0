import assert from 'node:assert/strict';
import { fileURLToPath } from 'node:url';
import { after, before, describe, it } from 'node:test';
import { WorkflowFailedError } from '@temporalio/client';
import { ActivityFailure, ApplicationFailure, RetryState } from '@temporalio/common';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { bundleWorkflowCode, type WorkflowBundle } from '@temporalio/worker';
import { createClusterResolver } from '../../activities/host-address.js';
import { createSkewlessWorker } from '../../worker/create-worker.js';
import type { TestCluster } from '../helpers/sim-cluster.js';
import { startClusterWorld } from '../helpers/sim-world.js';
import { uniqueTaskQueue } from '../helpers/temporal-env.js';

const fixture = fileURLToPath(new URL('../workflows/fixtures/run-activity-workflow.js', import.meta.url));

/** Activities on a real worker under their real retry profiles, against the simulated cluster. */
describe('retry profiles on a real worker', () => {
  let env: TestWorkflowEnvironment;
  let tc: TestCluster;
  let bundle: WorkflowBundle;
  before(async () => {
    [env, tc, bundle] = await startClusterWorld(
      `
name: retries
version: 1.33.7
repository: [1.33.7, 1.34.2]
nodes:
  - {name: cp, role: control-plane}
  - {name: w, role: worker}
`,
      bundleWorkflowCode({
        workflowsPath: fixture,
        logger: { log() {}, trace() {}, debug() {}, info() {}, warn() {}, error: console.error },
      }),
    );
  });
  after(async () => {
    await tc?.stop();
    await env?.teardown();
  });

  const run = async (name: string, input: unknown) => {
    const taskQueue = uniqueTaskQueue('retries');
    const worker = await createSkewlessWorker({
      connection: env.nativeConnection,
      namespace: env.namespace ?? 'default',
      taskQueue,
      workflowBundle: bundle,
      deps: { clusters: createClusterResolver(tc.clustersDir) },
    });
    return worker.runUntil(
      env.client.workflow.execute('runActivityWorkflow', { taskQueue, workflowId: `retry/${taskQueue}`, args: [name, input] }),
    );
  };

  it('retries a host that refuses SSH for a while (HostUnreachable) to success', async () => {
    tc.sim.hosts.setFault('cp', { kind: 'refuse', seconds: 4 });
    const started = Date.now();
    const versions = await run('availableVersions', { cluster: 'retries', node: 'cp' });
    assert.deepEqual(versions, ['1.34.2', '1.33.7']);
    assert.ok(Date.now() - started >= 3000, 'it waited for the host to come back');
  });

  it('never retries a changed host key: one attempt, HostKeyMismatch through the whole failure chain', async () => {
    tc.sim.hosts.setFault('w', { kind: 'rotateHostKey' });
    await assert.rejects(run('availableVersions', { cluster: 'retries', node: 'w' }), (err: unknown) => {
      assert.ok(err instanceof WorkflowFailedError);
      assert.ok(err.cause instanceof ActivityFailure);
      assert.equal(err.cause.retryState, RetryState.NON_RETRYABLE_FAILURE, 'not retried');
      assert.ok(err.cause.cause instanceof ApplicationFailure);
      assert.equal(err.cause.cause.type, 'HostKeyMismatch');
      assert.match(err.cause.cause.message, /SHA256:/);
      return true;
    });
    tc.sim.hosts.trustHostKey('w');
  });
});
