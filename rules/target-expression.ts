import { RuleError } from './rule-error.js';
import { compareVersions, minorIndex, minorOf, newestRelease, parseTarget, parseVersion, type Version } from './version.js';

/** A target as the planner takes it, with what was asked and, for an expression, what it became. */
export interface ResolvedTarget {
  /** What the operator or the schedule asked for: `1.34.2`, `1.34`, `latest-patch`, `next-minor`. */
  asked: string;
  /** What the hops are planned to: the version or minor asked, or the exact version an expression names. */
  to: string;
  /**
   * For an expression that names nothing newer than the cluster (already at the latest patch, no
   * release of the next minor yet): why there is nothing to do. `to` is then the cluster's version.
   */
  nothingToDo?: string;
}

/** Parses the repository's list, naming the entry that is not a version. */
export function parseAvailable(available: unknown): Version[] {
  if (!Array.isArray(available)) {
    throw new RuleError('InvalidVersion', 'available versions must be a list of version strings');
  }
  return available.map((v, i) => {
    try {
      return parseVersion(v);
    } catch (err) {
      throw new RuleError('InvalidVersion', `available version #${i + 1}: ${(err as Error).message}`);
    }
  });
}

/**
 * Resolves a target against the cluster's version (`from`, its oldest apiserver) and what the
 * package repository offers: `latest-patch` is the newest release of from's minor, `next-minor` the
 * newest release of the minor after it. Neither ever goes back or skips a minor; when the repository
 * offers nothing newer, the result says so (`nothingToDo`) instead of failing, because a scheduled
 * run that finds the cluster current has done its job. Versions and minors are returned as asked.
 */
export function resolveTarget(asked: string, from: string, available: readonly string[] | readonly Version[]): ResolvedTarget {
  const target = parseTarget(asked);
  if (target.kind !== 'expression') return { asked, to: asked };
  const current = parseVersion(from);
  const offered = available.every((v) => typeof v === 'object') ? (available as readonly Version[]) : parseAvailable(available);
  const minor = minorIndex(current) + (target.expression === 'next-minor' ? 1 : 0);
  const line = minorOf({ major: Math.floor(minor / 1000), minor: minor % 1000 });
  const newest = newestRelease(offered, minor);
  if (newest && compareVersions(newest, current) > 0) return { asked, to: newest.text };
  const why =
    target.expression === 'latest-patch'
      ? `${current.text} is already the newest ${line} release the repository offers`
      : `the repository offers no ${line}.x release`;
  return { asked, to: current.text, nothingToDo: why };
}

/** The target in a sentence: `1.34`, `latest-patch (1.33.7)`, `next-minor: the repository offers no 1.35.x release`. */
export function describeTarget(target: ResolvedTarget): string {
  if (target.nothingToDo) return `${target.asked}: ${target.nothingToDo}`;
  return target.to === target.asked ? target.asked : `${target.asked} (${target.to})`;
}
