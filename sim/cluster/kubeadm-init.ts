import { copyFileSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { runInHostRoot, type InHostResult } from '../hosts/root-view/run-in-host.js';
import { releaseProgram } from './kube-releases.js';
import type { Pki } from './pki.js';

/**
 * A per-node simulation's hosts set up by the real kubeadm (issue 18 part 2), as `kubeadm init` and
 * `kubeadm join` would leave them, phase by phase (`kubeadm init phase …`), in each host's own
 * filesystem view (sim/hosts/root-view): certificates from one shared CA (the simulation's, which the
 * apiservers trust), kubeconfigs, the static-pod manifests, the kubelet's config.yaml and
 * kubeadm-flags.env, then through the API the kubeadm-config and kubelet-config ConfigMaps, the
 * control-plane label and taint, the bootstrap token, and the CoreDNS and kube-proxy addons.
 * `wait-control-plane` and a full `init`/`join` are not run: they wait for a kubelet's healthz.
 * Workers get what `kubeadm join` leaves there: kubelet.conf (system:node:<name>), config.yaml and
 * kubeadm-flags.env.
 */

export const CRI_SOCKET = 'unix:///run/containerd/containerd.sock';
/** Where the init configuration sits on a control plane while the phases run. */
const INIT_CONFIG = '/etc/kubernetes/skewless-init.yaml';

export interface KubeadmHost {
  name: string;
  /** The host's root dir: /etc/kubernetes is <root>/etc/kubernetes. */
  root: string;
  /** The node's (modelled) address: the apiserver's advertise address in kubeadm's files. */
  address: string;
  /**
   * A control plane's etcd image tag other than kubeadm's (`3.5.36-0`): put into the etcd manifest kubeadm
   * wrote, as an operator who patched etcd by editing the manifest leaves it (kubeadm-config keeps no tag).
   */
  etcdImageTag?: string;
}

export interface KubeadmInitOptions {
  clusterName: string;
  /** `1.32.13`: the cluster's version, whose kubeadm writes everything. */
  version: string;
  /** The load-balanced endpoint, `127.0.0.1:<port>`: kubeadm's controlPlaneEndpoint. */
  controlPlaneEndpoint: string;
  /** Each control plane's own apiserver port (the manifests' --secure-port). */
  apiserverPort: (node: string) => number;
  pki: Pki;
  controlPlanes: readonly KubeadmHost[];
  workers: readonly KubeadmHost[];
  /** Scratch space for the namespaces' overlays and the systemctl log. */
  scratchDir: string;
}

function initConfiguration(o: KubeadmInitOptions, host: KubeadmHost): string {
  return `apiVersion: kubeadm.k8s.io/v1beta4
kind: InitConfiguration
localAPIEndpoint:
  advertiseAddress: ${host.address}
  bindPort: ${o.apiserverPort(host.name)}
nodeRegistration:
  name: ${host.name}
  criSocket: ${CRI_SOCKET}
  taints:
  - key: node-role.kubernetes.io/control-plane
    effect: NoSchedule
---
apiVersion: kubeadm.k8s.io/v1beta4
kind: ClusterConfiguration
clusterName: ${o.clusterName}
kubernetesVersion: v${o.version}
controlPlaneEndpoint: ${o.controlPlaneEndpoint}
certificatesDir: /etc/kubernetes/pki
imageRepository: registry.k8s.io
networking:
  serviceSubnet: 10.96.0.0/16
  podSubnet: 10.244.0.0/16
  dnsDomain: cluster.local
etcd:
  local:
    dataDir: /var/lib/etcd
---
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
cgroupDriver: systemd
`;
}

class KubeadmFailed extends Error {}

/** Rewrites the etcd image's tag of manifest `path` (`image: registry.k8s.io/etcd:3.5.24-0`). */
function setEtcdImageTag(path: string, tag: string): void {
  const text = readFileSync(path, 'utf8');
  const image = /^(\s*image: \S*\/etcd:)\S+$/m;
  if (!image.test(text)) throw new Error(`${path}: no etcd image line to set tag ${tag} in`);
  writeFileSync(path, text.replace(image, `$1${tag}`));
}

export async function kubeadmInit(o: KubeadmInitOptions): Promise<void> {
  const kubeadm = releaseProgram(o.version, 'kubeadm');
  const systemctlLog = join(o.scratchDir, 'systemctl.log');
  mkdirSync(o.scratchDir, { recursive: true });
  const run = async (host: KubeadmHost, args: string[]): Promise<InHostResult> => {
    const r = await runInHostRoot(host.root, [kubeadm, ...args], { scratchDir: o.scratchDir, systemctlLog });
    if (r.exitCode !== 0) throw new KubeadmFailed(`${host.name}: kubeadm ${args.join(' ')} exited ${r.exitCode}:\n${r.stderr || r.stdout}`);
    return r;
  };
  const first = o.controlPlanes[0];
  if (!first) throw new Error('kubeadm init: no control plane');
  const onHost = (host: KubeadmHost, path: string) => join(host.root, path);
  const config = ['--config', INIT_CONFIG];

  for (const host of o.controlPlanes) {
    // What the seed left there: kubeadm refuses placeholder certificates and kubeconfigs.
    rmSync(onHost(host, '/etc/kubernetes'), { recursive: true, force: true });
    mkdirSync(onHost(host, '/etc/kubernetes/pki/etcd'), { recursive: true });
    mkdirSync(onHost(host, '/var/lib/kubelet'), { recursive: true });
    writeFileSync(onHost(host, INIT_CONFIG), initConfiguration(o, host));
    // One cluster, one set of CAs and service-account keys: the simulation's CA (the apiservers'
    // client CA) and key on every control plane, the others' CAs copied from the first, as an
    // operator copies them for `kubeadm join --control-plane` (kubeadm reuses a CA it finds).
    const pki = onHost(host, '/etc/kubernetes/pki');
    copyFileSync(o.pki.caCert, join(pki, 'ca.crt'));
    copyFileSync(o.pki.caKey, join(pki, 'ca.key'));
    copyFileSync(o.pki.saKey, join(pki, 'sa.key'));
    copyFileSync(o.pki.saPub, join(pki, 'sa.pub'));
    if (host !== first) {
      for (const f of ['front-proxy-ca.crt', 'front-proxy-ca.key', 'etcd/ca.crt', 'etcd/ca.key']) {
        copyFileSync(join(onHost(first, '/etc/kubernetes/pki'), f), join(pki, f));
      }
    }
    for (const phase of [['certs', 'all'], ['kubeconfig', 'all'], ['etcd', 'local'], ['control-plane', 'all'], ['kubelet-start']]) {
      await run(host, ['init', 'phase', ...phase, ...config]);
    }
    if (host.etcdImageTag) setEtcdImageTag(onHost(host, '/etc/kubernetes/manifests/etcd.yaml'), host.etcdImageTag);
  }
  // Through the API, as the first control plane: the ConfigMaps, RBAC, the token, the addons.
  await run(first, ['init', 'phase', 'upload-config', 'all', ...config]);
  for (const host of o.controlPlanes) await run(host, ['init', 'phase', 'mark-control-plane', ...config]);
  await run(first, ['init', 'phase', 'bootstrap-token', ...config]);
  await run(first, ['init', 'phase', 'addon', 'all', ...config]);

  // Workers: what `kubeadm join` leaves. The node's client certificate, from the CA on the first control plane.
  const kubeletConfig = readFileSync(onHost(first, '/var/lib/kubelet/config.yaml'), 'utf8');
  const flags = readFileSync(onHost(first, '/var/lib/kubelet/kubeadm-flags.env'), 'utf8');
  for (const w of o.workers) {
    const kubeconfig = await run(first, [
      'kubeconfig',
      'user',
      ...config,
      '--client-name',
      `system:node:${w.name}`,
      '--org',
      'system:nodes',
    ]);
    for (const [path, text] of [
      ['/etc/kubernetes/kubelet.conf', kubeconfig.stdout],
      ['/var/lib/kubelet/config.yaml', kubeletConfig],
      ['/var/lib/kubelet/kubeadm-flags.env', flags],
    ] as const) {
      mkdirSync(dirname(onHost(w, path)), { recursive: true });
      writeFileSync(onHost(w, path), text, { mode: path.endsWith('.conf') ? 0o600 : 0o644 });
    }
  }
  for (const host of o.controlPlanes) rmSync(onHost(host, INIT_CONFIG), { force: true });
}
