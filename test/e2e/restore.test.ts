import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import type { Worker } from '@temporalio/worker';
import { createEtcdActivities, type EtcdSnapshotResult } from '../../activities/etcd-snapshot.js';
import { createClusterResolver } from '../../activities/ssh-shell.js';
import { waitFor } from '../../sim/cluster/wait-for.js';
import { hostDir } from '../../sim/hosts/host-state.js';
import { restoreStatusQuery, type RestoreStatus } from '../../workflows/restore-messages.js';
import { startTestCluster, type TestCluster } from '../helpers/sim-cluster.js';
import { cliAsync, spawnCli } from '../helpers/spawn-cli.js';
import { startDevServer, uniqueTaskQueue } from '../helpers/temporal-env.js';
import { simWorker } from '../helpers/workers.js';

const LAB = `
name: rst
version: 1.32.4
repository: [1.32.4]
nodes:
  - {name: cp, role: control-plane}
  - {name: worker, role: worker, count: 2}
workloads:
  - {kind: Deployment, name: web, replicas: 2}
`;

const records = (stdout: string) => stdout.trim().split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l) as Record<string, unknown>);

/**
 * `skewless restore` end to end: a snapshot taken (the upgrade's snapshot activity), a ConfigMap
 * written after it, then the restore through the real CLI against the real dev server, a real worker
 * and the simulation's real etcd: refused inputs touch nothing, an abort at the gate touches nothing,
 * an approved restore brings the cluster back to the snapshot (the ConfigMap gone, the revision the
 * snapshot's plus the bump, the apiserver answering).
 */
