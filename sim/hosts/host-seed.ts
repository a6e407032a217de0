// A host the state dir has never seen: its first state (from the options) and the files a kubeadm
// node has, so commands that read them (`cat /etc/os-release`, etcdctl's TLS files) behave.
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { HostStore, PACKAGES, toPackageVersion, type HostRole, type PackageName } from './host-state.js';

export interface SeedSpec {
  name: string;
  role: HostRole;
  /** Kubernetes versions (`1.32.4`) of the installed packages. */
  installed: Record<PackageName, string>;
  /** apt holds; kubeadm's install guide holds all three. */
  held?: readonly PackageName[];
}

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
const CONTROL_PLANE_FILES = ['/etc/kubernetes/admin.conf', '/etc/kubernetes/manifests/etcd.yaml',
  ...['ca', 'server', 'peer', 'healthcheck-client'].flatMap((n) => [`/etc/kubernetes/pki/etcd/${n}.crt`, `/etc/kubernetes/pki/etcd/${n}.key`])];

export function seedHost(stateDir: string, spec: SeedSpec, user: string): HostStore {
  for (const p of PACKAGES) if (!spec.installed[p]) throw new Error(`sim: host ${spec.name}: installed.${p} is missing`);
  const packages = { kubeadm: toPackageVersion(spec.installed.kubeadm), kubelet: toPackageVersion(spec.installed.kubelet), kubectl: toPackageVersion(spec.installed.kubectl) };
  const store = HostStore.create(stateDir, {
    schema: 1,
    name: spec.name,
    role: spec.role,
    port: 0,
    packages,
    holds: PACKAGES.filter((p) => (spec.held ?? PACKAGES).includes(p)),
    kubelet: { active: true, version: spec.installed.kubelet.replace(/^v/, ''), startingVersion: null, unitPackage: packages.kubelet },
    nodeConfigVersion: null,
  });
  const files: Record<string, string> = { '/etc/os-release': OS_RELEASE, '/etc/hostname': `${spec.name}\n` };
  if (spec.role === 'control-plane') for (const f of CONTROL_PLANE_FILES) files[f] = `# placeholder for ${f} (simulated host)\n`;
  for (const [path, content] of Object.entries(files)) {
    const file = store.hostPath(path);
    mkdirSync(dirname(file), { recursive: true });
    writeFileSync(file, content, { mode: path.endsWith('.key') ? 0o600 : 0o644 });
  }
  for (const dir of [`/home/${user}`, '/tmp', '/var/lib']) mkdirSync(store.hostPath(dir), { recursive: true });
  return store;
}
