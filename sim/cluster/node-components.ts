import { existsSync, mkdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import type { ControlPlaneManifest } from '../hosts/static-pod-manifest.js';
import { apiserverFlags, controllerManagerFlags, schedulerFlags } from './component-flags.js';
import { freePort } from '../../tooling/free-port.js';
import { releaseProgram } from './kube-releases.js';
import { ManagedProcess } from '../../tooling/managed-process.js';
import { writeKubeconfig, type Pki } from './pki.js';
import { httpGet, waitFor, type TlsOptions } from './wait-for.js';

/**
 * One control-plane host's own kube-apiserver, kube-controller-manager and kube-scheduler, each the
 * real program of the release its static-pod manifest names (a `per-node` control plane): as on a
 * kubeadm node, the controller-manager and scheduler talk to this host's apiserver, and the
 * apiservers of all hosts share the one etcd.
 */
export interface NodeComponentsOptions {
  node: string;
  /** The control plane's state dir: logs/, and this host's files under nodes/<node>/. */
  stateDir: string;
  clusterName: string;
  pki: Pki;
  etcdEndpoint: string;
  auditPolicy: string;
  /** Where the apiserver writes its audit log; default logs/audit-<node>.log of the state dir. */
  auditLog?: string;
}

interface Running {
  process: ManagedProcess;
  version: string;
  /** The minor it emulates (`--emulated-version`, KEP-4330), when its manifest says so. */
  emulated?: string;
}

const STOP_GRACE_MS = 1000;

const BUILD_INFO = /^kubernetes_build_info\{[^}]*git_version="v([^"]+)"/m;

export class NodeComponents {
  private readonly running = new Map<ControlPlaneManifest, Running>();
  private readonly tls: TlsOptions;

  private constructor(
    private readonly o: NodeComponentsOptions,
    /** Chosen free at creation; a controller-manager's or scheduler's is chosen again if another listener took it first. */
    private readonly ports: Record<ControlPlaneManifest, number>,
    private readonly kubeconfig: string,
  ) {
    this.tls = { ca: readFileSync(o.pki.caCert), cert: readFileSync(o.pki.adminCert), key: readFileSync(o.pki.adminKey) };
  }

  static async create(o: NodeComponentsOptions): Promise<NodeComponents> {
    const [api, kcm, sched] = await Promise.all([freePort(), freePort(), freePort()]);
    const kubeconfig = join(o.stateDir, `${o.node}.kubeconfig`);
    // The host's controller-manager.conf and scheduler.conf name the local apiserver, as kubeadm writes them.
    writeKubeconfig(kubeconfig, `https://127.0.0.1:${api}`, o.pki, o.clusterName);
    return new NodeComponents(o, { 'kube-apiserver': api, 'kube-controller-manager': kcm, 'kube-scheduler': sched }, kubeconfig);
  }

  get node(): string {
    return this.o.node;
  }

  /** The port `component` serves on (its secure port). */
  portOf(component: ControlPlaneManifest): number {
    return this.ports[component];
  }

  /** The port of this host's apiserver (a backend of the load-balanced endpoint). */
  get apiserverPort(): number {
    return this.ports['kube-apiserver'];
  }

  get auditLog(): string {
    return this.o.auditLog ?? join(this.o.stateDir, 'logs', `audit-${this.o.node}.log`);
  }

  /** The version `component` runs at, undefined while it does not run. */
  versionOf(component: ControlPlaneManifest): string | undefined {
    const r = this.running.get(component);
    return r?.process.running ? r.version : undefined;
  }

  /** The minor `component` emulates, undefined when it emulates none or does not run. */
  emulatedOf(component: ControlPlaneManifest): string | undefined {
    const r = this.running.get(component);
    return r?.process.running ? r.emulated : undefined;
  }

  /** The running process of `component`, if it runs. */
  processOf(component: ControlPlaneManifest): ManagedProcess | undefined {
    const p = this.running.get(component)?.process;
    return p?.running ? p : undefined;
  }

  /**
   * Runs `component` at `version`, emulating `emulated` when given (a restart when it runs another
   * version or emulation, as a kubelet restarts a static pod whose manifest changed), resolving once it serves.
   */
  async run(component: ControlPlaneManifest, version: string, emulated?: string): Promise<void> {
    if (this.versionOf(component) === version && this.emulatedOf(component) === emulated) return;
    await this.stop(component);
    if (component === 'kube-apiserver') mkdirSync(dirname(this.auditLog), { recursive: true });
    const log = join(this.o.stateDir, 'logs', `${this.o.node}-${component}.log`);
    for (let attempt = 1; ; attempt++) {
      const logFrom = existsSync(log) ? statSync(log).size : 0;
      const process = new ManagedProcess(
        `${component} ${version} on ${this.o.node}`,
        releaseProgram(version, component),
        [...this.flags(component, version, emulated), ...(emulated === undefined ? [] : [`--emulated-version=kube=${emulated}`])],
        log,
      );
      this.running.set(component, { process, version, ...(emulated === undefined ? {} : { emulated }) });
      process.start();
      // An exit ends the wait at once (it used to poll a dead process for the whole 120 s).
      await waitFor(`${component} ${version} on ${this.o.node} serving`, async () => !process.running || this.healthy(component), 120_000);
      if (process.running) return;
      // Its port was free when chosen (and is free between a stop and the restart at the next release);
      // a test beside may have it meanwhile: a probe of freePort for a moment, or a listener of its own.
      // A controller-manager or scheduler moves to a new port; the apiserver's is in the balancer and the
      // kubeconfigs, so it tries the same one again a few times, which outlasts a probe.
      if (portTakenSince(log, logFrom)) {
        if (component !== 'kube-apiserver' && attempt < 3) {
          this.ports[component] = await freePort();
          continue;
        }
        if (component === 'kube-apiserver' && attempt < 6) {
          await new Promise((r) => setTimeout(r, 1_000));
          continue;
        }
      }
      process.assertAlive();
    }
  }

