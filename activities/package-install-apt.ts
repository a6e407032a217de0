// Kubernetes packages on a Debian-family node through apt: what the repository offers, and
// installing an exact version of kubeadm/kubelet/kubectl with apt-mark holds, never a downgrade,
// nothing run when already there. A host that went down in the middle of an install is repaired
// first (dpkg --configure -a).
import { ApplicationFailure } from '@temporalio/activity';
import type { ClusterAccess } from './cluster-access.js';
import { ErrorType } from './errors.js';
import { heartbeatWhile, hostActivityScope, type HostActivityScope } from './host-activity-context.js';
import { awaitQuietHost, commandFailed, run } from './host-commands.js';
import {
  KUBE_PACKAGES,
  packageTimeouts as timeouts,
  offeredVersionOrRefuse,
  pendingPackages,
  type DownloadPackagesResult,
  type InstallPackagesResult,
  type KubePackage,
  type PackageDirection,
} from './kube-packages.js';
import { parseAptPolicy } from './parsers/apt-policy.js';
import { APT_KUBERNETES_ONLY } from './parsers/kubernetes-repository.js';
import { parseDpkgAudit } from './parsers/dpkg-audit.js';
import { packageVersionFor, parseMadison, type MadisonEntry } from './parsers/madison.js';

export const APT_ENV = { DEBIAN_FRONTEND: 'noninteractive' };
/** apt ≥ 1.9.11 waits this long for the dpkg lock (unattended-upgrades often holds it) instead of failing at once. */
export const LOCK_WAIT = ['-o', 'DPkg::Lock::Timeout=120'];
/**
 * apt's lists in `dir` and no binary caches (apt.conf(5): Dir::State::Lists, Dir::Cache::pkgcache and
 * srcpkgcache, empty to turn a cache off): a read-only refresh that leaves the host's own apt state alone.
 */
export const aptStateIn = (dir: string) => [
  '-o',
  `Dir::State::Lists=${dir}/lists`,
  '-o',
  'Dir::Cache::pkgcache=',
  '-o',
  'Dir::Cache::srcpkgcache=',
];
/** What apt-get says when dpkg's journal was left open: a crash or a reboot in the middle of an install. */
const DPKG_INTERRUPTED = /dpkg was interrupted, you must manually run '(?:sudo )?dpkg --configure -a'/;

async function madison(access: ClusterAccess, node: string, packages: readonly string[], signal?: AbortSignal): Promise<MadisonEntry[]> {
  const r = await run(access, node, ['apt-cache', 'madison', ...packages], { timeoutMs: timeouts(access).readMs, signal });
  return parseMadison(r.stdout);
}

/** `dpkg --audit`: the packages dpkg left unpacked or half done. Exit 1 is how newer dpkg says it found some. */
async function auditDpkg(access: ClusterAccess, node: string, signal?: AbortSignal): Promise<string[]> {
  const argv = ['dpkg', '--audit'];
  const r = await access.shell.exec(node, argv, { timeoutMs: timeouts(access).readMs, signal });
  if (r.exitCode !== 0 && r.exitCode !== 1) throw commandFailed(node, argv, r);
  return parseDpkgAudit(r.stdout).packages;
}

/** `dpkg --configure -a`, as apt asks after an interrupted install; runs the packages' scripts, so heartbeated. */
async function configurePending(access: ClusterAccess, node: string, scope: HostActivityScope): Promise<void> {
  await run(access, node, ['dpkg', '--configure', '-a'], {
    timeoutMs: timeouts(access).installMs,
    sudo: true,
    env: APT_ENV,
    signal: scope.signal,
  });
}

