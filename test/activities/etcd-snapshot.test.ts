import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { before, describe, it } from 'node:test';
import { ApplicationFailure } from '@temporalio/common';
import { MockActivityEnvironment } from '@temporalio/testing';
import { parseClusterConfig } from '../../activities/cluster-config.js';
import { createEtcdActivities } from '../../activities/etcd-snapshot.js';
import { parseSnapshotStatus } from '../../activities/parsers/snapshot-status.js';
import { createClusterResolver } from '../../activities/host-address.js';
import { clusterWorld } from '../helpers/sim-world.js';
import { failsWith } from '../helpers/failures.js';

const DESCRIPTION = `
name: etcdtest
version: 1.32.4
repository: [1.32.4]
nodes:
  - {name: cp, role: control-plane}
  - {name: worker, role: worker}
`;
const cluster = 'etcdtest';
const sha256 = (path: string) => createHash('sha256').update(readFileSync(path)).digest('hex');

describe('snapshotEtcd against the simulated control plane (real etcdctl/etcdutl, real etcd, SFTP)', () => {
  const tc = clusterWorld(DESCRIPTION);
  let acts: ReturnType<typeof createEtcdActivities>;
  before(async () => {
    acts = createEtcdActivities({ clusters: createClusterResolver(tc.clustersDir) });
  });
  const log = () => tc.sim.hosts.commandLog('cp').map((e) => e.command);

  it('saves, verifies, copies and hashes a snapshot as a non-root SSH user with sudo, heartbeating; the second call does not touch the host', async () => {
    assert.equal(tc.config.ssh.user, 'skewless', 'a non-root login');
    assert.equal(tc.config.ssh.sudo, true);
    const env = new MockActivityEnvironment();
    const beats: { step?: string }[] = [];
    env.on('heartbeat', (d: { step?: string }) => beats.push(d));
    const before = log().length;
    const result = await (env.run(acts.snapshotEtcd, { cluster, node: 'cp', hop: '1.33' }) as ReturnType<typeof acts.snapshotEtcd>);
    assert.equal(result.remotePath, '/var/lib/skewless/snapshots/etcd-etcdtest-1.33.db');
    assert.ok(result.localPath.startsWith(tc.config.snapshots.dir));
    assert.equal(result.sha256, sha256(result.localPath));
    assert.equal(result.sizeBytes, readFileSync(result.localPath).length);
    assert.ok(result.revision > 1 && result.totalKeys > 10, `a real API's keys: ${JSON.stringify(result)}`);
    assert.equal(readFileSync(`${result.localPath}.sha256`, 'utf8'), `${result.sha256}  etcd-etcdtest-1.33.db\n`);
    const ran = log().slice(before);
    assert.deepEqual(ran, [
      'sudo -n mkdir -p /var/lib/skewless/snapshots',
      'sudo -n ETCDCTL_API=3 etcdctl --endpoints=https://127.0.0.1:2379 --cacert=/etc/kubernetes/pki/etcd/ca.crt --cert=/etc/kubernetes/pki/etcd/server.crt --key=/etc/kubernetes/pki/etcd/server.key snapshot save /var/lib/skewless/snapshots/etcd-etcdtest-1.33.db',
      'sudo -n etcdutl snapshot status /var/lib/skewless/snapshots/etcd-etcdtest-1.33.db -w json',
      'sudo -n sha256sum /var/lib/skewless/snapshots/etcd-etcdtest-1.33.db',
      'sudo -n chown skewless /var/lib/skewless/snapshots/etcd-etcdtest-1.33.db',
    ]);
    assert.ok(
      beats.some((b) => b.step === 'copying snapshot'),
      JSON.stringify(beats),
    );
    // The snapshot stays private on the host: 0600, now the SSH user's rather than root's.
    const shell = createClusterResolver(tc.clustersDir)(cluster).shell;
    assert.equal((await shell.exec('cp', ['stat', '-c', '%a', result.remotePath], { timeoutMs: 30_000 })).stdout, '600\n');

    const mark = log().length;
    assert.deepEqual(await acts.snapshotEtcd({ cluster, node: 'cp', hop: '1.33' }), result);
    assert.equal(log().length, mark, 'no command on the host');
  });

  it("parses the host's json, table and simple status outputs of one snapshot to the same facts", async () => {
    const { remotePath, revision, totalKeys } = await acts.snapshotEtcd({ cluster, node: 'cp', hop: '1.33' });
    const shell = createClusterResolver(tc.clustersDir)(cluster).shell;
    const status = async (...w: string[]) =>
      parseSnapshotStatus(
        (await shell.exec('cp', ['etcdutl', 'snapshot', 'status', remotePath, ...w], { timeoutMs: 30_000, sudo: true })).stdout,
      );
    const [json, table, simple] = [await status('-w', 'json'), await status('-w', 'table'), await status()];
    assert.equal(json?.revision, revision);
    assert.equal(json?.totalKeys, totalKeys);
    for (const other of [table, simple]) assert.deepEqual({ ...other, totalSizeBytes: 0 }, { ...json, totalSizeBytes: 0 });
    assert.ok(Math.abs((table?.totalSizeBytes ?? 0) - (json?.totalSizeBytes ?? 0)) < 1e6 * 0.06, 'human size within rounding');
  });

  it('takes the snapshot again when the local copy no longer matches its recorded hash', async () => {
    const first = await acts.snapshotEtcd({ cluster, node: 'cp', hop: '1.33' });
    writeFileSync(first.localPath, 'corrupted');
    const mark = log().length;
    const again = await acts.snapshotEtcd({ cluster, node: 'cp', hop: '1.33' });
    assert.ok(log().length > mark);
    assert.equal(again.sha256, sha256(again.localPath));
  });

  it('fails VerificationFailed when snapshot status fails, recording nothing as verified', async () => {
    tc.sim.hosts.setFault('cp', {
      kind: 'fail',
      command: 'etcdutl snapshot status',
      exitCode: 1,
      stderr: 'Error: snapshot file integrity check failed',
    });
    const err = await failsWith(acts.snapshotEtcd({ cluster, node: 'cp', hop: '1.34' }), 'VerificationFailed');
    assert.equal(err.nonRetryable, true);
    assert.match(err.message, /integrity check failed/);
    assert.ok(!existsSync(`${tc.config.snapshots.dir}/etcd-etcdtest-1.34.db.sha256`));
  });

  it('falls back to etcdctl snapshot status where etcdutl is missing', async () => {
    tc.sim.hosts.setFault('cp', { kind: 'fail', command: 'etcdutl', exitCode: 127, stderr: 'bash: line 1: etcdutl: command not found' });
    const result = await acts.snapshotEtcd({ cluster, node: 'cp', hop: '1.35' });
    assert.ok(result.totalKeys > 0);
    assert.ok(log().includes('sudo -n ETCDCTL_API=3 etcdctl snapshot status /var/lib/skewless/snapshots/etcd-etcdtest-1.35.db -w json'));
  });

  it("a copy refused by the host (the file still root's) fails non-retryably, recording nothing as verified", async () => {
    tc.sim.hosts.setFault('cp', { kind: 'fail', command: 'chown', exitCode: 0, stderr: '' });
    const err = await failsWith(acts.snapshotEtcd({ cluster, node: 'cp', hop: '1.36' }), 'HostCommandFailed');
    assert.equal(err.nonRetryable, true);
    assert.match(err.message, /permission denied/i);
    assert.ok(
      !existsSync(`${tc.config.snapshots.dir}/etcd-etcdtest-1.36.db`) &&
        !existsSync(`${tc.config.snapshots.dir}/etcd-etcdtest-1.36.db.sha256`),
    );
  });

  it('refuses an ssh.user that could be read as an option of a host command', () => {
    const yaml = (user: string) =>
      `name: t\nkubeconfig: /k\nssh: {user: '${user}', privateKeyPath: /id, knownHostsPath: /kh}\nsnapshots: {dir: /s}\n`;
    assert.equal(parseClusterConfig(yaml('ops-1.admin'), 't.yaml').ssh.user, 'ops-1.admin');
    for (const user of ['-R', '--from=root', 'a b', 'x:y', 'a'.repeat(33)]) {
      assert.throws(
        () => parseClusterConfig(yaml(user), 't.yaml'),
        (e: unknown) => e instanceof ApplicationFailure && e.type === 'ClusterConfigInvalid',
        user,
      );
    }
  });

  it('rejects a hop that could leave the snapshot directory, before touching the host', async () => {
    const mark = log().length;
    await failsWith(acts.snapshotEtcd({ cluster, node: 'cp', hop: '../../etc/passwd' }), 'Invalid');
    assert.equal(log().length, mark);
  });
});