describe('e2e: skewless restore from the etcd snapshot', () => {
  let env: TestWorkflowEnvironment;
  let tc: TestCluster;
  let worker: Worker;
  let running: Promise<void>;
  let snap: EtcdSnapshotResult;
  const taskQueue = uniqueTaskQueue('restore');
  const cliEnv = () => ({ ...process.env, TEMPORAL_ADDRESS: env.address, SKEWLESS_TASK_QUEUE: taskQueue, USER: 'dana' });
  const cli = (...args: string[]) => cliAsync(args, cliEnv());
  const hostLog = () => tc.sim.hosts.commandLog('cp').map((e) => e.command);
  const configMap = (name: string) => tc.kube.core.readNamespacedConfigMap({ name, namespace: 'default' }).then(() => true, (e: { code?: number }) => {
    if (e.code === 404) return false;
    throw e;
  });
  const restoreStatus = () => env.client.workflow.getHandle('restore/rst').query(restoreStatusQuery);

  before(async () => {
    [env, tc] = await Promise.all([startDevServer(), startTestCluster(LAB)]);
    worker = await simWorker(env, tc.clustersDir, taskQueue);
    running = worker.run();
    snap = await createEtcdActivities({ clusters: createClusterResolver(tc.clustersDir) }).snapshotEtcd({ cluster: 'rst', node: 'cp', hop: '1.33.7' });
    await tc.kube.core.createNamespacedConfigMap({ namespace: 'default', body: { metadata: { name: 'after-snapshot' }, data: { written: 'after' } } });
  });
  after(async () => {
    worker?.shutdown();
    await running;
    await tc?.stop();
    await env?.teardown();
  });

  it('refuses bad input with one line and exit 2, before Temporal (none listens at the address given)', async () => {
    const noTemporal = { ...process.env, TEMPORAL_ADDRESS: '127.0.0.1:1' };
    for (const [args, message] of [
      [['restore', '--cluster', 'rst'], /name the snapshot: --hop VERSION .*, --snapshot PATH, or both/],
      [['restore', '--cluster', 'rst', '--watch', '--hop', '1.33.7'], /--watch re-attaches to a running restore/],
      [['restore', '--cluster', 'rst', '--hop', '1.33;id'], /--hop must be the version of an upgrade hop/],
      [['restore', '--cluster', 'rst', '--snapshot', 'relative.db'], /--snapshot must be an absolute path/],
      [['restore', '--cluster', 'rst', '--snapshot', '/var/../etc/shadow'], /--snapshot must be an absolute path/],
      [['restore', '--cluster', 'Bad_Name', '--hop', '1.33.7'], /invalid cluster name/],
      [['restore', '--cluster', 'rst', '--hop', '1.33.7', '--control-plane=Bad_Node'], /--control-plane must be a node name/],
      [['restore', '--cluster', 'rst', '--hop', '1.33.7', '--stop-timeout', '0'], /--stop-timeout must be whole seconds/],
    ] as [string[], RegExp][]) {
      const r = await cliAsync(args, noTemporal);
      assert.equal(r.code, 2, `${args.join(' ')}: ${r.stderr}`);
      assert.match(r.stderr, message);
      assert.equal(r.stderr.trim().split('\n').length, 1, r.stderr);
      assert.equal(r.stdout, '');
    }
    const help = await cliAsync(['restore', '--help'], noTemporal);
    assert.equal(help.code, 0);
    assert.match(help.stdout, /DESTRUCTIVE: everything written to the cluster after the snapshot is lost/);
  });

  it('an abort at the gate touches nothing: no manifest moved, the ConfigMap still there', async () => {
    const before = hostLog().length;
    const restore = spawnCli(['restore', '--cluster', 'rst', '--hop', '1.33.7'], cliEnv());
    await waitFor('the gate', async () => (await restoreStatus().catch(() => undefined))?.phase === 'gate', 120_000, 200);
    await waitFor('the CLI shows the gate', () => /gate restore-1\.33\.7 waits\. Approving it loses everything written to rst after the snapshot/.test(restore.stdout()), 10_000, 100);
    const aborted = await cli('abort', 'rst', '--restore', '--comment', 'wrong snapshot');
    assert.equal(aborted.code, 0, aborted.stderr);
    const r = await restore.exited;
    assert.equal(r.code, 1, r.stdout + r.stderr);
    assert.match(r.stdout, /aborted by dana: wrong snapshot; nothing was restored/);
    const touched = hostLog().slice(before).filter((c) => /\bmv\b|etcdutl snapshot restore/.test(c));
    assert.deepEqual(touched, []);
    assert.ok(await configMap('after-snapshot'));
  });

  it('an approved restore brings the cluster back to the snapshot: the later ConfigMap gone, etcd at the restored revision, the apiserver ready', async () => {
    const restore = spawnCli(['restore', '--cluster', 'rst', '--hop', '1.33.7', '--output', 'json'], cliEnv());
    await waitFor('the gate record', () => records(restore.stdout()).some((r) => r.type === 'gate' && r.state === 'waiting'), 120_000, 200);
    const gate = records(restore.stdout()).find((r) => r.type === 'gate');
    assert.equal(gate?.command, 'skewless approve rst --gate restore-1.33.7');
    assert.match(String(gate?.loses), new RegExp(`etcd revisions above ${snap.revision}`));
    assert.ok(await configMap('after-snapshot'), 'not yet');
    const status = await cli('status', 'rst', '--restore');
    assert.equal(status.code, 0, status.stderr);
    assert.match(status.stdout, /^rst: restore gate$/m);
    assert.match(status.stdout, /cp +member cp +checked/);
    const approved = await cli('approve', 'rst', '--gate', 'restore-1.33.7', '--comment', 'back to before 1.33');
    assert.equal(approved.code, 0, approved.stderr);
    const r = await restore.exited;
    assert.equal(r.code, 0, r.stdout + r.stderr);
    const result = records(r.stdout).find((x) => x.type === 'result')?.status as RestoreStatus;
    assert.equal(result.phase, 'done');
    assert.ok((result.revision ?? 0) >= snap.revision + 1_000_000_000, `revision ${result.revision} for a snapshot at ${snap.revision}`);
    assert.ok((result.revision ?? 0) < snap.revision + 1_000_000_000 + 100_000);
    assert.equal(await configMap('after-snapshot'), false, 'written after the snapshot: gone');
    assert.ok((await tc.kube.core.listNamespace()).items.some((n) => n.metadata?.name === 'kube-system'), 'the apiserver answers');
    const root = join(hostDir(tc.sim.stateDir, 'cp'), 'root');
    assert.ok(existsSync(join(root, 'var/lib/etcd.skewless-before-1.33.7/member')), 'the old data dir kept');
    assert.ok(existsSync(join(root, 'etc/kubernetes/manifests/etcd.yaml')), 'the manifests back');
    const ran = hostLog().filter((c) => /\bmv\b|etcdutl snapshot restore/.test(c));
    assert.ok(ran.some((c) => c.startsWith('sudo -n etcdutl snapshot restore /var/lib/skewless/snapshots/etcd-rst-1.33.7.db --data-dir /var/lib/etcd.skewless-restored-1.33.7.partial-')), ran.join('\n'));
    assert.ok(ran.includes('sudo -n mv -T /var/lib/etcd /var/lib/etcd.skewless-before-1.33.7'));
    assert.ok(ran.includes('sudo -n mv /etc/kubernetes/manifests-stopped-by-skewless/etcd.yaml /etc/kubernetes/manifests/etcd.yaml'));
    // The workers' nodes come back Ready from the restored state (kwok's kubelets keep reporting).
    await waitFor('every node Ready', async () => (await tc.kube.core.listNode()).items.every((n) => n.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True')), 120_000, 500);
  });
});