/** What is installed of `packages`, which of them are not at `version` yet, and the exact package version of each of those. */
async function aptTargets(
  access: ClusterAccess,
  node: string,
  version: string,
  packages: readonly KubePackage[],
  signal: AbortSignal | undefined,
  direction: PackageDirection = 'upgrade',
): Promise<{ current: Partial<Record<KubePackage, string>>; pending: KubePackage[]; targets: Partial<Record<KubePackage, string>> }> {
  const { readMs, installMs } = timeouts(access);
  const policy = parseAptPolicy((await run(access, node, ['apt-cache', 'policy', ...packages], { timeoutMs: readMs, signal })).stdout);
  const current: Partial<Record<KubePackage, string>> = {};
  for (const p of packages) {
    const installed = policy[p]?.installed;
    if (installed) current[p] = installed;
  }
  const pending = pendingPackages(node, version, packages, current, direction);

  const targets: Partial<Record<KubePackage, string>> = {};
  if (pending.length > 0) {
    let offered = await madison(access, node, pending, signal);
    if (pending.some((p) => !packageVersionFor(offered, p, version))) {
      // The lists may predate the release: refresh the Kubernetes source once (another's 404 is not ours), then ask again.
      const update = ['apt-get', 'update', '-q', ...APT_KUBERNETES_ONLY, ...LOCK_WAIT];
      await run(access, node, update, { timeoutMs: installMs, sudo: true, env: APT_ENV, signal });
      offered = await madison(access, node, pending, signal);
    }
    for (const p of pending) targets[p] = offeredVersionOrRefuse(node, p, version, offered);
  }
  return { current, pending, targets };
}

/**
 * downloadPackages on an apt node: the archives of the packages not at `version` yet fetched into
 * apt's cache (`apt-get install --download-only`), nothing unpacked, holds left as they are (the
 * held-package check apt makes before downloading is lifted for this command only: it installs
 * nothing). The install that follows takes them from the cache.
 */
export async function downloadWithApt(
  access: ClusterAccess,
  node: string,
  version: string,
  packages: readonly KubePackage[],
): Promise<DownloadPackagesResult> {
  const scope = hostActivityScope();
  const { current, pending, targets } = await aptTargets(access, node, version, packages, scope.signal);
  if (pending.length > 0) {
    const argv = [
      'apt-get',
      'install',
      '-y',
      '-q',
      '--download-only',
      '--allow-change-held-packages',
      ...LOCK_WAIT,
      ...pending.map((p) => `${p}=${targets[p]}`),
    ];
    const result = await heartbeatWhile(
      scope,
      () => ({ node, step: 'apt-get install --download-only', packages: pending }),
      access.shell.exec(node, argv, { sudo: true, env: APT_ENV, timeoutMs: timeouts(access).installMs, signal: scope.signal }),
    );
    if (result.exitCode !== 0) throw commandFailed(node, argv, result);
  }
  return { node, version, downloaded: pending, packageVersions: { ...current, ...targets } };
}

/** installPackages on an apt node (input checked by the caller). */
export async function installWithApt(
  access: ClusterAccess,
  node: string,
  version: string,
  packages: readonly KubePackage[],
  direction: PackageDirection = 'upgrade',
): Promise<InstallPackagesResult> {
  const scope = hostActivityScope();
  const { signal } = scope;
  const { readMs, installMs } = timeouts(access);

  // An install an earlier attempt left running (its worker died; without a terminal nothing stops
  // it) ends first: its half-done dpkg state is not an interrupted install, and what it installs is
  // then seen as installed instead of installed a second time.
  await awaitQuietHost(access, node, ['apt-get', 'dpkg'], installMs, scope);
  // A host that went down in the middle of an install has our packages unpacked (apt-cache already
  // reports the new version) but not configured: finish that first, so it is never taken for done.
  // Other packages' leftovers are not ours to touch unless apt-get refuses to install because of them.
  const unfinished = await auditDpkg(access, node, signal);
  const configured = packages.filter((p) => unfinished.includes(p));
  if (configured.length) await configurePending(access, node, scope);

  const { current, pending, targets } = await aptTargets(access, node, version, packages, signal, direction);

  const holds = new Set(await aptHolds(access, node, signal));
  const root = { sudo: true, env: APT_ENV, signal };
  if (pending.length > 0) {
    const toUnhold = pending.filter((p) => holds.has(p));
    if (toUnhold.length) await run(access, node, ['apt-mark', 'unhold', ...toUnhold], { ...root, timeoutMs: readMs });
    for (const p of toUnhold) holds.delete(p);
    try {
      await aptInstall(access, node, pending, targets, scope, direction);
    } catch (err) {
      // A failed install leaves the node waiting for the operator, and after an abort as it is: never
      // with the guide's holds lifted, or the next unattended upgrade moves the kubelet without a drain.
      throw await holdAgainAfter(err, access, node, toUnhold);
    }
    Object.assign(current, targets);
  }
  // Holds last: a crash between install and hold is repaired by the next attempt, which installs nothing.
  const toHold = packages.filter((p) => !holds.has(p));
  await aptHold(access, node, toHold, signal);
  return { node, version, installed: pending, held: toHold, configured, packageVersions: current };
}

