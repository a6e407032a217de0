import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { ApplicationFailure } from '@temporalio/common';
import type { ClusterConfig } from '../../activities/cluster-config.js';
import { hostKeyPolicy, hostsFieldMatches, keyAccepted } from '../../activities/host-known-hosts.js';
import { commandLine, quoteWord } from '../../activities/shell-words.js';
import { createClusterResolver, defaultAddressResolver } from '../../activities/host-address.js';
import { createSshShell, type SshShell } from '../../activities/ssh-shell.js';
import { clusterWorld } from '../helpers/sim-world.js';
import { failsWith } from '../helpers/failures.js';
import { tempDir } from '../helpers/temp-dir.js';

const NASTY = [
  'plain',
  'two words',
  "it's",
  'semi;colon',
  '$(touch /tmp/pwned)',
  '`id`',
  '$HOME',
  '*',
  '?',
  '[a]',
  '~',
  '#hash',
  'a&&b',
  'x|y',
  'new\nline',
  'back\\slash',
  '"double"',
  "''",
  '',
  'A=b',
  '=lead',
  '--flag=x y',
  'ünïcødé',
  '\t tab',
  '{a,b}',
  '!bang',
  "'\\''",
];

/** Asserts a promise fails with an ApplicationFailure of `type`; returns it. */
describe('shell-words: quoting argv for a POSIX shell', () => {
  it('round-trips nasty words through a real /bin/sh as literal arguments', () => {
    const line = `printf '%s\\0' ${NASTY.map(quoteWord).join(' ')}`;
    const out = execFileSync('/bin/sh', ['-c', line], { encoding: 'utf8', cwd: tmpdir() });
    assert.deepEqual(out.split('\0').slice(0, -1), NASTY);
  });

  it('leaves plain words readable and quotes the rest', () => {
    assert.equal(quoteWord('kubeadm=1.33.7-1.1'), 'kubeadm=1.33.7-1.1');
    assert.equal(quoteWord('/etc/kubernetes/pki/etcd/ca.crt'), '/etc/kubernetes/pki/etcd/ca.crt');
    assert.equal(quoteWord("it's"), `'it'\\''s'`);
    assert.equal(quoteWord(''), "''");
    assert.throws(() => quoteWord('a\0b'));
  });

  it('builds sudo/env prefixes, validates env names, and never lets the command word become an assignment', () => {
    assert.equal(
      commandLine(['apt-get', 'install', '-y'], { sudo: true, env: { DEBIAN_FRONTEND: 'noninteractive', X: 'a b' } }),
      "sudo -n DEBIAN_FRONTEND=noninteractive X='a b' apt-get install -y",
    );
    assert.equal(commandLine(['A=b', 'c']), "'A=b' c");
    assert.throws(() => commandLine(['true'], { env: { lower: 'x' } }), /invalid environment variable name/);
    assert.throws(() => commandLine(['true'], { env: { 'A;B': 'x' } }), /invalid environment variable name/);
    assert.throws(() => commandLine(['true'], { env: { A: 'x\ny' } }), /invalid value/);
    const out = execFileSync('/bin/sh', ['-c', `${commandLine(['sh', '-c', 'printf %s "$V"'], { env: { V: '$(id) \'q\' "d"' } })}`], {
      encoding: 'utf8',
    });
    assert.equal(out, '$(id) \'q\' "d"');
  });
});

describe('known_hosts matching', () => {
  it('matches [host]:port, comma lists, wildcards with negation, hashed names, and honours @revoked', () => {
    assert.ok(hostsFieldMatches('[127.0.0.1]:2222,other', '[127.0.0.1]:2222'));
    assert.ok(!hostsFieldMatches('127.0.0.1', '[127.0.0.1]:2222'));
    assert.ok(hostsFieldMatches('*.example.com,!bad.example.com', 'cp-1.example.com'));
    assert.ok(!hostsFieldMatches('*.example.com,!bad.example.com', 'bad.example.com'));
    // Written by OpenSSH's `ssh-keygen -H` for the name "cp-1".
    const hashed = '|1|GIQuyPgMUKIX027Boucwd0nn3cs=|z0Rvh/4tkqovH/GiH16gHPpVAtM=';
    assert.ok(hostsFieldMatches(hashed, 'cp-1'));
    assert.ok(!hostsFieldMatches(hashed, 'cp-2'));
    const key = Buffer.from('key-blob').toString('base64');
    const policy = hostKeyPolicy(
      `# comment\nh ssh-ed25519 ${key}\n@revoked h ssh-ed25519 ${key}\n@cert-authority h ssh-ed25519 ${key}\n`,
      'h',
    );
    assert.equal(policy.accepted.length, 1);
    assert.ok(!keyAccepted(policy, Buffer.from('key-blob')), 'a revoked key is refused even if listed');
  });
});

