import assert from 'node:assert/strict';
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { homedir, tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it, type TestContext } from 'node:test';
import type { EtcdTools } from '../../../sim/hosts/cluster-effects.js';
import { connect, run, startTestSim } from './ssh-client.js';

/** The real etcd binaries the simulation builds, if they are there yet. */
function findBinaries(): { etcd: string; etcdctl: string; etcdutl: string } | undefined {
  const cache = process.env.SKEWLESS_CACHE ?? join(homedir(), '.cache', 'skewless');
  if (!existsSync(cache)) return undefined;
  for (const dir of readdirSync(cache).filter((d) => d.startsWith('simcluster-')).sort().reverse()) {
    const bin = join(cache, dir, 'bin');
    const paths = { etcd: join(bin, 'etcd'), etcdctl: join(bin, 'etcdctl'), etcdutl: join(bin, 'etcdutl') };
    if (Object.values(paths).every((p) => existsSync(p))) return paths;
  }
  return undefined;
}

const freePort = (): Promise<number> => new Promise((resolve, reject) => {
  const s = createServer();
  s.once('error', reject);
  s.listen(0, '127.0.0.1', () => {
    const { port } = s.address() as { port: number };
    s.close(() => resolve(port));
  });
});

const execText = (file: string, args: string[]): Promise<{ code: number; stdout: string; stderr: string }> => new Promise((resolve) => {
  execFile(file, args, (err, stdout, stderr) => resolve({ code: err ? (typeof err.code === 'number' ? err.code : 1) : 0, stdout, stderr }));
});

/** A real single-member etcd on loopback, stopped when the test ends. */
async function startEtcd(t: TestContext, bins: NonNullable<ReturnType<typeof findBinaries>>): Promise<EtcdTools> {
  const [client, peer] = [await freePort(), await freePort()];
  const dataDir = mkdtempSync(join(tmpdir(), 'skewless-etcd-'));
  const endpoint = `http://127.0.0.1:${client}`;
  const proc: ChildProcess = spawn(bins.etcd, ['--name', 'sim', '--data-dir', dataDir, '--listen-client-urls', endpoint,
    '--advertise-client-urls', endpoint, '--listen-peer-urls', `http://127.0.0.1:${peer}`,
    '--initial-advertise-peer-urls', `http://127.0.0.1:${peer}`, '--initial-cluster', `sim=http://127.0.0.1:${peer}`, '--log-level', 'error'],
  { stdio: 'ignore' });
  t.after(() => void proc.kill());
  const deadline = Date.now() + 20_000;
  while ((await execText(bins.etcdctl, [`--endpoints=${endpoint}`, 'put', 'registry/hello', 'world'])).code !== 0) {
    assert.ok(Date.now() < deadline, 'etcd did not come up within 20 s');
    await new Promise((r) => setTimeout(r, 100));
  }
  return { endpoint, etcdctl: bins.etcdctl, etcdutl: bins.etcdutl };
}

const TLS = '--cacert=/etc/kubernetes/pki/etcd/ca.crt --cert=/etc/kubernetes/pki/etcd/healthcheck-client.crt --key=/etc/kubernetes/pki/etcd/healthcheck-client.key';
const bins = findBinaries();

