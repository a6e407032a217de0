import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import type { SFTPWrapper } from 'ssh2';
import { connect, hostSpec, run, startTestSim } from './ssh-client.js';

const sftpOf = (client: Awaited<ReturnType<typeof connect>>): Promise<SFTPWrapper> =>
  new Promise((resolve, reject) => client.sftp((err, sftp) => (err ? reject(err) : resolve(sftp))));
const call = <T>(fn: (cb: (err: Error | null | undefined, value: T) => void) => void): Promise<T> =>
  new Promise((resolve, reject) => fn((err, value) => (err ? reject(err) : resolve(value))));

describe('files on a simulated host', () => {
  it('SFTP reads files and lists directories of the host root; writes only where the login user may (/tmp, home), the file then its', async (t) => {
    const { sim, stateDir } = await startTestSim(t);
    const content = Buffer.alloc(300_000, 7);
    content.write('etcd snapshot');
    mkdirSync(join(stateDir, 'hosts', 'cp-1', 'root', 'var', 'lib', 'etcd-backup'), { recursive: true });
    writeFileSync(join(stateDir, 'hosts', 'cp-1', 'root', 'var', 'lib', 'etcd-backup', 'snap.db'), content);
    const client = await connect(sim, 'cp-1');
    t.after(() => client.end());
    const sftp = await sftpOf(client);

    const read = await call<Buffer>((cb) => sftp.readFile('/var/lib/etcd-backup/snap.db', cb));
    assert.ok(read.equals(content), 'the bytes come back intact');
    const st = await call<{ size: number; isFile(): boolean }>((cb) => sftp.stat('/var/lib/etcd-backup/snap.db', cb));
    assert.equal(st.size, content.length);
    assert.ok(st.isFile());
    const names = await call<{ filename: string }[]>((cb) => sftp.readdir('/var/lib/etcd-backup', cb));
    assert.deepEqual(
      names.map((n) => n.filename),
      ['snap.db'],
    );
    assert.equal(await call<string>((cb) => sftp.realpath('.', cb)), '/home/skewless');
    assert.equal((await call<Buffer>((cb) => sftp.readFile('/etc/hostname', cb))).toString(), 'cp-1\n');

    const refused = (err: { code?: number }): boolean => err.code === 3; // SSH_FX_PERMISSION_DENIED
    await assert.rejects(
      call((cb) => sftp.writeFile('/etc/x', 'data', (err) => cb(err, undefined))),
      refused,
    );
    await assert.rejects(
      call((cb) => sftp.writeFile('/var/lib/etcd-backup/snap.db', 'data', (err) => cb(err, undefined))),
      refused,
    );
    await call((cb) => sftp.writeFile('/tmp/x', 'data', { mode: 0o600 }, (err) => cb(err, undefined)));
    assert.equal((await run(sim, 'cp-1', 'cat /tmp/x')).stdout, 'data', "the login user's file");
    assert.equal((await run(sim, 'cp-1', 'stat -c %a /tmp/x')).stdout, '600\n');
    await assert.rejects(
      call((cb) => sftp.unlink('/var/lib/etcd-backup/snap.db', (err) => cb(err, undefined))),
      refused,
    );
    await assert.rejects(
      call((cb) => sftp.mkdir('/tmp/d', (err) => cb(err, undefined))),
      refused,
    );
    await assert.rejects(
      call((cb) => sftp.rename('/etc/hostname', '/etc/h', (err) => cb(err, undefined))),
      refused,
    );
    await assert.rejects(
      call((cb) => sftp.readFile('/../../../../etc/passwd', cb)),
      refused,
    );
    await assert.rejects(
      call((cb) => sftp.readFile('/no/such/file', cb)),
      (err: { code?: number }) => err.code === 2,
    );
    assert.ok((await call<Buffer>((cb) => sftp.readFile('/var/lib/etcd-backup/snap.db', cb))).equals(content), 'still there');
  });

  it('reads follow owner and mode: a root-owned 0600 file is refused to the login user until sudo chown hands it over; a root login reads it', async (t) => {
    const { sim, stateDir } = await startTestSim(t);
    const dir = join(stateDir, 'hosts', 'cp-1', 'root', 'var', 'lib', 'backup');
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, 'secret.db'), 'root only', { mode: 0o600 });
    writeFileSync(join(dir, 'open.db'), 'anyone');
    const client = await connect(sim, 'cp-1');
    t.after(() => client.end());
    const sftp = await sftpOf(client);
    const read = (path: string) => call<Buffer>((cb) => sftp.readFile(path, cb)).then((b) => b.toString());
    const denied = (err: { code?: number }): boolean => err.code === 3;

    await assert.rejects(read('/var/lib/backup/secret.db'), denied);
    assert.equal(await read('/var/lib/backup/open.db'), 'anyone', 'mode 0644: others may read');
    const cat = await run(sim, 'cp-1', 'cat /var/lib/backup/secret.db');
    assert.deepEqual([cat.code, cat.stderr], [1, 'cat: /var/lib/backup/secret.db: Permission denied\n']);
    assert.equal((await run(sim, 'cp-1', 'sudo cat /var/lib/backup/secret.db')).stdout, 'root only');
    const notRoot = await run(sim, 'cp-1', 'chown skewless: /var/lib/backup/secret.db');
    assert.deepEqual(
      [notRoot.code, notRoot.stderr],
      [1, "chown: changing ownership of '/var/lib/backup/secret.db': Operation not permitted\n"],
    );
    const stranger = await run(sim, 'cp-1', 'sudo chown mallory /var/lib/backup/secret.db');
    assert.deepEqual([stranger.code, stranger.stderr], [1, "chown: invalid user: 'mallory'\n"]);
    assert.equal((await run(sim, 'cp-1', 'sudo chown -R skewless /var/lib/backup')).code, 2, 'options are not simulated');

    assert.equal((await run(sim, 'cp-1', 'sudo chown skewless /var/lib/backup/secret.db')).code, 0);
    assert.equal(await read('/var/lib/backup/secret.db'), 'root only');
    assert.equal((await run(sim, 'cp-1', 'cat /var/lib/backup/secret.db')).stdout, 'root only');
    assert.equal((await run(sim, 'cp-1', 'sudo chown root: /var/lib/backup/secret.db')).code, 0);
    await assert.rejects(read('/var/lib/backup/secret.db'), denied, 'given back to root');
    // Ownership is host state: it outlives the connection and is forgotten with the file.
    assert.equal((await run(sim, 'cp-1', 'sudo chown skewless /var/lib/backup/secret.db && sudo rm -f /var/lib/backup/secret.db')).code, 0);
    writeFileSync(join(dir, 'secret.db'), 'a new file', { mode: 0o600 });
    await assert.rejects(read('/var/lib/backup/secret.db'), denied, "a new file at the same path is root's again");

    const asRoot = await startTestSim(t, { user: 'root' });
    const rootDir = join(asRoot.stateDir, 'hosts', 'cp-1', 'root', 'var', 'lib', 'backup');
    mkdirSync(rootDir, { recursive: true });
    writeFileSync(join(rootDir, 'secret.db'), 'root only', { mode: 0o600 });
    const rootClient = await connect(asRoot.sim, 'cp-1');
    t.after(() => rootClient.end());
    const rootSftp = await sftpOf(rootClient);
    assert.equal(
      (await call<Buffer>((cb) => rootSftp.readFile('/var/lib/backup/secret.db', cb))).toString(),
      'root only',
      'root reads any file',
    );
    assert.equal(
      (await run(asRoot.sim, 'cp-1', 'chown root /var/lib/backup/secret.db && cat /var/lib/backup/secret.db')).stdout,
      'root only',
      'and needs no sudo',
    );
  });

  it('mkdir/test/sha256sum/stat/rm/cat behave like coreutils, within the host root', async (t) => {
    const { sim, stateDir } = await startTestSim(t);
    const denied = await run(sim, 'cp-1', 'mkdir -p /var/lib/etcd-backup');
    assert.deepEqual([denied.code, denied.stderr], [1, "mkdir: cannot create directory '/var/lib/etcd-backup': Permission denied\n"]);
    assert.equal((await run(sim, 'cp-1', 'sudo mkdir -p /var/lib/etcd-backup && sudo mkdir -p /var/lib/etcd-backup')).code, 0);
    const file = join(stateDir, 'hosts', 'cp-1', 'root', 'var', 'lib', 'etcd-backup', 'snap.db');
    writeFileSync(file, 'snapshot bytes');
    const digest = createHash('sha256').update('snapshot bytes').digest('hex');
    const r = await run(
      sim,
      'cp-1',
      'test -f /var/lib/etcd-backup/snap.db && sha256sum /var/lib/etcd-backup/snap.db && stat -c %s /var/lib/etcd-backup/snap.db',
    );
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout, `${digest}  /var/lib/etcd-backup/snap.db\n14\n`);
    assert.equal((await run(sim, 'cp-1', 'test -d /var/lib/etcd-backup')).code, 0);
    assert.equal((await run(sim, 'cp-1', 'test -f /var/lib/etcd-backup')).code, 1);
    assert.equal((await run(sim, 'cp-1', 'rm -f /var/lib/etcd-backup/snap.db')).code, 1, 'rm needs root there');
    assert.equal((await run(sim, 'cp-1', 'sudo rm -f /var/lib/etcd-backup/snap.db && sudo rm -f /var/lib/etcd-backup/snap.db')).code, 0);
    const gone = await run(sim, 'cp-1', 'test -f /var/lib/etcd-backup/snap.db || true');
    assert.equal(gone.code, 2, '|| is refused');
    assert.equal((await run(sim, 'cp-1', 'test -f /var/lib/etcd-backup/snap.db')).code, 1);
    const missing = await run(sim, 'cp-1', 'stat -c %s /nope');
    assert.deepEqual([missing.code, missing.stderr], [1, "stat: cannot statx '/nope': No such file or directory\n"]);
    assert.match((await run(sim, 'cp-1', 'cat /etc/os-release')).stdout, /^VERSION_CODENAME=bookworm$/m);
    assert.equal((await run(sim, 'cp-1', "echo hello 'big world' && hostname")).stdout, 'hello big world\ncp-1\n');
    const escape = await run(sim, 'cp-1', 'cat /etc/../../../../etc/passwd');
    assert.equal(escape.code, 2);
    assert.match(escape.stderr, /path escapes the host root/);
  });

  it("an unknown command is 127 with bash's message and stops an && chain; unsupported syntax is 2", async (t) => {
    const { sim } = await startTestSim(t);
    const unknown = await run(sim, 'w-1', 'true && foo --bar && echo never');
    assert.deepEqual([unknown.code, unknown.stdout, unknown.stderr], [127, '', 'bash: line 1: foo: command not found\n']);
    const seq = await run(sim, 'w-1', 'foo; echo after');
    assert.deepEqual([seq.code, seq.stdout], [0, 'after\n'], '; runs on, and the last status counts');
    const syntax = await run(sim, 'w-1', 'echo $(hostname)');
    assert.equal(syntax.code, 2);
    assert.match(syntax.stderr, /^sim: unsupported shell syntax: \$\(\.\.\.\)\n$/);
    assert.deepEqual(
      sim.commandLog('w-1').map((e) => e.exitCode),
      [127, 0, 2],
    );
  });

  it('stat -fc %T /sys/fs/cgroup/ tells the cgroup version as kubernetes.io says a node does: cgroup2fs (v2, the default), tmpfs (v1)', async (t) => {
    const { sim } = await startTestSim(t, { hosts: [hostSpec('cp-1', 'control-plane'), hostSpec('w-1', 'worker', { cgroup: 'v1' })] });
    assert.deepEqual(await run(sim, 'cp-1', 'stat -fc %T /sys/fs/cgroup/'), { code: 0, stdout: 'cgroup2fs\n', stderr: '' });
    assert.equal((await run(sim, 'w-1', 'stat -f -c %T /sys/fs/cgroup')).stdout, 'tmpfs\n');
    const other = await run(sim, 'w-1', 'stat -fc %T /var/lib');
    assert.equal(other.code, 2, 'only the cgroup mount is modelled: anything else says so');
    assert.match(other.stderr, /not simulated/);
  });
});
