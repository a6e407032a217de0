import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { ApplicationFailure } from '@temporalio/common';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { Worker } from '@temporalio/worker';
import { BLUE, GREEN, mockBlueGreenCluster } from '../helpers/bluegreen-mocks.js';
import { cliAsync, spawnCli, type RunningCli } from '../helpers/spawn-cli.js';
import { startDevServer, uniqueTaskQueue, workflowBundle, temporalVars } from '../helpers/temporal-env.js';

type Rec = Record<string, unknown> & { type: string };
const records = (stdout: string): Rec[] =>
  stdout
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => JSON.parse(l) as Rec);

async function until<T>(what: string, check: () => Promise<T | undefined> | T | undefined, timeoutMs = 60_000): Promise<T> {
  for (const start = Date.now(); Date.now() - start < timeoutMs; await new Promise((r) => setTimeout(r, 250))) {
    const v = await check();
    if (v !== undefined) return v;
  }
  throw new Error(`timed out waiting for ${what}`);
}

/**
 * `skewless bluegreen` and the operator commands on its run, through the real CLI executable and the
 * dev server, with a worker of mocked activities in this process: blue-2's first drain is blocked.
 * The first run rolls back at the removal gate (abort), the second is approved and refuses the abort
 * once the removal started.
 */
