import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import type { Worker } from '@temporalio/worker';
import { createEtcdActivities, type EtcdSnapshotResult } from '../../activities/etcd-snapshot.js';
import { createClusterResolver } from '../../activities/host-address.js';
import { waitFor } from '../../sim/cluster/wait-for.js';
import { hostDir } from '../../sim/hosts/host-state.js';
import { restoreStatusQuery, type RestoreStatus } from '../../workflows/restore-messages.js';
import type { TestCluster } from '../helpers/sim-cluster.js';
import { cliAsync, spawnCli } from '../helpers/spawn-cli.js';
import { uniqueTaskQueue, temporalVars } from '../helpers/temporal-env.js';
import { simWorker } from '../helpers/workers.js';
import { restoreWorkflowId } from '../../contracts/workflow-ids.js';
import { startClusterWorld } from '../helpers/sim-world.js';

/** One control plane (node `cp`) or three (`cp-1`..`cp-3`: the snapshot copied onto cp-2 and cp-3 by the restore). */
const lab = (name: string, controlPlanes: number) => `
name: ${name}
version: 1.32.4
repository: [1.32.4]
nodes:
  - {name: cp, role: control-plane${controlPlanes > 1 ? `, count: ${controlPlanes}` : ''}}
  - {name: worker, role: worker, count: 2}
workloads:
  - {kind: Deployment, name: web, replicas: 2}
`;

const records = (stdout: string) =>
  stdout
    .trim()
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as Record<string, unknown>);

/**
 * `skewless restore` end to end: a snapshot taken (the upgrade's snapshot activity), a ConfigMap
 * written after it, then the restore through the real CLI against the real dev server, a real worker
 * and the simulation's real etcd: refused inputs touch nothing, an abort at the gate touches nothing,
 * an approved restore brings the cluster back to the snapshot (the ConfigMap gone, the revision the
 * snapshot's plus the bump, the apiserver answering).
 */
