import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { V1Node } from '@kubernetes/client-node';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import type { Worker } from '@temporalio/worker';
import { formatAvailability, startAvailabilitySampler, type AvailabilitySampler } from '../../sim/availability-sampler.js';
import { waitFor } from '../../sim/cluster/wait-for.js';
import type { BlueGreenStatus } from '../../workflows/bluegreen-messages.js';
import type { TestCluster } from '../helpers/sim-cluster.js';
import { cliAsync } from '../helpers/spawn-cli.js';
import { uniqueTaskQueue, temporalVars } from '../helpers/temporal-env.js';
import { judgeSimulation } from '../helpers/upgrade-evidence.js';
import { simWorker } from '../helpers/workers.js';
import { startClusterWorld } from '../helpers/sim-world.js';

// A control plane and a blue pool of four workers at 1.33; the repository offers 1.34.2.
const LAB = `
name: bg
version: 1.33.7
repository: [1.33.7, 1.34.2]
nodes:
  - {name: cp, role: control-plane, count: 1}
  - {name: blue, role: worker, count: 4, labels: {skewless.io/pool: blue}}
pools:
  blue: skewless.io/pool=blue
  green: skewless.io/pool=green
workloads:
  - {kind: Deployment, name: web, replicas: 4, pdb: {maxUnavailable: 1}}
  - {kind: DaemonSet, name: agent}
`;
const BLUE = ['blue-1', 'blue-2', 'blue-3', 'blue-4'];
const GREEN = ['green-1', 'green-2', 'green-3', 'green-4'];
const ARGS = [
  'bluegreen',
  '--cluster',
  'bg',
  '--from',
  'blue',
  '--to-pool',
  'green',
  '--to',
  '1.34.2',
  '--batch-size',
  '2',
  '--drain-timeout',
  '120',
];

const ready = (n: V1Node) => n.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? false;

/**
 * Blue/green through the real CLI, the real dev server, a real worker in this process and the
 * simulated cluster with its machine API: the first run moves the control plane to 1.34, creates the
 * green pool at 1.34, drains blue and is rolled back at the removal gate (blue restored, green
 * gone); the second replaces the pool and removes blue. No PDB is violated at any time.
 */
