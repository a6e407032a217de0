import { readFileSync } from 'node:fs';
import { Client } from 'ssh2';
import type { SimulationEndpoints } from '../../sim/simulation.js';

export interface ExecResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Host keys of known_hosts by `[host]:port`, as base64 of the key blob. */
function knownKeys(path: string): Map<string, string> {
  const keys = new Map<string, string>();
  for (const line of readFileSync(path, 'utf8').split('\n')) {
    const [hosts, , key] = line.trim().split(/\s+/);
    if (hosts && key) for (const h of hosts.split(',')) keys.set(h, key);
  }
  return keys;
}

/** Runs one command on a simulated host over real SSH, verifying its host key strictly. */
export function sshExec(endpoints: SimulationEndpoints, hostName: string, command: string, timeoutMs = 30_000): Promise<ExecResult> {
  const host = endpoints.ssh.hosts.find((h) => h.name === hostName);
  if (!host) throw new Error(`no simulated host ${hostName}`);
  const expected = knownKeys(endpoints.ssh.knownHostsPath).get(`[${host.host}]:${host.port}`);
  return new Promise((resolve, reject) => {
    const client = new Client();
    const timer = setTimeout(() => {
      client.end();
      reject(new Error(`ssh ${hostName} "${command}" timed out after ${timeoutMs} ms`));
    }, timeoutMs);
    client.on('error', (err) => {
      clearTimeout(timer);
      reject(err);
    });
    client.on('ready', () => {
      client.exec(command, (err, stream) => {
        if (err) {
          clearTimeout(timer);
          client.end();
          reject(err);
          return;
        }
        let stdout = '';
        let stderr = '';
        let code: number | null = null;
        stream.on('data', (d: Buffer) => (stdout += d.toString()));
        stream.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
        stream.on('exit', (c: number | null) => (code = c));
        stream.on('close', () => {
          clearTimeout(timer);
          client.end();
          resolve({ code, stdout, stderr });
        });
      });
    });
    client.connect({
      host: host.host,
      port: host.port,
      username: endpoints.ssh.user,
      privateKey: readFileSync(endpoints.ssh.privateKeyPath),
      readyTimeout: 10_000,
      hostVerifier: (key: Buffer) => expected !== undefined && key.toString('base64') === expected,
    });
  });
}
