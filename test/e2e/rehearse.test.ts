import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import type { Worker } from '@temporalio/worker';
import type { RehearsalReport } from '../../client/rehearse/report.js';
import { waitFor } from '../../sim/cluster/wait-for.js';
import { readDescription } from '../../sim/description.js';
import { mergePatch } from '../../sim/cluster/kube-clients.js';
import { clusterWrites } from '../helpers/cluster-writes.js';
import type { TestCluster } from '../helpers/sim-cluster.js';
import { cliAsync, spawnCli } from '../helpers/spawn-cli.js';
import { uniqueTaskQueue, temporalVars } from '../helpers/temporal-env.js';
import { simWorker } from '../helpers/workers.js';
import { tempDir } from '../helpers/temp-dir.js';
import { startClusterWorld } from '../helpers/sim-world.js';

// The "live" cluster: web's PDB (minAvailable = replicas) allows no eviction, so a drain of a node
// running one of its pods blocks on it, on the original as on its twin. The test pins both web pods
// to one worker (a nodeSelector the twin does not copy: its fresh scheduler spreads its copies) and
// puts a bare pod beside them, which gets that node refused: on the twin, web's drains block on other
// workers than the cluster's.
const LIVE = `
name: rh
version: 1.33.7
repository: [1.33.7, 1.34.2]
rebootSeconds: 1
nodes:
  - {name: cp, role: control-plane, count: 1}
  - {name: worker, role: worker, count: 3, labels: {pool: blue}}
workloads:
  - {kind: Deployment, name: web, replicas: 2, pdb: {minAvailable: 2}}
  - {kind: DaemonSet, name: agent, namespace: monitoring}
`;

/**
 * `skewless rehearse` through the real CLI: a simulated cluster read back as if it were live by a
 * real worker on the real dev server, its twin brought up inside the CLI process and upgraded to the
 * next minor. The report names the PDB that really blocks the original; the original is untouched.
 */
