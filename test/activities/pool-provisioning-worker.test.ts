// The blue/green provisioning activities on a real worker under their real profiles, against the
// simulation: a machine created through the machine API, refusals not retried (one attempt), and the
// machine API's token nowhere in the workflow's history (inputs, results, heartbeats, failures).
import assert from 'node:assert/strict';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, before, describe, it } from 'node:test';
import { WorkflowFailedError } from '@temporalio/client';
import { ActivityFailure, ApplicationFailure, RetryState } from '@temporalio/common';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { bundleWorkflowCode, type WorkflowBundle } from '@temporalio/worker';
import type { ClusterResolver } from '../../activities/cluster-access.js';
import { createClusterResolver } from '../../activities/host-address.js';
import { createSkewlessWorker } from '../../worker/create-worker.js';
import type { TestCluster } from '../helpers/sim-cluster.js';
import { startClusterWorld } from '../helpers/sim-world.js';
import { uniqueTaskQueue } from '../helpers/temporal-env.js';

const fixture = fileURLToPath(new URL('../workflows/fixtures/run-activity-workflow.js', import.meta.url));
const cluster = 'bgworker';
const V = '1.34.2';
const GREEN = { 'skewless.io/pool': 'green' };

/** A history as text with every payload decoded (inputs, results, heartbeat details are base64 or bytes in it). */
const readable = (history: unknown): string =>
  JSON.stringify(history, (key, value: unknown) => {
    if (value instanceof Uint8Array) return Buffer.from(value).toString('utf8');
    if (key === 'data' && typeof value === 'string') return Buffer.from(value, 'base64').toString('utf8');
    const v = value as { type?: unknown; data?: unknown } | null;
    if (v && v.type === 'Buffer' && Array.isArray(v.data)) return Buffer.from(v.data as number[]).toString('utf8');
    return value;
  });

describe('blue/green provisioning on a real worker', () => {
  let env: TestWorkflowEnvironment;
  let tc: TestCluster;
  let bundle: WorkflowBundle;
  let token: string;
  const histories: string[] = [];
  before(async () => {
    [env, tc, bundle] = await startClusterWorld(
      `
name: ${cluster}
version: ${V}
repository: [1.33.7, ${V}]
nodes:
  - {name: cp, role: control-plane}
  - {name: blue, role: worker, count: 1, kubelet: 1.33.7, labels: {skewless.io/pool: blue}}
pools:
  blue: skewless.io/pool=blue
  green: skewless.io/pool=green
`,
      bundleWorkflowCode({
        workflowsPath: fixture,
        logger: { log() {}, trace() {}, debug() {}, info() {}, warn() {}, error: console.error },
      }),
    );
    token = readFileSync(tc.sim.machines.tokenFile, 'utf8').trim();
  });
  after(async () => {
    await tc?.stop();
    await env?.teardown();
  });

  const run = async (name: string, input: unknown, clusters: ClusterResolver = createClusterResolver(tc.clustersDir)) => {
    const taskQueue = uniqueTaskQueue('bgworker');
    const worker = await createSkewlessWorker({
      connection: env.nativeConnection,
      namespace: env.namespace ?? 'default',
      taskQueue,
      workflowBundle: bundle,
      deps: { clusters },
    });
    const workflowId = `bg/${taskQueue}`;
    try {
      return await worker.runUntil(env.client.workflow.execute('runActivityWorkflow', { taskQueue, workflowId, args: [name, input] }));
    } finally {
      histories.push(readable(await env.client.workflow.getHandle(workflowId).fetchHistory()));
    }
  };
  /** The failure chain of a refused step: one attempt, the type, the message. */
  const refusedOnce = (type: string, message: RegExp) => (err: unknown) => {
    assert.ok(err instanceof WorkflowFailedError);
    assert.ok(err.cause instanceof ActivityFailure);
    assert.equal(err.cause.retryState, RetryState.NON_RETRYABLE_FAILURE, 'not retried');
    assert.ok(err.cause.cause instanceof ApplicationFailure);
    assert.equal(err.cause.cause.type, type, err.cause.cause.message);
    assert.match(err.cause.cause.message, message);
    return true;
  };

  it('plans and creates a green machine through the machine API; the Node joins', async () => {
    const plan = (await run('planBlueGreen', { cluster, from: 'blue', to: 'green', version: V })) as {
      green: { names: string[]; labels: Record<string, string> };
    };
    assert.deepEqual(plan.green.names, ['green-1']);
    assert.deepEqual(
      await run('createPoolMachines', { cluster, pool: 'green', names: plan.green.names, version: V, labels: plan.green.labels }),
      { joined: ['green-1'] },
    );
    assert.equal((await tc.kube.core.readNode({ name: 'green-1' })).status?.nodeInfo?.kubeletVersion, `v${V}`);
  });

  it('refusals are not retried: a planned pool that has nodes, a version the repository lacks, an uncordoned node, a wrong token', async () => {
    await assert.rejects(
      run('planBlueGreen', { cluster, from: 'blue', to: 'green', version: V }),
      refusedOnce('BlueGreenInvalid', /pool green .* already has nodes: green-1/),
    );
    await assert.rejects(
      run('createPoolMachines', { cluster, pool: 'green', names: ['green-2'], version: '1.34.9', labels: GREEN }),
      refusedOnce('ProvisionFailed', /HTTP 400: version 1\.34\.9 is not in the simulation's package repository/),
    );
    await assert.rejects(
      run('deletePoolMachines', { cluster, pool: 'green', names: ['green-1'] }),
      refusedOnce('BlueGreenInvalid', /green-1 is not cordoned/),
    );
    const wrong = join(tc.sim.stateDir, 'wrong-token');
    writeFileSync(wrong, `${'0'.repeat(64)}\n`, { mode: 0o600 });
    const base = createClusterResolver(tc.clustersDir);
    const wrongToken: ClusterResolver = (name) => {
      const access = base(name);
      const p = access.config.provisioning;
      assert.ok(p?.provider === 'simulation');
      return { ...access, config: { ...access.config, provisioning: { ...p, tokenFile: wrong } } };
    };
    await assert.rejects(
      run('createPoolMachines', { cluster, pool: 'green', names: ['green-2'], version: V, labels: GREEN }, wrongToken),
      refusedOnce('ProvisionFailed', /HTTP 401/),
    );
    rmSync(wrong);
    assert.equal(
      await tc.kube.core.readNode({ name: 'green-2' }).then(
        () => 'there',
        () => 'absent',
      ),
      'absent',
    );
  });

  it("the machine API's token is in no history", () => {
    assert.ok(histories.length >= 6, "every run's history was read");
    assert.ok(
      histories.some((h) => h.includes('joined') && h.includes('green-1') && h.includes('skewless.io/pool')),
      'payloads are readable here, so the check can fail',
    );
    for (const h of histories) {
      assert.ok(!h.includes(token), 'the token leaked into a history');
      assert.doesNotMatch(h, /bearer\s+[0-9a-f]{16}/i);
    }
  });
});
