// Kubernetes packages on a RHEL-family node through dnf, as kubernetes.io's guide installs them:
// kubernetes.repo excludes the packages (the guide's hold), so installs name the repository in
// `--disableexcludes=kubernetes` and an exact version from `dnf list --showduplicates`; `rpm -q`
// says what is installed. Never a downgrade (dnf would do one without asking), nothing run when
// the packages are there already. An rpm transaction is not resumed like dpkg's: nothing to repair.
// dnf loads every enabled repository's metadata for each list and install, so a neighbour's broken
// repository (Docker's, a stale mirror) would stop them: listings read the kubernetes repository alone
// (`--repo=kubernetes`), installs skip any other repository that fails (dnf.conf(5)
// `skip_if_unavailable`, per repository glob) while the kubernetes one still fails loudly; installs
// keep the other repositories enabled because a new kubelet may need a dependency from the OS's.
import type { ClusterAccess } from './cluster-access.js';
import { heartbeatWhile, hostActivityScope } from './host-activity-context.js';
import { awaitQuietHost, commandFailed, run } from './host-commands.js';
import {
  KUBE_PACKAGES,
  offeredVersionOrRefuse,
  packageTimeouts,
  pendingPackages,
  type DownloadPackagesResult,
  type InstallPackagesResult,
  type KubePackage,
  type PackageDirection,
} from './kube-packages.js';
import { parseDnfList, parseRpmQuery, RPM_QUERY_FORMAT } from './parsers/dnf-list.js';
import { excludedBy } from './parsers/dnf-exclude.js';
import { DNF_KUBERNETES_REPO, DNF_REPO_ID } from './parsers/kubernetes-repository.js';
import { packageVersionFor, type MadisonEntry } from './parsers/madison.js';

/** Lifts kubernetes.repo's exclude= for this command only, as the guide's install line does. */
export const DISABLE_EXCLUDES = `--disableexcludes=${DNF_REPO_ID}`;
/** Listings read the kubernetes repository alone: another repository's failure is not theirs. */
export const KUBERNETES_REPO_ONLY = `--repo=${DNF_REPO_ID}`;
/**
 * Installs go on past another repository that fails (its errors printed, its packages left out), never
 * past the kubernetes one: dnf applies `--setopt=<glob>.<option>` in the order given, the last match wins.
 */
export const SKIP_OTHER_REPOS = ['--setopt=*.skip_if_unavailable=True', `--setopt=${DNF_REPO_ID}.skip_if_unavailable=False`];

/** What `rpm -q` says is installed of `packages` (a package not installed is simply absent). */
export async function rpmInstalled(
  access: ClusterAccess,
  node: string,
  packages: readonly string[],
  signal?: AbortSignal,
): Promise<Record<string, string>> {
  const argv = ['rpm', '-q', '--qf', RPM_QUERY_FORMAT, ...packages];
  const r = await access.shell.exec(node, argv, { timeoutMs: packageTimeouts(access).readMs, signal });
  // rpm's exit code counts the packages not installed; only a failure to query is an error.
  if (r.exitCode !== 0 && !/is not installed/.test(r.stdout)) throw commandFailed(node, argv, r);
  return parseRpmQuery(r.stdout);
}

/** Every version of `packages` the node's kubernetes repository offers, exclusions lifted, as the SSH user. */
export async function dnfOffered(
  access: ClusterAccess,
  node: string,
  packages: readonly string[],
  options: { refresh?: boolean; signal?: AbortSignal } = {},
): Promise<MadisonEntry[]> {
  const argv = [
    'dnf',
    'list',
    '--showduplicates',
    '-q',
    DISABLE_EXCLUDES,
    KUBERNETES_REPO_ONLY,
    ...(options.refresh ? ['--refresh'] : []),
    ...packages,
  ];
  return parseDnfList((await run(access, node, argv, { timeoutMs: packageTimeouts(access).installMs, signal: options.signal })).stdout);
}

