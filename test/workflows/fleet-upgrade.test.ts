import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { WorkflowUpdateFailedError } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import type { Activities } from '../../activities/index.js';
import { notificationEventProblems, parseFleetSpec } from '../../rules/index.js';
import type { NotificationEvent } from '../../contracts/notification-event.js';
import { approveClusterUpdate, fleetStatusQuery, resolveClusterUpdate, type FleetStatus } from '../../workflows/fleet-messages.js';
import { clusterUpgradeWorkflow } from '../../workflows/cluster-upgrade-workflow.js';
import { fleetUpgradeWorkflow } from '../../workflows/fleet-upgrade-workflow.js';
import {
  abortSignal,
  approveUpdate,
  pauseSignal,
  resolveDrainUpdate,
  resumeSignal,
  statusQuery,
} from '../../workflows/rollout-messages.js';
import { fakeCluster } from '../helpers/fake-cluster.js';
import { startDevServer } from '../helpers/temporal-env.js';
import { withMockedWorker } from '../helpers/workers.js';
import { fleetWorkflowId, upgradeWorkflowId } from '../../contracts/workflow-ids.js';

/**
 * The fleet's order, limit and stop-the-line rule over real child upgrades (clusterUpgradeWorkflow,
 * real dev server) whose activities are in-memory clusters, one per name: fast, and what each
 * cluster's fake records says when it was touched.
 */
type Fake = ReturnType<typeof fakeCluster> & { options: { blockDrainOf?: string; pdbFinding?: boolean } };

function fakeFleet(spec: Record<string, { blockDrainOf?: string; pdbFinding?: boolean }>) {
  const clusters: Record<string, Fake> = {};
  for (const [name, options] of Object.entries(spec)) clusters[name] = { ...fakeCluster(options), options };
  /** Every activity call, across clusters, in order: [cluster, activity]. */
  const log: [string, string][] = [];
  const names = Object.keys(Object.values(clusters)[0]?.acts ?? {});
  const acts = Object.fromEntries(
    names.map((n) => [
      n,
      async (i: { cluster: string }) => {
        log.push([i.cluster, n]);
        const c = clusters[i.cluster];
        if (!c) throw new Error(`no fake cluster ${i.cluster}`);
        return (c.acts as Record<string, (x: unknown) => Promise<unknown>>)[n]?.(i);
      },
    ]),
  ) as unknown as Partial<Activities>;
  return { clusters, log, acts };
}

const firstTouch = (log: [string, string][], cluster: string) => log.findIndex(([c]) => c === cluster);
const lastTouch = (log: [string, string][], cluster: string) => log.map(([c]) => c).lastIndexOf(cluster);