describe('etcdctl and etcdutl on a simulated control plane', () => {
  it('snapshot save/status run the real tools against the real etcd, inside the host root',
    { skip: !bins && 'the real etcd, etcdctl and etcdutl are not built yet (~/.cache/skewless/simcluster-*/bin/); run sim/build/build-binaries.sh' },
    async (t) => {
      const etcd = await startEtcd(t, bins!);
      const { sim, stateDir } = await startTestSim(t, { etcd });
      const save = await run(sim, 'cp-1',
        `sudo mkdir -p /var/lib/etcd-backup && sudo ETCDCTL_API=3 etcdctl --endpoints=https://127.0.0.1:2379 ${TLS} snapshot save /var/lib/etcd-backup/snap.db`, 30_000);
      assert.equal(save.code, 0, save.stderr);
      assert.match(save.stdout + save.stderr, /Snapshot saved at \/var\/lib\/etcd-backup\/snap\.db/);
      assert.doesNotMatch(save.stdout + save.stderr, new RegExp(stateDir), 'host-root paths are mapped back');
      const local = join(stateDir, 'hosts', 'cp-1', 'root', 'var', 'lib', 'etcd-backup', 'snap.db');
      assert.ok(existsSync(local));

      for (const command of ['sudo etcdctl snapshot status /var/lib/etcd-backup/snap.db -w json', 'sudo etcdutl snapshot status /var/lib/etcd-backup/snap.db --write-out=json']) {
        const status = await run(sim, 'cp-1', command, 30_000);
        assert.equal(status.code, 0, status.stderr);
        const parsed = JSON.parse(status.stdout) as { hash: number; revision: number; totalKey: number };
        assert.ok(parsed.revision >= 2 && parsed.totalKey >= 1, status.stdout);
      }

      // Saved through sudo, the snapshot is root's with mode 0600 (the real etcdctl's own mode), as on a
      // real host: the login user can neither SFTP it nor read it without sudo until it is handed over.
      assert.equal((await run(sim, 'cp-1', 'stat -c %a /var/lib/etcd-backup/snap.db')).stdout, '600\n');
      const client = await connect(sim, 'cp-1');
      t.after(() => client.end());
      const sftpRead = (): Promise<Buffer> => new Promise<Buffer>((resolve, reject) => client.sftp((err, sftp) => (err ? reject(err)
        : sftp.readFile('/var/lib/etcd-backup/snap.db', (e, data) => (e ? reject(e) : resolve(data))))));
      await assert.rejects(sftpRead(), (err: { code?: number }) => err.code === 3, 'SFTP: permission denied');
      const notRoot = await run(sim, 'cp-1', 'sha256sum /var/lib/etcd-backup/snap.db');
      assert.deepEqual([notRoot.code, notRoot.stderr], [1, 'sha256sum: /var/lib/etcd-backup/snap.db: Permission denied\n']);
      assert.equal((await run(sim, 'cp-1', 'etcdutl snapshot status /var/lib/etcd-backup/snap.db')).code, 1);
      assert.equal((await run(sim, 'cp-1', 'chown skewless /var/lib/etcd-backup/snap.db')).code, 1, 'chown needs root');
      assert.equal((await run(sim, 'cp-1', 'sudo chown skewless /var/lib/etcd-backup/snap.db')).code, 0);
      // The product copies the snapshot off the node with SFTP: the same bytes.
      assert.ok((await sftpRead()).equals(readFileSync(local)));

      const health = await run(sim, 'cp-1', `sudo etcdctl --endpoints=https://127.0.0.1:2379 ${TLS} endpoint health`, 30_000);
      assert.equal(health.code, 0, health.stderr);
      assert.match(health.stdout + health.stderr, /is healthy/);
    });

  it('etcdctl is refused like the real one: no TLS files on a worker, no TLS flags, no root, unsupported subcommands',
    { skip: !bins && 'the real etcd, etcdctl and etcdutl are not built yet (~/.cache/skewless/simcluster-*/bin/)' },
    async (t) => {
      const etcd = await startEtcd(t, bins!);
      const { sim } = await startTestSim(t, { etcd });
      const worker = await run(sim, 'w-1', `sudo etcdctl --endpoints=https://127.0.0.1:2379 ${TLS} snapshot save /tmp/s.db`);
      assert.deepEqual([worker.code, worker.stderr], [128, 'Error: open /etc/kubernetes/pki/etcd/ca.crt: no such file or directory\n']);
      const noTls = await run(sim, 'cp-1', 'sudo etcdctl --endpoints=https://127.0.0.1:2379 snapshot save /tmp/s.db');
      assert.equal(noTls.code, 1);
      assert.match(noTls.stderr, /context deadline exceeded/);
      const notRoot = await run(sim, 'cp-1', `etcdctl ${TLS} snapshot save /tmp/s.db`);
      assert.deepEqual([notRoot.code, notRoot.stderr], [128, 'Error: open /etc/kubernetes/pki/etcd/healthcheck-client.key: permission denied\n']);
      const del = await run(sim, 'cp-1', `sudo etcdctl ${TLS} del registry/hello`);
      assert.equal(del.code, 2);
      assert.equal((await execText(etcd.etcdctl, [`--endpoints=${etcd.endpoint}`, 'get', 'registry/hello', '--print-value-only'])).stdout, 'world\n');
    });
});