/** `apt-get install` of the exact versions, repaired once if someone else's install was cut short. */
async function aptInstall(
  access: ClusterAccess,
  node: string,
  pending: readonly KubePackage[],
  targets: Partial<Record<KubePackage, string>>,
  scope: HostActivityScope,
  direction: PackageDirection,
): Promise<void> {
  const argv = [
    'apt-get',
    'install',
    '-y',
    '-q',
    ...LOCK_WAIT,
    // apt-get(8): with -y, a downgrade is refused unless allowed by name (a trial's rollback only).
    ...(direction === 'downgrade' ? ['--allow-downgrades'] : []),
    '-o',
    'Dpkg::Options::=--force-confold',
    ...pending.map((p) => `${p}=${targets[p]}`),
  ];
  const install = () =>
    heartbeatWhile(
      scope,
      () => ({ node, step: 'apt-get install', packages: pending }),
      access.shell.exec(node, argv, { sudo: true, env: APT_ENV, signal: scope.signal, timeoutMs: timeouts(access).installMs }),
    );
  let result = await install();
  if (result.exitCode !== 0 && DPKG_INTERRUPTED.test(result.stderr)) {
    // Someone else's install was cut short (the audit above found none of ours): repair as apt asks, once.
    await configurePending(access, node, scope);
    result = await install();
  }
  if (result.exitCode !== 0) throw commandFailed(node, argv, result);
}

/** The Kubernetes packages apt-mark holds on the node (`apt-mark showhold`, as the SSH user). */
export async function aptHolds(access: ClusterAccess, node: string, signal?: AbortSignal): Promise<KubePackage[]> {
  const r = await run(access, node, ['apt-mark', 'showhold'], { timeoutMs: timeouts(access).readMs, signal });
  const held = new Set(r.stdout.split('\n').map((l) => l.trim()));
  return KUBE_PACKAGES.filter((p) => held.has(p));
}

/** `apt-mark hold` of `packages` (none: nothing run). */
export async function aptHold(access: ClusterAccess, node: string, packages: readonly KubePackage[], signal?: AbortSignal): Promise<void> {
  if (packages.length === 0) return;
  await run(access, node, ['apt-mark', 'hold', ...packages], { sudo: true, env: APT_ENV, signal, timeoutMs: timeouts(access).readMs });
}

/**
 * The holds a failed install lifted, put back (without the activity's cancellation signal: a
 * cancelled install is the case that needs it most), and the failure to throw: the same, its message
 * saying they are held again and its details listing them (`heldAgain`), for the node's workflow.
 * If the hold fails too, the install's own failure goes on as it was: the workflow puts them back later.
 */
async function holdAgainAfter(err: unknown, access: ClusterAccess, node: string, released: readonly KubePackage[]): Promise<unknown> {
  if (released.length === 0) return err;
  try {
    await aptHold(access, node, released);
  } catch {
    return err;
  }
  if (!(err instanceof ApplicationFailure)) return err;
  return ApplicationFailure.create({
    type: err.type ?? ErrorType.HostCommandFailed,
    nonRetryable: err.nonRetryable === true,
    message: `${err.message}; ${released.join(' ')} held again`,
    details: [...(err.details ?? []), { heldAgain: [...released] }],
    ...(err.nextRetryDelay === undefined ? {} : { nextRetryDelay: err.nextRetryDelay }),
  });
}
