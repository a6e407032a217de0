/**
 * The etcd patch step (issue 35): before the hop whose kubeadm brings etcd 3.6, every stacked etcd
 * member below 3.5.26 (etcd's upgrade guide: https://etcd.io/docs/latest/upgrades/upgrade_3_6/) is
 * moved to the newest 3.5 patch the cluster's image source offers, one member at a time. Pure: which
 * members move, to which tag, in which order, and whether etcd is healthy between two members.
 * Facts in (activities/etcd-patch.ts reads them), decisions out.
 */
import { RuleError } from './rule-error.js';

/** etcd's own floor for 3.5 → 3.6 (the readiness row `etcd-version` holds below it). */
export const ETCD_PATCH_MINIMUM: readonly [number, number, number] = [3, 5, 26];

/**
 * The 3.5 images the product knows, oldest first. The worker cannot list a registry (nor should a
 * workflow ask one), so the newest entry is the default target; a cluster whose image source (a
 * private mirror) offers another tag names it in its configuration (`etcd.patchImageTag`).
 * - 3.5.24-0: what kubeadm 1.31–1.33 install (kubernetes@v1.34.4 cmd/kubeadm/app/constants/constants.go SupportedEtcdVersion).
 * - 3.5.26-0: etcd v3.5.26, the first 3.5 patch etcd's 3.6 upgrade guide accepts.
 * - 3.5.36-0: etcd v3.5.36, the newest 3.5 release the Go module proxy serves (2026-12-04; v3.5.25–v3.5.30
 *   answer 403 there: sim/build/NOTES.md), the one the per-node simulation has a build of.
 * The tags follow Kubernetes' naming of its etcd images (`<version>-0` on registry.k8s.io/etcd); whether
 * the registry serves each was not confirmed here (no network): a source without the newest is what
 * `etcd.patchImageTag` is for.
 */
export const KNOWN_ETCD_35_TAGS: readonly string[] = ['3.5.24-0', '3.5.26-0', '3.5.36-0'];

/** `3.5.24-0`, `v3.5.26`, `3.5.26_1` → [3, 5, 24]; undefined when it is no version. */
export function etcdTagVersion(tag: string | undefined): [number, number, number] | undefined {
  const m = /^v?(\d{1,4})\.(\d{1,4})\.(\d{1,4})(?:[-+_][0-9A-Za-z.-]{0,40})?$/.exec(tag ?? '');
  return m ? [Number(m[1]), Number(m[2]), Number(m[3])] : undefined;
}

const compare = (a: readonly number[], b: readonly number[]): number => a[0]! - b[0]! || a[1]! - b[1]! || a[2]! - b[2]!;
const shown = (v: readonly number[]) => v.join('.');

/**
 * The tag the members move to: the configured one (it must be a 3.5 patch at or past 3.5.26: a
 * patch step never changes the minor) or the newest known. A bad configured tag is a RuleError.
 */
export function etcdPatchTarget(configured?: string): string {
  if (configured === undefined) return KNOWN_ETCD_35_TAGS.at(-1) as string;
  const v = etcdTagVersion(configured);
  if (!v || v[0] !== 3 || v[1] !== 5 || compare(v, ETCD_PATCH_MINIMUM) < 0)
    throw new RuleError(
      'InvalidPolicy',
      `etcd.patchImageTag ${JSON.stringify(configured)}: expected an etcd 3.5 image tag at or past ${shown(ETCD_PATCH_MINIMUM)} (e.g. 3.5.26-0)`,
    );
  return configured;
}

/** One stacked member as read before the step: its control plane, etcd's name for it, its manifest's image tag. */
export interface EtcdMemberFacts {
  node: string;
  name: string;
  /** The tag of /etc/kubernetes/manifests/etcd.yaml's image (`3.5.24-0`). */
  imageTag: string;
  /** Whether it leads the raft group now. */
  leader: boolean;
}

export interface EtcdMemberMove {
  node: string;
  name: string;
  from: string;
  to: string;
}

export interface EtcdPatchPlan {
  target: string;
  /** The members to move, in order: followers by name, then the leader. */
  moves: EtcdMemberMove[];
  /** Members left as they are, and why (already there, newer). */
  unchanged: { node: string; why: string }[];
  /** Members the step cannot patch (not 3.5, an unreadable tag): the hold stays for them. */
  refused: { node: string; why: string }[];
}

/**
 * Which members move and in which order. Followers first, by name, the leader last: restarting a
 * follower costs no election, so the group elects at most once, when the leader itself restarts, and
 * by then every other member already runs the new patch (the leader is read again after each member
 * by the health check; a leader change meanwhile does not reorder what is left, it only costs an
 * election more). A member below the target but already past 3.5.26 still moves, so that the cluster
 * meets 3.6 on one patch; one at or past the target, or on another minor than 3.5, is left alone.
 */
