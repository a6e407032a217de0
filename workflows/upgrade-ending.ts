import { ApplicationFailure } from '@temporalio/workflow';
import { minorOf, parseVersion, QUARANTINED_LABEL, type UpgradePlan } from '../rules/index.js';
import { WORKFLOW_FAILURE } from '../contracts/failure-types.js';
import type { LeftBehind, RolloutStatus, UpgradeStatus } from './rollout-messages.js';

// How a cluster upgrade ends: the refusal it names and the sentence it leaves (what it undoes: rollout.ts).

export function skewFailure(what: string, failure: UpgradePlan['skew']['failure']): ApplicationFailure {
  const where = failure?.step ? `step "${failure.step.detail}" of ${failure.step.hop}` : 'the cluster as it is';
  const why = failure?.violations.map((v) => `${v.component} on ${v.node} at ${v.version}: ${v.rule}`).join('; ');
  return ApplicationFailure.nonRetryable(`${what}: ${where} breaks the skew policy: ${why}`, WORKFLOW_FAILURE.SkewViolation);
}

/** One sentence on the state the run leaves: which nodes are where. */
export function leftAs(status: UpgradeStatus): string {
  const byVersion = new Map<string, string[]>();
  for (const [node, s] of Object.entries(status.nodes)) {
    const key = s.version ?? s.from ?? 'unknown';
    byVersion.set(key, [...(byVersion.get(key) ?? []), node]);
  }
  const versions = [...byVersion.entries()].map(([v, nodes]) => `${nodes.join(', ')} at ${v}`).join('; ');
  const quarantined = status.quarantined?.length ? `; QUARANTINED (left cordoned): ${status.quarantined.join(', ')}` : '';
  // The quarantined nodes are left cordoned on purpose: the clause on the rest says "other".
  const rest = quarantined ? stillCordoned(status).replace(/^no node /, 'no other node ') : stillCordoned(status);
  const packages = packagesLeft(status).map((c) => `; ${c}`);
  return `${versions}${status.skipped.length ? `; skipped: ${status.skipped.join(', ')}` : ''}${quarantined}; ${rest}${packages.join('')}`;
}

/**
 * What the run left of the nodes' packages, one clause each: the holds it put back after an install
 * that did not finish, any it could not, and a repository file it pointed past the node's kubelet
 * (left so: packages come from it only through skewless's install, and the holds keep the rest away).
 */
export function packagesLeft(status: RolloutStatus): string[] {
  const clauses: string[] = [];
  for (const [node, s] of Object.entries(status.nodes)) {
    const p = s.packages;
    if (!p) continue;
    if (p.putBack?.length) clauses.push(`holds put back on ${node}: ${p.putBack.join(' ')}`);
    if (p.notPutBack?.length) clauses.push(`HOLDS NOT PUT BACK on ${node}: ${p.notPutBack.join(' ')}`);
    if (p.unchecked) clauses.push(`holds on ${node} NOT CHECKED (${p.unchecked})`);
    const kubelet = s.version ?? s.from;
    if (p.repository && kubelet && minorOfText(kubelet) !== p.repository.minor) {
      const held = p.held ?? p.heldBefore;
      clauses.push(
        `${p.repository.file} on ${node} points at v${p.repository.minor}, ahead of its kubelet ${kubelet}${held ? ` (held: ${held.join(' ') || 'none'})` : ''}`,
      );
    }
  }
  return clauses;
}

/** `1.32.4` → `1.32`; a version the rules cannot read is compared as it is. */
function minorOfText(version: string): string {
  try {
    return minorOf(parseVersion(version));
  } catch {
    return version;
  }
}

/** The nodes whose uncordon failed while the run compensated, in one clause of its outcome. */
export function stillCordoned(status: RolloutStatus): string {
  const stuck = status.uncordonFailed ?? [];
  return stuck.length ? `STILL CORDONED (uncordon failed): ${stuck.join(', ')}` : 'no node left cordoned by this run';
}

/** The nodes a run leaves behind: skipped or quarantined below the target, or moved but cordoned by someone else. */
export function nodesLeftBehind(status: UpgradeStatus): LeftBehind[] {
  return Object.entries(status.nodes).flatMap(([node, s]): LeftBehind[] => {
    const at = s.version ?? s.from;
    if (status.quarantined?.includes(node)) return [{ node, ...(at ? { version: at } : {}), why: 'quarantined' }];
    if (status.skipped.includes(node)) return [{ node, ...(at ? { version: at } : {}), why: 'skipped' }];
    if (s.cordonedBySomeoneElse) return [{ node, ...(at ? { version: at } : {}), why: 'cordoned-by-someone-else' }];
    return [];
  });
}

/**
 * The headline of a finished run: the version reached, then, if any, the nodes left behind and why,
 * and the command that finishes the skipped ones (the same upgrade again moves only what is behind).
 */
export function doneOutcome(
  status: UpgradeStatus,
  reached: string,
  left: readonly LeftBehind[],
  again: (to: string) => string = (to) => `skewless upgrade --cluster ${status.cluster} --to ${to}`,
): string {
  if (left.length === 0) return `upgraded to ${reached}`;
  const why = (l: LeftBehind) =>
    l.why === 'skipped'
      ? `${l.node} at ${l.version ?? 'its old version'} (skipped by the operator)`
      : l.why === 'quarantined'
        ? `${l.node} at ${l.version ?? 'its old version'} QUARANTINED, left cordoned (its drain did not finish; label ${QUARANTINED_LABEL})`
        : `${l.node} at ${l.version ?? '?'} left cordoned (cordoned by someone else before this run cordoned it)`;
  // A quarantined node moves once its pods can leave (the same upgrade again), or goes back as it is (uncordon).
  const finish = left.some((l) => l.why === 'skipped' || l.why === 'quarantined')
    ? `; finish them with: ${again(reached)}${left.some((l) => l.why === 'quarantined') ? ' once the quarantined nodes can drain' : ''}`
    : '';
  const packages = packagesLeft(status).map((c) => `; ${c}`);
  return `upgraded to ${reached} EXCEPT ${left.length} node${left.length > 1 ? 's' : ''} left behind: ${left.map(why).join(', ')}${packages.join('')}${finish}`;
}
