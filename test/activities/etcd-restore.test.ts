import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { before, describe, it } from 'node:test';
import { MockActivityEnvironment } from '@temporalio/testing';
import { createRestoreActivities, type RestorePlan } from '../../activities/etcd-restore.js';
import { createEtcdActivities, type EtcdSnapshotResult } from '../../activities/etcd-snapshot.js';
import { createClusterResolver } from '../../activities/host-address.js';
import { ensureSimBinaries } from '../../sim/cluster/binaries.js';
import { hostDir } from '../../sim/hosts/host-state.js';
import { clusterWorld } from '../helpers/sim-world.js';
import { failsWith } from '../helpers/failures.js';

const DESCRIPTION = `
name: rst3
version: 1.32.4
repository: [1.32.4]
nodes:
  - {name: cp, role: control-plane, count: 3}
  - {name: worker, role: worker}
`;
const cluster = 'rst3';
const CPS = ['cp-1', 'cp-2', 'cp-3'];

/**
 * The restore's activities, one step at a time, on a simulated stacked-etcd control plane of three
 * members against the REAL etcd and etcdutl: snapshot, a ConfigMap written after it, then every
 * member checked, stopped, restored (each under its own name and peer URL) and swapped, started,
 * verified. The simulation's real etcd is cp-1's member (docs/restore.md).
 */
