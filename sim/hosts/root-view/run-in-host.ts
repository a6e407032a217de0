import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const here = fileURLToPath(new URL('../../../../sim/hosts/root-view/', import.meta.url));
const SCRIPT = `${here}in-host-root.sh`;

// The process groups of the programs running now: the test runner's exit must not leave one behind.
const live = new Set<number>();
const killGroup = (pgid: number, signal: NodeJS.Signals) => {
  try {
    process.kill(-pgid, signal);
  } catch {
    // already gone
  }
};
process.once('exit', () => {
  for (const pgid of live) killGroup(pgid, 'SIGKILL');
});

export interface InHostOptions {
  /** Where the namespace's throw-away overlays go (removed when the program exits). */
  scratchDir: string;
  /** The systemctl shim appends each call here. */
  systemctlLog: string;
  onStdout?: (text: string) => void;
  onStderr?: (text: string) => void;
  /** Stops the program (SIGTERM to its process group). */
  signal?: AbortSignal;
  /** Run as nobody, not root (a command without sudo). */
  asUser?: boolean;
}

export interface InHostResult {
  exitCode: number;
  stdout: string;
  stderr: string;
}

/**
 * Runs a real program as root in a simulated host's view of the filesystem (in-host-root.sh): the
 * host's /etc/kubernetes, /var/lib/kubelet, /var/lib/etcd and /run/containerd at the real paths,
 * systemctl a shim that only logs. Resolves with its exit code and output; never rejects on a
 * non-zero exit.
 */
export function runInHostRoot(hostRoot: string, argv: readonly string[], o: InHostOptions): Promise<InHostResult> {
  return new Promise((resolve, reject) => {
    const child = spawn('bash', [SCRIPT, hostRoot, o.scratchDir, '--', ...argv], {
      // Its own process group, so a stop reaches the program and not only the wrapper.
      detached: true,
      stdio: ['ignore', 'pipe', 'pipe'],
      env: {
        ...process.env,
        PATH: `${here}:${process.env.PATH ?? '/usr/bin:/bin'}`,
        SKEWLESS_SYSTEMCTL_LOG: o.systemctlLog,
        SKEWLESS_AS_USER: o.asUser ? '1' : '',
      },
    });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (c: string) => {
      stdout += c;
      o.onStdout?.(c);
    });
    child.stderr.setEncoding('utf8').on('data', (c: string) => {
      stderr += c;
      o.onStderr?.(c);
    });
    const pgid = child.pid;
    if (pgid !== undefined) live.add(pgid);
    const stop = () => {
      if (pgid !== undefined) killGroup(pgid, 'SIGTERM');
    };
    o.signal?.addEventListener('abort', stop, { once: true });
    child.once('error', reject);
    child.once('close', (code, sig) => {
      o.signal?.removeEventListener('abort', stop);
      if (pgid !== undefined) live.delete(pgid);
      resolve({ exitCode: code ?? 128 + (sig === 'SIGKILL' ? 9 : 15), stdout, stderr });
    });
  });
}
