// Starts one SSH endpoint per simulated node in this process and wires each to its machine:
// exec requests to the command runner, the sftp subsystem to the read-only file server, faults to
// the endpoint. Everything a host remembers lives under the state dir, so a new process continues.
import { mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import type { ClusterEffects, EtcdTools, StaticPodHooks } from './cluster-effects.js';
import { execOnChannel, type CommandObserver, type HangupPolicy } from './command-runner.js';
import { isCommandFault, unmatchableFault, unsentFault, validateFault, type ArmedFault, type Fault } from './faults.js';
import { lookupCommand } from './commands/index.js';
import { HostEndpoint } from './host-endpoint.js';
import {
  ensureClientKey,
  ensureHostKey,
  fingerprint,
  keyWithoutComment,
  knownHostsName,
  readKnownHosts,
  rotateHostKey,
  writeKnownHosts,
} from './host-keys.js';
import { asError, HostMachine, type Latencies } from './host-machine.js';
import { seedHost } from './host-seed.js';
import { otherRepositories, type ExtraSource } from './extra-sources.js';
import type { ControlPlaneManifest } from './static-pod-manifest.js';
import { hostDir, HostStore, type CommandLogEntry, type HostRole, type HostState, type PackageName } from './host-state.js';
import { listenOnFreePort } from './ports.js';
import { serveSftp } from './sftp-server.js';
import type { RepositoryLayout } from './apt-archive.js';
import type { PackageManager } from './rpm-archive.js';

/**
 * A modelled address per control plane (the `index`th), for its etcd manifest's peer and client URLs
 * and kubeadm's advertise address; never reached (everything listens on loopback).
 */
export const modelledAddress = (index: number): string => `10.0.0.${11 + Math.max(0, index)}`;

export interface HostSpec {
  name: string;
  role: HostRole;
  /** Kubernetes versions the package archive has (`1.33.7` → package `1.33.7-1.1`). */
  repository: string[];
  /** How a new host's kubernetes.list names the archive (default: one minor, as the install guide does). */
  packageRepository?: RepositoryLayout;
  /** The host's package tools: apt (Debian, the default) or dnf (the RHEL family, kubernetes.repo). */
  packageManager?: PackageManager;
  /** Seeds a host the state dir does not know yet: Kubernetes versions of the three packages. */
  installed: Record<PackageName, string>;
  /** Seeds the holds of a new host (default: all three, as kubeadm's install guide does; dnf: all or none). */
  held?: PackageName[];
  /** Source files beside Kubernetes' (extra-sources.ts): seeded into a new host, and what its archive answers for them. */
  sources?: ExtraSource[];
  /** Seeds a new control plane's manifests: its components' versions (default: its kubeadm's). */
  components?: Partial<Record<ControlPlaneManifest, string>>;
  latencies?: Latencies;
  faults?: Fault[];
  /** `stat -fc %T /sys/fs/cgroup/` answers cgroup2fs (v2, the default) or tmpfs (v1). */
  cgroup?: 'v1' | 'v2';
  /** Seeds a new control plane's etcd manifest with this image tag. */
  etcdImageTag?: string;
  /** Control planes: days kubeadm's leaf certificates have left when the simulator starts (default 365; CAs 3650). */
  certificateDays?: number;
}

const DAY_MS = 86_400_000;

/**
 * When a control plane's certificates expire, in the model kubeadm's `certs check-expiration`: the
 * leaves `days` from the moment the machine is prepared, the CAs ten years (kubeadm's defaults: a
 * year for leaves, ten for CAs). Whole seconds, as kubeadm prints them.
 */
function certificateDates(days: number): { leaves: string; authorities: string } {
  const now = Math.floor(Date.now() / 1000) * 1000;
  const iso = (ms: number) => new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z');
  return { leaves: iso(now + days * DAY_MS), authorities: iso(now + 3650 * DAY_MS) };
}

export interface HostSimulatorOptions {
  stateDir: string;
  hosts: HostSpec[];
  /** The login user (default `skewless`). */
  user?: string;
  effects: ClusterEffects;
  etcd?: EtcdTools;
  /** The kubelet's static pods on control planes (sim/cluster/static-pods.ts); absent: manifests change nothing. */
  staticPods?: StaticPodHooks;
  /** The real kubeadm of a package version, when the simulation runs it (HostMachine's MachineConfig). */
  realKubeadm?: (version: string) => string | undefined;
  /** Downtime of a reboot unless a host's latencies.reboot says otherwise (default 1). */
  rebootSeconds?: number;
  /** Commands that need root fail without `sudo` (default true). */
  requireSudo?: boolean;
  /** Background failures (a kubeletStarted effect that threw); default: printed on stderr. */
  onError?: (err: Error) => void;
  /** What a command does when its client goes away mid-way (default: it dies; see command-runner.ts). */
  hangup?: HangupPolicy;
}

export interface SimulatedHost {
  readonly name: string;
  readonly port: number;
  /** OpenSSH `SHA256:...` of the key the host presents now. */
  readonly hostKeyFingerprint: string;
}

export interface HostSimulator {
  readonly hosts: readonly SimulatedHost[];
  readonly knownHostsPath: string;
  readonly clientKeyPath: string;
  readonly user: string;
  /**
   * Arms `fault` on `host`; a command fault must name a program the host has. With `sentBySkewless`
   * (`sim fault`), it must also be able to match a command skewless sends: the product's forms, or one
   * of these configured commands (maintenance.command).
   */
  setFault(host: string, fault: Fault, options?: { sentBySkewless?: readonly (readonly string[])[] }): void;
  /** Removes command faults and ends a `refuse` early; a rotated key stays rotated. */
  clearFaults(host: string): void;
  /** The faults in effect on `host` now: the armed command faults and a `refuse` not yet over (its seconds left). */
  activeFaults(host: string): (ArmedFault | { fault: Extract<Fault, { kind: 'refuse' }>; secondsLeft: number })[];
  commandLog(host: string): CommandLogEntry[];
  /** Tells the kubelet model what the host's /etc/kubernetes/manifests holds now; resolves once the static pods follow. */
  noticeManifests(host: string): Promise<void>;
  /** SSH connections the host accepted since the simulator started. */
  connectionsAccepted(host: string): number;
  /** SSH connections open to the host now. */
  connectionsOpen(host: string): number;
  /** Resets the host's open SSH connections; it goes on listening. */
  dropConnections(host: string): void;
  state(host: string): HostState;
  /** Writes the host's current key into known_hosts (an operator re-trusting a reinstalled host). */
  trustHostKey(host: string): void;
  /** Calls `listener` as each command starts and ends on any host; returns the unsubscribe. */
  onCommand(listener: CommandObserver): () => void;
  /** Replaces the hangup policy (undefined: commands die with their session). */
  setHangupPolicy(policy: HangupPolicy | undefined): void;
  /**
   * A new machine while the simulator runs (blue/green): seeded, listening on a free port, its key
   * in known_hosts. A host of that name that runs already is returned as it is.
   */
  addHost(spec: HostSpec): Promise<SimulatedHost>;
  /** Stops the machine, drops its known_hosts line and its state (a new one of that name starts afresh). False when none ran. */
  removeHost(host: string): Promise<boolean>;
  stop(): Promise<void>;
}

interface Running {
  spec: HostSpec;
  machine: HostMachine;
  endpoint: HostEndpoint;
  publicKey: string;
  refuseTimer?: NodeJS.Timeout;
  /** The `refuse` in effect, until when (ms since the epoch). */
  refused?: { fault: Extract<Fault, { kind: 'refuse' }>; until: number };
  isNew: boolean;
}

export async function startHostSimulator(options: HostSimulatorOptions): Promise<HostSimulator> {
  const names = new Set(options.hosts.map((h) => h.name));
  if (names.size !== options.hosts.length) throw new Error('sim: host names must be unique');
  mkdirSync(options.stateDir, { recursive: true });
  const simulator = new Hosts(options);
  await simulator.start();
  return simulator;
}

/** The simulated hosts of one state dir: their machines, SSH endpoints, faults and known_hosts. */
class Hosts implements HostSimulator {
  readonly user: string;
  readonly knownHostsPath: string;
  readonly clientKeyPath: string;
  private readonly clientPublicKey: string;
  private readonly onError: (err: Error) => void;
  private readonly controlPlanes: string[];
  private readonly running = new Map<string, Running>();
  private readonly listeners = new Set<CommandObserver>();
  private hangup: HangupPolicy | undefined;
  private stopped = false;
  private readonly channelOptions;

  constructor(private readonly options: HostSimulatorOptions) {
    this.user = options.user ?? 'skewless';
    this.onError = options.onError ?? ((err: Error) => console.error(`[sim/hosts] ${err.message}`));
    const clientKey = ensureClientKey(options.stateDir, this.user);
    this.clientKeyPath = clientKey.privateKeyPath;
    this.clientPublicKey = clientKey.publicKey;
    this.knownHostsPath = join(options.stateDir, 'known_hosts');
    this.controlPlanes = options.hosts.filter((h) => h.role === 'control-plane').map((h) => h.name);
    this.hangup = options.hangup;
    // An observer that throws must not take a command down with it.
    const observe: CommandObserver = (event) => {
      for (const l of this.listeners) {
        try {
          l(event);
        } catch (err) {
          this.onError(asError(err, 'command observer'));
        }
      }
    };
    this.channelOptions = { observe, hangup: (host: string, command: string) => this.hangup?.(host, command) ?? 'dies' } as const;
  }

  /** Listens on every host's port, trusts their keys, arms the described faults and lets the machines run. */
  async start(): Promise<void> {
    for (const spec of this.options.hosts) this.running.set(spec.name, this.prepare(spec));
    try {
      await listenAll([...this.running.values()]);
    } catch (err) {
      await this.stopAll();
      throw err;
    }
    // A known host keeps its known_hosts line even if its key has rotated since: that staleness is the point.
    const known = readKnownHosts(this.knownHostsPath);
    for (const r of this.running.values()) {
      const name = knownHostsName(r.endpoint.port);
      if (r.isNew || !known.has(name)) known.set(name, keyWithoutComment(r.publicKey));
    }
    writeKnownHosts(this.knownHostsPath, known);
    for (const r of this.running.values()) {
      for (const fault of r.spec.faults ?? []) this.setFault(r.spec.name, fault);
      r.machine.resume();
    }
  }

  /** A host's machine (its stored state, else a new seed) and its SSH endpoint, not listening yet. */
  private prepare(spec: HostSpec): Running {
    const { options, user, onError } = this;
    const existing = HostStore.open(options.stateDir, spec.name);
    const address = modelledAddress(this.controlPlanes.indexOf(spec.name));
    const store = existing ?? seedHost(options.stateDir, { ...spec, address }, user);
    const keys = ensureHostKey(store.dir, spec.name);
    const machine = new HostMachine(store, {
      repository: spec.repository,
      otherRepositories: otherRepositories(spec.packageManager ?? 'apt', spec.sources ?? []),
      packageManager: spec.packageManager ?? 'apt',
      latencies: spec.latencies ?? {},
      user,
      effects: options.effects,
      etcd: options.etcd,
      ...(options.staticPods ? { staticPods: options.staticPods } : {}),
      ...(options.realKubeadm ? { realKubeadm: { binary: options.realKubeadm, scratchDir: join(options.stateDir, 'root-view') } } : {}),
      rebootMs: (options.rebootSeconds ?? 1) * 1000,
      requireSudo: options.requireSudo ?? true,
      cgroup: spec.cgroup ?? 'v2',
      ...(spec.role === 'control-plane' ? { certificates: certificateDates(spec.certificateDays ?? 365) } : {}),
      onError,
    });
    const endpoint = new HostEndpoint({
      name: spec.name,
      hostKey: keys.privateKey,
      user,
      clientPublicKey: this.clientPublicKey,
      onError,
      onExec: (command, channel) => execOnChannel(machine, command, channel, this.channelOptions),
      onSftp: (sftp) => serveSftp(sftp, machine),
    });
    machine.endpoint = endpoint;
    return { spec, machine, endpoint, publicKey: keys.publicKey, isNew: !existing };
  }

  private async stopAll(): Promise<void> {
    for (const r of this.running.values()) {
      r.machine.shutdown();
      clearTimeout(r.refuseTimer);
    }
    await Promise.all([...this.running.values()].map((r) => r.endpoint.close()));
  }

  private get(host: string): Running {
    const r = this.running.get(host);
    if (!r) throw new Error(`sim: no simulated host '${host}'`);
    return r;
  }

  get hosts(): SimulatedHost[] {
    return [...this.running.values()].map(simulated);
  }

  setFault(host: string, fault: Fault, options: { sentBySkewless?: readonly (readonly string[])[] } = {}): void {
    const r = this.get(host);
    validateFault(fault);
    if (isCommandFault(fault)) {
      const problem =
        unmatchableFault(fault, (program) => lookupCommand(program, r.machine.config.packageManager)) ??
        (options.sentBySkewless ? unsentFault(fault, options.sentBySkewless) : undefined);
      if (problem) throw new Error(problem);
      r.machine.faults.add(fault);
    } else if (fault.kind === 'refuse') {
      clearTimeout(r.refuseTimer);
      r.endpoint.takeOffline('refuse');
      r.refused = { fault, until: Date.now() + fault.seconds * 1000 };
      r.refuseTimer = setTimeout(() => {
        r.refused = undefined;
        r.endpoint.bringOnline('refuse');
      }, fault.seconds * 1000);
    } else {
      const pair = rotateHostKey(r.machine.store.dir, host);
      r.publicKey = pair.publicKey;
      r.endpoint.setHostKey(pair.privateKey);
    }
  }

  activeFaults(host: string): ReturnType<HostSimulator['activeFaults']> {
    const r = this.get(host);
    const refused =
      r.refused && r.refused.until > Date.now()
        ? [{ fault: r.refused.fault, secondsLeft: Math.ceil((r.refused.until - Date.now()) / 1000) }]
        : [];
    return [...r.machine.faults.list(), ...refused];
  }

  clearFaults(host: string): void {
    const r = this.get(host);
    r.machine.faults.clear();
    r.refused = undefined;
    clearTimeout(r.refuseTimer);
    r.endpoint.bringOnline('refuse');
  }

  commandLog = (host: string): CommandLogEntry[] => this.get(host).machine.store.commandLog();
  noticeManifests = (host: string): Promise<void> => this.get(host).machine.noticeManifests();
  connectionsAccepted = (host: string): number => this.get(host).endpoint.accepted;
  connectionsOpen = (host: string): number => this.get(host).endpoint.open;
  dropConnections = (host: string): void => this.get(host).endpoint.dropConnections();
  state = (host: string): HostState => structuredClone(this.get(host).machine.state);

  trustHostKey(host: string): void {
    this.trust(this.get(host));
  }

  /** Writes the host's current key into known_hosts, for its port. */
  private trust(r: Running): void {
    const entries = readKnownHosts(this.knownHostsPath);
    entries.set(knownHostsName(r.endpoint.port), keyWithoutComment(r.publicKey));
    writeKnownHosts(this.knownHostsPath, entries);
  }

  onCommand(listener: CommandObserver): () => void {
    this.listeners.add(listener);
    return () => void this.listeners.delete(listener);
  }

  setHangupPolicy(policy: HangupPolicy | undefined): void {
    this.hangup = policy;
  }

  async addHost(spec: HostSpec): Promise<SimulatedHost> {
    if (this.stopped) throw new Error('sim: the host simulator is stopped');
    const present = this.running.get(spec.name);
    if (present) return simulated(present);
    const r = this.prepare(spec);
    this.running.set(spec.name, r);
    try {
      await listenAll([r], new Set([...this.running.values()].filter((o) => o !== r).map((o) => o.machine.state.port)));
    } catch (err) {
      this.running.delete(spec.name);
      r.machine.shutdown();
      await r.endpoint.close();
      throw err;
    }
    this.trust(r);
    for (const fault of spec.faults ?? []) this.setFault(spec.name, fault);
    r.machine.resume();
    return simulated(r);
  }

  async removeHost(host: string): Promise<boolean> {
    const r = this.running.get(host);
    if (!r) return false;
    this.running.delete(host);
    r.machine.shutdown();
    clearTimeout(r.refuseTimer);
    await r.endpoint.close();
    const entries = readKnownHosts(this.knownHostsPath);
    entries.delete(knownHostsName(r.endpoint.port));
    writeKnownHosts(this.knownHostsPath, entries);
    rmSync(hostDir(this.options.stateDir, host), { recursive: true, force: true });
    return true;
  }

  async stop(): Promise<void> {
    this.stopped = true;
    await this.stopAll();
  }
}

function simulated(r: Running): SimulatedHost {
  return {
    name: r.spec.name,
    port: r.endpoint.port,
    get hostKeyFingerprint() {
      return fingerprint(r.publicKey);
    },
  };
}

/** Stored hosts reuse their port; new hosts get a free one, which is then stored. */
async function listenAll(hosts: Running[], alsoTaken: Set<number> = new Set()): Promise<void> {
  const taken = new Set([...alsoTaken, ...hosts.map((r) => r.machine.state.port)].filter((p) => p > 0));
  const BATCH = 100;
  for (let i = 0; i < hosts.length; i += BATCH) {
    await Promise.all(
      hosts.slice(i, i + BATCH).map(async (r) => {
        const stored = r.machine.state.port;
        const port = await listenOnFreePort((p) => r.endpoint.listen(p), stored > 0 ? stored : undefined, taken);
        if (port !== stored) r.machine.store.update((s) => void (s.port = port));
      }),
    );
  }
}