const DESCRIPTION = `
name: sshtest
version: 1.32.4
repository: [1.32.4]
nodes:
  - {name: cp, role: control-plane}
  - {name: worker, role: worker, count: 4}
  - {name: pool, role: worker, count: 4}
`;

describe('createSshShell against the simulated hosts (real SSH)', () => {
  const tc = clusterWorld(DESCRIPTION);
  let config: ClusterConfig;
  let scratch: string;
  const shell = () => createSshShell(config, defaultAddressResolver(config, tc.workerKube));
  const log = (node: string) => tc.sim.hosts.commandLog(node);
  before(async () => {
    config = tc.config;
    scratch = tempDir('ssh-test');
  });
  after(() => rmSync(scratch, { recursive: true, force: true }));

  it('returns exit code, stdout and stderr of a command', async () => {
    const sh = shell();
    assert.deepEqual(await sh.exec('worker-1', ['hostname'], { timeoutMs: 10_000 }), { exitCode: 0, stdout: 'worker-1\n', stderr: '' });
    assert.equal((await sh.exec('worker-1', ['false'], { timeoutMs: 10_000 })).exitCode, 1);
    const missing = await sh.exec('worker-1', ['no-such-tool', 'x'], { timeoutMs: 10_000 });
    assert.equal(missing.exitCode, 127);
    assert.match(missing.stderr, /no-such-tool: command not found/);
  });

  it('passes nasty argv words as literal words (echoed back), and prefixes sudo -n and env only when asked', async () => {
    const sh = shell();
    const words = NASTY.filter((w) => !w.includes('\n')); // echo prints words joined by spaces, one line
    const r = await sh.exec('worker-1', ['echo', ...words], { timeoutMs: 10_000 });
    assert.equal(r.exitCode, 0, r.stderr);
    assert.equal(r.stdout, `${words.join(' ')}\n`);
    await sh.exec('worker-1', ['echo', 'root'], { timeoutMs: 10_000, sudo: true, env: { DEBIAN_FRONTEND: 'noninteractive', NOTE: 'a b' } });
    assert.equal(log('worker-1').at(-1)?.command, "sudo -n DEBIAN_FRONTEND=noninteractive NOTE='a b' echo root");
    const noSudo = createSshShell({ ...config, ssh: { ...config.ssh, sudo: false } }, defaultAddressResolver(config, tc.workerKube));
    await noSudo.exec('worker-1', ['echo', 'x'], { timeoutMs: 10_000, sudo: true });
    assert.equal(log('worker-1').at(-1)?.command, 'echo x');
    const before = log('worker-1').length;
    await failsWith(sh.exec('worker-1', ['echo'], { timeoutMs: 10_000, env: { 'bad-name': 'x' } }), 'Invalid');
    assert.equal(log('worker-1').length, before, 'nothing ran');
  });

  it('refuses a host whose key changed, naming the node and the fingerprint it saw; works again once re-trusted', async () => {
    tc.sim.hosts.setFault('worker-2', { kind: 'rotateHostKey' });
    const seen = tc.sim.hosts.hosts.find((h) => h.name === 'worker-2')!.hostKeyFingerprint;
    const before = log('worker-2').length;
    const err = await failsWith(shell().exec('worker-2', ['hostname'], { timeoutMs: 10_000 }), 'HostKeyMismatch');
    assert.equal(err.nonRetryable, true);
    assert.match(err.message, /worker-2/);
    assert.ok(err.message.includes(seen), `${err.message} names ${seen}`);
    assert.equal(log('worker-2').length, before, 'no command reached the host');
    tc.sim.hosts.trustHostKey('worker-2');
    assert.equal((await shell().exec('worker-2', ['hostname'], { timeoutMs: 10_000 })).stdout, 'worker-2\n');
  });

  it('refuses a host known_hosts does not list at all (no trust on first use)', async () => {
    const empty = join(scratch, 'known_hosts.empty');
    writeFileSync(empty, '# nobody\n');
    const sh = createSshShell({ ...config, ssh: { ...config.ssh, knownHostsPath: empty } }, defaultAddressResolver(config, tc.workerKube));
    const err = await failsWith(sh.exec('worker-1', ['hostname'], { timeoutMs: 10_000 }), 'HostKeyMismatch');
    assert.match(err.message, /is not in/);
  });

  it('reports an unreadable key or known_hosts file as ClusterConfigInvalid, not as a retry', async () => {
    const missing = join(scratch, 'no-such-file');
    for (const ssh of [
      { ...config.ssh, privateKeyPath: missing },
      { ...config.ssh, knownHostsPath: missing },
    ]) {
      const err = await failsWith(
        createSshShell({ ...config, ssh }, defaultAddressResolver(config, tc.workerKube)).exec('worker-1', ['true'], { timeoutMs: 10_000 }),
        'ClusterConfigInvalid',
      );
      assert.match(err.message, /ENOENT/);
    }
  });

  it('reports a refusing host as retryable HostUnreachable and succeeds once it listens again', async () => {
    tc.sim.hosts.setFault('worker-3', { kind: 'refuse', seconds: 2 });
    const err = await failsWith(shell().exec('worker-3', ['hostname'], { timeoutMs: 10_000 }), 'HostUnreachable');
    assert.notEqual(err.nonRetryable, true);
    assert.match(err.message, /ECONNREFUSED/);
    await new Promise((r) => setTimeout(r, 2500));
    assert.equal((await shell().exec('worker-3', ['hostname'], { timeoutMs: 10_000 })).stdout, 'worker-3\n');
  });

  it('abandons a hung command after its timeout (HostCommandTimedOut) and closes the channel', async () => {
    tc.sim.hosts.setFault('worker-4', { kind: 'hang', command: 'hostname', times: 1 });
    const started = Date.now();
    await failsWith(shell().exec('worker-4', ['hostname'], { timeoutMs: 700 }), 'HostCommandTimedOut');
    assert.ok(Date.now() - started < 5000);
    // The host sees the channel close: the hung command ends without an exit status.
    await waitUntil(() => log('worker-4').at(-1)?.command === 'hostname' && log('worker-4').at(-1)?.exitCode === null);
  });

  it('closes the channel when the AbortSignal fires (activity cancellation)', async () => {
    tc.sim.hosts.setFault('worker-4', { kind: 'hang', command: 'echo cancel-me', times: 1 });
    const abort = new AbortController();
    setTimeout(() => abort.abort(new Error('cancelled by test')), 400);
    const err = await shell()
      .exec('worker-4', ['echo', 'cancel-me'], { timeoutMs: 60_000, signal: abort.signal })
      .catch((e: Error) => e);
    assert.equal((err as Error).message, 'cancelled by test');
    await waitUntil(() => log('worker-4').at(-1)?.command === 'echo cancel-me' && log('worker-4').at(-1)?.exitCode === null);
  });

  it('downloads a file over SFTP atomically, leaving no temp file; a missing file is a non-retryable failure', async () => {
    const local = join(scratch, 'copies', 'os-release');
    await shell().download('cp', '/etc/os-release', local, { timeoutMs: 10_000 });
    assert.match(readFileSync(local, 'utf8'), /Debian GNU\/Linux 12/);
    const err = await failsWith(
      shell().download('cp', '/no/such/file', join(scratch, 'copies', 'missing'), { timeoutMs: 10_000 }),
      'HostCommandFailed',
    );
    assert.equal(err.nonRetryable, true);
    assert.deepEqual(readdirSync(join(scratch, 'copies')), ['os-release']);
  });

  it('resolves addresses from config overrides, else the Node InternalIP and ssh.port; caches clusters by name', async () => {
    const port = tc.sim.hosts.hosts.find((h) => h.name === 'cp')!.port;
    assert.deepEqual(await defaultAddressResolver(config, tc.workerKube)('cp'), { host: '127.0.0.1', port });
    assert.deepEqual(await defaultAddressResolver({ ...config, nodes: {}, ssh: { ...config.ssh, port: 2200 } }, tc.kube)('cp'), {
      host: '127.0.0.1',
      port: 2200,
    });
    await failsWith(defaultAddressResolver(config, tc.workerKube)('Bad Name'), 'Invalid');
    const resolve = createClusterResolver(tc.clustersDir);
    const access = resolve('sshtest');
    assert.equal(resolve('sshtest'), access);
    assert.equal((await access.shell.exec('cp', ['hostname'], { timeoutMs: 10_000 })).stdout, 'cp\n');
    assert.throws(
      () => resolve('nope'),
      (e: unknown) => e instanceof ApplicationFailure && e.type === 'ClusterConfigInvalid',
    );
    assert.ok(existsSync(config.ssh.knownHostsPath));
  });

  describe('the SSH connection pool against the simulated hosts (real SSH)', () => {
    const shells: SshShell[] = [];
    /** A shell as the worker has one (a connection outlives an activity), with a short idle time for the test. */
    const pooled = (idleMs = 60_000) => {
      const sh = createSshShell(config, defaultAddressResolver(config, tc.workerKube), { idleMs });
      shells.push(sh);
      return sh;
    };
    const accepted = (node: string) => tc.sim.hosts.connectionsAccepted(node);
    const open = (node: string) => tc.sim.hosts.connectionsOpen(node);
    const run = (sh: SshShell, node: string, signal?: AbortSignal, argv = ['hostname']) =>
      sh.exec(node, argv, { timeoutMs: 10_000, ...(signal ? { signal } : {}) });
    after(() => {
      for (const sh of shells) sh.close();
    });

    it('a second activity execution (another cancellation signal) reuses the connection the first one made', async () => {
      const sh = pooled();
      const before = accepted('pool-1');
      assert.equal((await run(sh, 'pool-1', new AbortController().signal)).stdout, 'pool-1\n');
      assert.equal((await run(sh, 'pool-1', new AbortController().signal)).stdout, 'pool-1\n');
      await Promise.all([run(sh, 'pool-1'), run(sh, 'pool-1'), run(sh, 'pool-1')]);
      assert.equal(accepted('pool-1') - before, 1, 'one handshake for five commands, three of them at once');
      assert.equal(open('pool-1'), 1);
    });

    it('closes a connection once idle, and close() closes the rest', async () => {
      const sh = pooled(300);
      const before = accepted('pool-2');
      await run(sh, 'pool-2');
      assert.equal(open('pool-2'), 1);
      await waitUntil(() => open('pool-2') === 0);
      await run(sh, 'pool-2');
      assert.equal(accepted('pool-2') - before, 2, 'the idle one was closed: the next command met the host afresh');

      const kept = pooled();
      await run(kept, 'pool-2');
      assert.equal(open('pool-2'), 2);
      kept.close();
      await waitUntil(() => open('pool-2') <= 1);
    });

    it('a host key that changed is refused when a connection is made; the open one was checked when it was made', async () => {
      const sh = pooled(300);
      await run(sh, 'pool-3');
      tc.sim.hosts.setFault('pool-3', { kind: 'rotateHostKey' });
      // The open connection is to the host whose key was checked; a reinstalled host would have closed it.
      assert.equal((await run(sh, 'pool-3')).stdout, 'pool-3\n');
      await waitUntil(() => open('pool-3') === 0);
      const before = tc.sim.hosts.commandLog('pool-3').length;
      const err = await failsWith(run(sh, 'pool-3'), 'HostKeyMismatch');
      assert.ok(err.message.includes(tc.sim.hosts.hosts.find((h) => h.name === 'pool-3')!.hostKeyFingerprint), err.message);
      assert.equal(tc.sim.hosts.commandLog('pool-3').length, before, 'no command reached the host');
      tc.sim.hosts.trustHostKey('pool-3');
      assert.equal((await run(sh, 'pool-3')).stdout, 'pool-3\n');
    });

    it('a connection the host dropped is opened again, and the command runs once', async () => {
      const sh = pooled();
      await run(sh, 'pool-4');
      const before = accepted('pool-4');
      const ran = tc.sim.hosts.commandLog('pool-4').length;
      // Reset under the client: the command below is sent before the client has read the reset.
      tc.sim.hosts.dropConnections('pool-4');
      assert.equal((await run(sh, 'pool-4', undefined, ['echo', 'once'])).stdout, 'once\n');
      assert.equal(accepted('pool-4') - before, 1, 'a new connection');
      assert.deepEqual(
        tc.sim.hosts
          .commandLog('pool-4')
          .slice(ran)
          .map((e) => e.command),
        ['echo once'],
      );
      // Dropped while idle (the client hears of it first): the next command opens a new one too.
      tc.sim.hosts.dropConnections('pool-4');
      await waitUntil(() => open('pool-4') === 0);
      await new Promise((r) => setTimeout(r, 100));
      assert.equal((await run(sh, 'pool-4')).stdout, 'pool-4\n');
      assert.equal(accepted('pool-4') - before, 2);
    });

    it('a command cut short by cancellation leaves its connection to nobody: the next command gets a new one', async () => {
      const sh = pooled();
      await run(sh, 'pool-1');
      const before = accepted('pool-1');
      tc.sim.hosts.setFault('pool-1', { kind: 'hang', command: 'echo stuck', times: 1 });
      const abort = new AbortController();
      setTimeout(() => abort.abort(new Error('activity cancelled')), 300);
      const err = await run(sh, 'pool-1', abort.signal, ['echo', 'stuck']).catch((e: Error) => e);
      assert.equal((err as Error).message, 'activity cancelled');
      assert.equal((await run(sh, 'pool-1')).stdout, 'pool-1\n');
      assert.equal(accepted('pool-1') - before, 1, "the cancelled command's connection was not reused");
    });
  });
});

async function waitUntil(cond: () => boolean, timeoutMs = 5000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!cond()) {
    assert.ok(Date.now() < deadline, 'condition not met in time');
    await new Promise((r) => setTimeout(r, 50));
  }
}
