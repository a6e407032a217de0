// Kubernetes packages on a node through apt: what the repository offers, and installing an exact
// version of kubeadm/kubelet/kubectl with holds, never a downgrade, nothing run when already there.
import { ApplicationFailure } from '@temporalio/activity';
import type { ClusterAccess } from './cluster-access.js';
import { ErrorType } from './errors.js';
import { heartbeatWhile, hostActivityScope } from './host-activity-context.js';
import { checkNode, checkVersion, invalid, run } from './host-commands.js';
import { parseAptPolicy } from './parsers/apt-policy.js';
import { comparePackageVersions, packageVersionFor, parseMadison, upstreamVersion, type MadisonEntry } from './parsers/madison.js';

export const KUBE_PACKAGES = ['kubeadm', 'kubelet', 'kubectl'] as const;
export type KubePackage = (typeof KUBE_PACKAGES)[number];

const READ_MS = 60_000;
// Below the hostCommand profile's 10-minute startToClose, so the activity reports the timeout itself.
const INSTALL_MS = 8 * 60_000;
const APT_ENV = { DEBIAN_FRONTEND: 'noninteractive' };
/** apt ≥ 1.9.11 waits this long for the dpkg lock (unattended-upgrades often holds it) instead of failing at once. */
const LOCK_WAIT = ['-o', 'DPkg::Lock::Timeout=120'];

export interface InstallPackagesResult {
  node: string;
  version: string;
  /** Packages this call changed (empty: all were at the version already). */
  installed: KubePackage[];
  /** Packages this call put back on hold. */
  held: KubePackage[];
  /** Debian versions after the call, `kubeadm` → `1.33.7-1.1`. */
  packageVersions: Partial<Record<KubePackage, string>>;
}

async function madison(access: ClusterAccess, node: string, packages: readonly string[], signal?: AbortSignal): Promise<MadisonEntry[]> {
  const r = await run(access, node, ['apt-cache', 'madison', ...packages], { timeoutMs: READ_MS, signal });
  return parseMadison(r.stdout);
}

/** Kubernetes versions the node's repository offers for kubeadm, newest first (`1.34.2`). */
export async function availableVersions(access: ClusterAccess, input: { node: string }): Promise<string[]> {
  const node = checkNode(input.node);
  const entries = await madison(access, node, ['kubeadm'], hostActivityScope().signal);
  return [...new Set(entries.map((e) => e.version))];
}

function checkPackages(packages: unknown): KubePackage[] {
  if (!Array.isArray(packages) || packages.length === 0) throw invalid('packages must be a non-empty list of kubeadm, kubelet, kubectl');
  for (const p of packages) if (!(KUBE_PACKAGES as readonly unknown[]).includes(p)) throw invalid(`unknown package ${JSON.stringify(p)} (kubeadm, kubelet or kubectl)`);
  return KUBE_PACKAGES.filter((p) => packages.includes(p));
}

export async function installPackages(access: ClusterAccess, input: { node: string; version: string; packages: KubePackage[] }): Promise<InstallPackagesResult> {
  const node = checkNode(input.node);
  const version = checkVersion(input.version);
  const packages = checkPackages(input.packages);
  const scope = hostActivityScope();
  const { signal } = scope;
  const read = { timeoutMs: READ_MS, signal };

  const policy = parseAptPolicy((await run(access, node, ['apt-cache', 'policy', ...packages], read)).stdout);
  const current: Partial<Record<KubePackage, string>> = {};
  const pending: KubePackage[] = [];
  for (const p of packages) {
    const installed = policy[p]?.installed ?? undefined;
    if (installed) current[p] = installed;
    const at = installed ? upstreamVersion(installed) : undefined;
    if (at === version) continue;
    if (installed && at && comparePackageVersions(installed, `${version}-0`) > 0) {
      throw invalid(`refusing to downgrade ${p} on ${node} from ${installed} to ${version}; going back means restoring the etcd snapshot`);
    }
    pending.push(p);
  }

  const targets: Partial<Record<KubePackage, string>> = {};
  if (pending.length > 0) {
    let offered = await madison(access, node, pending, signal);
    if (pending.some((p) => !packageVersionFor(offered, p, version))) {
      // The lists may predate the release: refresh once, then ask again.
      await heartbeatWhile(scope, () => ({ node, step: 'apt-get update' }),
        run(access, node, ['apt-get', 'update', '-q', ...LOCK_WAIT], { timeoutMs: INSTALL_MS, sudo: true, env: APT_ENV, signal }));
      offered = await madison(access, node, pending, signal);
    }
    for (const p of pending) {
      const exact = packageVersionFor(offered, p, version);
      if (!exact) {
        throw ApplicationFailure.create({ type: ErrorType.VersionNotAvailable, nonRetryable: true,
          message: `the package repository of ${node} offers no ${p} ${version} (newest offered: ${offered.find((e) => e.package === p)?.packageVersion ?? 'none'})` });
      }
      targets[p] = exact;
    }
  }

  const holds = new Set((await run(access, node, ['apt-mark', 'showhold'], read)).stdout.split('\n').map((l) => l.trim()));
  const root = { sudo: true, env: APT_ENV, signal };
  if (pending.length > 0) {
    const toUnhold = pending.filter((p) => holds.has(p));
    if (toUnhold.length) await run(access, node, ['apt-mark', 'unhold', ...toUnhold], { ...root, timeoutMs: READ_MS });
    for (const p of toUnhold) holds.delete(p);
    const argv = ['apt-get', 'install', '-y', '-q', ...LOCK_WAIT, '-o', 'Dpkg::Options::=--force-confold', ...pending.map((p) => `${p}=${targets[p]}`)];
    await heartbeatWhile(scope, () => ({ node, step: 'apt-get install', packages: pending }),
      run(access, node, argv, { ...root, timeoutMs: INSTALL_MS }));
    Object.assign(current, targets);
  }
  // Holds last: a crash between install and hold is repaired by the next attempt, which installs nothing.
  const toHold = packages.filter((p) => !holds.has(p));
  if (toHold.length) await run(access, node, ['apt-mark', 'hold', ...toHold], { ...root, timeoutMs: READ_MS });
  return { node, version, installed: pending, held: toHold, packageVersions: current };
}
