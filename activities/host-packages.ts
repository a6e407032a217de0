// The Kubernetes packages of a node at an exact version, through the node's own package tools
// (the cluster configuration's `packageManager`): apt and its holds, or dnf and kubernetes.repo's
// exclude= line. Both never downgrade and run nothing when the packages are there already. The
// holds a node had before a run are read first and put back on every path that did not finish.
import type { ClusterAccess } from './cluster-access.js';
import { hostActivityScope } from './host-activity-context.js';
import { checkNode, checkVersion } from './host-commands.js';
import {
  KUBE_PACKAGES,
  checkPackages,
  type DownloadPackagesResult,
  type InstallPackagesResult,
  type KubePackage,
  type PackageDirection,
  type PackageHolds,
  type RestoreHoldsResult,
} from './kube-packages.js';
import { aptHold, aptHolds, downloadWithApt, installWithApt } from './package-install-apt.js';
import { dnfHolds, downloadWithDnf, installWithDnf } from './package-install-dnf.js';

export {
  KUBE_PACKAGES,
  type DownloadPackagesResult,
  type InstallPackagesResult,
  type KubePackage,
  type PackageHolds,
  type RestoreHoldsResult,
} from './kube-packages.js';

export async function installPackages(
  access: ClusterAccess,
  input: { node: string; version: string; packages: KubePackage[] },
): Promise<InstallPackagesResult> {
  return movePackages(access, input, 'upgrade');
}

/** The checked input through the node's package manager, up to `version` or down to it. */
function movePackages(
  access: ClusterAccess,
  input: { node: string; version: string; packages: KubePackage[] },
  direction: PackageDirection,
): Promise<InstallPackagesResult> {
  const node = checkNode(input.node);
  const version = checkVersion(input.version);
  const packages = checkPackages(input.packages);
  return access.config.packageManager === 'dnf'
    ? installWithDnf(access, node, version, packages, direction)
    : installWithApt(access, node, version, packages, direction);
}

/**
 * The packages back to `version` after a reversible hop's trial was rolled back (issue 36): apt's
 * `--allow-downgrades`, dnf's install of the exact older version; holds read before and put back as
 * an install's (apt-mark hold again last; dnf's exclude= line never edited). Nothing runs when the
 * packages are there already.
 */
export async function downgradePackages(
  access: ClusterAccess,
  input: { node: string; version: string; packages: KubePackage[] },
): Promise<InstallPackagesResult> {
  return movePackages(access, input, 'downgrade');
}

/**
 * The archives of the packages not at `version` yet, fetched into the node's package cache and not
 * installed: done before a node is cordoned, so that the install in the drained node's window fetches nothing.
 */
export async function downloadPackages(
  access: ClusterAccess,
  input: { node: string; version: string; packages: KubePackage[] },
): Promise<DownloadPackagesResult> {
  const node = checkNode(input.node);
  const version = checkVersion(input.version);
  const packages = checkPackages(input.packages);
  return access.config.packageManager === 'dnf'
    ? downloadWithDnf(access, node, version, packages)
    : downloadWithApt(access, node, version, packages);
}

/** The Kubernetes packages the node holds now: `apt-mark showhold`, or what kubernetes.repo's exclude= names (dnf). */
export async function readPackageHolds(access: ClusterAccess, input: { node: string }): Promise<PackageHolds> {
  const node = checkNode(input.node);
  const { signal } = hostActivityScope();
  const held = access.config.packageManager === 'dnf' ? await dnfHolds(access, node, signal) : await aptHolds(access, node, signal);
  return { node, held, via: access.config.packageManager === 'dnf' ? 'exclude' : 'apt-mark' };
}

/**
 * Puts back the holds of `held` (what readPackageHolds said before the run) the node lost, and adds
 * none: a hold a finished step set stays. apt: `apt-mark hold` of the missing ones. dnf: the install
 * lifts exclude= for its own command only and skewless never edits that line, so a missing one is
 * reported (`missing`), not written.
 */
export async function restorePackageHolds(
  access: ClusterAccess,
  input: { node: string; held: KubePackage[] },
): Promise<RestoreHoldsResult> {
  const node = checkNode(input.node);
  const wanted = Array.isArray(input.held) && input.held.length === 0 ? [] : checkPackages(input.held);
  const { signal } = hostActivityScope();
  if (access.config.packageManager === 'dnf') {
    const now = await dnfHolds(access, node, signal);
    return { node, held: now, putBack: [], missing: wanted.filter((p) => !now.includes(p)) };
  }
  const now = await aptHolds(access, node, signal);
  const putBack = wanted.filter((p) => !now.includes(p));
  await aptHold(access, node, putBack, signal);
  return { node, held: KUBE_PACKAGES.filter((p) => now.includes(p) || putBack.includes(p)), putBack, missing: [] };
}
