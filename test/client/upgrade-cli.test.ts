import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { Worker } from '@temporalio/worker';
import { fakeCluster } from '../helpers/fake-cluster.js';
import { repoRoot } from '../helpers/run-cli.js';
import { startDevServer, uniqueTaskQueue, workflowBundle, temporalVars } from '../helpers/temporal-env.js';

/** The operator's CLI against the real dev server, with a worker on mocked activities. */
describe('skewless upgrade / watch / status / resolve', () => {
  let env: TestWorkflowEnvironment;
  let worker: Worker;
  let running: Promise<void>;
  const taskQueue = uniqueTaskQueue('cli');
  const bare = [
    { namespace: 'default', name: 'pet', node: 'w2' },
    { namespace: 'lab', name: 'scratch', node: 'w2' },
  ];
  const cluster = fakeCluster({ blockDrainOf: 'w2', barePods: bare });
  before(async () => {
    env = await startDevServer();
    worker = await Worker.create({
      connection: env.nativeConnection,
      namespace: env.namespace ?? 'default',
      taskQueue,
      workflowBundle: await workflowBundle(),
      activities: cluster.acts,
    });
    running = worker.run();
  });
  after(async () => {
    worker?.shutdown();
    await running;
    await env?.teardown();
  });

  const cliEnv = () => ({ ...process.env, ...temporalVars(env), SKEWLESS_TASK_QUEUE: taskQueue });
  // Asynchronous on purpose: the worker runs in this process, and a blocking spawn would starve it.
  const cli = (args: string[]) =>
    new Promise<{ status: number | null; stdout: string; stderr: string }>((resolve) => {
      const child = spawn(process.execPath, [join(repoRoot, 'bin', 'skewless.js'), ...args], { env: cliEnv() });
      let stdout = '';
      let stderr = '';
      child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
      child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
      child.on('close', (status) => resolve({ status, stdout, stderr }));
    });

  it('plan --cluster lists the drains bare pods will block, by node, as a warning (exit 0), in text and JSON', async () => {
    const text = await cli(['plan', '--cluster', 'lab', '--to', '1.33']);
    assert.equal(text.status, 0, text.stderr);
    const lines = text.stdout.trimEnd().split('\n');
    const at = lines.findIndex((l) => l.startsWith('Drains that will block'));
    assert.ok(at > lines.findIndex((l) => l.startsWith('Pre-flight (lab): nothing would stop')), text.stdout);
    assert.equal(
      lines[at],
      'Drains that will block (2 pods no controller manages, lost for good if deleted): the upgrade waits at each node for' +
        ' "skewless resolve lab --node NODE --action skip" (the node keeps its version) or "--action force --pod NS/NAME":',
    );
    assert.deepEqual(lines.slice(at + 1), ['  w2: default/pet, lab/scratch', 'readiness: nothing found']);
    const json = await cli(['plan', '--cluster', 'lab', '--to', '1.33', '--output', 'json']);
    assert.equal(json.status, 0, json.stderr);
    const planned = JSON.parse(json.stdout) as { barePods: unknown; barePodCount: number; refusals: string[] };
    assert.deepEqual([planned.barePods, planned.barePodCount, planned.refusals], [bare, 2, []]);
  });

  it('starts detached, refuses a second upgrade of the same cluster, and shows a blocked node in status', async () => {
    const start = await cli(['upgrade', '--cluster', 'lab', '--to', '1.33', '--detach']);
    assert.equal(start.status, 0, start.stderr);
    const again = await cli(['upgrade', '--cluster', 'lab', '--to', '1.33', '--detach']);
    assert.equal(again.status, 2);
    assert.match(again.stderr, /^skewless: an upgrade of lab is already running/);

    let status = await cli(['status', 'lab', '--output', 'json']);
    for (let i = 0; i < 100 && JSON.parse(status.stdout || '{}').nodes?.w2?.phase !== 'blocked'; i++) {
      await new Promise((r) => setTimeout(r, 200));
      status = await cli(['status', 'lab', '--output', 'json']);
    }
    assert.equal(JSON.parse(status.stdout).nodes.w2.phase, 'blocked');
    const refused = await cli(['resolve', 'lab', '--node', 'w1', '--action', 'retry']);
    assert.equal(refused.status, 2);
    assert.match(refused.stderr, /refused: node w1 is not blocked/);
  });

  it('a watch killed mid-run and started again follows the same run to its end', async () => {
    const first = spawn(process.execPath, [join(repoRoot, 'bin', 'skewless.js'), 'watch', 'lab'], { env: cliEnv() });
    let seen = '';
    first.stdout.on('data', (d: Buffer) => (seen += d.toString()));
    for (let i = 0; i < 50 && !seen.includes('BLOCKED w2'); i++) await new Promise((r) => setTimeout(r, 200));
    assert.match(seen, /BLOCKED w2: drain of w2 blocked/);
    first.kill('SIGKILL'); // the operator's laptop closes

    const resolved = await cli(['resolve', 'lab', '--node', 'w2', '--action', 'abort', '--by', 'dana']);
    assert.equal(resolved.status, 0, resolved.stderr);
    const second = await cli(['watch', 'lab']);
    assert.equal(second.status, 1, 'an aborted upgrade exits 1');
    assert.match(second.stdout, /drain of w2 resolved by dana: abort/);
    assert.match(second.stdout, /lab: aborted at node w2/);
  });

  it('--first-control-plane: a node name is passed on; one that is not a control plane is refused before anything is touched', async () => {
    const shape = await cli(['upgrade', '--cluster', 'fcp', '--to', '1.33', '--first-control-plane', 'cp1;reboot']);
    assert.equal(shape.status, 2);
    assert.equal(
      shape.stderr,
      "skewless: --first-control-plane must be a node name (lowercase letters, digits, '-' and '.'), got \"cp1;reboot\"\n",
    );
    const worker = await cli(['upgrade', '--cluster', 'fcp', '--to', '1.33', '--first-control-plane', 'w1']);
    assert.equal(worker.status, 2, worker.stderr);
    assert.equal(worker.stderr, 'skewless: upgrade of fcp failed: firstControlPlane w1 is not a control-plane node\n');
    const ran = cluster.calls.filter(([, input]) => input.cluster === 'fcp').map(([name]) => name);
    assert.deepEqual(ran, ['findRunningRollout', 'takeInventory', 'availableVersions'], 'reads only');
  });
});