describe('skewless bluegreen and the operator commands on bluegreen/NAME (mocked activities)', () => {
  let env: TestWorkflowEnvironment;
  let worker: Worker;
  let running: Promise<void>;
  let follow: RunningCli | undefined;
  const taskQueue = uniqueTaskQueue('bluegreen-cli');
  let drains = 0;
  let release: () => void = () => undefined;
  let holdRemoval = false;
  const m = mockBlueGreenCluster({ version: '1.34.2' });
  const drain = m.acts.drainNode as unknown as (i: Record<string, unknown>) => Promise<unknown>;
  m.acts.drainNode = (async (i: Record<string, unknown>) => {
    if (i.node === 'blue-2' && drains++ === 0) {
      throw ApplicationFailure.create({
        type: 'DrainBlocked',
        nonRetryable: true,
        message: 'PDB default/web refuses the eviction of default/web-1',
        details: [{ pods: [{ namespace: 'default', name: 'web-1', pdbs: ['web'] }] }],
      });
    }
    return drain(i);
  }) as never;
  const del = m.acts.deletePoolMachines as unknown as (i: Record<string, unknown>) => Promise<unknown>;
  m.acts.deletePoolMachines = (async (i: Record<string, unknown>) => {
    if (holdRemoval && i.pool === 'blue')
      await new Promise<void>((r) => {
        release = r;
      });
    return del(i);
  }) as never;
  before(async () => {
    env = await startDevServer();
    worker = await Worker.create({
      connection: env.nativeConnection,
      namespace: env.namespace ?? 'default',
      taskQueue,
      workflowBundle: await workflowBundle(),
      activities: m.acts,
    });
    running = worker.run();
  });
  after(async () => {
    if (follow?.child.exitCode === null) follow.child.kill('SIGKILL');
    release();
    worker?.shutdown();
    await running;
    await env?.teardown();
  });
  const cliEnv = () => ({ ...process.env, ...temporalVars(env), SKEWLESS_TASK_QUEUE: taskQueue, USER: 'dana' });
  const cli = (...args: string[]) => cliAsync(args, cliEnv());
  const start = ['bluegreen', '--cluster', 'lab', '--from', 'blue', '--to-pool', 'green', '--to', '1.34.2', '--batch-size', '2'];

  it('follows in NDJSON; resolve and status find the run; abort at the removal gate rolls back (exit 1)', async () => {
    follow = spawnCli([...start, '--output', 'json'], cliEnv());
    const blocked = await until('blue-2 blocked', () =>
      records(follow?.stdout() ?? '').find((r) => r.type === 'blocked' && r.node === 'blue-2'),
    );
    assert.equal(blocked.command, 'skewless resolve lab --workflow bluegreen --node blue-2 --action retry|skip|force|abort');
    const upgrade = await cli('upgrade', '--cluster', 'lab', '--to', '1.34.2');
    assert.equal(upgrade.code, 2);
    assert.equal(
      upgrade.stderr.trim(),
      'skewless: a blue/green pool replacement of lab is running (bluegreen/lab); upgrade once it ends: "skewless watch lab --workflow bluegreen"',
    );
    const resolved = await cli('resolve', 'lab', '--node', 'blue-2', '--action', 'retry', '--comment', 'PDB relaxed');
    assert.equal(resolved.code, 0, resolved.stderr);
    assert.equal(resolved.stdout.trim(), 'drain of blue-2: retry');

    const gate = await until('the removal gate', () =>
      records(follow?.stdout() ?? '').find((r) => r.type === 'gate' && r.gate === 'remove-blue' && r.state === 'waiting'),
    );
    assert.equal(gate.command, 'skewless approve lab --workflow bluegreen --gate remove-blue');
    const status = await cli('status', 'lab', '--workflow', 'bluegreen');
    assert.equal(status.code, 0, status.stderr);
    assert.match(
      status.stdout,
      /^lab: blue\/green, pool blue → pool green at 1\.34\.2, removal-gate: 4\/4 blue drained, 4\/4 green joined/,
    );
    assert.match(status.stdout, /gate remove-blue: waiting: skewless approve lab --workflow bluegreen --gate remove-blue/);
    assert.match(status.stdout, /rollback: skewless abort lab --workflow bluegreen: uncordon blue, drain and delete green/);
    assert.ok(follow.stdout().includes('after removal there is no rollback'), 'the gate line says there is no rollback after removal');

    const aborted = await cli('abort', 'lab', '--workflow', 'bluegreen', '--comment', 'green misbehaves');
    assert.equal(aborted.code, 0, aborted.stderr);
    assert.match(aborted.stdout, /^abort sent to bluegreen\/lab: rolling back/);
    const end = await follow.exited;
    assert.equal(end.code, 1, end.stderr);
    const result = records(end.stdout).at(-1) as Rec & { status: { step: string; outcome: string } };
    assert.equal(result.type, 'result');
    assert.equal(result.status.step, 'rolled-back');
    assert.match(result.status.outcome, /rolled back \(rollback asked by dana: green misbehaves\)/);
    assert.deepEqual([...m.deleted].sort(), GREEN);
    assert.equal(m.cordoned.size, 0);

    const trail = await cli('history', 'lab', '--workflow', 'bluegreen');
    assert.equal(trail.code, 0, trail.stderr);
    assert.match(trail.stdout, /^bluegreen\/lab: 1 run, 8 node workflows/);
  });

  it('approve deletes blue; abort once the removal started is refused with one line (exit 2)', async () => {
    m.deleted.length = 0;
    for (const g of GREEN) delete m.kubelet[g];
    holdRemoval = true;
    const started = await cli(...start, '--detach', '--output', 'json');
    assert.equal(started.code, 0, started.stderr);
    assert.equal(records(started.stdout)[0]?.workflowId, 'bluegreen/lab');
    const twice = await cli(...start);
    assert.equal(twice.code, 2);
    assert.equal(
      twice.stderr.trim(),
      'skewless: a blue/green run of lab is already running; watch it with "skewless watch lab --workflow bluegreen"',
    );
    await until('the removal gate', async () =>
      (await cli('status', 'lab')).stdout.includes('gate remove-blue: waiting') ? true : undefined,
    );
    const approved = await cli('approve', 'lab', '--gate', 'remove-blue', '--comment', 'green is fine');
    assert.equal(approved.code, 0, approved.stderr);
    await until('removing', async () => ((await cli('status', 'lab')).stdout.includes(', removing:') ? true : undefined));
    const refused = await cli('abort', 'lab', '--workflow', 'bluegreen');
    assert.equal(refused.code, 2);
    assert.match(
      refused.stderr.trim(),
      /^skewless: refused: after removal there is no rollback: the removal of blue pool blue started at \S+$/,
    );
    release();
    const watched = await cli('watch', 'lab', '--workflow', 'bluegreen');
    assert.equal(watched.code, 0, watched.stderr);
    assert.match(
      watched.stdout,
      /lab: replaced pool blue \(blue-1, blue-2, blue-3, blue-4\) by pool green \(green-1, green-2, green-3, green-4\) at 1\.34\.2/,
    );
    assert.deepEqual([...m.deleted].sort(), BLUE);
  });
});
