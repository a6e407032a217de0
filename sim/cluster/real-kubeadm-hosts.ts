import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import type { SimDescription } from '../description.js';
import { hostDir } from '../hosts/host-state.js';
import { modelledAddress } from '../hosts/host-simulator.js';
import type { PerNodeControlPlane } from './control-plane.js';
import { ensureCriFake, KUBE_RELEASES, releaseProgram } from './kube-releases.js';
import { mergePatch, type KubeClients } from './kube-clients.js';
import { CRI_SOCKET, kubeadmInit, type KubeadmHost } from './kubeadm-init.js';
import { ManagedProcess } from '../../tooling/managed-process.js';
import { waitFor } from './wait-for.js';

const CRI_SOCKET_ANNOTATION = 'kubeadm.alpha.kubernetes.io/cri-socket';

/**
 * What the hosts of a per-node simulation need to run the real kubeadm (issue 18 part 2): a fake
 * CRI socket on each control plane (kubeadm's preflight connects to it and pulls the images there),
 * and the files and objects `kubeadm init` and `join` leave (kubeadm-init.ts).
 */
export interface RealKubeadmHosts {
  stop(): Promise<void>;
}

/** The real kubeadm of a package version, if the simulation has that release. */
export const realKubeadm = (version: string): string | undefined =>
  KUBE_RELEASES.includes(version) ? releaseProgram(version, 'kubeadm') : undefined;

export async function prepareRealKubeadmHosts(o: {
  stateDir: string;
  description: SimDescription;
  controlPlane: PerNodeControlPlane;
  noticeManifests: (host: string) => Promise<void>;
  kube: KubeClients;
}): Promise<RealKubeadmHosts> {
  const { description: d, controlPlane: cp } = o;
  const root = (name: string) => join(hostDir(o.stateDir, name), 'root');
  const controlPlanes: KubeadmHost[] = d.nodes
    .filter((n) => n.role === 'control-plane')
    .map((n, i) => ({
      name: n.name,
      root: root(n.name),
      address: modelledAddress(i),
      ...(n.etcdImageTag ? { etcdImageTag: n.etcdImageTag } : {}),
    }));
  const workers: KubeadmHost[] = d.nodes.filter((n) => n.role === 'worker').map((n) => ({ name: n.name, root: root(n.name), address: '' }));

  const cris = controlPlanes.map((h) => {
    mkdirSync(join(h.root, 'run/containerd'), { recursive: true });
    // CRI_SOCKET's path, under the host's root: what kubeadm dials inside the root view.
    const socket = join(h.root, new URL(CRI_SOCKET).pathname);
    const log = join(o.stateDir, 'cluster', 'logs', `${h.name}-cri-fake.log`);
    return { socket, process: new ManagedProcess(`cri-fake on ${h.name}`, ensureCriFake(), ['--endpoint', `unix://${socket}`], log) };
  });
  const stop = async () => {
    for (const c of cris) await c.process.stop();
  };
  try {
    for (const c of cris) c.process.start();
    await waitFor('the fake CRI sockets', () => cris.every((c) => (c.process.assertAlive(), existsSync(c.socket))), 30_000, 100);
    await kubeadmInit({
      clusterName: d.name,
      version: d.version,
      controlPlaneEndpoint: new URL(cp.server).host,
      apiserverPort: (node) => cp.nodes.get(node)?.apiserverPort ?? 0,
      pki: cp.pki,
      controlPlanes,
      workers,
      scratchDir: join(o.stateDir, 'root-view'),
    });
    // `kubeadm join` annotates each node with its CRI socket (kubeadm before 1.34 reads it there,
    // `upgrade node` included); init's upload-config did only the first.
    for (const n of d.nodes) {
      await o.kube.core.patchNode(
        { name: n.name, body: { metadata: { annotations: { [CRI_SOCKET_ANNOTATION]: CRI_SOCKET } } } },
        mergePatch,
      );
    }
    // The kubelets find kubeadm's manifests: mirror pods made from them.
    for (const h of controlPlanes) await o.noticeManifests(h.name);
  } catch (err) {
    await stop();
    throw err;
  }
  return { stop };
}
