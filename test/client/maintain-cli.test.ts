import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { ApplicationFailure } from '@temporalio/common';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { Worker } from '@temporalio/worker';
import { mockMaintenanceCluster } from '../helpers/maintenance-mocks.js';
import { cliAsync, spawnCli, type RunningCli } from '../helpers/spawn-cli.js';
import { startDevServer, uniqueTaskQueue, workflowBundle, temporalVars } from '../helpers/temporal-env.js';

type Rec = Record<string, unknown> & { type: string };
const records = (stdout: string): Rec[] =>
  stdout
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => JSON.parse(l) as Rec);

async function until<T>(what: string, check: () => T | undefined, timeoutMs = 60_000): Promise<T> {
  for (const start = Date.now(); Date.now() - start < timeoutMs; await new Promise((r) => setTimeout(r, 200))) {
    const v = check();
    if (v !== undefined) return v;
  }
  throw new Error(`timed out waiting for ${what}`);
}

/**
 * `skewless maintain` and the operator commands on its run, through the real CLI executable and the
 * dev server, with a worker of mocked activities in this process (w2's first drain is blocked).
 */
describe('skewless maintain and the operator commands on maintain/NAME (mocked activities)', () => {
  let env: TestWorkflowEnvironment;
  let worker: Worker;
  let running: Promise<void>;
  let follow: RunningCli | undefined;
  const taskQueue = uniqueTaskQueue('maintain-cli');
  let drains = 0;
  const m = mockMaintenanceCluster(
    {},
    {
      drainNode: (i) => {
        if (i.node === 'w2' && drains++ === 0) {
          throw ApplicationFailure.create({
            type: 'DrainBlocked',
            nonRetryable: true,
            message: 'PDB default/web refuses the eviction of default/web-1',
            details: [{ pods: [{ namespace: 'default', name: 'web-1', pdbs: ['web'] }] }],
          });
        }
        return { node: i.node, gone: [], skipped: [], warnings: [], resumed: false };
      },
    },
  );
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
    worker?.shutdown();
    await running;
    await env?.teardown();
  });
  const cliEnv = () => ({ ...process.env, ...temporalVars(env), SKEWLESS_TASK_QUEUE: taskQueue, USER: 'dana' });
  const cli = (...args: string[]) => cliAsync(args, cliEnv());

  it('follows in NDJSON; status, approve and resolve find the run without --workflow; the hints name it', async () => {
    follow = spawnCli(
      [
        'maintain',
        '--cluster',
        'lab',
        '--selector',
        'pool=blue',
        '--approve-canary',
        '--batch-size',
        '2',
        '--max-unavailable',
        '2',
        '--output',
        'json',
      ],
      cliEnv(),
    );
    const gate = await until('the canary gate', () =>
      records(follow?.stdout() ?? '').find((r) => r.type === 'gate' && r.state === 'waiting'),
    );
    assert.equal(gate.gate, 'canary-maintenance');
    assert.equal(gate.command, 'skewless approve lab --workflow maintain --gate canary-maintenance');
    const text = await cli('status', 'lab');
    assert.equal(text.code, 0, text.stderr);
    assert.match(text.stdout, /^lab: OS maintenance of pool=blue, 1\/5 nodes done, gate/);
    assert.match(text.stdout, /gate canary-maintenance: waiting/);
    const upgrade = await cli('upgrade', '--cluster', 'lab', '--to', '1.33');
    assert.equal(upgrade.code, 2);
    assert.equal(
      upgrade.stderr.trim(),
      'skewless: an OS maintenance of lab is running (maintain/lab); upgrade once it ends: "skewless watch lab --workflow maintain"',
    );
    const rehearse = await cli('rehearse', '--cluster', 'lab', '--to', '1.33');
    assert.equal(rehearse.code, 2);
    assert.equal(
      rehearse.stderr.trim(),
      'skewless: an OS maintenance of lab is running (maintain/lab); rehearse once it ends: "skewless watch lab --workflow maintain"',
    );
    const restore = await cli('restore', '--cluster', 'lab', '--hop', '1.33.7');
    assert.equal(restore.code, 2);
    assert.equal(
      restore.stderr.trim(),
      'skewless: an OS maintenance of lab is running (maintain/lab); restore once it ends: "skewless watch lab --workflow maintain"',
    );
    const approved = await cli('approve', 'lab', '--gate', 'canary-maintenance', '--output', 'json');
    assert.equal(approved.code, 0, approved.stderr);
    assert.equal((JSON.parse(approved.stdout) as { workflowId: string }).workflowId, 'maintain/lab');

    const blocked = await until('w2 blocked', () => records(follow?.stdout() ?? '').find((r) => r.type === 'blocked' && r.node === 'w2'));
    assert.equal(blocked.command, 'skewless resolve lab --workflow maintain --node w2 --action retry|skip|force|abort');
    const refused = await cli('resolve', 'lab', '--node', 'w9', '--action', 'retry');
    assert.equal(refused.code, 2);
    assert.equal(refused.stderr.trim(), 'skewless: refused: no node w9 in this maintenance run');
    // Force takes only the pods in the drain's way: a pod that does not exist, or one that is not blocking, is refused and nothing is recorded.
    for (const pods of [['default/nope'], ['default/web-1', 'default/web-2']]) {
      const forced = await cli('resolve', 'lab', '--node', 'w2', '--action', 'force', ...pods.flatMap((p) => ['--pod', p]));
      assert.equal(forced.code, 2, forced.stderr);
      assert.equal(
        forced.stderr,
        `skewless: refused: force takes only pods that block the drain of w2; ${pods.at(-1)} does not (the pods blocking it: default/web-1)\n`,
      );
    }
    const after = JSON.parse((await cli('status', 'lab', '--output', 'json')).stdout) as {
      nodes: Record<string, { phase: string }>;
      events: string[];
    };
    assert.equal(after.nodes.w2?.phase, 'blocked');
    assert.ok(!after.events.some((e) => /force/.test(e)), after.events.join('\n'));
    const resolved = await cli('resolve', 'lab', '--workflow', 'maintain', '--node', 'w2', '--action', 'retry', '--comment', 'PDB relaxed');
    assert.equal(resolved.code, 0, resolved.stderr);
    assert.equal(resolved.stdout.trim(), 'drain of w2: retry');

    const end = await follow.exited;
    assert.equal(end.code, 0, end.stderr);
    const all = records(end.stdout);
    assert.equal(all[0]?.type, 'started');
    assert.equal(all[0]?.workflowId, 'maintain/lab');
    const result = all.at(-1) as Rec & { status: { phase: string; events: string[] } };
    assert.equal(result.type, 'result');
    assert.equal(result.status.phase, 'done');
    assert.ok(result.status.events.includes('drain of w2 resolved by dana: retry (PDB relaxed)'));
    assert.ok(all.some((r) => r.type === 'progress' && (r.nodes as { done: number; total: number }).done === 5));
    assert.deepEqual([...m.reboots].sort(), ['w1', 'w2', 'w3', 'w4', 'w5']);
    for (const [, input] of m.calls.filter(([n, i]) => n === 'drainNode' && i.node === 'w2'))
      assert.deepEqual(input.force, [], 'the refused pods never reached a drain');

    const trail = await cli('history', 'lab');
    assert.equal(trail.code, 0, trail.stderr);
    assert.match(trail.stdout, /^maintain\/lab: 1 run, 5 node workflows/);
    assert.match(trail.stdout, /drain of w2.*retry/);

    // A second run while none runs is fine; one while one runs is refused (exit 2).
    const again = await cli('maintain', '--cluster', 'lab', '--node', 'w1', '--detach', '--output', 'json');
    assert.equal(again.code, 0, again.stderr);
    assert.equal(records(again.stdout).length, 1);
    const twice = await cli('maintain', '--cluster', 'lab', '--node', 'w1');
    // The detached run may already be done: refused only while it runs.
    if (twice.code !== 0)
      assert.equal(
        twice.stderr.trim(),
        'skewless: a maintenance of lab is already running; watch it with "skewless watch lab --workflow maintain"',
      );
    const watched = await cli('watch', 'lab', '--workflow', 'maintain');
    assert.equal(watched.code, 0, watched.stderr);
    assert.match(watched.stdout, /lab: maintained 1 nodes \(w1\); no node left cordoned by this run/);
  });
});
