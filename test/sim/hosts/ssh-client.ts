// The client side of the host simulator's tests: the real ssh2 Client, verifying host keys strictly
// against the simulator's known_hosts file, as the product must.
import { connect as tcpConnect } from 'node:net';
import { readFileSync } from 'node:fs';
import type { TestContext } from 'node:test';
import { Client } from 'ssh2';
import type { HostSimulator, HostSimulatorOptions, HostSpec } from '../../../sim/hosts/host-simulator.js';
import { startHostSimulator } from '../../../sim/hosts/host-simulator.js';
import { knownHostsName, publicKeyBlob, readKnownHosts } from '../../../sim/hosts/host-keys.js';
import { FakeEffects } from './fake-effects.js';
import { tempDir } from '../../helpers/temp-dir.js';

export interface ExecResult {
  /** null: the session ended without an exit status (a reboot, a dropped connection). */
  code: number | null;
  stdout: string;
  stderr: string;
}

const portOf = (sim: HostSimulator, host: string): number => {
  const h = sim.hosts.find((x) => x.name === host);
  if (!h) throw new Error(`no host ${host}`);
  return h.port;
};

/** Logs in to `host`, accepting only the key known_hosts lists for its port. */
export function connect(sim: HostSimulator, host: string, timeoutMs = 5000): Promise<Client> {
  const port = portOf(sim, host);
  const known = readKnownHosts(sim.knownHostsPath).get(knownHostsName(port));
  return new Promise((resolve, reject) => {
    const client = new Client();
    client.once('ready', () => resolve(client));
    // Persistent, like the product's: after a refused host key the server may reset the socket, and a second
    // 'error' with no listener would be an uncaught exception after the test ended (a CI failure, 2026-11-30).
    client.on('error', reject);
    client.connect({
      host: '127.0.0.1',
      port,
      username: sim.user,
      privateKey: readFileSync(sim.clientKeyPath),
      readyTimeout: timeoutMs,
      hostVerifier: (key: Buffer) => known !== undefined && key.equals(publicKeyBlob(known)),
    });
  });
}

/** Runs one command on an open connection; rejects after `timeoutMs` (closing the channel). */
export function exec(client: Client, command: string, timeoutMs = 10_000): Promise<ExecResult> {
  return new Promise((resolve, reject) => {
    client.exec(command, (err, stream) => {
      if (err) return reject(err);
      let stdout = '';
      let stderr = '';
      let code: number | null = null;
      const timer = setTimeout(() => {
        stream.close();
        reject(new Error(`'${command}' did not finish within ${timeoutMs} ms`));
      }, timeoutMs);
      stream.on('data', (d: Buffer) => (stdout += d.toString()));
      stream.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
      stream.on('exit', (c: number | null) => (code = c));
      stream.on('close', () => {
        clearTimeout(timer);
        resolve({ code, stdout, stderr });
      });
    });
  });
}

/** One command on a fresh connection, as an activity would run it. */
export async function run(sim: HostSimulator, host: string, command: string, timeoutMs = 10_000): Promise<ExecResult> {
  const client = await connect(sim, host);
  try {
    return await exec(client, command, timeoutMs);
  } finally {
    client.end();
  }
}

/** A bare TCP connect: 'connected' or the error code (ECONNREFUSED...). */
export function tcpProbe(port: number): Promise<string> {
  return new Promise((resolve) => {
    const socket = tcpConnect({ host: '127.0.0.1', port });
    socket.once('connect', () => {
      socket.destroy();
      resolve('connected');
    });
    socket.once('error', (err: NodeJS.ErrnoException) => resolve(err.code ?? err.message));
  });
}

export const REPOSITORY = ['1.32.4', '1.33.0', '1.33.7', '1.34.2'];

/**
 * A host at 1.32.4. Its repository is a site mirror offering every minor (the local-mirror variant):
 * these tests are about the other tools (faults, hangups, kubeadm, the kubelet), which install
 * across minors freely. apt-repository.test.ts meets the default, the install guide's one minor.
 */
export function hostSpec(name: string, role: HostSpec['role'], overrides: Partial<HostSpec> = {}): HostSpec {
  return {
    name,
    role,
    repository: REPOSITORY,
    packageRepository: 'local-mirror',
    installed: { kubeadm: '1.32.4', kubelet: '1.32.4', kubectl: '1.32.4' },
    ...overrides,
  };
}

export const tempStateDir = (): string => tempDir('hosts');

/** A simulator with a control plane `cp-1` and a worker `w-1` at 1.32.4, stopped when the test ends. */
export async function startTestSim(
  t: TestContext,
  options: Partial<HostSimulatorOptions> = {},
): Promise<{ sim: HostSimulator; effects: FakeEffects; stateDir: string }> {
  const effects = (options.effects as FakeEffects | undefined) ?? new FakeEffects('1.32.4', ['cp-1']);
  const stateDir = options.stateDir ?? tempStateDir();
  const sim = await startHostSimulator({
    stateDir,
    effects,
    hosts: [hostSpec('cp-1', 'control-plane'), hostSpec('w-1', 'worker')],
    rebootSeconds: 0.3,
    ...options,
  });
  t.after(() => sim.stop());
  return { sim, effects, stateDir };
}
