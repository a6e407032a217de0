import assert from 'node:assert/strict';
import { appendFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import type { Worker } from '@temporalio/worker';
import { formatAvailability, startAvailabilitySampler } from '../../sim/availability-sampler.js';
import type { MaintenanceStatus } from '../../workflows/maintenance-messages.js';
import { clusterWrites } from '../helpers/cluster-writes.js';
import type { TestCluster } from '../helpers/sim-cluster.js';
import { cliAsync } from '../helpers/spawn-cli.js';
import { sshExec } from '../helpers/ssh-exec.js';
import { uniqueTaskQueue, temporalVars } from '../helpers/temporal-env.js';
import { simWorker } from '../helpers/workers.js';
import { startClusterWorld } from '../helpers/sim-world.js';

// Five workers in pool blue; worker-3 runs a pod no controller manages.
const LAB = `
name: mnt
version: 1.33.7
repository: [1.33.7]
rebootSeconds: 1
nodes:
  - {name: cp, role: control-plane, count: 1}
  - {name: worker, role: worker, count: 5, labels: {pool: blue}}
workloads:
  - {kind: Deployment, name: web, replicas: 3, pdb: {maxUnavailable: 1}}
  - {kind: DaemonSet, name: agent}
  - {kind: Pod, name: bare, node: worker-3}
`;
const WORKERS = ['worker-1', 'worker-2', 'worker-3', 'worker-4', 'worker-5'];
const ARGS = ['maintain', '--cluster', 'mnt', '--selector', 'pool=blue', '--canary', '1', '--batch-size', '2', '--max-unavailable', '2'];

/**
 * OS maintenance through the real CLI, the real dev server, a real worker in this process and the
 * simulated cluster: refused before any write while a bare pod is on a selected node, then run with
 * that pod forced: every worker drained, upgraded (apt-get dist-upgrade), rebooted, back and uncordoned.
 */
describe('e2e: skewless maintain reboots 5 nodes in batches of 2', () => {
  let env: TestWorkflowEnvironment;
  let tc: TestCluster;
  let worker: Worker;
  let running: Promise<void>;
  const taskQueue = uniqueTaskQueue('maintain');
  const cli = (...args: string[]) => cliAsync(args, { ...process.env, ...temporalVars(env), SKEWLESS_TASK_QUEUE: taskQueue, USER: 'dana' });
  const bootId = async (host: string) => (await sshExec(tc.sim.endpoints, host, 'cat /proc/sys/kernel/random/boot_id')).stdout.trim();

  before(async () => {
    [env, tc] = await startClusterWorld(LAB);
    appendFileSync(join(tc.clustersDir, 'mnt.yaml'), 'maintenance:\n  command: [apt-get, -y, dist-upgrade]\n  timeoutSeconds: 120\n');
    worker = await simWorker(env, tc.clustersDir, taskQueue);
    running = worker.run();
  });
  after(async () => {
    worker?.shutdown();
    await running?.catch(() => undefined);
    await tc?.stop();
    await env?.teardown();
  });

  it('refuses the bare pod before anything is touched, naming it on one line (exit 1)', async () => {
    const writes = clusterWrites(tc.sim, tc.workerKube);
    const mark = await writes.mark();
    const r = await cli(...ARGS);
    assert.equal(r.code, 1, r.stderr);
    const lines = r.stderr.trim().split('\n');
    assert.equal(lines.length, 1, r.stderr);
    assert.match(lines[0] ?? '', /^skewless: maintenance of mnt failed: refusing to start: .*default\/bare on worker-3.*--force-pod/);
    await writes.assertNoneSince(mark, 'a refused maintenance');
  });

  it('with --force-pod: each worker drained, dist-upgraded, rebooted and uncordoned, at most 2 out, no PDB violated', async () => {
    const before = Object.fromEntries(await Promise.all(WORKERS.map(async (w) => [w, await bootId(w)] as const)));
    const cpBoot = await bootId('cp-1');
    const logStart = Object.fromEntries([...WORKERS, 'cp-1'].map((h) => [h, tc.sim.hosts.commandLog(h).length]));
    const sampler = startAvailabilitySampler(tc.kube);
    // Nodes out of service at once, sampled from the API while the run goes on.
    let maxCordoned = 0;
    let sampling = true;
    const cordons = (async () => {
      while (sampling) {
        const nodes = (await tc.kube.core.listNode()).items;
        maxCordoned = Math.max(maxCordoned, nodes.filter((n) => n.spec?.unschedulable).length);
        await new Promise((r) => setTimeout(r, 100));
      }
    })();
    const started = Date.now();
    const r = await cli(...ARGS, '--force-pod', 'default/bare', '--drain-timeout', '120', '--output', 'json');
    const seconds = (Date.now() - started) / 1000;
    sampling = false;
    await cordons;
    const availability = await sampler.stop();
    assert.equal(r.code, 0, `${r.stderr}\n${r.stdout.split('\n').slice(-3).join('\n')}`);
    const records = r.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { type: string; status?: MaintenanceStatus });
    const result = records.at(-1);
    assert.equal(result?.type, 'result');
    assert.equal(result?.status?.phase, 'done');
    assert.deepEqual(Object.keys(result?.status?.nodes ?? {}).sort(), WORKERS, 'the selector took the five workers, not the control plane');
    assert.deepEqual(Object.fromEntries(Object.entries(result?.status?.nodes ?? {}).map(([n, s]) => [n, s.stage])), {
      'worker-1': 'canary',
      'worker-2': 'batch-1',
      'worker-3': 'batch-1',
      'worker-4': 'batch-2',
      'worker-5': 'batch-2',
    });

    // Each worker ran the OS upgrade and rebooted once (a new boot id); the control plane did neither.
    for (const w of WORKERS) {
      const log = tc.sim.hosts
        .commandLog(w)
        .slice(logStart[w])
        .map((e) => e.command);
      assert.equal(log.filter((c) => /apt-get -y dist-upgrade$/.test(c)).length, 1, `${w}: ${log.join(' | ')}`);
      assert.equal(log.filter((c) => /(^|\s)reboot$/.test(c)).length, 1, `${w}: ${log.join(' | ')}`);
      assert.notEqual(await bootId(w), before[w], `${w} has a new boot id`);
    }
    assert.equal(await bootId('cp-1'), cpBoot, 'the control plane was not rebooted');
    assert.ok(
      !tc.sim.hosts
        .commandLog('cp-1')
        .slice(logStart['cp-1'])
        .some((e) => /reboot|dist-upgrade/.test(e.command)),
    );

    assert.ok(maxCordoned >= 1 && maxCordoned <= 2, `at most 2 nodes out at once, saw ${maxCordoned}`);
    assert.equal(availability.violated, false, formatAvailability(availability));
    const nodes = (await tc.kube.core.listNode()).items;
    assert.ok(
      nodes.every((n) => !n.spec?.unschedulable),
      `cordoned: ${nodes
        .filter((n) => n.spec?.unschedulable)
        .map((n) => n.metadata?.name)
        .join(', ')}`,
    );
    assert.ok(
      nodes.every((n) => !n.metadata?.labels?.['skewless.io/stage']),
      'no stage label left',
    );
    assert.ok(
      nodes.every((n) => n.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True')),
      'every node Ready',
    );
    const bare = await tc.kube.core.readNamespacedPod({ name: 'bare', namespace: 'default' }).catch(() => undefined);
    assert.equal(bare, undefined, 'the forced bare pod was deleted by the drain (and nothing brought it back)');
    assert.deepEqual(result?.status?.forced, ['default/bare']);

    // The operator controls read the run as they read an upgrade.
    const status = await cli('status', 'mnt', '--output', 'json');
    assert.equal(status.code, 0, status.stderr);
    assert.equal((JSON.parse(status.stdout) as MaintenanceStatus).kind, 'maintenance');
    const text = await cli('status', 'mnt');
    assert.match(text.stdout, /^mnt: OS maintenance of pool=blue, 5\/5 nodes done, done/);
    // The audit trail: every node's reboot as a step of its own node workflow.
    const history = await cli('history', 'mnt', '--output', 'json');
    assert.equal(history.code, 0, history.stderr);
    const trail = JSON.parse(history.stdout) as {
      workflowId: string;
      nodeWorkflows: number;
      entries: { kind: string; node?: string; activity?: string; outcome?: string }[];
    };
    assert.equal(trail.workflowId, 'maintain/mnt');
    for (const w of WORKERS)
      assert.ok(
        trail.entries.some((e) => e.kind === 'step' && e.node === w && e.activity === 'rebootNode' && e.outcome === 'completed'),
        `reboot of ${w} in the trail`,
      );
    console.log(
      `maintain: 5 workers in ${seconds.toFixed(0)} s; at most ${maxCordoned} cordoned at once; ${availability.samples} availability samples`,
    );
  });
});