describe('e2e: skewless rehearse on a simulated twin', () => {
  let env: TestWorkflowEnvironment;
  let tc: TestCluster;
  let worker: Worker;
  let running: Promise<void>;
  /** The worker the cluster runs both web pods and the bare pod on. */
  let bareNode = '';
  const dir = tempDir('rehearse-test');
  const taskQueue = uniqueTaskQueue('rehearse');
  const cliEnv = () => ({ ...process.env, ...temporalVars(env), SKEWLESS_TASK_QUEUE: taskQueue });
  const cli = (...args: string[]) => cliAsync(args, cliEnv());
  const latencies = join(dir, 'latencies.yaml');
  writeFileSync(latencies, 'aptInstall: 200\nkubeletRestart: 200\nkubeadmApply: 500\nkubeadmNode: 200\netcdSnapshot: 100\n');

  before(async () => {
    [env, tc] = await startClusterWorld(LIVE);
    worker = await simWorker(env, tc.clustersDir, taskQueue);
    running = worker.run();
    // Both web pods pinned to the worker one of them runs on (one pod moves), the bare pod beside them.
    const webPods = async () => (await tc.kube.core.listNamespacedPod({ namespace: 'default', labelSelector: 'app=web' })).items;
    bareNode = (await webPods()).map((p) => p.spec?.nodeName ?? '').sort()[0] as string;
    await tc.kube.apps.patchNamespacedDeployment(
      {
        name: 'web',
        namespace: 'default',
        body: { spec: { template: { spec: { nodeSelector: { 'kubernetes.io/hostname': bareNode } } } } },
      },
      mergePatch,
    );
    await waitFor(
      `both web pods on ${bareNode}, none elsewhere`,
      async () => {
        const pods = await webPods();
        return pods.length === 2 && pods.every((p) => p.spec?.nodeName === bareNode && p.status?.phase === 'Running');
      },
      90_000,
    );
    await tc.kube.core.createNamespacedPod({
      namespace: 'default',
      body: {
        metadata: { name: 'lonely' },
        spec: { nodeName: bareNode, terminationGracePeriodSeconds: 1, containers: [{ name: 'app', image: 'registry.k8s.io/pause:3.10' }] },
      },
    });
    await waitFor(
      'the bare pod running',
      async () => (await tc.kube.core.readNamespacedPod({ name: 'lonely', namespace: 'default' })).status?.phase === 'Running',
      60_000,
    );
  });
  after(async () => {
    worker?.shutdown();
    await running?.catch(() => undefined);
    await tc?.stop();
    await env?.teardown();
    rmSync(dir, { recursive: true, force: true });
  });

  it('reports the drain the PDB blocks, the phases and nodes timed, every state skew-checked; the original untouched', async () => {
    const writes = clusterWrites(tc.sim, tc.workerKube);
    const mark = await writes.mark();
    const kubelets = async () =>
      Object.fromEntries((await tc.kube.core.listNode()).items.map((n) => [n.metadata?.name, n.status?.nodeInfo?.kubeletVersion]));
    const before = await kubelets();
    const saved = join(dir, 'twin.yaml');
    const started = Date.now();
    const r = await cli(
      'rehearse',
      '--cluster',
      'rh',
      '--to',
      'next-minor',
      '--latencies',
      latencies,
      '--drain-timeout',
      '10',
      '--save-description',
      saved,
      '--output',
      'json',
    );
    const seconds = (Date.now() - started) / 1000;
    assert.equal(r.code, 0, `${r.stderr}\n${r.stdout.slice(-2000)}`);
    assert.equal(r.stderr, '', 'nothing on stderr when it ran');
    const report = JSON.parse(r.stdout) as RehearsalReport;

    assert.equal(report.cluster, 'rh');
    assert.deepEqual([report.from, report.hops], ['1.33.7', ['1.34.2']]);
    // The block is the original's PDB, web's, which allows no disruption, refusing the twin's web pods.
    // The twin placed them itself: on workers where the cluster runs none (the cluster's are all on
    // bareNode, refused first for its bare pod), so each block says where the cluster runs web's pods.
    assert.equal(new Set(report.blockedDrains.map((b) => b.node)).size, report.blockedDrains.length, 'one block per node');
    assert.ok(report.blockedDrains.length >= 1, JSON.stringify(report.blockedDrains));
    for (const b of report.blockedDrains) {
      assert.deepEqual(b.pdbs, ['default/web'], JSON.stringify(b));
      // The twin's own pods, named by the cluster's workload that owns them: never as if the cluster had them.
      assert.ok(b.pods.length >= 1 && b.pods.every((p) => /^a pod of default\/web \(the twin's web-\S+\)$/.test(p)), JSON.stringify(b));
      assert.match(b.node, /^worker-[123]$/);
      assert.notEqual(b.node, bareNode, "the twin's placement, not the cluster's");
      // Mapped back by owner: the cluster's web pods run on bareNode only.
      assert.deepEqual(b.clusterNodes, [bareNode], JSON.stringify(b));
      assert.equal(b.action, 'skip');
    }
    // The twin's placement told from the cluster's, by owner: every drain web blocked on the twin is its
    // placement only, and on the cluster web's budget blocks bareNode's drain (where its pods run).
    assert.deepEqual(
      report.placement,
      {
        twinOnly: [...new Set(report.blockedDrains.map((b) => b.node))].sort(),
        clusterBlocks: [{ node: bareNode, pdbs: ['default/web'] }],
      },
      JSON.stringify(report.blockedDrains),
    );
    assert.equal(report.outcome, 'partial');
    // The bare pod is the original's, on the same node: its drain is refused before any eviction.
    assert.deepEqual(
      report.refusedNodes.map((n) => [n.node, n.pods, n.action]),
      [[bareNode, ['default/lonely'], 'skip']],
    );
    assert.ok(
      report.preflight.some((p) => p.includes('default/web')),
      'the pre-flight finding on web is reported',
    );
    // The live cluster's readiness (as plan --cluster reads it): the drain web's budget will block, predicted.
    assert.ok('findings' in report.readiness, JSON.stringify(report.readiness));
    assert.ok(
      report.readiness.findings.some((f) => f.check === 'drain-block' && f.what.includes('default/web')),
      JSON.stringify(report.readiness.findings.map((f) => f.what)),
    );
    // A prediction about a real node comes from the cluster's facts: web's pods block bareNode's drain,
    // not the workers the twin happened to put its copies on.
    const webBlocks = report.readiness.findings.filter((f) => f.check === 'drain-block' && f.pod?.startsWith('default/web-'));
    assert.ok(webBlocks.length >= 1, JSON.stringify(report.readiness.findings));
    assert.deepEqual([...new Set(webBlocks.map((f) => f.node))], [bareNode], JSON.stringify(webBlocks));

    // Timings: the control-plane phase and a worker phase, and every node's steps.
    const phases = report.phases.map((p) => p.phase);
    assert.ok(phases.includes('backup') && phases.includes('control-plane') && phases.includes('canary'), phases.join(', '));
    assert.deepEqual(
      report.nodes.find((n) => n.node === 'cp-1')?.steps.map((s) => s.step),
      ['control-plane components', 'drain, kubelet, uncordon'],
    );
    for (const p of report.phases) assert.ok(p.seconds >= 0);

    // Skew: the initial state and each version move, all judged.
    assert.ok(report.skew.statesChecked >= 3, JSON.stringify(report.skew));
    assert.equal(report.skew.compliant, true, JSON.stringify(report.skew.violations));
    // Final versions on the twin: the control plane moved; a node whose drain blocked stayed.
    const final = Object.fromEntries(report.finalVersions.map((v) => [v.node, v]));
    assert.equal(final['cp-1']?.apiserver, '1.34.2');
    assert.equal(final['cp-1']?.kubelet, '1.34.2');
    for (const n of [...report.blockedDrains, ...report.refusedNodes])
      assert.equal(final[n.node]?.kubelet, '1.33.7', `${n.node} was skipped`);
    // Its workers: each either upgraded or left behind with a reason in the report.
    for (const w of ['worker-1', 'worker-2', 'worker-3']) {
      const left = [...report.blockedDrains, ...report.refusedNodes].some((n) => n.node === w);
      assert.equal(final[w]?.kubelet, left ? '1.33.7' : '1.34.2', w);
    }

    // The saved description: the twin the operator can look at.
    const twin = readDescription(saved);
    assert.deepEqual(
      twin.nodes.map((n) => n.name),
      ['cp-1', 'worker-1', 'worker-2', 'worker-3'],
    );
    assert.deepEqual(
      twin.workloads.find((w) => w.name === 'lonely'),
      { kind: 'Pod', name: 'lonely', namespace: 'default', replicas: 1, node: bareNode },
    );
    assert.deepEqual(twin.workloads.find((w) => w.name === 'web')?.pdb, { minAvailable: 2 });
    assert.doesNotMatch(readFileSync(saved, 'utf8'), /BEGIN|PRIVATE|kubeconfig/);

    // The original: versions as they were, no write by the worker's identity, no host changed.
    assert.deepEqual(await kubelets(), before);
    await writes.assertNoneSince(mark, 'a rehearsal');
    console.log(
      `rehearse: ${seconds.toFixed(0)} s through the CLI; twin report ${report.seconds} s; phases ${report.phases.map((p) => `${p.phase} ${p.seconds}s`).join(', ')}; blocked ${report.blockedDrains.map((b) => b.node).join(', ')}`,
    );
  });

  it('in text, with --repository (no SSH to the cluster at all): the blocking PDB, timings and the skew verdict', async () => {
    const writes = clusterWrites(tc.sim, tc.workerKube);
    const mark = await writes.mark();
    const commands = tc.sim.hosts.commandLog('cp-1').length;
    const r = await cli(
      'rehearse',
      '--cluster',
      'rh',
      '--to',
      '1.34',
      '--latencies',
      latencies,
      '--drain-timeout',
      '10',
      '--repository',
      '1.33.7,1.34.2',
    );
    assert.equal(r.code, 0, `${r.stderr}\n${r.stdout}`);
    assert.match(r.stdout, /^Rehearsal of rh: 1\.33\.7 → 1\.34\.2: the twin upgraded, with nodes left behind/);
    assert.match(
      r.stdout,
      /\nDrains that blocked on the twin \(its scheduler placed the pods; mapped to the cluster by the workload each budget covers\):\n/,
    );
    assert.match(
      r.stdout,
      new RegExp(
        `\\n {2}worker-\\d \\(1\\.34\\.2, the twin's placement only\\): PDB default/web refused evicting a pod of default/web \\(the twin's web-\\S+\\); on the cluster its pods run on ${bareNode}; the rehearsal answered skip`,
      ),
    );
    assert.match(
      r.stdout,
      new RegExp(
        `\\nNodes refused \\(pods nothing would recreate\\):\\n {2}${bareNode} \\(1\\.34\\.2\\): default/lonely; the rehearsal answered skip`,
      ),
    );
    // The phase and node lines say which outcome is the twin's placement and where the cluster's drain blocks.
    assert.match(
      r.stdout,
      new RegExp(
        `\\nOn the cluster \\(its pods as read, not the twin's placement\\) these drains block: ${bareNode} \\(PDB default/web\\)\\n`,
      ),
    );
    assert.match(r.stdout, /\n {2}1\.34\.2 +(canary|batch-\d+) +\d+\.\d s {2}.*worker-\d \(blocked on the twin's placement only\)/);
    assert.match(
      r.stdout,
      new RegExp(
        `\\n {2}1\\.34\\.2 +(canary|batch-\\d+) +\\d+\\.\\d s {2}.*${bareNode} \\(on the cluster its drain blocks on PDB default/web\\)`,
      ),
    );
    assert.match(
      r.stdout,
      new RegExp(`\\n {2}1\\.34\\.2 +${bareNode} .*\\(skipped\\); on the cluster its drain blocks on PDB default/web\\n`),
    );
    assert.match(r.stdout, /\nSkew policy: every one of the \d+ version states the twin went through complies/);
    assert.match(r.stdout, /\nreadiness: not checked: with --repository nothing runs on the hosts/);
    assert.match(r.stdout, /\n {2}1\.34\.2 +control-plane +\d+\.\d s +cp-1/);
    assert.equal(tc.sim.hosts.commandLog('cp-1').length, commands, 'with --repository nothing runs on the hosts');
    await writes.assertNoneSince(mark, 'a rehearsal');
    console.log(r.stdout);
  });

  it('on Ctrl-C stops the twin: every process it started is gone, exit 130, one line', async () => {
    /** The processes below `pid` (children, grandchildren), with their command lines. */
    const descendants = (pid: number): { pid: number; cmd: string }[] => {
      const parentOf = new Map<number, number>();
      const cmdOf = new Map<number, string>();
      for (const entry of readdirSync('/proc').filter((e) => /^\d+$/.test(e))) {
        try {
          const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
          parentOf.set(Number(entry), Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]));
          cmdOf.set(Number(entry), readFileSync(`/proc/${entry}/cmdline`, 'utf8').replace(/\0/g, ' ').trim());
        } catch {
          // gone meanwhile
        }
      }
      const out: { pid: number; cmd: string }[] = [];
      const walk = (p: number) => {
        for (const [child, parent] of parentOf)
          if (parent === p) {
            out.push({ pid: child, cmd: cmdOf.get(child) ?? '' });
            walk(child);
          }
      };
      walk(pid);
      return out;
    };
    const run = spawnCli(
      ['rehearse', '--cluster', 'rh', '--to', '1.34', '--latencies', latencies, '--repository', '1.33.7,1.34.2'],
      cliEnv(),
    );
    const pid = run.child.pid as number;
    let seen: { pid: number; cmd: string }[] = [];
    const deadline = Date.now() + 120_000;
    while (Date.now() < deadline) {
      seen = descendants(pid);
      if (
        seen.some((p) => /temporal.* server start-dev/.test(p.cmd)) &&
        seen.some((p) => /kube-apiserver/.test(p.cmd)) &&
        seen.some((p) => /kwok/.test(p.cmd))
      )
        break;
      await new Promise((r) => setTimeout(r, 250));
    }
    assert.ok(
      seen.some((p) => /kube-apiserver/.test(p.cmd)),
      `the twin started: ${seen.map((p) => p.cmd.slice(0, 60)).join('; ')}`,
    );
    await new Promise((r) => setTimeout(r, 2000)); // mid-start or mid-upgrade: either must be torn down
    run.child.kill('SIGINT');
    const r = await run.exited;
    assert.equal(r.code, 130, r.stderr);
    assert.deepEqual(r.stderr.trim().split('\n'), ['skewless: rehearsal of rh interrupted: the twin was stopped and removed']);
    const left = seen.filter((p) => existsSync(`/proc/${p.pid}`) && !readFileSync(`/proc/${p.pid}/stat`, 'utf8').includes(') Z '));
    assert.deepEqual(
      left.map((p) => p.cmd.slice(0, 80)),
      [],
      'processes the twin left behind',
    );
  });

  describe('bad input: one line on stderr, the exit code, nothing touched', () => {
    const rows: { name: string; args: string[]; exit: number; stderr: RegExp; env?: () => NodeJS.ProcessEnv }[] = [
      { name: 'no --cluster', args: ['rehearse', '--to', '1.34'], exit: 2, stderr: /^skewless: --cluster \(the cluster\) is required$/ },
      { name: 'no --to', args: ['rehearse', '--cluster', 'rh'], exit: 2, stderr: /^skewless: --to is required$/ },
      {
        name: 'a target that is no version',
        args: ['rehearse', '--cluster', 'rh', '--to', '1.34;reboot'],
        exit: 2,
        stderr: /^skewless: invalid target/,
      },
      {
        name: 'a policy flag out of range',
        args: ['rehearse', '--cluster', 'rh', '--to', '1.34', '--batch-size', '0'],
        exit: 2,
        stderr: /^skewless: --batch-size must be an integer ≥ 1, got "0"$/,
      },
      {
        name: 'a latencies file that does not exist',
        args: ['rehearse', '--cluster', 'rh', '--to', '1.34', '--latencies', '/nonexistent/l.yaml'],
        exit: 2,
        stderr: /^skewless: cannot read --latencies \/nonexistent\/l\.yaml: ENOENT$/,
      },
      {
        name: 'a latency that is not one',
        args: ['rehearse', '--cluster', 'rh', '--to', '1.34', '--latencies', 'BAD_LATENCIES'],
        exit: 2,
        stderr: /^skewless: --latencies .*: coffee is not a latency/,
      },
      {
        name: 'a repository that is no list of versions',
        args: ['rehearse', '--cluster', 'rh', '--to', '1.34', '--repository', '1.34.x'],
        exit: 2,
        stderr: /^skewless: --repository: "1\.34\.x" is not a version/,
      },
      {
        name: 'an ssh user with shell text',
        args: ['rehearse', '--cluster', 'rh', '--to', '1.34', '--ssh-user', 'root;id'],
        exit: 2,
        stderr: /^skewless: --ssh-user must be a user name/,
      },
      {
        name: '--save-description into a folder that does not exist',
        args: ['rehearse', '--cluster', 'rh', '--to', '1.34', '--save-description', '/nonexistent/twin.yaml'],
        exit: 2,
        stderr: /^skewless: --save-description: no folder \/nonexistent$/,
      },
      {
        name: 'a cluster the worker does not know',
        args: ['rehearse', '--cluster', 'nowhere', '--to', '1.34'],
        exit: 2,
        stderr: /^skewless: reading nowhere for the rehearsal failed: .*nowhere/,
      },
      {
        name: 'a target the repository does not offer (planned before any twin)',
        args: ['rehearse', '--cluster', 'rh', '--to', '1.36', '--repository', '1.33.7,1.34.2'],
        exit: 2,
        stderr: /^skewless: .*1\.36/,
      },
      {
        name: 'nothing to rehearse: the cluster is at the target',
        args: ['rehearse', '--cluster', 'rh', '--to', 'latest-patch'],
        exit: 1,
        stderr: /^skewless: nothing to rehearse: rh is already at 1\.33\.7 \(target latest-patch\)$/,
      },
      {
        name: 'no worker on the task queue',
        args: ['rehearse', '--cluster', 'rh', '--to', '1.34', '--task-queue', 'nobody-polls-this'],
        exit: 1,
        stderr: /^skewless: no worker polls task queue nobody-polls-this/,
      },
      {
        name: 'Temporal unreachable',
        args: ['rehearse', '--cluster', 'rh', '--to', '1.34', '--address', '127.0.0.1:1'],
        exit: 3,
        stderr: /^skewless: cannot reach Temporal at 127\.0\.0\.1:1/,
      },
    ];
    for (const row of rows) {
      it(row.name, async () => {
        const writes = clusterWrites(tc.sim, tc.workerKube);
        const mark = await writes.mark();
        const bad = join(dir, 'bad-latencies.yaml');
        writeFileSync(bad, 'coffee: 3\n');
        const r = await cli(...row.args.map((a) => (a === 'BAD_LATENCIES' ? bad : a)));
        assert.equal(r.code, row.exit, r.stderr);
        const lines = r.stderr.trim().split('\n');
        assert.equal(lines.length, 1, r.stderr);
        assert.match(lines[0] ?? '', row.stderr);
        assert.equal(r.stdout, '');
        await writes.assertNoneSince(mark, row.name);
      });
    }
  });
});
