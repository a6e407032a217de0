// An in-memory ClusterEffects for the host simulator's tests: it records every call and keeps just
// enough cluster (cluster version, static pod versions, kubelets) to answer.
import type { ClusterEffects } from '../../../sim/hosts/cluster-effects.js';

export interface EffectCall {
  method: keyof ClusterEffects;
  args: unknown[];
}

const COMPONENTS = ['kube-apiserver', 'kube-controller-manager', 'kube-scheduler'];

export class FakeEffects implements ClusterEffects {
  readonly calls: EffectCall[] = [];
  /** node → the version its kubelet reported; null while stopped. */
  readonly kubelets = new Map<string, string | null>();
  readonly planes = new Map<string, Record<string, string>>();

  constructor(
    public cluster: string,
    controlPlanes: string[] = [],
  ) {
    for (const node of controlPlanes) this.planes.set(node, Object.fromEntries(COMPONENTS.map((c) => [c, cluster])));
  }

  async kubeletStopped(node: string): Promise<void> {
    this.calls.push({ method: 'kubeletStopped', args: [node] });
    this.kubelets.set(node, null);
  }
  async kubeletStarted(node: string, version: string): Promise<void> {
    this.calls.push({ method: 'kubeletStarted', args: [node, version] });
    this.kubelets.set(node, version);
  }
  async clusterVersion(): Promise<string> {
    return this.cluster;
  }
  async controlPlaneVersions(node: string): Promise<Record<string, string>> {
    return { ...(this.planes.get(node) ?? {}) };
  }
  async upgradeControlPlane(node: string, version: string, options: { recordClusterVersion: boolean }): Promise<void> {
    this.calls.push({ method: 'upgradeControlPlane', args: [node, version, options] });
    this.planes.set(node, Object.fromEntries(COMPONENTS.map((c) => [c, version])));
    if (options.recordClusterVersion) this.cluster = version;
  }

  callsOf(method: keyof ClusterEffects): unknown[][] {
    return this.calls.filter((c) => c.method === method).map((c) => c.args);
  }

  /** Polls until `check` holds, failing after `timeoutMs`. */
  async waitFor(what: string, check: () => boolean, timeoutMs = 5000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (!check()) {
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}; calls: ${JSON.stringify(this.calls)}`);
      await new Promise((r) => setTimeout(r, 10));
    }
  }
}
