// The Kubernetes packages of a node at an exact version, through the node's own package tools
// (the cluster configuration's `packageManager`): apt and its holds, or dnf and kubernetes.repo's
// exclude= line. Both never downgrade and run nothing when the packages are there already.
import type { ClusterAccess } from './cluster-access.js';
import { checkNode, checkVersion } from './host-commands.js';
import { checkPackages, type DownloadPackagesResult, type InstallPackagesResult, type KubePackage } from './kube-packages.js';
import { downloadWithApt, installWithApt } from './package-install-apt.js';
import { downloadWithDnf, installWithDnf } from './package-install-dnf.js';

export { KUBE_PACKAGES, type DownloadPackagesResult, type InstallPackagesResult, type KubePackage } from './kube-packages.js';

export async function installPackages(
  access: ClusterAccess,
  input: { node: string; version: string; packages: KubePackage[] },
): Promise<InstallPackagesResult> {
  const node = checkNode(input.node);
  const version = checkVersion(input.version);
  const packages = checkPackages(input.packages);
  return access.config.packageManager === 'dnf'
    ? installWithDnf(access, node, version, packages)
    : installWithApt(access, node, version, packages);
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