for (const controlPlanes of [1, 3])
  describe(`e2e: skewless restore from the etcd snapshot, ${controlPlanes} control plane(s)`, () => {
    const cluster = controlPlanes === 1 ? 'rst' : 'rst3';
    const first = controlPlanes === 1 ? 'cp' : 'cp-1';
    const nodes = controlPlanes === 1 ? ['cp'] : ['cp-1', 'cp-2', 'cp-3'];
    let env: TestWorkflowEnvironment;
    let tc: TestCluster;
    let worker: Worker;
    let running: Promise<void>;
    let snap: EtcdSnapshotResult;
    const taskQueue = uniqueTaskQueue('restore');
    const cliEnv = () => ({ ...process.env, ...temporalVars(env), SKEWLESS_TASK_QUEUE: taskQueue, USER: 'dana' });
    const cli = (...args: string[]) => cliAsync(args, cliEnv());
    const hostLog = (node = first) => tc.sim.hosts.commandLog(node).map((e) => e.command);
    const configMap = (name: string) =>
      tc.kube.core.readNamespacedConfigMap({ name, namespace: 'default' }).then(
        () => true,
        (e: { code?: number }) => {
          if (e.code === 404) return false;
          throw e;
        },
      );
    const restoreStatus = () => env.client.workflow.getHandle(restoreWorkflowId(cluster)).query(restoreStatusQuery);

    before(async () => {
      [env, tc] = await startClusterWorld(lab(cluster, controlPlanes));
      worker = await simWorker(env, tc.clustersDir, taskQueue);
      running = worker.run();
      snap = await createEtcdActivities({ clusters: createClusterResolver(tc.clustersDir) }).snapshotEtcd({
        cluster,
        node: first,
        hop: '1.33.7',
      });
      await tc.kube.core.createNamespacedConfigMap({
        namespace: 'default',
        body: { metadata: { name: 'after-snapshot' }, data: { written: 'after' } },
      });
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
        [['restore', '--cluster', cluster], /name the snapshot: --hop VERSION .*, --snapshot PATH, or both/],
        [['restore', '--cluster', cluster, '--watch', '--hop', '1.33.7'], /--watch re-attaches to a running restore/],
        [['restore', '--cluster', cluster, '--hop', '1.33;id'], /--hop must be the version of an upgrade hop/],
        [['restore', '--cluster', cluster, '--snapshot', 'relative.db'], /--snapshot must be an absolute path/],
        [['restore', '--cluster', cluster, '--snapshot', '/var/../etc/shadow'], /--snapshot must be an absolute path/],
        [['restore', '--cluster', 'Bad_Name', '--hop', '1.33.7'], /invalid cluster name/],
        [['restore', '--cluster', cluster, '--hop', '1.33.7', '--control-plane=Bad_Node'], /--control-plane must be a node name/],
        [['restore', '--cluster', cluster, '--hop', '1.33.7', '--stop-timeout', '0'], /--stop-timeout must be whole seconds/],
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
      const restore = spawnCli(['restore', '--cluster', cluster, '--hop', '1.33.7'], cliEnv());
      await waitFor('the gate', async () => (await restoreStatus().catch(() => undefined))?.phase === 'gate', 120_000, 200);
      await waitFor(
        'the CLI shows the gate',
        () =>
          new RegExp(`gate restore-1\\.33\\.7 waits\\. Approving it loses everything written to ${cluster} after the snapshot`).test(
            restore.stdout(),
          ),
        10_000,
        100,
      );
      const aborted = await cli('abort', cluster, '--workflow', 'restore', '--comment', 'wrong snapshot');
      assert.equal(aborted.code, 0, aborted.stderr);
      const r = await restore.exited;
      assert.equal(r.code, 1, r.stdout + r.stderr);
      assert.match(r.stdout, /aborted by dana: wrong snapshot; nothing was restored/);
      // Only the snapshot's copy onto the control planes that lack it comes before the gate.
      const touched = hostLog()
        .slice(before)
        .filter((c) => /\bmv\b|etcdutl snapshot restore/.test(c));
      assert.deepEqual(touched, []);
      for (const node of nodes.slice(1)) {
        assert.deepEqual(
          tc.sim.hosts
            .commandLog(node)
            .map((e) => e.command)
            .filter((c) => /\bmv\b|etcdutl snapshot restore/.test(c)),
          [`sudo -n mv -T /tmp/etcd-${cluster}-1.33.7.db.skewless-part /var/lib/skewless/snapshots/etcd-${cluster}-1.33.7.db`],
        );
      }
      assert.ok(await configMap('after-snapshot'));
    });

    it('an approved restore brings the cluster back to the snapshot: the later ConfigMap gone, etcd at the restored revision, the apiserver ready', async () => {
      const restore = spawnCli(['restore', '--cluster', cluster, '--hop', '1.33.7', '--output', 'json'], cliEnv());
      await waitFor(
        'the gate record',
        () => records(restore.stdout()).some((r) => r.type === 'gate' && r.state === 'waiting'),
        120_000,
        200,
      );
      const gate = records(restore.stdout()).find((r) => r.type === 'gate');
      assert.equal(gate?.command, `skewless approve ${cluster} --gate restore-1.33.7`);
      assert.match(String(gate?.loses), new RegExp(`etcd revisions above ${snap.revision}`));
      assert.ok(await configMap('after-snapshot'), 'not yet');
      const status = await cli('status', cluster, '--workflow', 'restore');
      assert.equal(status.code, 0, status.stderr);
      assert.match(status.stdout, new RegExp(`^${cluster}: restore gate$`, 'm'));
      for (const node of nodes) assert.match(status.stdout, new RegExp(`${node} +member ${node} +checked`));
      // Without --workflow, the cluster's running run is the restore (issue 8 integration: one --workflow for every kind).
      const implied = await cli('status', cluster);
      assert.equal(implied.code, 0, implied.stderr);
      assert.match(implied.stdout, new RegExp(`^${cluster}: restore gate$`, 'm'));
      const approved = await cli('approve', cluster, '--gate', 'restore-1.33.7', '--comment', 'back to before 1.33');
      assert.equal(approved.code, 0, approved.stderr);
      const r = await restore.exited;
      assert.equal(r.code, 0, r.stdout + r.stderr);
      const result = records(r.stdout).find((x) => x.type === 'result')?.status as RestoreStatus;
      assert.equal(result.phase, 'done');
      assert.ok((result.revision ?? 0) >= snap.revision + 1_000_000_000, `revision ${result.revision} for a snapshot at ${snap.revision}`);
      assert.ok((result.revision ?? 0) < snap.revision + 1_000_000_000 + 100_000);
      assert.equal(await configMap('after-snapshot'), false, 'written after the snapshot: gone');
      assert.ok(
        (await tc.kube.core.listNamespace()).items.some((n) => n.metadata?.name === 'kube-system'),
        'the apiserver answers',
      );
      for (const node of nodes) {
        const root = join(hostDir(tc.sim.stateDir, node), 'root');
        assert.ok(existsSync(join(root, 'var/lib/etcd.skewless-before-1.33.7')), `${node}: the old data dir kept`);
        assert.ok(existsSync(join(root, 'var/lib/etcd/member/snap/db')), `${node}: the restored data in place`);
        assert.ok(existsSync(join(root, 'etc/kubernetes/manifests/etcd.yaml')), `${node}: the manifests back`);
      }
      assert.ok(
        existsSync(join(hostDir(tc.sim.stateDir, first), 'root', 'var/lib/etcd.skewless-before-1.33.7/member')),
        "the real etcd's old data kept",
      );
      const ran = hostLog().filter((c) => /\bmv\b|etcdutl snapshot restore/.test(c));
      assert.ok(
        ran.some((c) =>
          c.startsWith(
            `sudo -n etcdutl snapshot restore /var/lib/skewless/snapshots/etcd-${cluster}-1.33.7.db --data-dir /var/lib/etcd.skewless-restored-1.33.7.partial-`,
          ),
        ),
        ran.join('\n'),
      );
      assert.ok(ran.includes('sudo -n mv -T /var/lib/etcd /var/lib/etcd.skewless-before-1.33.7'));
      assert.ok(ran.includes('sudo -n mv /etc/kubernetes/manifests-stopped-by-skewless/etcd.yaml /etc/kubernetes/manifests/etcd.yaml'));
      // The audit trail of the restore: each control plane's steps, who approved the gate, how it ended.
      const history = await cli('history', cluster, '--workflow', 'restore', '--output', 'json');
      assert.equal(history.code, 0, history.stderr);
      const trail = JSON.parse(history.stdout) as {
        workflowId: string;
        entries: { kind: string; activity?: string; node?: string; gate?: string; comment?: string; status?: string }[];
      };
      assert.equal(trail.workflowId, restoreWorkflowId(cluster));
      for (const node of nodes) {
        for (const step of ['stopStaticPods', 'restoreEtcdMember', 'startStaticPods']) {
          assert.ok(
            trail.entries.some((e) => e.kind === 'step' && e.activity === step && e.node === node),
            `${step} on ${node} in the trail`,
          );
        }
      }
      assert.ok(
        trail.entries.some((e) => e.kind === 'approval' && e.gate === 'restore-1.33.7' && e.comment === 'back to before 1.33'),
        history.stdout,
      );
      assert.equal(trail.entries.at(-1)?.kind, 'closed');
      // The workers' nodes come back Ready from the restored state (kwok's kubelets keep reporting).
      await waitFor(
        'every node Ready',
        async () =>
          (await tc.kube.core.listNode()).items.every((n) => n.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True')),
        120_000,
        500,
      );
    });
  });
