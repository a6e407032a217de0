// `skewless plan --cluster X --to 1.33` (the real CLI, a worker, the dev server) on a per-node
// simulated cluster whose apiservers are real 1.32.13: clean, it says "readiness: nothing found"
// and exits 0; once a client of this test calls authentication.k8s.io/v1beta1 SelfSubjectReview
// (removed in 1.33), it exits 1 naming the group/version/resource and the client, in text and JSON.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { request } from 'node:https';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { historyToJSON } from '@temporalio/common/lib/proto-utils.js';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import type { Worker } from '@temporalio/worker';
import { repoRoot } from '../helpers/run-cli.js';
import type { TestCluster } from '../helpers/sim-cluster.js';
import { temporalVars, uniqueTaskQueue } from '../helpers/temporal-env.js';
import { simWorker } from '../helpers/workers.js';
import type { clusterUpgradeWorkflow } from '../../workflows/cluster-upgrade-workflow.js';
import { abortSignal, statusQuery, type UpgradeStatus } from '../../workflows/rollout-messages.js';
import { readVersionHistory } from '../../sim/cluster/version-recorder.js';
import { checkEmulationSkew } from '../../rules/index.js';
import { startClusterWorld } from '../helpers/sim-world.js';

const DESCRIPTION = `
name: legacy
version: 1.32.13
repository: [1.32.13, 1.33.13]
controlPlane: per-node
rebootSeconds: 1
nodes:
  - {name: cp, role: control-plane, count: 1}
  - {name: worker, role: worker, count: 1}
workloads:
  - {kind: Deployment, name: web, replicas: 1}
`;
const GVR = 'authentication.k8s.io/v1beta1/selfsubjectreviews';

