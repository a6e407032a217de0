import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const releasesFile = fileURLToPath(new URL('../../../sim/build/kube-releases', import.meta.url));
const buildScript = fileURLToPath(new URL('../../../sim/build/build-kube-release.sh', import.meta.url));
const criFakeScript = fileURLToPath(new URL('../../../sim/build/build-cri-fake.sh', import.meta.url));

/**
 * The Kubernetes releases a `controlPlane: per-node` simulation runs for real (sim/build/kube-releases):
 * `1.33.13`, one per minor. Only these versions can be a control plane's there, because the process
 * that serves /version is the real one.
 */
export const KUBE_RELEASES: readonly string[] = readFileSync(releasesFile, 'utf8')
  .split('\n')
  .map((line) => line.trim())
  .filter((line) => line !== '' && !line.startsWith('#'))
  .map((line) => line.replace(/^v/, ''));

export type ReleaseProgram = 'kube-apiserver' | 'kube-controller-manager' | 'kube-scheduler' | 'kubeadm';

const built = new Map<string, string>();

/**
 * The bin dir of release `version` (`1.33.13`), built from the Go module proxy on first use
 * (minutes; `npm test` and the demo build them all beforehand, progress on stderr).
 */
export function ensureKubeRelease(version: string): string {
  if (!KUBE_RELEASES.includes(version)) {
    throw new Error(`Kubernetes ${version} is not one of the simulation's releases (${KUBE_RELEASES.join(', ')}; sim/build/kube-releases)`);
  }
  let dir = built.get(version);
  if (dir === undefined) {
    dir = execFileSync('bash', [buildScript, `v${version}`], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] }).trim();
    built.set(version, dir);
  }
  return dir;
}

export const releaseProgram = (version: string, program: ReleaseProgram): string => `${ensureKubeRelease(version)}/${program}`;

let criFake: string | undefined;

/** The fake CRI server (sim/build/cri-fake) the real kubeadm's preflight and image pulls talk to, built on first use. */
export function ensureCriFake(): string {
  criFake ??= execFileSync('bash', [criFakeScript], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] }).trim();
  return criFake;
}