  /**
   * Stops `component` as a kubelet kills a static pod whose manifest changed, with a short grace:
   * kube-apiserver 1.32 and 1.33 stop serving at SIGTERM at once but take 15 s more to exit, and
   * every hop restarts each host's apiserver.
   */
  async stop(component: ControlPlaneManifest): Promise<void> {
    await this.running.get(component)?.process.stop(STOP_GRACE_MS);
    this.running.delete(component);
  }

  async stopAll(): Promise<void> {
    for (const c of ['kube-scheduler', 'kube-controller-manager', 'kube-apiserver'] as const) await this.stop(c);
  }

  /**
   * The version the running program itself reports: the apiserver's /version, the others'
   * kubernetes_build_info metric. Undefined when it does not answer.
   */
  async reportedVersion(component: ControlPlaneManifest): Promise<string | undefined> {
    if (!this.versionOf(component)) return undefined;
    try {
      if (component === 'kube-apiserver') {
        const { status, body } = await httpGet(`${this.url(component)}/version`, this.tls);
        return status === 200 ? (JSON.parse(body) as { gitVersion?: string }).gitVersion?.replace(/^v/, '') : undefined;
      }
      const { status, body } = await httpGet(`${this.url(component)}/metrics`, { rejectUnauthorized: false });
      return status === 200 ? BUILD_INFO.exec(body)?.[1] : undefined;
    } catch {
      return undefined;
    }
  }

  /**
   * The minor `component` emulates, when older than its binary: the apiserver's own /version
   * (emulationMajor.emulationMinor, 1.33+); the controller-manager and scheduler report none (no
   * /version, kubernetes_build_info is the binary's), so their flag as started.
   */
  async reportedEmulation(component: ControlPlaneManifest): Promise<string | undefined> {
    const version = this.versionOf(component);
    if (!version) return undefined;
    if (component !== 'kube-apiserver') return this.emulatedOf(component);
    try {
      const { status, body } = await httpGet(`${this.url(component)}/version`, this.tls);
      if (status !== 200) return undefined;
      const v = JSON.parse(body) as { emulationMajor?: string; emulationMinor?: string };
      const emulated = v.emulationMajor && v.emulationMinor ? `${v.emulationMajor}.${v.emulationMinor}` : undefined;
      return emulated && emulated !== version.split('.').slice(0, 2).join('.') ? emulated : undefined;
    } catch {
      return undefined;
    }
  }

  private url(component: ControlPlaneManifest): string {
    return `https://127.0.0.1:${this.ports[component]}`;
  }

  private async healthy(component: ControlPlaneManifest): Promise<boolean> {
    if (component === 'kube-apiserver') return (await httpGet(`${this.url(component)}/readyz`, this.tls)).body === 'ok';
    return (await httpGet(`${this.url(component)}/healthz`, { rejectUnauthorized: false })).body === 'ok';
  }

  private flags(component: ControlPlaneManifest, version: string, emulated: string | undefined): string[] {
    const { o, ports, kubeconfig } = this;
    if (component === 'kube-apiserver') {
      return apiserverFlags({
        port: ports[component],
        etcdEndpoint: o.etcdEndpoint,
        pki: o.pki,
        certDir: join(o.stateDir, 'nodes', o.node, 'apiserver-certs'),
        auditPolicy: o.auditPolicy,
        auditLog: this.auditLog,
        nodeAuthorizer: true,
        version,
        ...(emulated === undefined ? {} : { emulated }),
      });
    }
    if (component === 'kube-controller-manager') {
      return controllerManagerFlags({
        kubeconfig,
        port: ports[component],
        pki: o.pki,
        stateDir: join(o.stateDir, 'nodes', o.node),
        several: true,
      });
    }
    return schedulerFlags({ kubeconfig, port: ports[component], several: true });
  }
}

/** Whether the program's log, past `from`, says its port was in use. */
function portTakenSince(log: string, from: number): boolean {
  try {
    return /address already in use/.test(readFileSync(log).subarray(from).toString('utf8'));
  } catch {
    return false;
  }
}
