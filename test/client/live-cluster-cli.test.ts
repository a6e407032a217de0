import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import type { Worker } from '@temporalio/worker';
import { createActivities } from '../../activities/index.js';
import { createClusterResolver } from '../../activities/host-address.js';
import { simWorker } from '../helpers/workers.js';
import { statusQuery, type UpgradeStatus } from '../../workflows/rollout-messages.js';
import { repoRoot, writeFiles } from '../helpers/run-cli.js';
import type { TestCluster } from '../helpers/sim-cluster.js';
import { uniqueTaskQueue, temporalVars } from '../helpers/temporal-env.js';
import { tempDir } from '../helpers/temp-dir.js';
import { startClusterWorld } from '../helpers/sim-world.js';

const REPOSITORY = ['1.32.4', '1.33.0', '1.33.7'];
// "solo" has one replica and a PDB that allows no disruption: an upgrade refuses to start unless
// it is acknowledged, and the drain of its node blocks until the operator resolves it.
const LAB = `
name: lab
version: 1.32.4
repository: [${REPOSITORY.join(', ')}]
rebootSeconds: 1
nodes:
  - {name: cp, role: control-plane}
  - {name: w, role: worker, count: 3}
workloads:
  - {kind: Deployment, name: web, replicas: 2}
  - {kind: Deployment, name: solo, replicas: 1, pdb: {minAvailable: 1}}
`;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
async function until<T>(what: string, probe: () => Promise<T | undefined>, timeoutMs = 90_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(200);
  }
}

