// The etcd patch step (issue 35, --fix-prerequisites): each stacked member moved to a newer 3.5 patch
// by its own static-pod manifest, one at a time, etcd's health read through etcd's own API between.
//   readEtcdMembers   every control plane's member (its manifest: name, image tag) and who leads (etcdctl)
//   patchEtcdMember   the member's /etc/kubernetes/manifests/etcd.yaml image set to the target tag
//                     (`sed -i` on its one `image:` line: the kubelet restarts the static pod at the new image)
//   checkEtcdHealth   every member answers, one leader, no alarms, and the member just moved at the new version
//
// Why the manifest and not kubeadm's ClusterConfiguration `etcd.local.imageTag` (kubernetes@v1.34.4
// cmd/kubeadm/app/phases/upgrade/staticpods.go performEtcdStaticPodUpgrade): kubeadm's upgrade takes
// the imageTag, when set, as the etcd version it wants (:304-312), so a tag of 3.5.26 left in
// kube-system/kubeadm-config would keep the 1.34 hop's `kubeadm upgrade apply` at 3.5 (its etcd 3.6
// upgrade skipped); without it kubeadm wants its own constant (3.5.24-0 for 1.32/1.33, 3.6.5-0 for 1.34)
// and skips, never downgrades, a member whose manifest is newer (:331-337, "the desired etcd version
// ... is older than the currently installed ... Skipping etcd upgrade"). So the manifest alone is both
// sufficient and safe for the hop that follows, and the worker keeps never writing kubeadm-config
// (deploy/rbac.yaml: get only; kubeadm on the node writes it). What stays: a control plane joined
// between this step and the hop gets kubeadm's default 3.5.24 member; the readiness check before the
// hop finds it again and the step patches it (docs/real-cluster.md).
import { ApplicationFailure } from '@temporalio/activity';
import { etcdPatchTarget, etcdTagVersion, judgeEtcdHealth, type EtcdHealth, type EtcdMemberFacts } from '../rules/index.js';
import type { ClusterAccess, ClusterResolver } from './cluster-access.js';
import { ErrorType } from './errors.js';
import { MANIFESTS_DIR } from './etcd-restore.js';
import { hostActivityScope } from './host-activity-context.js';
import { pollUntil } from '../tooling/poll-until.js';
import { checkNode, invalid, run, shown } from './host-commands.js';
import { parseEtcdManifest } from './parsers/etcd-manifest.js';
import { parseEndpointStatus, parseMemberList } from './parsers/etcd-status.js';

const MANIFEST = `${MANIFESTS_DIR}/etcd.yaml`;
const READ_MS = 60_000;
const POLL_MS = 2_000;
/** The longest wait for etcd to be whole again after a member's restart, under the etcdHealth profile's 5 minutes. */
const MAX_WAIT_SECONDS = 240;
/** An image reference on kubeadm's `image:` line: registry/path:tag, optionally @digest. */
const IMAGE_LINE = /^(\s*)image:\s*(\S+)\s*$/m;
const IMAGE_REF = /^([A-Za-z0-9][A-Za-z0-9._/:-]{0,250}?\/?etcd):([A-Za-z0-9_][A-Za-z0-9._-]{0,127})(@sha256:[0-9a-f]{64})?$/;

const failure = (type: string, message: string, nonRetryable = true): ApplicationFailure =>
  ApplicationFailure.create({ type, message, nonRetryable });

/** The etcd image of a manifest: repository, tag and digest, or undefined when it is not kubeadm's etcd. */
export function etcdImageOf(manifest: string): { line: string; repository: string; tag: string; digest?: string } | undefined {
  const m = IMAGE_LINE.exec(manifest);
  const ref = m?.[2] ? IMAGE_REF.exec(m[2]) : null;
  if (!m || !ref) return undefined;
  return { line: m[0].trim(), repository: ref[1] as string, tag: ref[2] as string, ...(ref[3] ? { digest: ref[3] } : {}) };
}

async function readManifest(access: ClusterAccess, node: string, signal?: AbortSignal): Promise<string> {
  return (await run(access, node, ['cat', MANIFEST], { sudo: true, timeoutMs: READ_MS, ...(signal ? { signal } : {}) })).stdout;
}

