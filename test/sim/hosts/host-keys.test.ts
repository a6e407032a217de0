import assert from 'node:assert/strict';
import { execFile, spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import ssh2 from 'ssh2';
import type { HostSimulator } from '../../../sim/hosts/host-simulator.js';
import { connect, exec, run, startTestSim, tempStateDir } from './ssh-client.js';

const hasOpenSsh = spawnSync('ssh', ['-V']).status === 0;

/** The real OpenSSH client with strict host key checking against the simulator's known_hosts (async: the server shares our event loop). */
function openSsh(sim: HostSimulator, host: string, command: string): Promise<{ status: number | null; stdout: string; stderr: string }> {
  const { port } = sim.hosts.find((h) => h.name === host)!;
  const args = [
    '-p',
    String(port),
    '-i',
    sim.clientKeyPath,
    '-o',
    'IdentitiesOnly=yes',
    '-o',
    'BatchMode=yes',
    '-o',
    'StrictHostKeyChecking=yes',
    '-o',
    `UserKnownHostsFile=${sim.knownHostsPath}`,
    '-o',
    'GlobalKnownHostsFile=/dev/null',
    '-o',
    'ConnectTimeout=5',
    `${sim.user}@127.0.0.1`,
    command,
  ];
  return new Promise((resolve) => {
    execFile('ssh', args, { encoding: 'utf8', timeout: 15_000 }, (err, stdout, stderr) => {
      resolve({ status: err ? (typeof err.code === 'number' ? err.code : null) : 0, stdout, stderr });
    });
  });
}

describe('host keys and client authentication', () => {
  it('known_hosts lists every host in OpenSSH format with its current fingerprint', async (t) => {
    const { sim } = await startTestSim(t);
    const lines = readFileSync(sim.knownHostsPath, 'utf8').trimEnd().split('\n');
    assert.equal(lines.length, 2);
    for (const h of sim.hosts) {
      const line = lines.find((l) => l.startsWith(`[127.0.0.1]:${h.port} `));
      assert.match(line ?? '', /^\[127\.0\.0\.1\]:\d+ ssh-ed25519 AAAA[0-9A-Za-z+/=]+$/);
      assert.match(h.hostKeyFingerprint, /^SHA256:[0-9A-Za-z+/]{43}$/);
    }
    const keygen = spawnSync('ssh-keygen', ['-lf', sim.knownHostsPath], { encoding: 'utf8' });
    if (keygen.status === 0) {
      for (const h of sim.hosts)
        assert.match(
          keygen.stdout,
          new RegExp(`${h.hostKeyFingerprint.replace(/[+/]/g, '\\$&')} \\[127\\.0\\.0\\.1\\]:${h.port} \\(ED25519\\)`),
        );
    }
  });

  it('a strict client accepts the host, and refuses it after rotateHostKey; trustHostKey re-trusts', async (t) => {
    const { sim } = await startTestSim(t);
    const before = readFileSync(sim.knownHostsPath, 'utf8');
    const fingerprint = sim.hosts.find((h) => h.name === 'w-1')!.hostKeyFingerprint;
    assert.equal((await run(sim, 'w-1', 'hostname')).stdout, 'w-1\n');

    sim.setFault('w-1', { kind: 'rotateHostKey' });
    await assert.rejects(connect(sim, 'w-1'), /verification failed/i);
    assert.equal(readFileSync(sim.knownHostsPath, 'utf8'), before, 'known_hosts is not updated');
    assert.notEqual(sim.hosts.find((h) => h.name === 'w-1')!.hostKeyFingerprint, fingerprint);
    assert.equal((await run(sim, 'cp-1', 'hostname')).stdout, 'cp-1\n', 'other hosts are unaffected');

    sim.trustHostKey('w-1');
    assert.equal((await run(sim, 'w-1', 'hostname')).stdout, 'w-1\n');
  });

  it(
    'the real OpenSSH client with StrictHostKeyChecking=yes accepts, then refuses a rotated key',
    { skip: !hasOpenSsh && 'ssh (OpenSSH client) is not installed' },
    async (t) => {
      const { sim } = await startTestSim(t);
      const ok = await openSsh(sim, 'cp-1', 'sudo -n kubeadm version -o short');
      assert.equal(ok.status, 0, ok.stderr);
      assert.equal(ok.stdout, 'v1.32.4\n');
      sim.setFault('cp-1', { kind: 'rotateHostKey' });
      const refused = await openSsh(sim, 'cp-1', 'true');
      assert.equal(refused.status, 255);
      assert.match(refused.stderr, /REMOTE HOST IDENTIFICATION HAS CHANGED|Host key verification failed/);
    },
  );

  it('accepts only the operator key, for the configured user', async (t) => {
    const { sim } = await startTestSim(t, { user: 'ops' });
    assert.equal(sim.user, 'ops');
    const { port } = sim.hosts[0]!;
    const attempt = (username: string, privateKey: string | Buffer): Promise<string> =>
      new Promise((resolve) => {
        const c = new ssh2.Client();
        c.on('ready', () => {
          c.end();
          resolve('ready');
        });
        c.on('error', (err) => resolve(err.message));
        c.connect({ host: '127.0.0.1', port, username, privateKey, hostVerifier: () => true, readyTimeout: 5000 });
      });
    const stranger = ssh2.utils.generateKeyPairSync('ed25519').private;
    assert.equal(await attempt('ops', readFileSync(sim.clientKeyPath)), 'ready');
    assert.match(await attempt('ops', stranger), /All configured authentication methods failed/);
    assert.match(await attempt('root', readFileSync(sim.clientKeyPath)), /All configured authentication methods failed/);
  });

  it('keeps the client key across restarts and rejects a tampered known_hosts line', async (t) => {
    const stateDir = tempStateDir();
    const first = await startTestSim(t, { stateDir });
    const key = readFileSync(join(stateDir, 'ssh', 'id_ed25519'), 'utf8');
    assert.match(key, /^-----BEGIN OPENSSH PRIVATE KEY-----/);
    assert.match(readFileSync(join(stateDir, 'ssh', 'id_ed25519.pub'), 'utf8'), /^ssh-ed25519 AAAA/);
    const client = await connect(first.sim, 'cp-1');
    assert.equal((await exec(client, 'true')).code, 0);
    client.end();
    await first.sim.stop();

    // Swap the two hosts' known keys: each host now presents a key the file does not list for it.
    const lines = readFileSync(first.sim.knownHostsPath, 'utf8')
      .trimEnd()
      .split('\n')
      .map((l) => l.split(' '));
    writeFileSync(
      first.sim.knownHostsPath,
      `${lines[0]![0]} ${lines[1]![1]} ${lines[1]![2]}\n${lines[1]![0]} ${lines[0]![1]} ${lines[0]![2]}\n`,
    );
    const second = await startTestSim(t, { stateDir });
    assert.equal(readFileSync(join(stateDir, 'ssh', 'id_ed25519'), 'utf8'), key);
    await assert.rejects(connect(second.sim, 'cp-1'), /verification failed/i);
  });
});