/** What is installed of `packages`, which are not at `version` yet, and the exact version of each of those. */
async function dnfTargets(
  access: ClusterAccess,
  node: string,
  version: string,
  packages: readonly KubePackage[],
  signal: AbortSignal | undefined,
  direction: PackageDirection = 'upgrade',
): Promise<{ current: Partial<Record<KubePackage, string>>; pending: KubePackage[]; targets: (readonly [KubePackage, string])[] }> {
  const installed = await rpmInstalled(access, node, packages, signal);
  const current: Partial<Record<KubePackage, string>> = {};
  for (const p of packages) if (installed[p]) current[p] = installed[p];
  const pending = pendingPackages(node, version, packages, current, direction);
  if (pending.length === 0) return { current, pending, targets: [] };
  let offered = await dnfOffered(access, node, pending, { signal });
  // dnf's metadata may predate the release (metadata_expire): fetch it afresh once, then ask again.
  if (pending.some((p) => !packageVersionFor(offered, p, version)))
    offered = await dnfOffered(access, node, pending, { refresh: true, signal });
  const targets = pending.map((p) => [p, offeredVersionOrRefuse(node, p, version, offered)] as const);
  return { current, pending, targets };
}

/**
 * downloadPackages on a dnf node: the packages not at `version` yet fetched into dnf's cache
 * (`dnf install --downloadonly`, as root: the system cache the install reads), no rpm transaction.
 */
export async function downloadWithDnf(
  access: ClusterAccess,
  node: string,
  version: string,
  packages: readonly KubePackage[],
): Promise<DownloadPackagesResult> {
  const scope = hostActivityScope();
  const { current, pending, targets } = await dnfTargets(access, node, version, packages, scope.signal);
  if (pending.length > 0) {
    // --downloadonly after the exclusions: the sudo rule `dnf install -y -q --disableexcludes=kubernetes *` covers it (docs/real-cluster.md).
    const argv = [
      'dnf',
      'install',
      '-y',
      '-q',
      DISABLE_EXCLUDES,
      ...SKIP_OTHER_REPOS,
      '--downloadonly',
      ...targets.map(([p, v]) => `${p}-${v}`),
    ];
    const result = await heartbeatWhile(
      scope,
      () => ({ node, step: 'dnf install --downloadonly', packages: pending }),
      access.shell.exec(node, argv, { sudo: true, timeoutMs: packageTimeouts(access).installMs, signal: scope.signal }),
    );
    if (result.exitCode !== 0) throw commandFailed(node, argv, result);
  }
  return { node, version, downloaded: pending, packageVersions: { ...current, ...Object.fromEntries(targets) } };
}

/**
 * installPackages on a dnf node (input checked by the caller). A `downgrade` (a trial's rollback) is
 * the same `dnf install` of the exact older version: dnf(8), install: "DNF will install the desired
 * version, no matter which version of the package is already installed".
 */
export async function installWithDnf(
  access: ClusterAccess,
  node: string,
  version: string,
  packages: readonly KubePackage[],
  direction: PackageDirection = 'upgrade',
): Promise<InstallPackagesResult> {
  const scope = hostActivityScope();
  const { signal } = scope;
  const { installMs } = packageTimeouts(access);
  // A transaction an earlier attempt left running ends first; what it installed then counts as installed.
  await awaitQuietHost(access, node, ['dnf', 'yum', 'rpm'], installMs, scope);
  const { current, pending, targets } = await dnfTargets(access, node, version, packages, signal, direction);
  if (pending.length > 0) {
    const argv = ['dnf', 'install', '-y', '-q', DISABLE_EXCLUDES, ...SKIP_OTHER_REPOS, ...targets.map(([p, v]) => `${p}-${v}`)];
    const result = await heartbeatWhile(
      scope,
      () => ({ node, step: 'dnf install', packages: pending }),
      access.shell.exec(node, argv, { sudo: true, timeoutMs: installMs, signal }),
    );
    if (result.exitCode !== 0) throw commandFailed(node, argv, result);
    for (const [p, v] of targets) current[p] = v;
  }
  return { node, version, installed: pending, held: [], configured: [], packageVersions: current };
}

/**
 * The Kubernetes packages kubernetes.repo's exclude= holds (read as the SSH user; the guide leaves
 * the file 0644). A node without the file holds nothing this way.
 */
export async function dnfHolds(access: ClusterAccess, node: string, signal?: AbortSignal): Promise<KubePackage[]> {
  const argv = ['cat', DNF_KUBERNETES_REPO];
  const r = await access.shell.exec(node, argv, { timeoutMs: packageTimeouts(access).readMs, signal });
  if (r.exitCode !== 0 && /No such file or directory/.test(r.stderr)) return [];
  if (r.exitCode !== 0) throw commandFailed(node, argv, r);
  return excludedBy(r.stdout, DNF_REPO_ID, KUBE_PACKAGES) as KubePackage[];
}
