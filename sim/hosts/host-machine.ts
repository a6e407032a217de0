// One simulated machine: its stored state plus what outlives a single command — the kubelet's
// lifecycle (a restart returns at once, the node turns Ready later) and reboots.
import { randomUUID } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join, posix } from 'node:path';
import type { ClusterEffects, EtcdTools, ManifestSeen, StaticPodHooks } from './cluster-effects.js';
import { CommandFaults } from './faults.js';
import { imageOfManifest } from './static-pod-manifest.js';
import { toKubernetesVersion, type HostState, type HostStore } from './host-state.js';
import type { PackageManager } from './rpm-archive.js';
import type { OtherRepository } from './apt-archive.js';

/**
 * `aptInstall`: a package install's time, apt's or dnf's alike (the name predates dnf hosts), the archives
 * at hand; `packageDownload`: fetching the archives an install needs that are not in the package cache yet
 * (`apt-get install --download-only` and `dnf install --downloadonly` pay only that; an install after them, only aptInstall).
 */
export type LatencyKind = 'aptInstall' | 'packageDownload' | 'kubeletRestart' | 'kubeadmApply' | 'kubeadmNode' | 'etcdSnapshot' | 'reboot';
/** Milliseconds per kind of command; 0 when absent. */
export type Latencies = Partial<Record<LatencyKind, number>>;

export interface MachineConfig {
  /** Kubernetes versions the package archive (pkgs.k8s.io, simulated) has (`1.33.7`); what a host offers is its sources' share. */
  repository: readonly string[];
  /** The other repositories the host's extra source files name, and which of them answer (extra-sources.ts). */
  otherRepositories?: readonly OtherRepository[];
  /** apt (Debian, the default) or dnf (the RHEL family): which package tools the host has. */
  packageManager?: PackageManager;
  latencies: Latencies;
  user: string;
  effects: ClusterEffects;
  etcd?: EtcdTools;
  /** The kubelet's static pods (control planes only): absent, manifests change nothing. */
  staticPods?: StaticPodHooks;
  /**
   * Set when the simulation runs the real kubeadm (a per-node control plane): `binary` of a package
   * version (`1.33.13`) runs in the host's root view (commands/kubeadm-real.ts), the namespaces'
   * throw-away overlays under `scratchDir`.
   */
  realKubeadm?: { binary: (version: string) => string | undefined; scratchDir: string };
  /** How long a reboot keeps the host unreachable when latencies.reboot is not set. */
  rebootMs: number;
  /** Whether commands that need root fail without `sudo`, as on a real host. */
  requireSudo: boolean;
  /** The cgroup hierarchy `stat -fc %T /sys/fs/cgroup/` reports (coreutils.ts); absent: v2. */
  cgroup?: 'v1' | 'v2';
  /** Control planes: when kubeadm's certificates expire (RFC 3339), for the model's `certs check-expiration`. */
  certificates?: { leaves: string; authorities: string };
  onError: (err: Error) => void;
}

/** The SSH endpoint as the machine sees it: a reboot takes it offline and back. */
export interface EndpointControl {
  takeOffline(reason: string): void;
  bringOnline(reason: string): void;
}

export class AbortedError extends Error {}