/** etcdctl with the cluster configuration's endpoint and kubeadm's etcd certificates, run as root on `node`. */
function etcdctl(access: ClusterAccess, node: string, args: string[], signal?: AbortSignal) {
  const { etcd } = access.config;
  const argv = ['etcdctl', `--endpoints=${etcd.endpoint}`, `--cacert=${etcd.caCert}`, `--cert=${etcd.cert}`, `--key=${etcd.key}`, ...args];
  return access.shell.exec(node, argv, { sudo: true, env: { ETCDCTL_API: '3' }, timeoutMs: READ_MS, ...(signal ? { signal } : {}) });
}

/** etcd as its own API says now: the members and each one's status, judged (rules/etcd-patch.ts). */
async function readHealth(
  access: ClusterAccess,
  node: string,
  expect: { member: string; version: string } | undefined,
  signal?: AbortSignal,
): Promise<EtcdHealth> {
  const list = await etcdctl(access, node, ['member', 'list', '-w', 'json'], signal);
  const members = list.exitCode === 0 ? parseMemberList(list.stdout) : undefined;
  if (!members) {
    const why = (list.stderr || list.stdout).trim().split('\n').at(-1) ?? '';
    return {
      healthy: false,
      versions: {},
      problems: [`etcdctl member list on ${node} failed (exit ${list.exitCode}): ${why.slice(0, 300)}`],
    };
  }
  // Exit 1 with the members that answered on stdout and the others on stderr: both are read.
  const status = await etcdctl(access, node, ['endpoint', 'status', '--cluster', '-w', 'json'], signal);
  const statuses = parseEndpointStatus(status.stdout, status.stderr);
  if (!statuses) {
    const why = (status.stderr || status.stdout).trim().split('\n').at(-1) ?? '';
    return {
      healthy: false,
      versions: {},
      problems: [`etcdctl endpoint status on ${node} failed (exit ${status.exitCode}): ${why.slice(0, 300)}`],
    };
  }
  return judgeEtcdHealth(members, statuses, expect);
}

export async function readEtcdMembers(access: ClusterAccess, input: { node: string; controlPlanes: string[] }) {
  const node = checkNode(input.node);
  if (!Array.isArray(input.controlPlanes) || input.controlPlanes.length === 0 || input.controlPlanes.length > 16)
    throw invalid('controlPlanes: one to 16 node names');
  const controlPlanes = input.controlPlanes.map(checkNode);
  const { signal } = hostActivityScope();
  const health = await readHealth(access, node, undefined, signal);
  const members: EtcdMemberFacts[] = [];
  for (const cp of controlPlanes) {
    const text = await readManifest(access, cp, signal);
    const member = parseEtcdManifest(text);
    const image = etcdImageOf(text);
    if (!member || !image)
      throw failure(
        ErrorType.VerificationFailed,
        `${MANIFEST} on ${cp} names no etcd member and image: is this a stacked-etcd kubeadm control plane?`,
      );
    members.push({ node: cp, name: member.name, imageTag: image.tag, leader: health.leader === member.name });
  }
  const known = new Set(members.map((m) => m.name));
  return {
    members,
    health,
    /** Members etcd lists that no control plane's manifest names (an external member, a joined host the plan does not know). */
    others: Object.keys(health.versions).filter((n) => !known.has(n)),
    /** The cluster configuration's `etcd.patchImageTag`, or the newest 3.5 image the product knows. */
    target: etcdPatchTarget(access.config.etcd.patchImageTag),
  };
}

