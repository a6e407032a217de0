import assert from 'node:assert/strict';
import { copyFileSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { WorkflowNotFoundError } from '@temporalio/client';
import { historyToJSON } from '@temporalio/common/lib/proto-utils.js';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import type { Worker } from '@temporalio/worker';
import { waitFor } from '../../sim/cluster/wait-for.js';
import { fleetStatusQuery, type FleetStatus } from '../../workflows/fleet-messages.js';
import { startTestCluster, type TestCluster } from '../helpers/sim-cluster.js';
import { cliAsync, spawnCli } from '../helpers/spawn-cli.js';
import { uniqueTaskQueue, temporalVars } from '../helpers/temporal-env.js';
import { simWorker } from '../helpers/workers.js';
import { startClusterWorld } from '../helpers/sim-world.js';
import { upgradeWorkflowId } from '../../contracts/workflow-ids.js';
import { tempDir } from '../helpers/temp-dir.js';

/**
 * Issue 8's fleet: an admin cluster and two user clusters, three small simulations (1 control plane
 * + 1 worker each) served by one worker through one clusters directory, driven through the real CLI.
 * user-a runs a pod no controller manages on its worker: its drain is refused and its upgrade waits
 * on `skewless resolve`, which stops the fleet's line: user-b, approved and with a free slot
 * (maxParallel 2), does not start until user-a moves on.
 */
const sim = (name: string, extra = '') => `
name: ${name}
version: 1.32.4
repository: [1.32.4, 1.33.7]
rebootSeconds: 1
nodes:
  - {name: cp, role: control-plane, count: 1}
  - {name: worker, role: worker, count: 1}
workloads:
  - {kind: DaemonSet, name: agent}
${extra}`;

const FLEET = `name: e2e
maxParallel: 2
defaults: {to: "1.33", policy: {verifySeconds: 30}}
stages:
  - name: admin
    clusters: [admin]
  - name: users
    clusters: [user-a, {name: user-b, to: next-minor, approve: true}]
`;

describe('e2e: a fleet of an admin and two user clusters on three simulations', () => {
  let env: TestWorkflowEnvironment;
  const sims: Record<string, TestCluster> = {};
  let worker: Worker | undefined;
  let running: Promise<void> | undefined;
  let dir: string;
  const taskQueue = uniqueTaskQueue('fleet-e2e');
  const cliEnv = () => ({ ...process.env, ...temporalVars(env), SKEWLESS_TASK_QUEUE: taskQueue, USER: 'erin' });

  before(async () => {
    dir = tempDir('fleet');
    const [e, ...clusters] = await startClusterWorld(
      sim('admin'),
      startTestCluster(sim('user-a', '  - {kind: Pod, name: pet, node: worker-1}')),
      startTestCluster(sim('user-b')),
    );
    env = e;
    // One worker, one clusters directory holding the three configurations (their paths are absolute).
    const clustersDir = join(dir, 'clusters');
    mkdirSync(clustersDir);
    for (const [name, tc] of [
      ['admin', clusters[0]],
      ['user-a', clusters[1]],
      ['user-b', clusters[2]],
    ] as const) {
      sims[name] = tc as TestCluster;
      copyFileSync(join((tc as TestCluster).clustersDir, `${name}.yaml`), join(clustersDir, `${name}.yaml`));
    }
    writeFileSync(join(dir, 'fleet.yaml'), FLEET);
    worker = await simWorker(env, clustersDir, taskQueue);
    running = worker.run();
  });
  after(async () => {
    worker?.shutdown();
    await running?.catch(() => undefined);
    await Promise.all(Object.values(sims).map((tc) => tc.stop()));
    await env?.teardown();
    rmSync(dir, { recursive: true, force: true });
  });

  const kubelets = async (name: string) =>
    Object.fromEntries((await sims[name]!.kube.core.listNode()).items.map((n) => [n.metadata?.name, n.status?.nodeInfo?.kubeletVersion]));
  const phases = (s: FleetStatus) => Object.fromEntries(s.clusters.map((c) => [c.cluster, c.phase]));

  it('upgrades in order and stops the line while user-a is blocked, then finishes every cluster', { timeout: 900_000 }, async () => {
    const started = Date.now();
    const follow = spawnCli(['fleet', 'start', join(dir, 'fleet.yaml'), '--output', 'json'], cliEnv());
    const fleet = env.client.workflow.getHandle('fleet/e2e');
    let last: FleetStatus | undefined;
    // Until the CLI has started the fleet, the query finds nothing: keep polling.
    const until = (what: string, check: (s: FleetStatus) => boolean) =>
      waitFor(
        what,
        async () => {
          last = (await fleet.query(fleetStatusQuery).catch(() => undefined)) ?? last;
          return last !== undefined && check(last);
        },
        600_000,
        500,
      ).catch((err: Error) => {
        throw new Error(`${err.message}\n${JSON.stringify(last?.clusters)}\n${last?.events.join('\n')}\nCLI: ${follow.stderr()}`);
      });

    await until('user-a blocked', (s) => s.clusters.find((c) => c.cluster === 'user-a')?.phase === 'blocked');
    const blockedAt = Date.now();
    assert.equal(phases(last!).admin, 'done');
    assert.deepEqual(
      await kubelets('admin'),
      { 'cp-1': 'v1.33.7', 'worker-1': 'v1.33.7' },
      'the admin cluster is upgraded before the user clusters',
    );
    assert.equal(last!.phase, 'line-stopped');
    assert.match(last!.line ?? '', /^user-a blocked: node worker-1: drain (refused|blocked) \(.*pet/);
    // user-b waits at its approval gate; approved now, with a slot free, it still does not start behind user-a.
    assert.equal(phases(last!)['user-b'], 'waiting-approval');
    const approve = await cliAsync(
      ['fleet', 'approve', 'e2e', '--cluster', 'user-b', '--comment', 'window 7', '--output', 'json'],
      cliEnv(),
    );
    assert.equal(approve.code, 0, approve.stderr);
    assert.equal(JSON.parse(approve.stdout).cluster.approvedBy, 'erin');
    await new Promise((r) => setTimeout(r, 3000));
    const status = await cliAsync(['fleet', 'status', 'e2e', '--output', 'json'], cliEnv());
    assert.equal(status.code, 0, status.stderr);
    const held = JSON.parse(status.stdout) as FleetStatus;
    assert.equal(phases(held)['user-b'], 'pending', 'the line holds user-b');
    await assert.rejects(env.client.workflow.getHandle('upgrade/user-b').describe(), WorkflowNotFoundError, 'no upgrade of user-b started');
    assert.deepEqual(await kubelets('user-b'), { 'cp-1': 'v1.32.4', 'worker-1': 'v1.32.4' });
    // The fleet's resolve is for failed clusters; the blocked node is answered on its upgrade, as always.
    const wrong = await cliAsync(['fleet', 'resolve', 'e2e', '--cluster', 'user-a', '--action', 'skip'], cliEnv());
    assert.equal(wrong.code, 2);
    assert.match(wrong.stderr, /blocked, not failed: answer it with "skewless resolve user-a"/);
    const text = await cliAsync(['fleet', 'status', 'e2e'], cliEnv());
    assert.match(text.stdout, /user-a +users +1\.33 +blocked: node worker-1: drain (refused|blocked) .*\(skewless resolve user-a\)/);
    const resolvedAt = Date.now();
    const force = await cliAsync(
      ['resolve', 'user-a', '--node', 'worker-1', '--action', 'force', '--pod', 'default/pet', '--comment', 'pet is disposable'],
      cliEnv(),
    );
    assert.equal(force.code, 0, force.stderr);

    const end = await follow.exited;
    assert.equal(end.code, 0, end.stderr + end.stdout.slice(-2000));
    const records = end.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { type: string; fleet: string; status?: FleetStatus });
    assert.equal(records[0]?.type, 'started');
    assert.ok(records.every((r) => r.fleet === 'e2e'));
    const result = records.at(-1);
    assert.equal(result?.type, 'result');
    assert.deepEqual(phases(result!.status!), { admin: 'done', 'user-a': 'done', 'user-b': 'done' });
    for (const name of ['admin', 'user-a', 'user-b'])
      assert.deepEqual(await kubelets(name), { 'cp-1': 'v1.33.7', 'worker-1': 'v1.33.7' }, name);
    // In order, from Temporal's own record of the three upgrades: admin closed before user-a started; user-b started only after the resolve.
    const d = async (name: string) => env.client.workflow.getHandle(upgradeWorkflowId(name)).describe();
    const [admin, a, b] = await Promise.all([d('admin'), d('user-a'), d('user-b')]);
    assert.ok(admin.closeTime && admin.closeTime <= a.startTime, `${admin.closeTime?.toISOString()} ≤ ${a.startTime.toISOString()}`);
    assert.ok(
      b.startTime.getTime() >= resolvedAt,
      `user-b started ${b.startTime.toISOString()}, after the resolve at ${new Date(resolvedAt).toISOString()}`,
    );
    assert.equal(a.parentExecution?.workflowId, 'fleet/e2e');
    // SKEWLESS_SAVE_HISTORIES=dir keeps the fleet's and user-a's histories (its reports to the fleet, behind the patch) for test/replay.
    const save = process.env.SKEWLESS_SAVE_HISTORIES;
    if (save) {
      for (const id of ['fleet/e2e', 'upgrade/user-a']) {
        writeFileSync(`${save}/${id.replace(/\//g, '_')}.json`, historyToJSON(await env.client.workflow.getHandle(id).fetchHistory()));
      }
    }
    console.log(
      `fleet e2e: user-a blocked after ${((blockedAt - started) / 1000).toFixed(0)} s, all done after ${((Date.now() - started) / 1000).toFixed(0)} s`,
    );
  });
});
