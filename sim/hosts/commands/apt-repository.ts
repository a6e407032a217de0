// The host's simulated package repository: the Kubernetes versions its configuration lists, each
// offered as `<version>-1.1` for kubeadm, kubelet and kubectl, from one repo per minor like pkgs.k8s.io.
import semver from 'semver';
import type { HostMachine } from '../host-machine.js';
import { toKubernetesVersion, toPackageVersion } from '../host-state.js';

/** A made-up, never-resolvable host (.invalid), so no output names a real mirror. */
const MIRROR = 'http://packages.sim.invalid';

export function repositoryUrl(kubernetesVersion: string): string {
  const v = semver.parse(kubernetesVersion.replace(/^v/, ''));
  return `${MIRROR}/core/stable/v${v ? `${v.major}.${v.minor}` : 'unknown'}/deb`;
}

/** Compares two Debian versions of the simulated packages by their Kubernetes part. */
export function comparePackageVersions(a: string, b: string): number {
  const va = semver.parse(toKubernetesVersion(a));
  const vb = semver.parse(toKubernetesVersion(b));
  if (!va || !vb) return a.localeCompare(b);
  return semver.compare(va, vb) || a.localeCompare(b);
}

/** Every package version the repository offers, newest first. */
export function offeredVersions(machine: HostMachine): string[] {
  return [...new Set(machine.config.repository.map(toPackageVersion))].sort((a, b) => comparePackageVersions(b, a));
}

/** apt matches `pkg=1.33.7-*` with fnmatch: `*` any run, `?` one character. */
function globToRegExp(glob: string): RegExp {
  const body = glob.replace(/[.+^${}()|[\]\\]/g, '\\$&').replace(/\*/g, '.*').replace(/\?/g, '.');
  return new RegExp(`^${body}$`);
}

/** The newest offered version matching an exact version or a glob, or undefined. */
export function resolveVersion(machine: HostMachine, wanted: string): string | undefined {
  const offered = offeredVersions(machine);
  if (!/[*?]/.test(wanted)) return offered.find((v) => v === wanted);
  const re = globToRegExp(wanted);
  return offered.find((v) => re.test(v));
}

/** The version `apt-get install pkg` would pick: the newest offered, else what is installed. */
export function candidateVersion(machine: HostMachine, installed: string): string {
  return offeredVersions(machine)[0] ?? installed;
}

/** Distinct repository URLs, one per minor, as `apt-get update` lists its sources. */
export function repositoryUrls(machine: HostMachine): string[] {
  return [...new Set(offeredVersions(machine).map((v) => repositoryUrl(toKubernetesVersion(v))))];
}