async function until<T>(read: () => Promise<T>, ok: (v: T) => boolean, what: string, seconds = 60): Promise<T> {
  const deadline = Date.now() + seconds * 1000;
  for (;;) {
    const v = await read();
    if (ok(v)) return v;
    if (Date.now() > deadline) throw new Error(`timed out after ${seconds} s waiting for ${what}: ${JSON.stringify(v)}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

describe('fleetUpgradeWorkflow (children are real upgrades of in-memory clusters, real dev server)', () => {
  let env: TestWorkflowEnvironment;
  before(async () => {
    env = await startDevServer();
  });
  after(async () => {
    await env?.teardown();
  });
  let n = 0;
  /** Cluster names unique per test: the children's ids are upgrade/<cluster> on one server. */
  const names = (...base: string[]) => {
    n++;
    return base.map((b) => `${b}-${n}`);
  };
  const phases = (s: FleetStatus) => Object.fromEntries(s.clusters.map((c) => [c.cluster.replace(/-\d+$/, ''), c.phase]));

  it(
    'upgrades stage by stage in order, one at a time with maxParallel 1, each child with the id upgrade/<cluster>',
    { timeout: 240_000 },
    async () => {
      const [admin, a, b] = names('admin', 'user-a', 'user-b') as [string, string, string];
      const f = fakeFleet({ [admin]: {}, [a]: {}, [b]: {} });
      const spec = parseFleetSpec({
        name: `order-${n}`,
        stages: [
          { name: 'admin', clusters: [{ name: admin, to: '1.33' }] },
          { name: 'users', clusters: [a, { name: b, to: 'latest-patch' }] },
        ],
        defaults: { to: '1.34' },
      });
      const status = await withMockedWorker(env, f.acts, 'fleet', (taskQueue) =>
        env.client.workflow.execute(fleetUpgradeWorkflow, { taskQueue, workflowId: fleetWorkflowId(spec.name), args: [{ fleet: spec }] }),
      );
      assert.equal(status.phase, 'done', status.outcome);
      assert.deepEqual(phases(status), { admin: 'done', 'user-a': 'done', 'user-b': 'done' });
      assert.ok(lastTouch(f.log, admin) < firstTouch(f.log, a), 'the admin cluster is done before a user cluster is touched');
      assert.ok(lastTouch(f.log, a) < firstTouch(f.log, b), 'maxParallel 1: user-b starts after user-a ends');
      // Each cluster went to its own target: 1.33 (admin), 1.34 in two hops (user-a), latest-patch of 1.32 (user-b).
      assert.deepEqual(f.clusters[admin]?.state.kubelet, { cp1: '1.33.7', w1: '1.33.7', w2: '1.33.7' });
      assert.deepEqual(f.clusters[a]?.state.kubelet, { cp1: '1.34.2', w1: '1.34.2', w2: '1.34.2' });
      assert.equal(f.clusters[b]?.state.kubelet.w1, '1.32.4', 'latest-patch of 1.32.4 is 1.32.4: nothing to do');
      assert.deepEqual(
        status.clusters.map((c) => c.result?.to),
        ['1.33.7', '1.34.2', '1.32.4'],
      );
      // The children are the usual upgrades, found under their fixed ids.
      const child = await env.client.workflow.getHandle(upgradeWorkflowId(a)).describe();
      assert.equal(child.parentExecution?.workflowId, fleetWorkflowId(spec.name));
      assert.equal(child.typedSearchAttributes.get({ name: 'SkewlessFleet', type: 'KEYWORD' } as never), spec.name);
    },
  );

  it('stops the line while a cluster is blocked, even with a free slot, and moves on when it does', { timeout: 240_000 }, async () => {
    const [admin, a, b, c] = names('admin', 'user-a', 'user-b', 'user-c') as [string, string, string, string];
    const f = fakeFleet({ [admin]: {}, [a]: { blockDrainOf: 'w1' }, [b]: {}, [c]: {} });
    const spec = parseFleetSpec({
      name: `line-${n}`,
      maxParallel: 2,
      defaults: { to: '1.33' },
      // user-b holds at its own workers gate until the test approves it, so user-a blocks while both run.
      stages: [
        { name: 'admin', clusters: [admin] },
        { name: 'users', clusters: [a, { name: b, policy: { approveWorkers: true } }, c] },
      ],
    });
    const status = await withMockedWorker(env, f.acts, 'fleet', async (taskQueue) => {
      const fleet = await env.client.workflow.start(fleetUpgradeWorkflow, {
        taskQueue,
        workflowId: fleetWorkflowId(spec.name),
        args: [{ fleet: spec }],
      });
      const q = () => fleet.query(fleetStatusQuery);
      const blocked = await until(q, (s) => phases(s)['user-a'] === 'blocked', 'user-a blocked');
      assert.equal(blocked.phase, 'line-stopped');
      assert.match(blocked.line ?? '', new RegExp(`^${a} blocked: node w1: drain blocked`));
      assert.match(blocked.clusters[1]?.blocked?.[0] ?? '', /node w1: drain blocked/);
      // user-b ends (its gate approved): a slot is free, but user-c stays pending behind blocked user-a.
      const gate = await until(
        () => env.client.workflow.getHandle(upgradeWorkflowId(b)).query(statusQuery),
        (s) => s.gates.some((g) => !g.approvedBy),
        'user-b gate',
      );
      await env.client.workflow
        .getHandle(upgradeWorkflowId(b))
        .executeUpdate(approveUpdate, { args: [{ gate: gate.gates[0]!.name, by: 'test' }] });
      await until(q, (s) => phases(s)['user-b'] === 'done', 'user-b done');
      await new Promise((r) => setTimeout(r, 1500));
      const held = await q();
      assert.equal(phases(held)['user-c'], 'pending', 'the line stays stopped behind user-a');
      assert.equal(firstTouch(f.log, c), -1, 'user-c untouched');
      // The fleet's own resolve refuses a blocked cluster: it is answered on its upgrade.
      await assert.rejects(
        fleet.executeUpdate(resolveClusterUpdate, { args: [{ cluster: a, action: 'skip', by: 'test' }] }),
        (e: unknown) =>
          e instanceof WorkflowUpdateFailedError && /blocked, not failed: answer it with "skewless resolve/.test(e.cause?.message ?? ''),
      );
      await env.client.workflow
        .getHandle(upgradeWorkflowId(a))
        .executeUpdate(resolveDrainUpdate, { args: [{ node: 'w1', action: 'skip', by: 'test' }] });
      return fleet.result();
    });
    assert.equal(status.phase, 'done', status.outcome);
    assert.deepEqual(phases(status), { admin: 'done', 'user-a': 'done', 'user-b': 'done', 'user-c': 'done' });
    assert.ok(firstTouch(f.log, c) > lastTouch(f.log, b), 'user-c started only after user-a moved on');
    assert.match(status.events.join('\n'), new RegExp(`${a} moving again`));
  });

  it(
    'a failed cluster stops the line until the fleet is told to retry it (or skip it); approval gates hold a cluster',
    { timeout: 240_000 },
    async () => {
      const [admin, a, b] = names('admin', 'user-a', 'user-b') as [string, string, string];
      const f = fakeFleet({ [admin]: {}, [a]: { pdbFinding: true }, [b]: {} });
      const spec = parseFleetSpec({
        name: `fail-${n}`,
        maxParallel: 3,
        defaults: { to: '1.33' },
        stages: [
          { name: 'admin', clusters: [{ name: admin, approve: true }] },
          { name: 'users', clusters: [a, b] },
        ],
      });
      const status = await withMockedWorker(env, f.acts, 'fleet', async (taskQueue) => {
        const fleet = await env.client.workflow.start(fleetUpgradeWorkflow, {
          taskQueue,
          workflowId: fleetWorkflowId(spec.name),
          args: [{ fleet: spec }],
        });
        const q = () => fleet.query(fleetStatusQuery);
        await until(q, (s) => phases(s).admin === 'waiting-approval', 'admin gate');
        await new Promise((r) => setTimeout(r, 500));
        // The worker's own configuration read (its notify: sinks) is all before the approval.
        assert.deepEqual(f.log, [[admin, 'notifySinks']], 'nothing touched before the approval');
        await fleet.executeUpdate(approveClusterUpdate, { args: [{ cluster: admin, by: 'alice', comment: 'change 42' }] });
        const failed = await until(q, (s) => phases(s)['user-a'] === 'failed', 'user-a failed');
        assert.match(failed.clusters[1]?.message ?? '', /PreflightBlocked: refusing to start: .*default\/solo/);
        assert.equal(failed.phase, 'line-stopped');
        // maxParallel 3, same stage: user-b may have started alongside user-a; if not, it must not start now.
        const bStarted = firstTouch(f.log, b) !== -1;
        await new Promise((r) => setTimeout(r, 1000));
        if (!bStarted) assert.equal(phases(await q())['user-b'], 'pending');
        await assert.rejects(
          fleet.executeUpdate(resolveClusterUpdate, { args: [{ cluster: b, action: 'retry', by: 'bob' }] }),
          WorkflowUpdateFailedError,
        );
        f.clusters[a]!.options.pdbFinding = false; // the operator fixed the PDB
        await fleet.executeUpdate(resolveClusterUpdate, { args: [{ cluster: a, action: 'retry', by: 'bob', comment: 'PDB fixed' }] });
        return fleet.result();
      });
      assert.equal(status.phase, 'done', status.outcome);
      assert.deepEqual(phases(status), { admin: 'done', 'user-a': 'done', 'user-b': 'done' });
      assert.equal(status.clusters[1]?.attempts, 2);
      assert.equal(status.clusters[0]?.approvedBy, 'alice');
      assert.match(status.events.join('\n'), new RegExp(`${a} \\(failed\\) resolved by bob: retry \\(PDB fixed\\)`));
    },
  );

  it(
    "the fleet sends its own waits and its end to each cluster's notify: sinks (PATCH.flowNotifications)",
    { timeout: 240_000 },
    async () => {
      const [admin, a] = names('admin', 'user-a') as [string, string];
      const f = fakeFleet({ [admin]: {}, [a]: { pdbFinding: true } });
      const spec = parseFleetSpec({
        name: `notify-${n}`,
        defaults: { to: '1.33' },
        stages: [{ clusters: [{ name: admin, approve: true }] }, { clusters: [a] }],
      });
      const delivered: NotificationEvent[] = [];
      const acts = {
        ...f.acts,
        notifySinks: async () => [{ name: 'hook', events: ['run.waiting', 'run.resumed', 'run.finished'] }],
        deliverNotification: async (i: { sink: string; event: NotificationEvent }) => {
          delivered.push(i.event);
          return { sink: i.sink, status: 200, answer: 'ok', attempt: 1 };
        },
      } as unknown as Partial<Activities>;
      const fleetId = fleetWorkflowId(spec.name);
      const status = await withMockedWorker(env, acts, 'fleet', async (taskQueue) => {
        const fleet = await env.client.workflow.start(fleetUpgradeWorkflow, { taskQueue, workflowId: fleetId, args: [{ fleet: spec }] });
        const q = () => fleet.query(fleetStatusQuery);
        await until(
          async () => delivered.length,
          (k) => k >= 1,
          'the approval wait delivered',
        );
        assert.equal(delivered[0]?.command, `skewless fleet approve ${spec.name} --cluster ${admin}`);
        await fleet.executeUpdate(approveClusterUpdate, { args: [{ cluster: admin, by: 'alice' }] });
        await until(q, (s) => phases(s)['user-a'] === 'failed', 'user-a failed');
        await until(
          async () => delivered.filter((e) => e.cluster === a).length,
          (k) => k >= 1,
          'the line stop delivered',
        );
        await fleet.executeUpdate(resolveClusterUpdate, { args: [{ cluster: a, action: 'skip', by: 'carol' }] });
        const result = await fleet.result();
        await until(
          async () => delivered.length,
          (k) => k >= 6,
          'every event delivered',
        );
        return result;
      });
      assert.equal(status.phase, 'done', status.outcome);
      const mine = delivered.filter((e) => e.workflowId === fleetId);
      const of = (cluster: string) =>
        mine.filter((e) => e.cluster === cluster).map((e) => `${e.kind} ${String(e.details.waitingFor ?? '')}`.trim());
      assert.deepEqual(of(admin), ['run.waiting gate', 'run.resumed gate', 'run.finished']);
      // Resumed and finished leave together (a skip ends the fleet): each its own delivery, in either order.
      assert.deepEqual(of(a).sort(), ['run.finished', 'run.resumed halt', 'run.waiting halt']);
      const stop = mine.find((e) => e.cluster === a && e.kind === 'run.waiting') as NotificationEvent;
      assert.equal(stop.command, `skewless fleet resolve ${spec.name} --cluster ${a} --action retry`);
      assert.match(String(stop.details.reason), /PreflightBlocked: refusing to start/);
      assert.equal(new Set(mine.map((e) => e.id)).size, mine.length, 'each transition once');
      for (const e of mine) assert.deepEqual(notificationEventProblems(e), [], JSON.stringify(e));
    },
  );

  it('skip lets the fleet go on without the failed cluster, and the outcome says so', { timeout: 240_000 }, async () => {
    const [a, b] = names('user-a', 'user-b') as [string, string];
    const f = fakeFleet({ [a]: { pdbFinding: true }, [b]: {} });
    const spec = parseFleetSpec({ name: `skip-${n}`, defaults: { to: '1.33' }, stages: [{ clusters: [a, b] }] });
    const status = await withMockedWorker(env, f.acts, 'fleet', async (taskQueue) => {
      const fleet = await env.client.workflow.start(fleetUpgradeWorkflow, {
        taskQueue,
        workflowId: fleetWorkflowId(spec.name),
        args: [{ fleet: spec }],
      });
      await until(
        () => fleet.query(fleetStatusQuery),
        (s) => phases(s)['user-a'] === 'failed',
        'user-a failed',
      );
      assert.equal(firstTouch(f.log, b), -1);
      await fleet.executeUpdate(resolveClusterUpdate, { args: [{ cluster: a, action: 'skip', by: 'carol' }] });
      return fleet.result();
    });
    assert.deepEqual(phases(status), { 'user-a': 'skipped', 'user-b': 'done' });
    assert.match(status.outcome ?? '', new RegExp(`^1 of 2 clusters upgraded; skipped: ${a}$`));
  });
  it(
    'pause starts no further cluster; abort asks the running (blocked) upgrade to abort and compensate, and starts nothing more',
    { timeout: 240_000 },
    async () => {
      const [a, b] = names('user-a', 'user-b') as [string, string];
      const f = fakeFleet({ [a]: { blockDrainOf: 'w1' }, [b]: {} });
      const spec = parseFleetSpec({
        name: `abort-${n}`,
        maxParallel: 2,
        defaults: { to: '1.33' },
        stages: [{ clusters: [a] }, { clusters: [b] }],
      });
      const status = await withMockedWorker(env, f.acts, 'fleet', async (taskQueue) => {
        // Paused from its first moment (signal with start): no cluster may start.
        const fleet = await env.client.workflow.signalWithStart(fleetUpgradeWorkflow, {
          taskQueue,
          workflowId: fleetWorkflowId(spec.name),
          args: [{ fleet: spec }],
          signal: pauseSignal,
          signalArgs: [{ by: 'dave' }],
        });
        await new Promise((r) => setTimeout(r, 1500));
        const paused = await fleet.query(fleetStatusQuery);
        assert.equal(paused.phase, 'paused');
        assert.equal(f.log.length, 0, 'paused before the first cluster: nothing touched');
        await fleet.signal(resumeSignal, { by: 'dave' });
        await until(
          () => fleet.query(fleetStatusQuery),
          (s) => phases(s)['user-a'] === 'blocked',
          'user-a blocked',
        );
        await fleet.signal(abortSignal, { by: 'dave', reason: 'freeze' });
        return fleet.result();
      });
      assert.equal(status.phase, 'aborted');
      assert.deepEqual(phases(status), { 'user-a': 'aborted', 'user-b': 'pending' });
      assert.equal(firstTouch(f.log, b), -1, 'user-b never touched');
      const child = await env.client.workflow.getHandle(upgradeWorkflowId(a)).result();
      assert.equal(child.phase, 'aborted');
      assert.ok(
        f.clusters[a]?.calls.some(([name, i]) => name === 'uncordonNode' && i.node === 'w1'),
        "the blocked node uncordoned by the upgrade's compensation",
      );
      assert.match(status.outcome ?? '', /^aborted by dave: freeze; /);
    },
  );
  it(
    'a rollout halted on unhealthy workloads is a blocked cluster too: the line stops until the halt is answered',
    { timeout: 240_000 },
    async () => {
      const [a, b] = names('user-a', 'user-b') as [string, string];
      const f = fakeFleet({ [a]: {}, [b]: {} });
      let healthy = false;
      (f.clusters[a]!.acts as Record<string, unknown>).checkWorkloads = async () => {
        if (healthy) return {};
        throw ApplicationFailure.create({ type: 'Unhealthy', message: 'Deployment default/web (1/3 replicas available)' });
      };
      const spec = parseFleetSpec({
        name: `halt-${n}`,
        maxParallel: 2,
        defaults: { to: '1.33', policy: { verifySeconds: 1 } },
        stages: [{ clusters: [a] }, { clusters: [b] }],
      });
      const status = await withMockedWorker(env, f.acts, 'fleet', async (taskQueue) => {
        const fleet = await env.client.workflow.start(fleetUpgradeWorkflow, {
          taskQueue,
          workflowId: fleetWorkflowId(spec.name),
          args: [{ fleet: spec }],
        });
        const halted = await until(
          () => fleet.query(fleetStatusQuery),
          (s) => phases(s)['user-a'] === 'blocked',
          'user-a halted',
        );
        assert.match(halted.clusters[0]?.blocked?.join('; ') ?? '', /^halted after canary of 1\.33\.7: .*Deployment default\/web/);
        assert.equal(firstTouch(f.log, b), -1);
        healthy = true;
        await env.client.workflow
          .getHandle(upgradeWorkflowId(a))
          .executeUpdate(resolveDrainUpdate, { args: [{ action: 'retry', by: 'ops' }] });
        return fleet.result();
      });
      assert.deepEqual(phases(status), { 'user-a': 'done', 'user-b': 'done' });
      assert.ok(firstTouch(f.log, b) > 0);
    },
  );
  it(
    'a cluster whose upgrade was started by hand is not started twice: it fails in the fleet, naming why, until retried or skipped',
    { timeout: 240_000 },
    async () => {
      const [a, b] = names('user-a', 'user-b') as [string, string];
      const f = fakeFleet({ [a]: { blockDrainOf: 'w1' }, [b]: {} });
      const spec = parseFleetSpec({ name: `twice-${n}`, defaults: { to: '1.33' }, stages: [{ clusters: [a, b] }] });
      const status = await withMockedWorker(env, f.acts, 'fleet', async (taskQueue) => {
        const byHand = await env.client.workflow.start(clusterUpgradeWorkflow, {
          taskQueue,
          workflowId: upgradeWorkflowId(a),
          args: [{ cluster: a, to: '1.33' }],
        });
        const fleet = await env.client.workflow.start(fleetUpgradeWorkflow, {
          taskQueue,
          workflowId: fleetWorkflowId(spec.name),
          args: [{ fleet: spec }],
        });
        const failed = await until(
          () => fleet.query(fleetStatusQuery),
          (s) => phases(s)['user-a'] === 'failed',
          'user-a failed',
        );
        assert.match(failed.clusters[0]?.message ?? '', new RegExp(`^upgrade/${a} is already running \\(started outside this fleet\\)`));
        assert.equal((await byHand.describe()).status.name, 'RUNNING', 'the upgrade started by hand goes on, untouched');
        await fleet.executeUpdate(resolveClusterUpdate, { args: [{ cluster: a, action: 'skip', by: 'gus' }] });
        const done = await fleet.result();
        await byHand.executeUpdate(resolveDrainUpdate, { args: [{ node: 'w1', action: 'abort', by: 'gus' }] });
        await byHand.result();
        return done;
      });
      assert.deepEqual(phases(status), { 'user-a': 'skipped', 'user-b': 'done' });
    },
  );
});