export function planEtcdPatch(members: readonly EtcdMemberFacts[], target: string): EtcdPatchPlan {
  const to = etcdTagVersion(target);
  if (!to) throw new RuleError('InvalidPolicy', `invalid etcd target tag ${JSON.stringify(target)}`);
  const plan: EtcdPatchPlan = { target, moves: [], unchanged: [], refused: [] };
  const sorted = [...members].sort((a, b) => Number(a.leader) - Number(b.leader) || (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  for (const m of sorted) {
    const v = etcdTagVersion(m.imageTag);
    if (!v) plan.refused.push({ node: m.node, why: `image tag ${JSON.stringify(m.imageTag)} is not a version` });
    else if (compare(v, to) >= 0) plan.unchanged.push({ node: m.node, why: `already at ${shown(v)}` });
    else if (v[0] !== to[0] || v[1] !== to[1])
      plan.refused.push({ node: m.node, why: `etcd ${shown(v)} is not on ${to[0]}.${to[1]}: a patch step never changes the minor` });
    else plan.moves.push({ node: m.node, name: m.name, from: m.imageTag, to: target });
  }
  return plan;
}

/** One member as `etcdctl member list` names it. */
export interface EtcdMemberEntry {
  id: string;
  name: string;
}

/** One endpoint's answer to `etcdctl endpoint status --cluster`, or its error. */
export interface EtcdEndpointStatus {
  endpoint: string;
  memberId?: string;
  version?: string;
  leader?: string;
  errors?: string[];
}

export interface EtcdHealth {
  healthy: boolean;
  /** The leader's member name, when every member agrees on one. */
  leader?: string;
  /** Each member's server version by member name. */
  versions: Record<string, string>;
  problems: string[];
}

/**
 * Whether etcd may go on to its next member: every member answers (quorum with nobody missing:
 * a patch step takes a member down on purpose, so it starts only with all of them up), without
 * errors, all on one leader that is a member, and the member just moved at `expect.version`.
 */
export function judgeEtcdHealth(
  members: readonly EtcdMemberEntry[],
  statuses: readonly EtcdEndpointStatus[],
  expect?: { member: string; version: string },
): EtcdHealth {
  const problems: string[] = [];
  const versions: Record<string, string> = {};
  const nameOf = new Map(members.map((m) => [m.id, m.name]));
  const leaders = new Set<string>();
  for (const m of members) {
    const s = statuses.find((x) => x.memberId === m.id);
    if (!s) {
      problems.push(`member ${m.name} does not answer`);
      continue;
    }
    if (s.version) versions[m.name] = s.version;
    if (s.errors && s.errors.length > 0) problems.push(`member ${m.name} reports: ${s.errors.join('; ')}`);
    if (s.leader && s.leader !== '0') leaders.add(s.leader);
  }
  for (const s of statuses) if (s.memberId === undefined) problems.push(`endpoint ${s.endpoint}: ${s.errors?.join('; ') ?? 'no answer'}`);
  const [leaderId] = leaders;
  const leader = leaders.size === 1 && leaderId !== undefined ? nameOf.get(leaderId) : undefined;
  if (members.length === 0) problems.push('etcd lists no member');
  else if (leaders.size === 0) problems.push('no member knows a leader');
  else if (leaders.size > 1) problems.push(`the members name ${leaders.size} different leaders`);
  else if (leader === undefined) problems.push(`the leader ${leaderId} is not a member`);
  if (expect) {
    const want = etcdTagVersion(expect.version);
    const got = etcdTagVersion(versions[expect.member]);
    if (!members.some((m) => m.name === expect.member)) problems.push(`member ${expect.member} is not in the member list`);
    else if (!got) problems.push(`member ${expect.member} reports no version`);
    else if (!want || compare(got, want) !== 0)
      problems.push(`member ${expect.member} runs ${shown(got)}, not ${want ? shown(want) : expect.version}`);
  }
  return { healthy: problems.length === 0, ...(leader ? { leader } : {}), versions, problems };
}

/** The first hop at or past the minor whose kubeadm brings etcd 3.6 (1.34): the one the step precedes. */
export function etcdPatchHop(hops: readonly string[]): string | undefined {
  return hops.find((h) => {
    const m = /^v?(\d+)\.(\d+)/.exec(h);
    return !!m && (Number(m[1]) > 1 || Number(m[2]) >= 34);
  });
}

/** The snapshot's label before the step (the snapshot activity's `hop`): `1.34.4-before-etcd-3.5.26-0`. */
export const etcdPatchSnapshotLabel = (hop: string, target: string): string => `${hop}-before-etcd-${target}`;
