import { RuleError } from './rule-error.js';
import { parseAvailable, resolveTarget } from './target-expression.js';
import { compareVersions, minorIndex, minorOf, newestRelease, parseTarget, parseVersion, type Version } from './version.js';

export interface HopRequest {
  /** The cluster's current version (its kube-apiserver), exact. */
  from: string;
  /** An exact version (`1.34.2`), a minor (`1.34`: its newest patch), `latest-patch` or `next-minor`. */
  to: string;
  /** Versions the package repository offers. */
  available: readonly string[];
}

/**
 * The versions to upgrade through, one minor at a time: the newest release of every intermediate
 * minor, then the exact target (or the newest release of the target minor). Zero hops when the
 * cluster is already there. Pre-releases are taken only when named exactly as the target.
 */
export function planHops(request: HopRequest): string[] {
  const from = parseVersion(request.from);
  const asked = parseTarget(request.to);
  const available = parseAvailable(request.available);
  // An expression names an exact version the repository offers, or nothing newer than the cluster.
  let target = asked;
  if (asked.kind === 'expression') {
    const resolved = resolveTarget(request.to, from.text, available);
    if (resolved.nothingToDo) return [];
    target = parseTarget(resolved.to);
  }
  if (target.kind === 'expression') throw new RuleError('InvalidVersion', `target ${request.to} did not resolve to a version`);

  const targetMajor = target.kind === 'exact' ? target.version.major : target.minor.major;
  if (targetMajor !== from.major) {
    throw new RuleError('UnsupportedMajor', `cannot upgrade across major versions (${from.text} → ${request.to})`);
  }
  const targetMinor = target.kind === 'exact' ? minorIndex(target.version) : minorIndex(target.minor);
  const targetText = target.kind === 'exact' ? target.version.text : target.minor.text;
  if (targetMinor < minorIndex(from)) {
    throw downgrade(from, targetText);
  }

  const hops: Version[] = [];
  for (let m = minorIndex(from) + 1; m < targetMinor; m++) {
    const newest = newestRelease(available, m);
    if (!newest) {
      throw new RuleError(
        'MissingRelease',
        `no ${minorText(m)}.x release is available, and minors cannot be skipped (${from.text} → ${targetText})`,
      );
    }
    hops.push(newest);
  }

  let last: Version;
  if (target.kind === 'exact') {
    if (!available.some((v) => compareVersions(v, target.version) === 0)) {
      throw new RuleError('MissingRelease', `${target.version.text} is not among the available versions`);
    }
    last = target.version;
  } else {
    const newest = newestRelease(available, targetMinor);
    if (!newest) {
      const onlyPre = available.some((v) => minorIndex(v) === targetMinor);
      throw new RuleError(
        'MissingRelease',
        `no ${target.minor.text}.x release is available` +
          (onlyPre ? ' (pre-releases are used only when named exactly as the target)' : ''),
      );
    }
    last = newest;
  }

  const order = compareVersions(last, from);
  if (order < 0) {
    // Same minor, older patch: only possible for an exact target or a repository behind the cluster.
    if (target.kind === 'exact') throw downgrade(from, last.text);
    return [];
  }
  if (order > 0) hops.push(last);
  return hops.map((v) => v.text);
}

function minorText(index: number): string {
  return minorOf({ major: Math.floor(index / 1000), minor: index % 1000 });
}

function downgrade(from: Version, to: string): RuleError {
  return new RuleError(
    'Downgrade',
    `refusing to downgrade ${from.text} → ${to}: the control plane never goes back; restore the etcd snapshot taken before the upgrade instead`,
  );
}
