// What one simulated host remembers across simulator restarts: its packages, holds, kubelet, role,
// port, and an append-only log of every command it ran. One directory per host under the state dir.
import { appendFileSync, existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join, posix } from 'node:path';

export const PACKAGES = ['kubeadm', 'kubelet', 'kubectl'] as const;
export type PackageName = (typeof PACKAGES)[number];
export type HostRole = 'control-plane' | 'worker';

export interface KubeletState {
  /** systemd's view: the unit runs (Type=simple, so active as soon as it is started). */
  active: boolean;
  /** The version the cluster was last told the kubelet runs; null while stopped or still starting. */
  version: string | null;
  /** A start the cluster has not been told about yet; a new simulator process finishes it. */
  startingVersion: string | null;
  /** The kubelet package whose unit file systemd loaded (daemon-reload or boot). */
  unitPackage: string;
}

export interface HostState {
  schema: 1;
  name: string;
  role: HostRole;
  port: number;
  /** Package versions in the host's format: Debian's `1.33.7-1.1` (apt hosts) or rpm's `1.33.7-150500.1.1` (dnf hosts). */
  packages: Record<PackageName, string>;
  holds: PackageName[];
  kubelet: KubeletState;
  /** The cluster version `kubeadm upgrade node` last configured this node for; null if it never ran. */
  nodeConfigVersion: string | null;
  /**
   * Packages dpkg unpacked but never configured: the host went down in the middle of an install.
   * `packages` already holds their new version (dpkg's status file records it at unpack), dpkg's
   * journal is interrupted, and apt-get refuses to install until `dpkg --configure -a` ran.
   */
  unconfigured?: PackageName[];
  /**
   * Files `chown` gave to the login user, by absolute host path. Every other file is root's: the
   * simulation knows only root and the login user, who is in none of root's groups.
   */
  owners?: Record<string, string>;
}

export interface CommandLogEntry {
  time: string;
  command: string;
  /** The command's status on the host; null when it was cut short (its client went away, see command-runner.ts). */
  exitCode: number | null;
  durationMs: number;
  /** The client went away before the command ended: no exit status reached it. */
  hungUp?: boolean;
}

/** The Debian revision the simulated repository gives every Kubernetes release. */
const REVISION = '-1.1';
export const toPackageVersion = (kubernetes: string): string => `${kubernetes.replace(/^v/, '')}${REVISION}`;
/** `1.33.7-1.1` → `1.33.7` (the part before the last `-revision`). */
export const toKubernetesVersion = (pkg: string): string => pkg.replace(/-[^-]+$/, '');

export function isPackageName(name: string): name is PackageName {
  return (PACKAGES as readonly string[]).includes(name);
}

export class HostPathError extends Error {}

/**
 * Maps a path on the simulated host into its root directory. `..` segments are refused outright
 * rather than normalised, so nothing the product sends can reach outside the root.
 */
export function mapHostPath(rootDir: string, hostPath: string, cwd = '/'): string {
  if (hostPath === '' || hostPath.includes('\0')) throw new HostPathError(`sim: invalid path '${hostPath}'`);
  const absolute = hostPath.startsWith('/') ? hostPath : posix.join(cwd, hostPath);
  if (absolute.split('/').includes('..')) throw new HostPathError(`sim: path escapes the host root: '${hostPath}'`);
  return join(rootDir, posix.normalize(absolute));
}

const NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$/;
export const hostDir = (stateDir: string, name: string): string => {
  if (!NAME.test(name)) throw new Error(`sim: invalid host name '${name}'`);
  return join(stateDir, 'hosts', name);
};

let tempCounter = 0;
/** Write-then-rename: a reader (or a crash) never sees half a file. */
export function writeFileAtomic(path: string, content: string, mode = 0o644): void {
  const temp = `${path}.tmp-${process.pid}-${++tempCounter}`;
  writeFileSync(temp, content, { mode });
  renameSync(temp, path);
}

export class HostStore {
  readonly dir: string;
  readonly rootDir: string;
  private current: HostState;

  private constructor(dir: string, state: HostState) {
    this.dir = dir;
    this.rootDir = join(dir, 'root');
    this.current = state;
  }

  /** The stored state of `name`, or undefined for a host this state dir has never seen. */
  static open(stateDir: string, name: string): HostStore | undefined {
    const dir = hostDir(stateDir, name);
    const file = join(dir, 'state.json');
    if (!existsSync(file)) return undefined;
    const state = JSON.parse(readFileSync(file, 'utf8')) as HostState;
    if (state.schema !== 1 || state.name !== name) throw new Error(`sim: ${file} is not a host state of schema 1 for ${name}`);
    return new HostStore(dir, state);
  }

  static create(stateDir: string, state: HostState): HostStore {
    const store = new HostStore(hostDir(stateDir, state.name), state);
    mkdirSync(store.rootDir, { recursive: true });
    store.save();
    return store;
  }

  get state(): Readonly<HostState> {
    return this.current;
  }

  /** Changes the state and persists it before returning, so a crash right after keeps the change. */
  update(change: (state: HostState) => void): void {
    const next = structuredClone(this.current);
    change(next);
    this.current = next;
    this.save();
  }

  appendCommand(entry: CommandLogEntry): void {
    appendFileSync(join(this.dir, 'commands.log'), `${JSON.stringify(entry)}\n`);
  }

  commandLog(): CommandLogEntry[] {
    const file = join(this.dir, 'commands.log');
    if (!existsSync(file)) return [];
    return readFileSync(file, 'utf8')
      .split('\n')
      .filter((l) => l !== '')
      .map((l) => JSON.parse(l) as CommandLogEntry);
  }

  hostPath(path: string, cwd = '/'): string {
    return mapHostPath(this.rootDir, path, cwd);
  }

  private save(): void {
    writeFileAtomic(join(this.dir, 'state.json'), `${JSON.stringify(this.current, null, 2)}\n`);
  }
}