/** Resolves after `ms`, or rejects with AbortedError when `signal` fires first. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(new AbortedError('aborted'));
    const onAbort = (): void => {
      clearTimeout(timer);
      reject(new AbortedError('aborted'));
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

const BOOT_ID = '/proc/sys/kernel/random/boot_id';

export class HostMachine {
  readonly faults = new CommandFaults();
  endpoint?: EndpointControl;
  /** Aborted by shutdown(), so no command (a hung one included) outlives the simulator. */
  private readonly lifetime = new AbortController();
  private timers = new Set<NodeJS.Timeout>();
  private shutDown = false;
  /** Bumped by every stop/start/reboot so a late answer from an older start changes nothing. */
  private generation = 0;
  /** The static-pod manifests last seen in /etc/kubernetes/manifests (as JSON), undefined before the first look. */
  private manifestsSeen: string | undefined;

  constructor(
    readonly store: HostStore,
    readonly config: MachineConfig,
  ) {
    if (!existsSync(this.hostPath(BOOT_ID))) this.newBootId();
  }

  /** /proc/sys/kernel/random/boot_id: a new one per boot, as Linux does; a simulator restart keeps it. */
  private newBootId(): void {
    const file = this.hostPath(BOOT_ID);
    mkdirSync(dirname(file), { recursive: true });
    rmSync(file, { force: true });
    writeFileSync(file, `${randomUUID()}\n`, { mode: 0o444 });
  }

  get name(): string {
    return this.store.state.name;
  }
  get state(): Readonly<HostState> {
    return this.store.state;
  }
  get effects(): ClusterEffects {
    return this.config.effects;
  }
  get home(): string {
    return `/home/${this.config.user}`;
  }
  /** The Kubernetes version of an installed package (`kubelet` → `1.33.7`). */
  installed(pkg: 'kubeadm' | 'kubelet' | 'kubectl'): string {
    return toKubernetesVersion(this.state.packages[pkg]);
  }
  /** The login user is root (or the simulator requires no sudo): every command and SFTP read runs as root. */
  get loginIsRoot(): boolean {
    return this.config.user === 'root' || !this.config.requireSudo;
  }
  /** `path` absolute and normalised, the key of `owners` (hostPath has refused `..` already). */
  private ownerKey(path: string): string {
    this.hostPath(path);
    return posix.normalize(path.startsWith('/') ? path : posix.join(this.home, path));
  }
  /** A file's owner: root, unless `chown` gave it to the login user. */
  ownerOf(path: string): string {
    return this.state.owners?.[this.ownerKey(path)] ?? 'root';
  }
  /** Records a file's new owner (a file created anew by root, an `rm`: back to root). */
  setOwner(path: string, owner: string): void {
    const key = this.ownerKey(path);
    if ((this.state.owners?.[key] ?? 'root') === owner) return;
    this.store.update((s) => {
      const owners = { ...s.owners };
      if (owner === 'root') delete owners[key];
      else owners[key] = owner;
      s.owners = owners;
    });
  }
  /** `mv`: owners recorded at `from` or under it now belong to the same paths under `to`. */
  moveOwners(from: string, to: string): void {
    const [src, dst] = [this.ownerKey(from), this.ownerKey(to)];
    const owners = this.state.owners ?? {};
    const moved = Object.keys(owners).filter((k) => k === dst || k.startsWith(`${dst}/`) || k === src || k.startsWith(`${src}/`));
    if (moved.length === 0) return;
    this.store.update((s) => {
      const next: Record<string, string> = {};
      for (const [k, v] of Object.entries(s.owners ?? {})) {
        if (k === dst || k.startsWith(`${dst}/`)) continue; // replaced
        if (k === src || k.startsWith(`${src}/`)) next[dst + k.slice(src.length)] = v;
        else next[k] = v;
      }
      s.owners = next;
    });
  }
  /**
   * Whether a file may be opened for reading: by root always; by the login user when its mode lets
   * others read it, or the user owns it and the owner may read it (root's group bits do not apply).
   * A missing file is "readable": the caller reports it missing.
   */
  mayRead(path: string, asRoot: boolean): boolean {
    if (asRoot) return true;
    const st = statSync(this.hostPath(path), { throwIfNoEntry: false });
    if (!st || st.isDirectory()) return true;
    return (st.mode & 0o004) !== 0 || (this.ownerOf(path) === this.config.user && (st.mode & 0o400) !== 0);
  }

  /** Where the login user may write without root: /tmp and the home directory, as on a real host. */
  mayWrite(path: string, asRoot: boolean): boolean {
    const abs = posix.normalize(path.startsWith('/') ? path : posix.join(this.home, path));
    return asRoot || abs === '/tmp' || abs.startsWith('/tmp/') || abs === this.home || abs.startsWith(`${this.home}/`);
  }

  /** A path on the host (absolute, or relative to the user's home) inside the host root. */
  hostPath(path: string): string {
    return this.store.hostPath(path, this.home);
  }

  latency(kind: LatencyKind, signal?: AbortSignal): Promise<void> {
    const ms = this.config.latencies[kind] ?? 0;
    return ms > 0 ? sleep(ms, signal) : Promise.resolve();
  }

  async stopKubelet(): Promise<void> {
    this.cancelTimers();
    this.generation++;
    this.store.update((s) => {
      s.kubelet = { ...s.kubelet, active: false, version: null, startingVersion: null };
    });
    await this.effects.kubeletStopped(this.name);
  }

  /** systemd starts the unit at once; the cluster hears of the new version after the restart latency. */
  startKubelet(delayMs = this.config.latencies.kubeletRestart ?? 0): void {
    const version = this.installed('kubelet');
    const generation = ++this.generation;
    this.store.update((s) => {
      s.kubelet = { ...s.kubelet, active: true, version: null, startingVersion: version };
    });
    this.later(delayMs, () => this.reportStarted(version, generation, 1));
  }

  /**
   * The kubelet's view of /etc/kubernetes/manifests: after a command, a control plane whose manifests
   * changed (a file in or out, another image) tells the static-pod model, which stops or starts the
   * processes; resolves once they follow. `always`: report even an unchanged dir (the first look of
   * a new simulator process, which assumes every pod runs).
   */
  noticeManifests(always = false): Promise<void> {
    const hooks = this.config.staticPods;
    if (!hooks || this.state.role !== 'control-plane') return Promise.resolve();
    const dir = this.hostPath('/etc/kubernetes/manifests');
    const manifests: ManifestSeen[] = (
      existsSync(dir)
        ? readdirSync(dir)
            .filter((f) => f.endsWith('.yaml'))
            .sort()
        : []
    ).map((file) => {
      const text = readFileSync(join(dir, file), 'utf8');
      return { file, image: imageOfManifest(text), text };
    });
    const seen = JSON.stringify(manifests);
    if (seen === this.manifestsSeen && !always) return Promise.resolve();
    this.manifestsSeen = seen;
    return hooks.changed(this.name, manifests);
  }

  /** The static pods running on this host (`etcd`, `kube-apiserver`, ...), for pgrep. */
  get staticPods(): string[] {
    return this.config.staticPods?.running(this.name) ?? [];
  }

  /** Finishes a kubelet start a previous simulator process left half done. */
  resume(): void {
    void this.noticeManifests(true);
    if (this.state.kubelet.startingVersion !== null) this.startKubelet(0);
  }

  /** Drops every connection, stays unreachable for the reboot time, then boots (units reloaded, kubelet started). */
  reboot(): void {
    if (this.shutDown) return;
    this.cancelTimers();
    this.generation++;
    // startingVersion is set already, so a simulator restart during the downtime still boots the kubelet.
    this.store.update((s) => {
      s.kubelet = {
        active: false,
        version: null,
        startingVersion: toKubernetesVersion(s.packages.kubelet),
        unitPackage: s.packages.kubelet,
      };
    });
    const generation = this.generation;
    this.endpoint?.takeOffline('reboot');
    const stopped = this.effects
      .kubeletStopped(this.name)
      .catch((err: unknown) => this.config.onError(asError(err, `${this.name}: kubeletStopped`)));
    this.later(this.config.latencies.reboot ?? this.config.rebootMs, () => {
      this.newBootId();
      this.endpoint?.bringOnline('reboot');
      // The cluster must have seen the node go NotReady before the booted kubelet reports in: a short
      // reboot would otherwise clear the NotReady mark before it took, and kubeletStopped wait for it in vain.
      void stopped.then(() => {
        if (!this.shutDown && generation === this.generation) this.startKubelet(0);
      });
    });
  }

  /** Stops timers (simulator stop); a pending kubelet start stays recorded and is resumed next time. */
  shutdown(): void {
    this.shutDown = true;
    this.cancelTimers();
    this.lifetime.abort();
  }

  get lifetimeSignal(): AbortSignal {
    return this.lifetime.signal;
  }

  private reportStarted(version: string, generation: number, attempt: number): void {
    this.effects.kubeletStarted(this.name, version).then(
      () => {
        if (this.shutDown || generation !== this.generation) return;
        this.store.update((s) => {
          s.kubelet = { ...s.kubelet, version, startingVersion: null };
        });
      },
      (err: unknown) => {
        this.config.onError(asError(err, `${this.name}: kubeletStarted(${version}), attempt ${attempt}`));
        if (attempt < 10 && generation === this.generation)
          this.later(250 * attempt, () => this.reportStarted(version, generation, attempt + 1));
      },
    );
  }

  private later(ms: number, fn: () => void): void {
    if (this.shutDown) return;
    const timer = setTimeout(() => {
      this.timers.delete(timer);
      fn();
    }, ms);
    this.timers.add(timer);
  }

  private cancelTimers(): void {
    for (const t of this.timers) clearTimeout(t);
    this.timers.clear();
  }
}

export function asError(err: unknown, context: string): Error {
  const message = err instanceof Error ? err.message : String(err);
  return new Error(`${context}: ${message}`, { cause: err });
}
