// A host the state dir has never seen: its first state (from the options) and the files a kubeadm
// node has, so commands that read them (`cat /etc/os-release`, etcdctl's TLS files) behave.
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import {
  archiveOffers,
  KEYRING,
  KUBERNETES_LIST,
  listsFileNames,
  packagesIndex,
  parseSources,
  sourcesFileFor,
  type RepositoryLayout,
} from './apt-archive.js';
import { HostStore, PACKAGES, toPackageVersion, type HostRole, type PackageName } from './host-state.js';
import { CONTROL_PLANE_MANIFESTS, type ControlPlaneManifest } from './static-pod-manifest.js';
import { GUIDE_EXCLUDE, KUBERNETES_REPO, repoFileFor, toRpmVersion, type PackageManager } from './rpm-archive.js';
import { extraSourcePath, otherRepositories, type ExtraSource } from './extra-sources.js';

export interface SeedSpec {
  name: string;
  role: HostRole;
  /** Kubernetes versions (`1.32.4`) of the installed packages. */
  installed: Record<PackageName, string>;
  /** apt holds; kubeadm's install guide holds all three. dnf: all three (kubernetes.repo's `exclude=`) or none (no such line). */
  held?: readonly PackageName[];
  /** Source files beside Kubernetes' (Docker's, CRI-O's addon repository, a company mirror), served or broken. */
  sources?: readonly ExtraSource[];
  /** The node's (modelled) address, in a control plane's etcd manifest. */
  address?: string;
  /** Versions the Kubernetes package archive has (`1.33.7`). */
  repository: readonly string[];
  /** How the host's kubernetes.list names the archive: one minor (the install guide's), or a site mirror. */
  packageRepository?: RepositoryLayout;
  /** apt (the default) or dnf: which of the install guide's repository files the host has. */
  packageManager?: PackageManager;
  /** A control plane's component versions (`1.32.13`), the images its manifests name; default: its kubeadm's. */
  components?: Partial<Record<ControlPlaneManifest, string>>;
  /** A control plane's etcd image tag (default kubeadm's `3.6.4-0` of the simulation). */
  etcdImageTag?: string;
}

/**
 * The apt side of the install guide on a new host: the keyring, kubernetes.list for the minor of
 * its packages (or the site mirror), and the lists its last `apt-get update` fetched.
 */
function aptFiles(spec: SeedSpec): Record<string, string> {
  const list = sourcesFileFor(spec.packageRepository ?? 'per-minor', spec.installed.kubeadm);
  const files: Record<string, string> = {
    [KEYRING]: '# placeholder for the pkgs.k8s.io signing key (simulated host)\n',
    [KUBERNETES_LIST]: list,
  };
  const others = otherRepositories('apt', spec.sources ?? []);
  const texts: [string, string][] = [
    [KUBERNETES_LIST, list],
    ...(spec.sources ?? []).map((s): [string, string] => [extraSourcePath('apt', s.file), s.text]),
  ];
  for (const [path, text] of texts) {
    files[path] = text;
    const sources = parseSources(path, text);
    for (const entry of typeof sources === 'string' ? [] : sources) {
      const versions = archiveOffers(spec.repository, entry.uri, others);
      if (versions) for (const name of listsFileNames(entry)) files[`/var/lib/apt/lists/${name}`] = packagesIndex(versions);
    }
  }
  return files;
}

/**
 * The dnf side of the install guide: kubernetes.repo for the minor of its packages (dnf fetches
 * metadata itself), without its `exclude=` line when the host holds nothing, and the extra .repo files.
 */
function dnfFiles(spec: SeedSpec): Record<string, string> {
  const repo = repoFileFor(spec.packageRepository ?? 'per-minor', spec.installed.kubeadm);
  const held = spec.held === undefined || spec.held.length > 0;
  const files: Record<string, string> = {
    [KUBERNETES_REPO]: held ? repo : repo.replace(`exclude=${GUIDE_EXCLUDE.join(' ')}\n`, ''),
  };
  for (const s of spec.sources ?? []) files[extraSourcePath('dnf', s.file)] = s.text;
  return files;
}

const ROCKY_RELEASE = `NAME="Rocky Linux"
VERSION="9.5 (Blue Onyx)"
ID="rocky"
ID_LIKE="rhel centos fedora"
VERSION_ID="9.5"
PLATFORM_ID="platform:el9"
PRETTY_NAME="Rocky Linux 9.5 (Blue Onyx)"
`;

const OS_RELEASE = `PRETTY_NAME="Debian GNU/Linux 12 (bookworm)"
NAME="Debian GNU/Linux"
VERSION_ID="12"
VERSION="12 (bookworm)"
VERSION_CODENAME=bookworm
ID=debian
HOME_URL="https://www.debian.org/"
SUPPORT_URL="https://www.debian.org/support"
BUG_REPORT_URL="https://bugs.debian.org/"
`;

/** kubeadm's etcd TLS files on a control plane: placeholders, checked for existence by the etcdctl shim. */
const CONTROL_PLANE_FILES = [
  '/etc/kubernetes/admin.conf',
  ...['ca', 'server', 'peer', 'healthcheck-client'].flatMap((n) => [
    `/etc/kubernetes/pki/etcd/${n}.crt`,
    `/etc/kubernetes/pki/etcd/${n}.key`,
  ]),
];

/**
 * kubeadm's etcd static pod manifest, trimmed to what matters here: the member's name, its URLs and
 * its data dir (the etcd-data hostPath). The kubelet model (sim/cluster/static-pods.ts) runs or stops
 * the real etcd as the primary's manifest comes and goes.
 */
