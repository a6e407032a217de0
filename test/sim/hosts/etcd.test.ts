import assert from 'node:assert/strict';
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { describe, it, type TestContext } from 'node:test';
import type { EtcdTools, ManifestSeen } from '../../../sim/hosts/cluster-effects.js';
import { connect, run, startTestSim } from './ssh-client.js';
import { freePort } from '../../../tooling/free-port.js';
import { tempDir } from '../../helpers/temp-dir.js';

/** The real etcd binaries the simulation builds, if they are there yet. */
function findBinaries(): { etcd: string; etcdctl: string; etcdutl: string } | undefined {
  const cache = process.env.SKEWLESS_CACHE ?? join(homedir(), '.cache', 'skewless');
  if (!existsSync(cache)) return undefined;
  for (const dir of readdirSync(cache)
    .filter((d) => d.startsWith('simcluster-'))
    .sort()
    .reverse()) {
    const bin = join(cache, dir, 'bin');
    const paths = { etcd: join(bin, 'etcd'), etcdctl: join(bin, 'etcdctl'), etcdutl: join(bin, 'etcdutl') };
    if (Object.values(paths).every((p) => existsSync(p))) return paths;
  }
  return undefined;
}

const execText = (file: string, args: string[]): Promise<{ code: number; stdout: string; stderr: string }> =>
  new Promise((resolve) => {
    execFile(file, args, (err, stdout, stderr) =>
      resolve({ code: err ? (typeof err.code === 'number' ? err.code : 1) : 0, stdout, stderr }),
    );
  });

/** A real single-member etcd on loopback, stopped when the test ends. */
async function startEtcd(t: TestContext, bins: NonNullable<ReturnType<typeof findBinaries>>): Promise<EtcdTools> {
  const [client, peer] = [await freePort(), await freePort()];
  const dataDir = tempDir('etcd');
  const endpoint = `http://127.0.0.1:${client}`;
  const proc: ChildProcess = spawn(
    bins.etcd,
    [
      '--name',
      'sim',
      '--data-dir',
      dataDir,
      '--listen-client-urls',
      endpoint,
      '--advertise-client-urls',
      endpoint,
      '--listen-peer-urls',
      `http://127.0.0.1:${peer}`,
      '--initial-advertise-peer-urls',
      `http://127.0.0.1:${peer}`,
      '--initial-cluster',
      `sim=http://127.0.0.1:${peer}`,
      '--log-level',
      'error',
    ],
    { stdio: 'ignore' },
  );
  t.after(() => void proc.kill());
  const deadline = Date.now() + 20_000;
  while ((await execText(bins.etcdctl, [`--endpoints=${endpoint}`, 'put', 'registry/hello', 'world'])).code !== 0) {
    assert.ok(Date.now() < deadline, 'etcd did not come up within 20 s');
    await new Promise((r) => setTimeout(r, 100));
  }
  return { endpoint, etcdctl: bins.etcdctl, etcdutl: bins.etcdutl };
}

const TLS =
  '--cacert=/etc/kubernetes/pki/etcd/ca.crt --cert=/etc/kubernetes/pki/etcd/healthcheck-client.crt --key=/etc/kubernetes/pki/etcd/healthcheck-client.key';
const bins = findBinaries();