/** The CLI and the workers against the real dev server and the simulated cluster. */
describe('plan --cluster, worker and history on a live (simulated) cluster', () => {
  let env: TestWorkflowEnvironment;
  let tc: TestCluster;
  let worker: Worker;
  let running: Promise<void>;
  const taskQueue = uniqueTaskQueue('live-cli');
  const spawned: ChildProcess[] = [];
  before(async () => {
    [env, tc] = await startClusterWorld(LAB);
    worker = await simWorker(env, tc.clustersDir, taskQueue);
    running = worker.run();
  });
  after(async () => {
    for (const c of spawned) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
    worker?.shutdown();
    await running;
    await tc?.stop();
    await env?.teardown();
  });

  const cleanEnv = () =>
    Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('TEMPORAL_') && !k.startsWith('SKEWLESS_')));
  const start = (args: string[]) => {
    const child = spawn(process.execPath, [join(repoRoot, 'bin', 'skewless.js'), ...args], {
      env: { ...cleanEnv(), ...temporalVars(env), SKEWLESS_TASK_QUEUE: taskQueue },
    });
    spawned.push(child);
    return child;
  };
  // Asynchronous on purpose: a worker runs in this process, and a blocking spawn would starve it.
  const cli = (args: string[]) =>
    new Promise<{ status: number | null; stdout: string; stderr: string }>((resolve) => {
      const child = start(args);
      let stdout = '';
      let stderr = '';
      child.stdout?.on('data', (d: Buffer) => (stdout += d.toString()));
      child.stderr?.on('data', (d: Buffer) => (stderr += d.toString()));
      child.on('close', (status) => resolve({ status, stdout, stderr }));
    });

  it('plan --cluster prints the plan the file-based plan makes of the same inventory, plus the refusals', async () => {
    const live = await cli(['plan', '--cluster', 'lab', '--to', '1.33', '--output', 'json']);
    assert.equal(live.status, 1, `an unacknowledged blocking PDB: ${live.stderr}`);
    const plan = JSON.parse(live.stdout);
    assert.equal(plan.cluster, 'lab');
    assert.equal(plan.from, '1.32.4');
    assert.deepEqual(plan.hops, ['1.33.7']);
    assert.equal(plan.refusals.length, 1);
    assert.match(plan.refusals[0], /default\/solo.*\(acknowledge with --acknowledge default\/solo\)$/);
    assert.deepEqual([plan.barePods, plan.barePodCount], [[], 0], 'every pod of lab has a controller');

    // The same inventory, read here, through the file-based mode: the same plan.
    const inventory = await createActivities({ clusters: createClusterResolver(tc.clustersDir) }).takeInventory({ cluster: 'lab' });
    const files = writeFiles({ inv: inventory.skew, available: REPOSITORY });
    const fromFiles = await cli([
      'plan',
      '--inventory',
      files.inv as string,
      '--available',
      files.available as string,
      '--to',
      '1.33',
      '--output',
      'json',
    ]);
    assert.equal(fromFiles.status, 0, fromFiles.stderr);
    assert.deepEqual(
      plan.readiness.findings.filter((f: { check: string }) => f.check === 'removed-api'),
      [],
      'no client of lab calls an API 1.33 removes',
    );
    // The live plan also reads the pods: each batch's capacity (issue 40), which an inventory file cannot give.
    assert.deepEqual(
      plan.capacity.map((c: { stage: string; fit: { pending: unknown[] } }) => `${c.stage} ${c.fit.pending.length}`),
      plan.phases.filter((p: { kind: string }) => p.kind !== 'control-plane').map((p: { stage: string }) => `${p.stage} 0`),
    );
    const { cluster: _c, refusals: _r, problems: _p, barePods: _b, barePodCount: _n, readiness: _rd, capacity: _cap, ...livePlan } = plan;
    assert.deepEqual(livePlan, JSON.parse(fromFiles.stdout));
    assert.deepEqual(plan.phases.flatMap((p: { nodes: string[] }) => p.nodes).sort(), ['cp', 'w-1', 'w-2', 'w-3']);

    const acknowledged = await cli(['plan', '--cluster', 'lab', '--to', '1.33', '--acknowledge', 'default/solo', '--canary', '1']);
    assert.equal(acknowledged.status, 0, acknowledged.stderr);
    assert.match(acknowledged.stdout, /^Upgrade 1\.32\.4 → 1\.33: 1 hop \(1\.33\.7\)/);
    // The acknowledged PDB still blocks the drain of the node running solo's one replica: readiness predicts it, without holding.
    assert.match(
      acknowledged.stdout,
      /Pre-flight \(lab\): nothing would stop the upgrade from starting\.\nCapacity \(the cluster as it is now[^\n]*\n(?: {2}\S+ +fits: [^\n]*\n)+readiness \(lab\): 1 finding, none holds a hop:\n {2}WARN drain-block before 1\.33\.7 on w-\d: default\/solo-\S+ is the only replica of Deployment solo under PodDisruptionBudget default\/solo/,
    );
  });

  it('plan --cluster: an unknown cluster or a bad version is one line and exit 2', async () => {
    const unknown = await cli(['plan', '--cluster', 'nope', '--to', '1.33']);
    assert.equal(unknown.status, 2, unknown.stderr);
    assert.match(unknown.stderr, /^skewless: plan of nope failed: no configuration for cluster nope \(looked for .*nope\.yaml\)\n$/);
    const badVersion = await cli(['plan', '--cluster', 'lab', '--to', '1.x']);
    assert.equal(badVersion.status, 2);
    assert.match(badVersion.stderr, /^skewless: .*1\.x/);
    const both = await cli(['plan', '--cluster', 'lab', '--to', '1.33', '--inventory', 'x.json']);
    assert.equal(both.status, 2);
    assert.match(both.stderr, /--cluster reads the live cluster: leave out --inventory and --available/);
  });

  it('a spawned "skewless worker" on the cluster\'s directory serves a plan, then stops on SIGTERM with exit 0', async () => {
    const queue = uniqueTaskQueue('spawned-worker');
    const child = start(['worker', '--clusters-dir', tc.clustersDir, '--task-queue', queue]);
    let stderr = '';
    child.stderr?.on('data', (d: Buffer) => (stderr += d.toString()));
    const exited = new Promise<number | null>((r) => child.on('exit', (code) => r(code)));
    await until('the worker to start', async () => (stderr.includes('skewless worker: task queue') ? true : undefined), 30_000);
    assert.match(
      stderr,
      new RegExp(
        `task queue ${queue} on ${env.address}, namespace ${env.namespace ?? 'default'}, no TLS; clusters lab from ${tc.clustersDir}`,
      ),
    );

    const plan = await cli([
      'plan',
      '--cluster',
      'lab',
      '--to',
      '1.33',
      '--acknowledge',
      'default/solo',
      '--task-queue',
      queue,
      '--output',
      'json',
    ]);
    assert.equal(plan.status, 0, plan.stderr);
    assert.deepEqual(JSON.parse(plan.stdout).hops, ['1.33.7']);

    child.kill('SIGTERM');
    assert.equal(await exited, 0, stderr);
    assert.match(stderr, /skewless worker: stopped/);
  });

  it(
    'history tells what a real upgrade did: steps, retries, snapshot, pause/resume, approval, a skipped drain',
    { timeout: 300_000 },
    async () => {
      // cp refuses SSH until the upgrade's first host command has failed once: a retry to report.
      tc.sim.hosts.setFault('cp', { kind: 'refuse', seconds: 600 });
      const started = await cli([
        'upgrade',
        '--cluster',
        'lab',
        '--to',
        '1.33',
        '--approve-workers',
        '--acknowledge',
        'default/solo',
        '--canary',
        '1',
        '--drain-timeout',
        '3',
        '--detach',
      ]);
      assert.equal(started.status, 0, started.stderr);
      const handle = env.client.workflow.getHandle('upgrade/lab');
      await until(
        'a retried host command',
        async () => ((await handle.describe()).raw.pendingActivities ?? []).some((a) => (a.attempt ?? 0) >= 2) || undefined,
      );
      tc.sim.hosts.clearFaults('cp');

      const gate = 'workers-1.33.7';
      await until(`gate ${gate}`, async () =>
        (await handle.query(statusQuery)).gates.some((g) => g.name === gate && !g.approvedBy) ? true : undefined,
      );
      for (const args of [
        ['pause', 'lab', '--by', 'erin', '--comment', 'coffee'],
        ['resume', 'lab', '--by', 'erin'],
        ['approve', 'lab', '--gate', gate, '--by', 'dana', '--comment', 'control plane fine'],
      ]) {
        const r = await cli(args);
        assert.equal(r.status, 0, `${args[0]}: ${r.stderr}`);
      }
      const blocked = await until(
        'a blocked drain',
        async () => Object.entries((await handle.query(statusQuery)).nodes).find(([, n]) => n.phase === 'blocked')?.[0],
      );
      const others = ['w-1', 'w-2', 'w-3'].filter((n) => n !== blocked);
      const resolved = await cli([
        'resolve',
        'lab',
        '--node',
        blocked,
        '--action',
        'skip',
        '--by',
        'dana',
        '--comment',
        'solo is a singleton',
      ]);
      assert.equal(resolved.status, 0, resolved.stderr);
      const result = await until(
        'the upgrade to end',
        async () => ((await handle.describe()).status.name === 'RUNNING' ? undefined : ((await handle.result()) as UpgradeStatus)),
        180_000,
      );
      assert.equal(result.phase, 'done', result.events.join('\n'));

      const text = await cli(['history', 'lab']);
      assert.equal(text.status, 0, text.stderr);
      const lines = text.stdout.trimEnd().split('\n');
      assert.match(lines[0] as string, /^upgrade\/lab: \d+ runs?, \d+ node workflows$/);
      const line = (re: RegExp) => {
        const found = lines.filter((l) => re.test(l));
        assert.equal(found.length, 1, `one line matching ${re}:\n${text.stdout}`);
        return found[0] as string;
      };
      assert.match(line(/ cp +availableVersions/), /completed, retried \d+ times?$/);
      const snap = result.snapshots[0];
      line(new RegExp(`cp +etcd snapshot ${snap?.localPath} sha256 ${snap?.sha256} revision ${snap?.revision}$`));
      line(/ - +pause by erin \("coffee"\)$/);
      line(/ - +resume by erin$/);
      line(new RegExp(` - +gate ${gate} approved by dana \\("control plane fine"\\)$`));
      line(new RegExp(` ${blocked} +drain blocked: .*solo`));
      line(new RegExp(` ${blocked} +drain of ${blocked} resolved by dana: skip \\("solo is a singleton"\\)$`));
      line(new RegExp(` ${blocked} +node upgrade to 1\\.33\\.7: skipped \\(`));
      for (const other of others) line(new RegExp(` ${other} +node upgrade to 1\\.33\\.7: done \\(`));
      line(/ cp +kubeadmUpgradeApply/);
      assert.match(
        lines.at(-1) as string,
        new RegExp(
          ` - +upgrade/lab completed: upgraded to 1\\.33\\.7 EXCEPT 1 node left behind: ${blocked} at 1\\.32\\.\\d+ \\(skipped by the operator\\)`,
        ),
      );
      // In time order, approval after the pause, the resolution after the block.
      const at = (re: RegExp) => lines.findIndex((l) => re.test(l));
      assert.ok(at(/pause by erin/) < at(/approved by dana/) && at(/drain blocked/) < at(/resolved by dana/));

      const json = await cli(['history', 'lab', '--output', 'json']);
      assert.equal(json.status, 0, json.stderr);
      const trail = JSON.parse(json.stdout);
      assert.equal(trail.workflowId, 'upgrade/lab');
      assert.equal(trail.entries.length, lines.length - 1, 'the same entries as the text');
      // Every run of the parent (it continues as new between phases) is in, oldest first.
      assert.equal(trail.earlierRunsMissing, false);
      assert.equal(lines.filter((l) => / - +continued upgrade\/lab to 1\.33$/.test(l)).length, trail.runs.length - 1);
      assert.equal(lines.filter((l) => / - +upgrade\/lab continued as new$/.test(l)).length, trail.runs.length - 1);
      const drains = trail.entries.filter((e: { kind: string; activity?: string }) => e.kind === 'step' && e.activity === 'drainNode');
      assert.ok(
        drains.some(
          (d: { node: string; outcome: string; message?: string }) =>
            d.node === blocked && d.outcome === 'failed' && /solo/.test(d.message ?? ''),
        ),
        JSON.stringify(drains),
      );
      for (const other of others)
        assert.ok(
          drains.some((d: { node: string; outcome: string }) => d.node === other && d.outcome === 'completed'),
          other,
        );

      // The same run drawn: a row per node (the control plane first), one bar per step, the skipped node's wait in red.
      const folder = tempDir('timeline');
      try {
        const file = join(folder, 'lab.svg');
        const drawn = await cli(['history', 'lab', '--timeline', file]);
        assert.equal(drawn.status, 0, drawn.stderr);
        const summary = /^timeline: (.+) \((\d+) lanes, (\d+) bars, ([\d.]+) s\)$/.exec(drawn.stdout.trimEnd().split('\n').at(-1) ?? '');
        assert.ok(summary, drawn.stdout.slice(-300));
        assert.equal(summary[1], file);
        const svg = readFileSync(file, 'utf8');
        assert.match(svg, /^<svg xmlns="http:\/\/www\.w3\.org\/2000\/svg" [^]*<\/svg>\n$/);
        const named = [...svg.matchAll(/ text-anchor="end">([^<]+)<\/text>/g)].map((m) => m[1]);
        assert.deepEqual(named, ['cluster', 'cp', 'w-1', 'w-2', 'w-3']);
        assert.equal(Number(summary[2]), named.length);
        assert.equal((svg.match(/<title>/g) ?? []).length, Number(summary[3]));
        assert.equal(
          Number(summary[3]),
          trail.entries.filter((e: { kind: string }) => e.kind === 'step').length + 1,
          'a bar per step, and the block',
        );
        assert.ok(svg.includes(`<title>${blocked} · blocked · `), 'the blocked drain is drawn');
        for (const other of others) assert.ok(svg.includes(`<title>${other} · kubelet · `), other);
      } finally {
        rmSync(folder, { recursive: true, force: true });
      }
      // The worker's credentials' paths never reach the trail.
      for (const secretPath of [tc.config.kubeconfig, tc.config.ssh.privateKeyPath, tc.config.ssh.knownHostsPath])
        assert.ok(!json.stdout.includes(secretPath) && !text.stdout.includes(secretPath), secretPath);
    },
  );
});
