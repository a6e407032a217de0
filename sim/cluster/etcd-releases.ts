import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const releasesFile = fileURLToPath(new URL('../../../sim/build/etcd-releases', import.meta.url));
const buildScript = fileURLToPath(new URL('../../../sim/build/build-etcd-release.sh', import.meta.url));

/**
 * The etcd releases a `controlPlane: per-node` simulation runs for real (sim/build/etcd-releases): `3.5.24`.
 * A member runs the one its static-pod manifest's image names; only these can run.
 */
export const ETCD_RELEASES: readonly string[] = readFileSync(releasesFile, 'utf8')
  .split('\n')
  .map((line) => line.trim())
  .filter((line) => line !== '' && !line.startsWith('#'))
  .map((line) => line.replace(/^v/, ''));

/** kubeadm's etcd image tag → the etcd version: `3.5.24-0` → `3.5.24`; undefined for anything else. */
export function etcdVersionOfTag(tag: string | undefined): string | undefined {
  return /^v?(\d+\.\d+\.\d+)(?:-\d+)?$/.exec(tag ?? '')?.[1];
}

/**
 * The etcd image tag kubeadm of Kubernetes `version` writes (its constants.SupportedEtcdVersion at the
 * simulation's releases: 1.32.13 and 1.33.13 → 3.5.24-0, 1.34.4 → 3.6.5-0).
 */
export function kubeadmEtcdTag(version: string): string {
  const minor = Number(version.split('.')[1]);
  return minor >= 34 ? '3.6.5-0' : '3.5.24-0';
}

const built = new Map<string, string>();

/** The etcd server of release `version` (`3.5.24`), built from the Go module proxy on first use (progress on stderr). */
export function etcdServerProgram(version: string): string {
  if (!ETCD_RELEASES.includes(version)) {
    throw new Error(`etcd ${version} is not one of the simulation's etcd releases (${ETCD_RELEASES.join(', ')}; sim/build/etcd-releases)`);
  }
  let dir = built.get(version);
  if (dir === undefined) {
    dir = execFileSync('bash', [buildScript, `v${version}`], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] }).trim();
    built.set(version, dir);
  }
  return `${dir}/etcd`;
}
