import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { freePort } from '../../tooling/free-port.js';
import { ManagedProcess } from '../../tooling/managed-process.js';
import { etcdServerProgram } from './etcd-releases.js';
import { httpGet, waitFor } from './wait-for.js';

/**
 * A per-node control plane's etcd: one real member per control-plane host (kubeadm's stacked etcd), named
 * after the host, its data dir the host's /var/lib/etcd, each the etcd server of the version its static-pod
 * manifest names (sim/cluster/static-pods.ts restarts a member at another version on the same data dir, as
 * a kubelet restarts the static pod). What stays modelled: the manifest's flags (loopback ports, plain http
 * instead of kubeadm's TLS and 10.0.0.x addresses).
 */
export interface EtcdMemberSpec {
  node: string;
  dataDir: string;
  /** `3.5.24`: the version the member starts at. */
  version: string;
}

interface Member extends EtcdMemberSpec {
  clientPort: number;
  peerPort: number;
  process?: ManagedProcess;
  /** The version the process runs (set at its start). */
  running?: string;
}

const STOP_GRACE_MS = 10_000;

export class EtcdMembers {
  private constructor(
    private readonly members: Map<string, Member>,
    private readonly logs: string,
    private readonly clusterToken: string,
  ) {}

  static async create(o: { members: readonly EtcdMemberSpec[]; logs: string; clusterToken: string }): Promise<EtcdMembers> {
    const members = new Map<string, Member>();
    for (const m of o.members) {
      const [clientPort, peerPort] = [await freePort(), await freePort()];
      members.set(m.node, { ...m, clientPort, peerPort });
    }
    return new EtcdMembers(members, o.logs, o.clusterToken);
  }

  get nodes(): string[] {
    return [...this.members.keys()];
  }

  /** `http://127.0.0.1:<port>`: where `node`'s member serves clients (its mirror pod's advertise-client-urls). */
  clientUrl(node: string): string {
    return `http://127.0.0.1:${this.member(node).clientPort}`;
  }

  /** Every member's client URL, `first`'s first (an apiserver's --etcd-servers). */
  clientUrls(first?: string): string[] {
    const nodes = first && this.members.has(first) ? [first, ...this.nodes.filter((n) => n !== first)] : this.nodes;
    return nodes.map((n) => this.clientUrl(n));
  }

  /** The version `node`'s member runs, undefined while it does not. */
  versionOf(node: string): string | undefined {
    const m = this.members.get(node);
    return m?.process?.running ? m.running : undefined;
  }

  processOf(node: string): ManagedProcess | undefined {
    const p = this.members.get(node)?.process;
    return p?.running ? p : undefined;
  }

  get anyRunning(): boolean {
    return this.nodes.some((n) => this.versionOf(n) !== undefined);
  }

  /** Starts every member at its version (a new cluster bootstraps only once a quorum runs) and waits until all are healthy. */
  async startAll(): Promise<void> {
    for (const m of this.members.values()) this.startMember(m, m.version);
    await Promise.all(this.nodes.map((n) => this.waitHealthy(n)));
  }

  /**
   * Runs `node`'s member at `version` (a restart on the same data dir when it runs another), resolving once
   * it answers /health (it has rejoined a cluster with a leader).
   */
  async run(node: string, version: string): Promise<void> {
    const m = this.member(node);
    if (this.versionOf(node) === version) return;
    await this.stop(node);
    this.startMember(m, version);
    await this.waitHealthy(node);
  }

  /** Starts `node`'s (stopped) member at `version` without waiting: see waitHealthy. */
  start(node: string, version: string): void {
    const m = this.member(node);
    if (m.process?.running) throw new Error(`etcd on ${node} runs already (${m.running ?? '?'})`);
    this.startMember(m, version);
  }

  async stop(node: string): Promise<void> {
    const m = this.member(node);
    await m.process?.stop(STOP_GRACE_MS);
    m.process = undefined;
    m.running = undefined;
  }