describe('e2e: skewless bluegreen replaces a 4-node pool at 1.33 with a 4-node pool at 1.34', () => {
  let env: TestWorkflowEnvironment;
  let tc: TestCluster;
  let worker: Worker;
  let running: Promise<void>;
  let sampler: AvailabilitySampler | undefined;
  const taskQueue = uniqueTaskQueue('bluegreen');
  const cli = (...args: string[]) => cliAsync(args, { ...process.env, ...temporalVars(env), SKEWLESS_TASK_QUEUE: taskQueue, USER: 'dana' });
  const nodes = async () => (await tc.kube.core.listNode()).items;
  const status = async () => {
    const r = await cli('status', 'bg', '--workflow', 'bluegreen', '--output', 'json');
    assert.equal(r.code, 0, r.stderr);
    return JSON.parse(r.stdout) as BlueGreenStatus;
  };
  /** Polls the run's status until the remove-blue gate waits; a run that ended (refused, failed) fails at once with its reason. */
  const untilGate = async () => {
    const handle = env.client.workflow.getHandle('bluegreen/bg');
    let last: BlueGreenStatus | undefined;
    for (const begun = Date.now(); Date.now() - begun < 600_000; await new Promise((r) => setTimeout(r, 1000))) {
      if ((await handle.describe()).status.name !== 'RUNNING') {
        const why = await handle.result().then(
          () => 'completed',
          (err: Error) => {
            let root: Error = err;
            while (root.cause instanceof Error) root = root.cause;
            return root.message;
          },
        );
        throw new Error(`bluegreen/bg ended before the gate: ${why}`);
      }
      last = await status();
      // Without a worker's answer in time (a loaded machine), status reads the run from Temporal alone: no gates.
      if ((last.gates ?? []).some((g) => g.name === 'remove-blue' && !g.approvedBy)) return last;
    }
    throw new Error(`timed out waiting for the remove-blue gate\n${JSON.stringify(last?.nodes)}\n${last?.events.join('\n')}`);
  };

  before(async () => {
    [env, tc] = await startClusterWorld(LAB);
    worker = await simWorker(env, tc.clustersDir, taskQueue);
    running = worker.run();
    sampler = startAvailabilitySampler(tc.kube, { intervalMs: 250 });
  });
  after(async () => {
    await sampler?.stop().catch(() => undefined);
    worker?.shutdown();
    await running?.catch(() => undefined);
    await tc?.stop();
    await env?.teardown();
  });

  it('control plane to 1.34 first, green joined at 1.34, blue drained; abort at the removal gate restores blue and removes green', async () => {
    const started = Date.now();
    const start = await cli(...ARGS, '--detach', '--output', 'json');
    assert.equal(start.code, 0, start.stderr);
    const atGate = await untilGate();
    const toGate = (Date.now() - started) / 1000;
    assert.equal(atGate.controlPlane?.from, '1.33.7');
    assert.equal(atGate.controlPlane?.upgrade, 'upgrade/bg');
    assert.deepEqual(atGate.green.joined, GREEN);
    assert.equal(atGate.rollback.available, true);
    const before = await nodes();
    const byName = new Map(before.map((n) => [n.metadata?.name, n]));
    assert.equal(byName.get('cp-1')?.status?.nodeInfo?.kubeletVersion, 'v1.34.2', 'the control plane moved first');
    for (const g of GREEN) {
      const n = byName.get(g);
      assert.ok(n && ready(n), `${g} Ready`);
      assert.equal(n?.status?.nodeInfo?.kubeletVersion, 'v1.34.2');
      assert.equal(n?.metadata?.labels?.['skewless.io/pool'], 'green');
      assert.ok(!n?.spec?.unschedulable, `${g} schedulable`);
    }
    for (const b of BLUE) {
      assert.equal(byName.get(b)?.spec?.unschedulable, true, `${b} cordoned`);
      assert.equal(byName.get(b)?.status?.nodeInfo?.kubeletVersion, 'v1.33.7', `${b} not upgraded in place`);
    }
    const web = (await tc.kube.core.listNamespacedPod({ namespace: 'default', labelSelector: 'app=web' })).items;
    assert.ok(
      web.length > 0 && web.every((p) => GREEN.includes(p.spec?.nodeName ?? '')),
      `web runs on green: ${web.map((p) => p.spec?.nodeName).join(', ')}`,
    );

    const text = await cli('status', 'bg', '--workflow', 'bluegreen');
    assert.match(text.stdout, /gate remove-blue: waiting/);
    assert.match(text.stdout, /rollback: skewless abort bg --workflow bluegreen/);
    const abort = await cli('abort', 'bg', '--workflow', 'bluegreen', '--comment', 'rehearsing the rollback');
    assert.equal(abort.code, 0, abort.stderr);
    const watched = await cli('watch', 'bg', '--workflow', 'bluegreen', '--output', 'json');
    assert.equal(watched.code, 1, watched.stderr);
    const result = JSON.parse(watched.stdout.trim().split('\n').at(-1) ?? '{}') as { type: string; status: BlueGreenStatus };
    assert.equal(result.type, 'result');
    assert.equal(result.status.step, 'rolled-back', result.status.outcome);
    const after = await nodes();
    assert.deepEqual(
      after.map((n) => n.metadata?.name ?? '').filter((n) => n.startsWith('green')),
      [],
      'green Nodes deleted',
    );
    const hosts = tc.sim.endpoints.ssh.hosts.map((h) => h.name);
    for (const g of GREEN) assert.ok(!hosts.includes(g), `${g}'s machine torn down`);
    for (const b of BLUE) {
      const n = after.find((x) => x.metadata?.name === b);
      assert.ok(n && ready(n) && !n.spec?.unschedulable, `${b} back in service`);
    }
    await waitFor(
      'web back on blue',
      async () => {
        const pods = (await tc.kube.core.listNamespacedPod({ namespace: 'default', labelSelector: 'app=web' })).items;
        return pods.length >= 4 && pods.every((p) => BLUE.includes(p.spec?.nodeName ?? '') && p.status?.phase === 'Running');
      },
      120_000,
      500,
    );
    console.log(
      `bluegreen: control plane + 4 green joined + 4 blue drained in ${toGate.toFixed(0)} s; rollback in ${((Date.now() - started) / 1000 - toGate).toFixed(0)} s`,
    );
  });

  it('the second run replaces blue: approve the gate, blue Nodes and machines deleted, no PDB violated throughout', async () => {
    const started = Date.now();
    const start = await cli(...ARGS, '--detach');
    assert.equal(start.code, 0, start.stderr);
    const atGate = await untilGate();
    assert.equal(atGate.controlPlane?.upgrade, undefined, 'the control plane is at 1.34 already');
    const approve = await cli('approve', 'bg', '--gate', 'remove-blue', '--comment', 'green serves');
    assert.equal(approve.code, 0, approve.stderr);
    const watched = await cli('watch', 'bg', '--workflow', 'bluegreen');
    assert.equal(watched.code, 0, watched.stderr);
    assert.match(
      watched.stdout,
      /bg: replaced pool blue \(blue-1, blue-2, blue-3, blue-4\) by pool green \(green-1, green-2, green-3, green-4\) at 1\.34\.2/,
    );
    const refused = await cli('abort', 'bg', '--workflow', 'bluegreen');
    assert.equal(refused.code, 2);
    assert.equal(refused.stderr.trim(), 'skewless: no running blue/green run of bg', 'nothing to roll back once blue is removed');

    const after = await nodes();
    assert.deepEqual(after.map((n) => n.metadata?.name).sort(), ['cp-1', ...GREEN].sort(), 'blue is gone');
    for (const n of after) {
      assert.ok(ready(n), `${n.metadata?.name} Ready`);
      assert.equal(n.status?.nodeInfo?.kubeletVersion, 'v1.34.2');
      assert.ok(!n.spec?.unschedulable);
      assert.equal(n.metadata?.labels?.['skewless.io/stage'], undefined);
    }
    const hosts = tc.sim.endpoints.ssh.hosts.map((h) => h.name);
    for (const b of BLUE) assert.ok(!hosts.includes(b), `${b}'s machine torn down`);
    for (const g of GREEN) assert.ok(hosts.includes(g), `${g}'s machine runs`);
    const availability = await (sampler as AvailabilitySampler).stop();
    sampler = undefined;
    assert.equal(availability.violated, false, formatAvailability(availability));
    // Every state the simulation recorded (each host effect, each machine created or deleted) within the skew policy, nothing went back.
    const verdict = await judgeSimulation(tc.sim);
    assert.deepEqual(verdict.problems, []);
    assert.deepEqual(verdict.versionsSeen['apiservers cp-1'], ['1.33.7', '1.34.2']);
    for (const g of GREEN) assert.deepEqual(verdict.versionsSeen[`kubelets ${g}`], ['1.34.2'], `${g} only ever at 1.34.2`);
    for (const b of BLUE) assert.deepEqual(verdict.versionsSeen[`kubelets ${b}`], ['1.33.7'], `${b} only ever at 1.33.7`);
    const trail = await cli('history', 'bg', '--workflow', 'bluegreen', '--output', 'json');
    assert.equal(trail.code, 0, trail.stderr);
    const entries = (JSON.parse(trail.stdout) as { entries: { kind: string; activity?: string; gate?: string; by?: string }[] }).entries;
    assert.ok(entries.some((e) => e.kind === 'approval' && e.gate === 'remove-blue' && e.by === 'dana'));
    assert.ok(entries.some((e) => e.kind === 'step' && e.activity === 'deletePoolMachines'));
    console.log(
      `bluegreen: replacement with removal in ${((Date.now() - started) / 1000).toFixed(0)} s; ${availability.samples} availability samples, no PDB violated; ${verdict.states} version states, all within the skew policy`,
    );
  });
});