export function etcdManifest(name: string, address: string, imageTag = '3.6.4-0'): string {
  const flags = [
    `--advertise-client-urls=https://${address}:2379`,
    '--cert-file=/etc/kubernetes/pki/etcd/server.crt',
    '--client-cert-auth=true',
    '--data-dir=/var/lib/etcd',
    `--initial-advertise-peer-urls=https://${address}:2380`,
    `--initial-cluster=${name}=https://${address}:2380`,
    '--key-file=/etc/kubernetes/pki/etcd/server.key',
    `--listen-client-urls=https://127.0.0.1:2379,https://${address}:2379`,
    `--listen-peer-urls=https://${address}:2380`,
    `--name=${name}`,
    '--peer-cert-file=/etc/kubernetes/pki/etcd/peer.crt',
    '--peer-client-cert-auth=true',
    '--peer-key-file=/etc/kubernetes/pki/etcd/peer.key',
    '--peer-trusted-ca-file=/etc/kubernetes/pki/etcd/ca.crt',
    '--snapshot-count=10000',
    '--trusted-ca-file=/etc/kubernetes/pki/etcd/ca.crt',
  ];
  return `apiVersion: v1
kind: Pod
metadata:
  annotations:
    kubeadm.kubernetes.io/etcd.advertise-client-urls: https://${address}:2379
  labels:
    component: etcd
    tier: control-plane
  name: etcd
  namespace: kube-system
spec:
  containers:
  - command:
    - etcd
${flags.map((f) => `    - ${f}`).join('\n')}
    image: registry.k8s.io/etcd:${imageTag}
    name: etcd
    volumeMounts:
    - mountPath: /var/lib/etcd
      name: etcd-data
    - mountPath: /etc/kubernetes/pki/etcd
      name: etcd-certs
  hostNetwork: true
  priorityClassName: system-node-critical
  volumes:
  - hostPath:
      path: /etc/kubernetes/pki/etcd
      type: DirectoryOrCreate
    name: etcd-certs
  - hostPath:
      path: /var/lib/etcd
      type: DirectoryOrCreate
    name: etcd-data
`;
}

/**
 * The other control-plane manifests: the kubelet runs what is there, at the version its image names
 * (a per-node control plane runs that release; sim/cluster/static-pods.ts).
 */
const componentManifest = (component: string, version: string): string =>
  `apiVersion: v1\nkind: Pod\nmetadata:\n  labels:\n    component: ${component}\n    tier: control-plane\n  name: ${component}\n  namespace: kube-system\nspec:\n  containers:\n  - command:\n    - ${component}\n    image: registry.k8s.io/${component}:v${version}\n    name: ${component}\n  hostNetwork: true\n`;

export function seedHost(stateDir: string, spec: SeedSpec, user: string): HostStore {
  for (const p of PACKAGES) if (!spec.installed[p]) throw new Error(`sim: host ${spec.name}: installed.${p} is missing`);
  const dnf = spec.packageManager === 'dnf';
  const packageVersion = dnf ? toRpmVersion : toPackageVersion;
  const packages = {
    kubeadm: packageVersion(spec.installed.kubeadm),
    kubelet: packageVersion(spec.installed.kubelet),
    kubectl: packageVersion(spec.installed.kubectl),
  };
  const store = HostStore.create(stateDir, {
    schema: 1,
    name: spec.name,
    role: spec.role,
    port: 0,
    packages,
    // dnf hosts hold by the repository's exclude= line, not by apt-mark.
    holds: dnf ? [] : PACKAGES.filter((p) => (spec.held ?? PACKAGES).includes(p)),
    kubelet: { active: true, version: spec.installed.kubelet.replace(/^v/, ''), startingVersion: null, unitPackage: packages.kubelet },
    nodeConfigVersion: null,
  });
  const files: Record<string, string> = dnf
    ? { '/etc/os-release': ROCKY_RELEASE, '/etc/hostname': `${spec.name}\n`, ...dnfFiles(spec) }
    : { '/etc/os-release': OS_RELEASE, '/etc/hostname': `${spec.name}\n`, ...aptFiles(spec) };
  if (spec.role === 'control-plane') {
    for (const f of CONTROL_PLANE_FILES) files[f] = `# placeholder for ${f} (simulated host)\n`;
    files['/etc/kubernetes/manifests/etcd.yaml'] = etcdManifest(spec.name, spec.address ?? '10.0.0.11', spec.etcdImageTag);
    for (const c of CONTROL_PLANE_MANIFESTS)
      files[`/etc/kubernetes/manifests/${c}.yaml`] = componentManifest(c, spec.components?.[c] ?? spec.installed.kubeadm.replace(/^v/, ''));
  }
  for (const [path, content] of Object.entries(files)) {
    const file = store.hostPath(path);
    mkdirSync(dirname(file), { recursive: true });
    writeFileSync(file, content, { mode: path.endsWith('.key') ? 0o600 : 0o644 });
  }
  for (const dir of [`/home/${user}`, '/tmp', '/var/lib']) mkdirSync(store.hostPath(dir), { recursive: true });
  // etcd's data dir: the primary's is the real etcd's (sim/cluster/static-pods.ts), the others' stay empty.
  if (spec.role === 'control-plane') mkdirSync(store.hostPath('/var/lib/etcd'), { recursive: true, mode: 0o700 });
  return store;
}