  async stopAll(): Promise<void> {
    for (const n of [...this.nodes].reverse()) await this.stop(n);
  }

  /** Waits until `node`'s member answers /health with `"health":"true"` (a leader, its quorum). */
  waitHealthy(node: string, timeoutMs = 120_000): Promise<void> {
    const m = this.member(node);
    return waitFor(
      `etcd ${m.running ?? ''} on ${node} healthy`,
      async () => {
        m.process?.assertAlive();
        return (await httpGet(`${this.clientUrl(node)}/health`)).body.includes('"health":"true"');
      },
      timeoutMs,
    );
  }

  /** What the member itself says it runs (`/version`'s etcdserver), undefined when it does not answer. */
  async reportedVersion(node: string): Promise<{ server: string; cluster: string } | undefined> {
    if (!this.versionOf(node)) return undefined;
    try {
      const { status, body } = await httpGet(`${this.clientUrl(node)}/version`);
      if (status !== 200) return undefined;
      const v = JSON.parse(body) as { etcdserver?: string; etcdcluster?: string };
      return v.etcdserver ? { server: v.etcdserver, cluster: v.etcdcluster ?? '' } : undefined;
    } catch {
      return undefined;
    }
  }

  private member(node: string): Member {
    const m = this.members.get(node);
    if (!m) throw new Error(`no etcd member on ${node}`);
    return m;
  }

  private startMember(m: Member, version: string): void {
    mkdirSync(m.dataDir, { recursive: true, mode: 0o700 });
    const peer = (x: Member) => `http://127.0.0.1:${x.peerPort}`;
    const client = `http://127.0.0.1:${m.clientPort}`;
    // The --initial-* flags matter only for a new data dir; a restart reads the member from its data dir.
    const process = new ManagedProcess(
      `etcd ${version} on ${m.node}`,
      etcdServerProgram(version),
      [
        `--name=${m.node}`,
        `--data-dir=${m.dataDir}`,
        `--listen-client-urls=${client}`,
        `--advertise-client-urls=${client}`,
        `--listen-peer-urls=${peer(m)}`,
        `--initial-advertise-peer-urls=${peer(m)}`,
        `--initial-cluster=${[...this.members.values()].map((x) => `${x.node}=${peer(x)}`).join(',')}`,
        '--initial-cluster-state=new',
        `--initial-cluster-token=${this.clusterToken}`,
        '--unsafe-no-fsync=true',
        '--auto-compaction-retention=1',
        '--quota-backend-bytes=2147483648',
        '--log-level=warn',
      ],
      join(this.logs, `${m.node}-etcd.log`),
    );
    m.process = process;
    m.running = version;
    process.start();
  }
}

/**
 * For the hosts' etcdctl (sim/hosts/commands/etcd.ts): the members an endpoint list dialled on `host` reaches.
 * kubeadm's `https://127.0.0.1:2379` (or `localhost`) is the host's own member; a control plane's modelled
 * address (`10.0.0.1N`, kubeadm's advertise address there) is that host's member. Undefined when none matches.
 */
export function etcdMemberOf(
  members: EtcdMembers,
  controlPlaneNodes: readonly string[],
  addressOf: (index: number) => string,
): (host: string, endpoints: string) => string | undefined {
  return (host, endpoints) => {
    const urls: string[] = [];
    for (const e of endpoints.split(',')) {
      let hostname: string;
      try {
        hostname = new URL(e.includes('://') ? e : `https://${e}`).hostname;
      } catch {
        return undefined;
      }
      const node =
        hostname === '127.0.0.1' || hostname === 'localhost' ? host : controlPlaneNodes.find((_, i) => addressOf(i) === hostname);
      if (node === undefined || !members.nodes.includes(node)) return undefined;
      urls.push(members.clientUrl(node));
    }
    return urls.length > 0 ? urls.join(',') : undefined;
  };
}