describe('restore activities against the simulated control plane (3 members, real etcd and etcdutl)', () => {
  const tc = clusterWorld(DESCRIPTION);
  let acts: ReturnType<typeof createRestoreActivities>;
  let snap: EtcdSnapshotResult;
  let plan: RestorePlan;
  const run = <T>(fn: () => Promise<T>): Promise<T> => new MockActivityEnvironment().run(fn) as Promise<T>;
  const log = (node: string) => tc.sim.hosts.commandLog(node).map((e) => e.command);
  const rootOf = (node: string) => join(hostDir(tc.sim.stateDir, node), 'root');
  const configMap = (name: string) =>
    tc.kube.core.readNamespacedConfigMap({ name, namespace: 'default' }).then(
      () => true,
      (e: { code?: number }) => {
        if (e.code === 404) return false;
        throw e;
      },
    );
  const etcdRevision = () => {
    const out = execFileSync(
      ensureSimBinaries().bin('etcdctl'),
      [`--endpoints=${tc.sim.etcdEndpoint}`, 'endpoint', 'status', '-w', 'json'],
      { encoding: 'utf8' },
    );
    return Number(/"revision":(\d+)/.exec(out)?.[1]);
  };

  before(async () => {
    const resolver = createClusterResolver(tc.clustersDir);
    acts = createRestoreActivities({ clusters: resolver });
    snap = await createEtcdActivities({ clusters: resolver }).snapshotEtcd({ cluster, node: 'cp-1', hop: '1.33.7' });
    await tc.kube.core.createNamespacedConfigMap({
      namespace: 'default',
      body: { metadata: { name: 'after-snapshot' }, data: { written: 'after' } },
    });
  });

  it('plans from the record and the three etcd manifests; refuses a control plane without the snapshot file, then checks each', async () => {
    plan = await run(() => acts.planRestore({ cluster, hop: '1.33.7' }));
    assert.deepEqual(
      plan.members.map((m) => [m.node, m.name, m.peerUrl, m.dataDir]),
      CPS.map((n, i) => [n, n, `https://10.0.0.${11 + i}:2380`, '/var/lib/etcd']),
    );
    assert.equal(plan.initialCluster, 'cp-1=https://10.0.0.11:2380,cp-2=https://10.0.0.12:2380,cp-3=https://10.0.0.13:2380');
    assert.deepEqual(
      { ...plan.snapshot, takenAt: undefined },
      {
        hop: '1.33.7',
        remotePath: snap.remotePath,
        localPath: snap.localPath,
        sha256: snap.sha256,
        revision: snap.revision,
        takenAt: undefined,
      },
    );
    const check = (node: string) =>
      run(() =>
        acts.checkRestoreSnapshot({
          cluster,
          node,
          remotePath: plan.snapshot.remotePath,
          sha256: plan.snapshot.sha256,
          revision: plan.snapshot.revision,
        }),
      );
    const missing = await failsWith(check('cp-2'), 'SnapshotMissing');
    assert.match(missing.message, /not on cp-2: copy the snapshot there/);
    // The worker's verified copy goes onto the members that lack it (SFTP to /tmp, root moves it in place).
    for (const node of CPS) {
      const placed = await run(() => acts.placeSnapshot({ cluster, node, hop: '1.33.7' }));
      assert.equal(placed.placed, node !== 'cp-1', `${node}: copied only where missing`);
    }
    assert.ok(
      log('cp-2').includes(`sudo -n mv -T /tmp/etcd-rst3-1.33.7.db.skewless-part ${plan.snapshot.remotePath}`),
      log('cp-2').join('\n'),
    );
    assert.equal(
      (await run(() => acts.placeSnapshot({ cluster, node: 'cp-2', hop: '1.33.7' }))).placed,
      false,
      'there now: nothing to copy',
    );
    for (const node of CPS) assert.equal((await check(node)).sha256, snap.sha256);
    assert.equal(
      tc.sim.hosts.state('cp-2').owners?.[plan.snapshot.remotePath],
      undefined,
      "root's file, as on the first control plane before its chown",
    );
    assert.ok(await configMap('after-snapshot'), 'nothing touched yet');
  });

  it('stops the static pods by moving their manifests; the real etcd and apiserver stop with the last of them', async () => {
    for (const node of CPS) {
      const r = await run(() => acts.stopStaticPods({ cluster, node, timeoutSeconds: 60 }));
      assert.deepEqual(r.moved.sort(), ['etcd.yaml', 'kube-apiserver.yaml', 'kube-controller-manager.yaml', 'kube-scheduler.yaml']);
    }
    const cp = tc.sim.controlPlane;
    assert.ok(cp.mode === 'shared', 'one shared control plane');
    const p = cp.processes;
    assert.ok(
      !p.etcd.running && !p.apiserver.running && !p.controllerManager.running && !p.scheduler.running,
      'the real control plane is down',
    );
    assert.deepEqual(readdirSync(join(rootOf('cp-2'), 'etc/kubernetes/manifests')), []);
    // Again: converged, nothing to move.
    assert.deepEqual((await run(() => acts.stopStaticPods({ cluster, node: 'cp-1', timeoutSeconds: 60 }))).moved, []);
  });

  it('restores every member into a fresh dir with its own name, swaps it in, keeps the old one; a second call changes nothing', async () => {
    for (const m of plan.members) {
      const r = await run(() =>
        acts.restoreEtcdMember({
          cluster,
          node: m.node,
          member: m,
          remotePath: plan.snapshot.remotePath,
          initialCluster: plan.initialCluster,
          bumpRevision: plan.bumpRevision,
          tag: plan.tag,
        }),
      );
      assert.equal(r.previousDataDir, '/var/lib/etcd.skewless-before-1.33.7');
      assert.ok(existsSync(join(rootOf(m.node), 'var/lib/etcd/member/snap/db')), `${m.node}: restored data in place`);
      assert.ok(existsSync(join(rootOf(m.node), 'var/lib/etcd.skewless-before-1.33.7')), `${m.node}: old data kept`);
      const restore = log(m.node).find((c) => c.includes('etcdutl snapshot restore')) ?? '';
      assert.match(
        restore,
        new RegExp(
          `--name ${m.name} --initial-cluster ${plan.initialCluster} --initial-advertise-peer-urls ${m.peerUrl.replace(/\./g, '\\.')} --bump-revision 1000000000 --mark-compacted`,
        ),
      );
    }
    const mark = log('cp-1').filter((c) => c.includes('etcdutl snapshot restore')).length;
    const again = await run(() =>
      acts.restoreEtcdMember({
        cluster,
        node: 'cp-1',
        member: plan.members[0]!,
        remotePath: plan.snapshot.remotePath,
        initialCluster: plan.initialCluster,
        bumpRevision: plan.bumpRevision,
        tag: plan.tag,
      }),
    );
    assert.equal(again.restoredNow, false);
    assert.equal(log('cp-1').filter((c) => c.includes('etcdutl snapshot restore')).length, mark, 'no second etcdutl run');
  });

  it("starts the static pods; etcd answers at the snapshot's revision plus the bump, the apiserver is back, the later ConfigMap is gone", async () => {
    for (const node of CPS) assert.equal((await run(() => acts.startStaticPods({ cluster, node }))).moved.length, 4);
    const verified = await run(() =>
      acts.verifyEtcdRestore({ cluster, node: 'cp-1', minRevision: snap.revision + plan.bumpRevision, timeoutSeconds: 120 }),
    );
    assert.ok(verified.revision >= snap.revision + plan.bumpRevision, JSON.stringify(verified));
    assert.ok(verified.revision < snap.revision + plan.bumpRevision + 100_000, 'the restored revision, not an unrelated one');
    const cp = tc.sim.controlPlane;
    assert.ok(cp.mode === 'shared', 'one shared control plane');
    await cp.apiserverReady();
    assert.ok(etcdRevision() >= snap.revision + plan.bumpRevision, 'the real etcd serves the restored data');
    assert.equal(await configMap('after-snapshot'), false, 'written after the snapshot: gone');
    assert.ok((await tc.kube.core.listNode()).items.length === 4, "the cluster's objects from before are there");
    await failsWith(
      run(() => acts.verifyEtcdRestore({ cluster, node: 'cp-1', minRevision: snap.revision + 10 * plan.bumpRevision, timeoutSeconds: 5 })),
      'VerificationFailed',
    );
  });
});