describe('plan --cluster: the readiness section holds a hop that removes an API a client still calls', () => {
  let env: TestWorkflowEnvironment;
  let tc: TestCluster;
  let worker: Worker;
  let running: Promise<void>;
  const taskQueue = uniqueTaskQueue('readiness');
  before(async () => {
    [env, tc] = await startClusterWorld(DESCRIPTION);
    worker = await simWorker(env, tc.clustersDir, taskQueue);
    running = worker.run();
  });
  after(async () => {
    worker?.shutdown();
    await running;
    await tc?.stop();
    await env?.teardown();
  });

  const cleanEnv = () =>
    Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('TEMPORAL_') && !k.startsWith('SKEWLESS_')));
  // Asynchronous: the worker runs in this process, and a blocking spawn would starve it.
  const cli = (args: string[]) =>
    new Promise<{ status: number | null; stdout: string; stderr: string }>((resolve) => {
      const child = spawn(process.execPath, [join(repoRoot, 'bin', 'skewless.js'), ...args], {
        env: { ...cleanEnv(), ...temporalVars(env), SKEWLESS_TASK_QUEUE: taskQueue },
      });
      let stdout = '';
      let stderr = '';
      child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
      child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
      child.on('close', (status) => resolve({ status, stdout, stderr }));
    });

  /** Nodes the cluster has cordoned now. */
  const cordoned = async () => (await tc.sim.kube.core.listNode()).items.filter((n) => n.spec?.unschedulable).map((n) => n.metadata?.name);

  /** The test's own client of the removed API: the simulation's admin, with a user agent of its own. */
  const legacyClient = () =>
    new Promise<number>((resolve, reject) => {
      const cp = tc.sim.controlPlane;
      const req = request(
        new URL(`/apis/${GVR.replace(/\/[^/]+$/, '')}/selfsubjectreviews`, tc.sim.server),
        {
          method: 'POST',
          agent: false,
          ca: readFileSync(cp.pki.caCert),
          cert: readFileSync(cp.pki.adminCert),
          key: readFileSync(cp.pki.adminKey),
          headers: { 'User-Agent': 'nightly-report/2.1', 'Content-Type': 'application/json' },
        },
        (res) => {
          res.resume();
          res.on('end', () => resolve(res.statusCode ?? 0));
        },
      );
      req.on('error', reject);
      req.end(JSON.stringify({ apiVersion: 'authentication.k8s.io/v1beta1', kind: 'SelfSubjectReview' }));
    });

  it('a clean cluster: "readiness: nothing found", exit 0', async () => {
    const clean = await cli(['plan', '--cluster', 'legacy', '--to', '1.33']);
    assert.equal(clean.status, 0, clean.stdout + clean.stderr);
    assert.match(clean.stdout, /^readiness: nothing found$/m);
    const json = await cli(['plan', '--cluster', 'legacy', '--to', '1.33', '--output', 'json']);
    assert.equal(json.status, 0, json.stderr);
    const planned = JSON.parse(json.stdout) as { readiness: { findings: unknown[]; held: string[] } };
    assert.deepEqual([planned.readiness.findings, planned.readiness.held], [[], []]);
  });

  it('after a real call to the removed API: exit 1, naming group/version/resource, the client and the acknowledgement', async () => {
    assert.equal(await legacyClient(), 201, 'the 1.32 apiserver serves it (--runtime-config)');
    const held = await cli(['plan', '--cluster', 'legacy', '--to', '1.33']);
    assert.equal(held.status, 1, held.stdout + held.stderr);
    assert.match(held.stdout, /^readiness \(legacy\): 1 finding; the upgrade would hold until each is fixed or acknowledged/m);
    assert.match(
      held.stdout,
      /^ {2}HOLD removed-api before 1\.33: authentication\.k8s\.io\/v1beta1\/selfsubjectreviews requested 1 time since the apiservers started, removed in 1\.33; by skewless-sim-admin \(nightly-report\/2\.1, 1 time in the audit log read\)$/m,
    );
    assert.match(held.stdout, new RegExp(`^ {6}acknowledge: removed-api:${GVR.replace(/\./g, '\\.')}$`, 'm'));
    assert.match(held.stdout, /^Pre-flight \(legacy\): nothing would stop the upgrade from starting\.$/m, 'held by readiness alone');

    const json = await cli(['plan', '--cluster', 'legacy', '--to', '1.33', '--output', 'json']);
    assert.equal(json.status, 1, json.stderr);
    const planned = JSON.parse(json.stdout) as { readiness: { findings: { ack: string; hop: string; what: string }[]; held: string[] } };
    assert.deepEqual(planned.readiness.held, [`removed-api:${GVR}`]);
    assert.deepEqual(
      planned.readiness.findings.map((f) => [f.hop, f.ack]),
      [['1.33', `removed-api:${GVR}`]],
    );
    assert.match(planned.readiness.findings[0]?.what ?? '', /nightly-report\/2\.1/);

    // SKEWLESS_SAVE_HISTORIES=dir keeps the held plan's history for the replay test (the patched path).
    const dir = process.env.SKEWLESS_SAVE_HISTORIES;
    if (dir) {
      const runs = [];
      for await (const w of env.client.workflow.list({ query: "WorkflowType = 'planClusterWorkflow'" })) runs.push(w);
      const last = runs.sort((a, b) => a.startTime.getTime() - b.startTime.getTime()).at(-1);
      assert.ok(last, 'a plan workflow ran');
      const history = await env.client.workflow.getHandle(last.workflowId, last.runId).fetchHistory();
      writeFileSync(`${dir}/plan_legacy@readiness-held.json`, historyToJSON(history));
    }
  });

  it('upgrade: refused by the same finding before anything is touched, then started once acknowledged; who and why in history', async () => {
    const refused = await cli(['upgrade', '--cluster', 'legacy', '--to', '1.33']);
    assert.equal(refused.status, 1, refused.stdout + refused.stderr);
    assert.match(
      refused.stdout + refused.stderr,
      new RegExp(
        `readiness holds the upgrade: ${GVR.replace(/\./g, '\\.')} requested.*acknowledge with --acknowledge removed-api:${GVR.replace(/\./g, '\\.')}`,
      ),
    );
    assert.doesNotMatch(refused.stdout, /^started /m, 'a refused upgrade never says started');
    assert.deepEqual(await cordoned(), [], 'nothing cordoned');

    const reason = 'nightly-report moves to v1 on Friday';
    const started = await cli([
      'upgrade',
      '--cluster',
      'legacy',
      '--to',
      '1.33',
      '--acknowledge-removed-api',
      GVR,
      '--by',
      'alice',
      // Its own reason (NAME=TEXT) beats the one for every acknowledgement.
      '--reason',
      `removed-api:${GVR}=${reason}`,
      '--reason',
      'the rest: checked with the owners',
      '--detach',
    ]);
    assert.equal(started.status, 0, started.stdout + started.stderr);
    const handle = env.client.workflow.getHandle<typeof clusterUpgradeWorkflow>('upgrade/legacy');
    const acknowledged = `readiness: removed-api:${GVR} acknowledged by alice (${reason}): `;
    const deadline = Date.now() + 120_000;
    let status = await handle.query(statusQuery);
    while (!['backup', 'preflight', 'control-plane', 'workers', 'done'].includes(status.phase) && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 500));
      status = await handle.query(statusQuery);
    }
    assert.ok(
      status.events.some((e) => e.startsWith(acknowledged)),
      status.events.join('\n'),
    );
    await handle.signal(abortSignal, { by: 'readiness test', reason: 'enough: it passed the gate' });
    const ended = await handle.result();
    assert.equal(ended.phase, 'aborted', ended.events.join('\n'));
    // SKEWLESS_SAVE_HISTORIES=dir keeps it for the replay test (the readiness-gate patch, acknowledged).
    const dir = process.env.SKEWLESS_SAVE_HISTORIES;
    if (dir) writeFileSync(`${dir}/upgrade_legacy@readiness-acknowledged.json`, historyToJSON(await handle.fetchHistory()));
    const history = await cli(['history', 'legacy']);
    assert.equal(history.status, 0, history.stderr);
    assert.match(
      history.stdout,
      new RegExp(
        `started upgrade/legacy to 1\\.33; acknowledged removed-api:${GVR.replace(/\./g, '\\.')} \\(${reason}\\) by alice: the rest: checked with the owners`,
      ),
    );
  });

  // Issue 36 on the same world: a reversible hop's trial rolled back, then the same hop committed.
  const getJson = async <T>(path: string): Promise<T> => {
    const cp = tc.sim.controlPlane;
    const tls = { ca: readFileSync(cp.pki.caCert), cert: readFileSync(cp.pki.adminCert), key: readFileSync(cp.pki.adminKey) };
    const body = await new Promise<string>((resolve, reject) => {
      request(new URL(path, tc.sim.server), { ...tls, agent: false }, (res) => {
        let text = '';
        res.on('data', (c: Buffer) => (text += c.toString()));
        res.on('end', () => resolve(text));
      })
        .on('error', reject)
        .end();
    });
    return JSON.parse(body) as T;
  };
  const version = () => getJson<{ gitVersion: string; emulationMinor?: string }>('/version');
  const groups = async () =>
    (await getJson<{ groups: { versions: { groupVersion: string }[] }[] }>('/apis')).groups
      .flatMap((g) => g.versions.map((v) => v.groupVersion))
      .sort();
  const configMap = (name: string) =>
    tc.kube.core.createNamespacedConfigMap({ namespace: 'default', body: { metadata: { name }, data: { written: name } } });
  const handle = () => env.client.workflow.getHandle<typeof clusterUpgradeWorkflow>('upgrade/legacy');
  /** The upgrade's status once `ok` holds (the worker moves the trial meanwhile). */
  const statusWhen = async (ok: (s: UpgradeStatus) => boolean, what: string): Promise<UpgradeStatus> => {
    const deadline = Date.now() + 480_000;
    for (;;) {
      const s = await handle().query(statusQuery);
      if (ok(s)) return s;
      if (Date.now() > deadline || ['done', 'failed', 'aborted'].includes(s.phase))
        assert.fail(`${what}: ${s.phase}\n${s.events.join('\n')}`);
      await new Promise((r) => setTimeout(r, 1000));
    }
  };
  const inTrial = (s: UpgradeStatus) => s.trial?.state === 'trial' && s.gates.some((g) => g.name === 'commit-1.33.13' && !g.approvedBy);
  const reversibleUpgrade = (...more: string[]) =>
    cli(['upgrade', '--cluster', 'legacy', '--to', '1.33', '--reversible', '--acknowledge-removed-api', GVR, '--by', 'alice', ...more]);
  const cpRuns = () => {
    const cp = tc.sim.controlPlane;
    assert.ok(cp.mode === 'per-node');
    const node = cp.nodes.get('cp-1');
    assert.ok(node);
    return (['kube-apiserver', 'kube-controller-manager', 'kube-scheduler'] as const).map(
      (c) => `${c} ${node.versionOf(c)} ${node.emulatedOf(c) ?? '-'}`,
    );
  };
  /** Resolves with the status once the run halts or a node blocks; never while it goes on or once it ended. */
  const untilWaitingForOperator = async (): Promise<UpgradeStatus> => {
    for (;;) {
      const s = await handle().query(statusQuery);
      if (s.halted !== undefined || Object.values(s.nodes).some((n) => n.phase === 'blocked')) return s;
      if (['done', 'failed', 'aborted'].includes(s.phase)) return new Promise(() => undefined);
      await new Promise((r) => setTimeout(r, 1000));
    }
  };
  const saveHistory = async (name: string) => {
    const dir = process.env.SKEWLESS_SAVE_HISTORIES;
    if (dir) writeFileSync(`${dir}/${name}.json`, historyToJSON(await handle().fetchHistory()));
  };

  it('upgrade --reversible: a trial of 1.33.13 emulating 1.32, objects written during it, skewless rollback: 1.32.13 again, every object kept, no etcd restore', async () => {
    const groupsAt132 = await groups();
    const started = await reversibleUpgrade('--detach');
    assert.equal(started.status, 0, started.stdout + started.stderr);
    const waiting = await statusWhen(inTrial, 'the trial waits at commit-1.33.13');
    assert.equal(waiting.trial?.from, '1.32.13');
    const at = await version();
    assert.deepEqual([at.gitVersion, at.emulationMinor], ['v1.33.13', '32'], 'the 1.33.13 apiserver emulating 1.32');
    assert.deepEqual(await groups(), groupsAt132, "it serves 1.32's API groups");
    assert.deepEqual(cpRuns(), ['kube-apiserver 1.33.13 1.32', 'kube-controller-manager 1.33.13 1.32', 'kube-scheduler 1.33.13 1.32']);
    const kubelet = async () => (await tc.kube.core.readNode({ name: 'worker-1' })).status?.nodeInfo?.kubeletVersion;
    assert.equal(await kubelet(), 'v1.32.13', 'no kubelet moves in a trial');
    const shown = await cli(['status', 'legacy']);
    assert.match(
      shown.stdout,
      /trial of 1\.33\.13 \(emulating 1\.32\): way back: skewless rollback legacy \(to 1\.32\.13, no etcd restore\)/,
    );
    for (const name of ['during-trial-1', 'during-trial-2']) await configMap(name);

    const rolled = await cli(['rollback', 'legacy', '--by', 'bob', '--comment', 'latency up in the trial']);
    assert.equal(rolled.status, 0, rolled.stdout + rolled.stderr);
    const ended = await handle().result();
    assert.equal(ended.phase, 'aborted', ended.events.join('\n'));
    assert.match(ended.outcome ?? '', /^trial of 1\.33\.13 rolled back to 1\.32\.13 by bob \(latency up in the trial\): no etcd restore/);
    assert.equal(ended.trial?.state, 'rolled-back');
    const back = await version();
    assert.deepEqual([back.gitVersion, back.emulationMinor], ['v1.32.13', undefined]);
    assert.deepEqual(cpRuns(), ['kube-apiserver 1.32.13 -', 'kube-controller-manager 1.32.13 -', 'kube-scheduler 1.32.13 -']);
    for (const name of ['during-trial-1', 'during-trial-2'])
      assert.equal((await tc.kube.core.readNamespacedConfigMap({ name, namespace: 'default' })).data?.written, name);
    for (const node of ['cp-1', 'worker-1'])
      assert.ok(!tc.sim.hosts.commandLog(node).some((e) => e.command.includes('snapshot restore')), `no etcd restore on ${node}`);
    assert.match(tc.sim.hosts.state('cp-1').packages.kubeadm ?? '', /^1\.32\.13-/, 'kubeadm back at 1.32.13');
    assert.deepEqual(await cordoned(), []);
    // The skew policy, read at emulated versions, held in every state the simulation recorded.
    await tc.sim.versionHistorySettled();
    const history = readVersionHistory(tc.sim.stateDir).filter((r) => !r.error);
    assert.ok(history.some((r) => r.inventory.apiservers.some((x) => x.emulated === '1.32')));
    for (const r of history) assert.deepEqual(checkEmulationSkew(r.inventory, { topology: 'kubeadm' }).violations, [], r.cause);
    await saveHistory('upgrade_legacy@reversible-rolled-back');
  });

  it('upgrade --reversible, committed: approve commit-1.33.13, the emulation gone from every manifest, the worker moved, exit 0', async () => {
    const before = (await handle().describe()).runId;
    // One worker: its pods have nowhere to go while it drains (the capacity check would halt before it).
    const following = reversibleUpgrade('--acknowledge', 'capacity:worker-1');
    let exited: Awaited<typeof following> | undefined;
    void following.then((r) => (exited = r));
    // Until the new run starts, the workflow id names the rolled-back one; a CLI that ends before is a failure to read.
    const deadline = Date.now() + 120_000;
    while ((await handle().describe()).runId === before) {
      if (exited) assert.fail(`the upgrade ended before its run started: exit ${exited.status}\n${exited.stdout}${exited.stderr}`);
      assert.ok(Date.now() < deadline, 'no new run within 120 s');
      await new Promise((r) => setTimeout(r, 500));
    }
    await statusWhen(inTrial, 'the trial waits at commit-1.33.13');
    await configMap('during-committed-trial');
    const approved = await cli(['approve', 'legacy', '--gate', 'commit-1.33.13', '--by', 'carol']);
    assert.equal(approved.status, 0, approved.stdout + approved.stderr);
    // The CLI follows the run to its end; a run that waits for the operator instead fails here, saying why.
    const run = await Promise.race([
      following,
      untilWaitingForOperator().then((st) => assert.fail(`the run waits for the operator:\n${st.events.join('\n')}`)),
    ]);
    assert.equal(run.status, 0, run.stdout + run.stderr);
    const ended = await handle().result();
    assert.equal(ended.phase, 'done', ended.events.join('\n'));
    assert.equal(ended.trial?.state, 'committed');
    assert.deepEqual(cpRuns(), ['kube-apiserver 1.33.13 -', 'kube-controller-manager 1.33.13 -', 'kube-scheduler 1.33.13 -']);
    const manifests = tc.sim.hosts.commandLog('cp-1').map((e) => e.command);
    assert.ok(manifests.includes('sudo -n kubeadm upgrade apply v1.33.13 --yes'), 'the commit is kubeadm without the patches');
    for (const node of ['cp-1', 'worker-1'])
      assert.equal((await tc.kube.core.readNode({ name: node })).status?.nodeInfo?.kubeletVersion, 'v1.33.13', node);
    assert.equal((await version()).emulationMinor ?? '33', '33');
    assert.ok((await tc.kube.core.readNamespacedConfigMap({ name: 'during-committed-trial', namespace: 'default' })).data);
    const refused = await cli(['rollback', 'legacy', '--by', 'bob']);
    assert.notEqual(refused.status, 0, `nothing to roll back once committed: ${refused.stdout}${refused.stderr}`);
    await tc.sim.versionHistorySettled();
    for (const r of readVersionHistory(tc.sim.stateDir).filter((x) => !x.error))
      assert.deepEqual(checkEmulationSkew(r.inventory, { topology: 'kubeadm' }).violations, [], r.cause);
    await saveHistory('upgrade_legacy@reversible-committed');
  });
});
