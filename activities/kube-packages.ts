// What installing the Kubernetes packages means on any node, whichever package tools it has: the
// three packages, the input checks, the result, the timeouts, the refusal to go back a version.
import { ApplicationFailure } from '@temporalio/activity';
import type { ClusterAccess } from './cluster-access.js';
import { ErrorType } from './errors.js';
import { invalid } from './host-commands.js';
import { comparePackageVersions, packageVersionFor, upstreamVersion, type MadisonEntry } from './parsers/madison.js';

export const KUBE_PACKAGES = ['kubeadm', 'kubelet', 'kubectl'] as const;
export type KubePackage = (typeof KUBE_PACKAGES)[number];

export interface InstallPackagesResult {
  node: string;
  version: string;
  /** Packages this call changed (empty: all were at the version already). */
  installed: KubePackage[];
  /** Packages this call put back on hold (apt-mark; dnf holds by kubernetes.repo's exclude= line, so none). */
  held: KubePackage[];
  /** Packages of the call that dpkg had unpacked but not configured (the host went down mid-install), configured by this call. */
  configured: KubePackage[];
  /** Package versions after the call, `kubeadm` → `1.33.7-1.1` (apt) or `1.33.7-150500.1.1` (dnf). */
  packageVersions: Partial<Record<KubePackage, string>>;
}

/** The Kubernetes packages a node holds (kept from unattended upgrades), and how it holds them. */
export interface PackageHolds {
  node: string;
  held: KubePackage[];
  /** `apt-mark` (apt's holds) or `exclude` (kubernetes.repo's exclude=, dnf). */
  via: 'apt-mark' | 'exclude';
}

export interface RestoreHoldsResult {
  node: string;
  /** The Kubernetes packages held after the call. */
  held: KubePackage[];
  /** Held again by this call: the node had lost their holds since they were read. */
  putBack: KubePackage[];
  /** Held before and not now, and not put back (dnf: skewless does not edit kubernetes.repo's exclude=). */
  missing: KubePackage[];
}

export interface DownloadPackagesResult {
  node: string;
  version: string;
  /** Packages whose archives this call fetched into the package cache (empty: all were installed at the version already). */
  downloaded: KubePackage[];
  /** The package versions the downloads are of, or installed already (`1.33.7-1.1`). */
  packageVersions: Partial<Record<KubePackage, string>>;
}

/** Timeouts of quick reads and of package changes, from the cluster configuration (`timeouts:`). */
export function packageTimeouts(access: ClusterAccess): { readMs: number; installMs: number } {
  const t = access.config.timeouts;
  return { readMs: t.commandSeconds * 1000, installMs: t.packageInstallSeconds * 1000 };
}

export function checkPackages(packages: unknown): KubePackage[] {
  if (!Array.isArray(packages) || packages.length === 0) throw invalid('packages must be a non-empty list of kubeadm, kubelet, kubectl');
  for (const p of packages)
    if (!(KUBE_PACKAGES as readonly unknown[]).includes(p))
      throw invalid(`unknown package ${JSON.stringify(p)} (kubeadm, kubelet or kubectl)`);
  return KUBE_PACKAGES.filter((p) => packages.includes(p));
}

/**
 * How an install may move a package: `upgrade` (every install of a hop) never goes back; `downgrade`
 * only the rollback of a reversible hop's trial (issue 36), whose control planes run N again.
 */
export type PackageDirection = 'upgrade' | 'downgrade';

/**
 * The packages not at `version` yet, given what is installed; a package newer than `version` stops
 * here unless `direction` is `downgrade`: going back is the etcd snapshot's job, never the package
 * manager's, except after a trial (nothing of N+1 was committed then).
 */
export function pendingPackages(
  node: string,
  version: string,
  packages: readonly KubePackage[],
  installed: Partial<Record<KubePackage, string>>,
  direction: PackageDirection = 'upgrade',
): KubePackage[] {
  const pending: KubePackage[] = [];
  for (const p of packages) {
    const current = installed[p];
    const at = current ? upstreamVersion(current) : undefined;
    if (at === version) continue;
    if (direction === 'upgrade' && current && at && comparePackageVersions(current, `${version}-0`) > 0) {
      throw invalid(`refusing to downgrade ${p} on ${node} from ${current} to ${version}; going back means restoring the etcd snapshot`);
    }
    pending.push(p);
  }
  return pending;
}

/**
 * The repository's exact package version for `version` (`1.34.2-1.1`), or VersionNotAvailable naming
 * the newest it offers: the same refusal for apt and dnf, never retried.
 */
export function offeredVersionOrRefuse(node: string, p: KubePackage, version: string, offered: readonly MadisonEntry[]): string {
  const exact = packageVersionFor(offered, p, version);
  if (exact) return exact;
  throw ApplicationFailure.create({
    type: ErrorType.VersionNotAvailable,
    nonRetryable: true,
    message: `the package repository of ${node} offers no ${p} ${version} (newest offered: ${offered.find((e) => e.package === p)?.packageVersion ?? 'none'})`,
  });
}