describe('etcdctl and etcdutl on a simulated control plane', () => {
  it(
    'snapshot save/status run the real tools against the real etcd, inside the host root',
    {
      skip:
        !bins &&
        'the real etcd, etcdctl and etcdutl are not built yet (~/.cache/skewless/simcluster-*/bin/); run sim/build/build-binaries.sh',
    },
    async (t) => {
      const etcd = await startEtcd(t, bins!);
      const { sim, stateDir } = await startTestSim(t, { etcd });
      const save = await run(
        sim,
        'cp-1',
        `sudo mkdir -p /var/lib/etcd-backup && sudo ETCDCTL_API=3 etcdctl --endpoints=https://127.0.0.1:2379 ${TLS} snapshot save /var/lib/etcd-backup/snap.db`,
        30_000,
      );
      assert.equal(save.code, 0, save.stderr);
      assert.match(save.stdout + save.stderr, /Snapshot saved at \/var\/lib\/etcd-backup\/snap\.db/);
      assert.doesNotMatch(save.stdout + save.stderr, new RegExp(stateDir), 'host-root paths are mapped back');
      const local = join(stateDir, 'hosts', 'cp-1', 'root', 'var', 'lib', 'etcd-backup', 'snap.db');
      assert.ok(existsSync(local));

      for (const command of [
        'sudo etcdctl snapshot status /var/lib/etcd-backup/snap.db -w json',
        'sudo etcdutl snapshot status /var/lib/etcd-backup/snap.db --write-out=json',
      ]) {
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
      const sftpRead = (): Promise<Buffer> =>
        new Promise<Buffer>((resolve, reject) =>
          client.sftp((err, sftp) =>
            err ? reject(err) : sftp.readFile('/var/lib/etcd-backup/snap.db', (e, data) => (e ? reject(e) : resolve(data))),
          ),
        );
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
    },
  );

  it(
    'etcdctl is refused like the real one: no TLS files on a worker, no TLS flags, no root, unsupported subcommands',
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
      assert.deepEqual(
        [notRoot.code, notRoot.stderr],
        [128, 'Error: open /etc/kubernetes/pki/etcd/healthcheck-client.key: permission denied\n'],
      );
      const del = await run(sim, 'cp-1', `sudo etcdctl ${TLS} del registry/hello`);
      assert.equal(del.code, 2);
      assert.equal(
        (await execText(etcd.etcdctl, [`--endpoints=${etcd.endpoint}`, 'get', 'registry/hello', '--print-value-only'])).stdout,
        'world\n',
      );
    },
  );

  it(
    'a restore as an operator does it: manifests moved out and back (the kubelet hook hears each change, pgrep sees the static pods), the real etcdutl snapshot restore into a fresh dir, mv swaps it in',
    { skip: !bins && 'the real etcd, etcdctl and etcdutl are not built yet (~/.cache/skewless/simcluster-*/bin/)' },
    async (t) => {
      const etcd = await startEtcd(t, bins!);
      const heard: [string, string[]][] = [];
      const runningPods = new Map<string, string[]>();
      const staticPods = {
        changed: (node: string, manifests: readonly ManifestSeen[]) => {
          heard.push([node, manifests.map((m) => m.file)]);
          runningPods.set(
            node,
            manifests.map((m) => m.file.replace(/\.yaml$/, '')),
          );
          return Promise.resolve();
        },
        running: (node: string) => runningPods.get(node) ?? [],
      };
      const { sim, stateDir } = await startTestSim(t, { etcd, staticPods });
      const all = ['etcd.yaml', 'kube-apiserver.yaml', 'kube-controller-manager.yaml', 'kube-scheduler.yaml'];
      assert.deepEqual(
        heard.filter(([n]) => n === 'cp-1'),
        [['cp-1', all]],
        'a new simulator reports what the kubelet finds',
      );
      assert.equal((await run(sim, 'cp-1', "pgrep -l -x 'etcd|kube-apiserver'")).stdout, '1200 etcd\n1201 kube-apiserver\n');
      const manifest = await run(sim, 'cp-1', 'sudo cat /etc/kubernetes/manifests/etcd.yaml');
      assert.match(manifest.stdout, /- --name=cp-1\n[\s\S]*path: \/var\/lib\/etcd\n/);

      assert.equal(
        (await run(sim, 'cp-1', 'mv /etc/kubernetes/manifests/etcd.yaml /tmp/etcd.yaml')).code,
        1,
        'moving a manifest needs root',
      );
      const park = await run(
        sim,
        'cp-1',
        'sudo mkdir -p /etc/kubernetes/parked && sudo mv /etc/kubernetes/manifests/etcd.yaml /etc/kubernetes/parked/etcd.yaml && sudo mv /etc/kubernetes/manifests/kube-apiserver.yaml /etc/kubernetes/parked',
      );
      assert.equal(park.code, 0, park.stderr);
      assert.deepEqual(
        heard.slice(-2),
        [
          ['cp-1', all.slice(1)],
          ['cp-1', all.slice(2)],
        ],
        'one report per command that changed the dir',
      );
      assert.equal((await run(sim, 'cp-1', "pgrep -x 'etcd|kube-apiserver'")).code, 1);
      assert.deepEqual((await run(sim, 'cp-1', 'sudo mv /nope /tmp/x')).stderr, "mv: cannot stat '/nope': No such file or directory\n");

      await run(
        sim,
        'cp-1',
        `sudo mkdir -p /var/lib/backup && sudo ETCDCTL_API=3 etcdctl ${TLS} snapshot save /var/lib/backup/snap.db`,
        30_000,
      );
      const restore = (dir: string, sudo = 'sudo ') =>
        run(
          sim,
          'cp-1',
          `${sudo}etcdutl snapshot restore /var/lib/backup/snap.db --data-dir ${dir} --name cp-1 --initial-cluster cp-1=https://10.0.0.11:2380,cp-2=https://10.0.0.12:2380 --initial-advertise-peer-urls https://10.0.0.11:2380 --bump-revision 1000 --mark-compacted`,
          30_000,
        );
      assert.equal((await restore('/var/lib/etcd-new', '')).code, 1, 'etcdutl restore writes a new dir: root only');
      const restored = await restore('/var/lib/etcd-new');
      assert.equal(restored.code, 0, restored.stderr);
      assert.doesNotMatch(restored.stdout + restored.stderr, new RegExp(stateDir), 'host-root paths are mapped back');
      assert.ok(existsSync(join(stateDir, 'hosts', 'cp-1', 'root', 'var', 'lib', 'etcd-new', 'member', 'snap', 'db')));
      assert.notEqual((await restore('/var/lib/etcd-new')).code, 0, 'the real etcdutl refuses a data dir that exists');
      assert.equal(
        (await run(sim, 'cp-1', 'sudo etcdutl snapshot restore /var/lib/backup/snap.db --data-dir /var/lib/x --no-such-flag')).code,
        2,
        'an unknown flag is not simulated',
      );
      const swap = await run(sim, 'cp-1', 'sudo mv /var/lib/etcd /var/lib/etcd.old && sudo mv /var/lib/etcd-new /var/lib/etcd');
      assert.equal(swap.code, 0, swap.stderr);
      assert.ok(existsSync(join(stateDir, 'hosts', 'cp-1', 'root', 'var', 'lib', 'etcd', 'member', 'snap', 'db')));
      assert.match(
        (await run(sim, 'cp-1', 'sudo mv -T /var/lib/etcd.old /var/lib/etcd')).stderr,
        /^mv: cannot move '\/var\/lib\/etcd.old' to '\/var\/lib\/etcd': Directory not empty/,
        '-T: never into the dir',
      );
      assert.equal((await run(sim, 'cp-1', 'sudo mv /var/lib/etcd.old /var/lib/etcd')).code, 0, 'without -T, into it, as GNU mv');
      assert.ok(existsSync(join(stateDir, 'hosts', 'cp-1', 'root', 'var', 'lib', 'etcd', 'etcd.old')));
      const back = await run(sim, 'cp-1', 'sudo mv /etc/kubernetes/parked/etcd.yaml /etc/kubernetes/manifests/etcd.yaml');
      assert.equal(back.code, 0, back.stderr);
      assert.deepEqual(heard.at(-1), ['cp-1', ['etcd.yaml', ...all.slice(2)]]);
    },
  );
});