export async function patchEtcdMember(access: ClusterAccess, input: { node: string; tag: string }) {
  const node = checkNode(input.node);
  const v = etcdTagVersion(typeof input.tag === 'string' ? input.tag : undefined);
  if (!v || v[0] !== 3 || v[1] !== 5) throw invalid(`invalid etcd tag ${shown(input.tag)}: a 3.5 image tag such as 3.5.26-0`);
  const tag = input.tag;
  const { signal } = hostActivityScope();
  const before = etcdImageOf(await readManifest(access, node, signal));
  if (!before) throw failure(ErrorType.VerificationFailed, `${MANIFEST} on ${node} has no etcd image line of kubeadm's shape`);
  const image = `${before.repository}:${tag}`;
  // Idempotent: a retry after the edit (or a member already there) changes nothing.
  if (before.tag === tag && !before.digest) return { node, from: before.tag, to: tag, image, changed: false };
  const from = etcdTagVersion(before.tag);
  if (!from || from[0] !== 3 || from[1] !== 5)
    throw failure(
      ErrorType.VerificationFailed,
      `${node} runs etcd image tag ${JSON.stringify(before.tag)}: a patch step only moves a 3.5 member`,
    );
  // A digest pins the old image whatever the tag says: the new reference is by tag (kubeadm's own form).
  const old = `image: ${before.repository}:${before.tag}${before.digest ?? ''}`;
  const bre = old.replace(/[.[\]*^$\\]/g, '\\$&');
  const argv = ['sed', '-i', `s|${bre}$|image: ${image}|`, MANIFEST];
  await run(access, node, argv, { sudo: true, timeoutMs: READ_MS, ...(signal ? { signal } : {}) });
  const after = etcdImageOf(await readManifest(access, node, signal));
  if (after?.tag !== tag || after.digest)
    throw failure(
      ErrorType.VerificationFailed,
      `${MANIFEST} on ${node} names ${after ? `${after.repository}:${after.tag}` : 'no etcd image'} after the edit, not ${image}`,
    );
  return { node, from: before.tag, to: tag, image, changed: true };
}

export async function checkEtcdHealth(
  access: ClusterAccess,
  input: { node: string; expect?: { member: string; version: string }; timeoutSeconds?: number },
) {
  const node = checkNode(input.node);
  const timeoutSeconds = input.timeoutSeconds ?? 180;
  if (typeof timeoutSeconds !== 'number' || !Number.isFinite(timeoutSeconds) || timeoutSeconds < 0 || timeoutSeconds > MAX_WAIT_SECONDS)
    throw invalid(`invalid timeoutSeconds ${shown(timeoutSeconds)}: 0 to ${MAX_WAIT_SECONDS}`);
  const expect = input.expect;
  if (expect !== undefined && (typeof expect.member !== 'string' || !etcdTagVersion(expect.version)))
    throw invalid(`invalid expectation ${shown(JSON.stringify(expect))}: a member name and an etcd version`);
  const scope = hostActivityScope();
  const health = await pollUntil(
    () => readHealth(access, node, expect, scope.signal),
    (h) => h.healthy,
    (h) => {
      throw failure(
        ErrorType.Unhealthy,
        `etcd is not whole ${timeoutSeconds} s after ${expect ? `${expect.member}'s restart at ${expect.version}` : 'the first look'}: ${h.problems.join('; ')}`,
      );
    },
    {
      timeoutMs: timeoutSeconds * 1000,
      intervalMs: POLL_MS,
      signal: scope.signal,
      onPending: (h) => scope.heartbeat({ node, waitingFor: 'etcd members, leader and versions', problems: h.problems }),
    },
  );
  return { node, leader: health.leader, versions: health.versions };
}

export function createEtcdPatchActivities(deps: { clusters: ClusterResolver }) {
  const on = (cluster: string) => deps.clusters(cluster);
  return {
    /** Every control plane's etcd member (manifest name and image tag), who leads, and the target tag (read-only). */
    readEtcdMembers: async (input: { cluster: string; node: string; controlPlanes: string[] }) => readEtcdMembers(on(input.cluster), input),
    /** One member's manifest image moved to `tag` (the kubelet restarts it); a no-op when it is there. */
    patchEtcdMember: async (input: { cluster: string; node: string; tag: string }) => patchEtcdMember(on(input.cluster), input),
    /** Waits until every member answers on one leader (and `expect.member` runs `expect.version`), or fails Unhealthy. */
    checkEtcdHealth: async (input: {
      cluster: string;
      node: string;
      expect?: { member: string; version: string };
      timeoutSeconds?: number;
    }) => checkEtcdHealth(on(input.cluster), input),
  };
}
