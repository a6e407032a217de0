// Restoring a stacked-etcd kubeadm control plane from an etcd snapshot, as an operator does it
// (kubernetes.io "Operating etcd clusters", etcd's disaster recovery guide), one idempotent step per
// activity, each reading the host's state first:
//   planRestore          the snapshot's record and every member's name, peer URL and data dir (its manifest)
//   placeSnapshot        the worker's verified copy onto a control plane that lacks it (SFTP to /tmp, root moves it)
//   checkRestoreSnapshot the file on the host: sha256 against the record, `etcdutl snapshot status`
//   stopStaticPods       the control-plane manifests out of /etc/kubernetes/manifests; wait until they stopped
//   restoreEtcdMember    `etcdutl snapshot restore` into a fresh dir (this member's name and peer URL, every
//                        member in --initial-cluster), then swap it in for the manifest's data dir
//   startStaticPods      the manifests back: the kubelet starts etcd and the rest on the restored data
//   verifyEtcdRestore    etcd answers, at a revision at or above the snapshot's plus the bump
import { existsSync, readFileSync, statSync } from 'node:fs';
import { join, posix } from 'node:path';
import { ApplicationFailure } from '@temporalio/activity';
import type { ClusterAccess, ClusterResolver } from './cluster-access.js';
import { ErrorType, kubeCall } from './errors.js';
import { readyz, type ReadyzResult } from './health-apiserver.js';
import { heartbeatWhile, hostActivityScope } from './host-activity-context.js';
import { checkNode, commandFailed, invalid, run, shown } from './host-commands.js';
import { CONTROL_PLANE_LABEL } from './inventory-facts.js';
import { MEMBER_NAME, PEER_URL, PLAIN_PATH, parseEtcdManifest } from './parsers/etcd-manifest.js';
import { parseSnapshotStatus } from './parsers/snapshot-status.js';
import { SETTING_LIMITS } from '../contracts/time-limits.js';
import { pollUntil } from '../tooling/poll-until.js';
import { sinkSubscriptions, type SinkSubscription } from '../rules/index.js';

export const MANIFESTS_DIR = '/etc/kubernetes/manifests';
/** Where the manifests wait while the control plane is down: beside the kubelet's dir, not in it. */
export const PARKED_DIR = '/etc/kubernetes/manifests-stopped-by-skewless';
/** kubeadm's static pods, in the order they come back (etcd first); leaving, the reverse. */
export const STATIC_POD_MANIFESTS = ['etcd.yaml', 'kube-apiserver.yaml', 'kube-controller-manager.yaml', 'kube-scheduler.yaml'] as const;
const STATIC_POD_PROGRAMS = 'etcd|kube-apiserver|kube-controller-manager|kube-scheduler';
/**
 * `etcdutl snapshot restore --bump-revision --mark-compacted` (Kubernetes' restore guide): every
 * revision after the restore is above any a client saw before it, and watches from older ones are
 * told "compacted", so informers relist instead of waiting for revisions that will never come.
 */
export const BUMP_REVISION = 1_000_000_000;

const HOP = /^[0-9A-Za-z][0-9A-Za-z._-]{0,39}$/;
const SHA256 = /^[0-9a-f]{64}$/;
const INITIAL_CLUSTER_MAX = 16;
const READ_MS = 2 * 60_000;
const RESTORE_MS = 20 * 60_000;
const COPY_MS = 15 * 60_000;
const POLL_MS = 1_000;
/** The restore's waits run in host-command activities: capped under them (contracts/time-limits.ts). */
const STOP_MAX = SETTING_LIMITS['restore.stopTimeoutSeconds'].max;
const VERIFY_MAX = SETTING_LIMITS['restore.verifyTimeoutSeconds'].max;

export interface EtcdMember {
  node: string;
  name: string;
  peerUrl: string;
  dataDir: string;
}

export interface RestoreSnapshot {
  /** The hop the upgrade took it before; absent for a snapshot named by path. */
  hop?: string;
  /** Its path on the control planes. */
  remotePath: string;
  /** The worker's verified copy, when the upgrade recorded one. */
  localPath?: string;
  sha256: string;
  revision: number;
  /** When it was taken (ISO): everything written after it is lost. */
  takenAt?: string;
}

export interface RestorePlan {
  snapshot: RestoreSnapshot;
  members: EtcdMember[];
  /** `name=peerURL,...` of every member, as each one's restore is told. */
  initialCluster: string;
  bumpRevision: number;
  /** A tag for the fresh and the previous data dirs: the hop, or the snapshot's hash. */
  tag: string;
  /** The cluster's `notify:` sinks, names and events only (never a URL): where the restore's events go. */
  notify?: SinkSubscription[];
}

const failure = (type: string, message: string, nonRetryable = true): ApplicationFailure =>
  ApplicationFailure.create({ type, message, nonRetryable });

function checkRemotePath(value: unknown, what: string): string {
  if (typeof value !== 'string' || !PLAIN_PATH.test(value) || value.split('/').includes('..'))
    throw invalid(`invalid ${what} ${shown(value)}: an absolute path of letters, digits, '.', '_', '-'`);
  return value;
}

function checkMember(value: unknown, node: string): EtcdMember {
  const m = value as Partial<EtcdMember> | null;
  if (typeof m !== 'object' || m === null) throw invalid(`invalid etcd member for ${node}: ${shown(value)}`);
  if (typeof m.name !== 'string' || !MEMBER_NAME.test(m.name)) throw invalid(`invalid etcd member name ${shown(m.name)}`);
  if (typeof m.peerUrl !== 'string' || !PEER_URL.test(m.peerUrl)) throw invalid(`invalid etcd peer URL ${shown(m.peerUrl)}`);
  return { node, name: m.name, peerUrl: m.peerUrl, dataDir: checkRemotePath(m.dataDir, 'etcd data dir') };
}

function checkInitialCluster(value: unknown): string {
  const parts = typeof value === 'string' ? value.split(',') : [];
  const ok =
    parts.length > 0 &&
    parts.length <= INITIAL_CLUSTER_MAX &&
    parts.every((p) => {
      const [name = '', url = '', ...rest] = p.split('=');
      return rest.length === 0 && MEMBER_NAME.test(name) && PEER_URL.test(url);
    });
  if (!ok) throw invalid(`invalid initial cluster ${shown(value)}: name=peerURL,...`);
  return value as string;
}

function checkTag(value: unknown): string {
  if (typeof value !== 'string' || !HOP.test(value))
    throw invalid(`invalid restore tag ${shown(value, 40)}: letters, digits, '.', '_', '-'`);
  return value;
}

const test = async (access: ClusterAccess, node: string, op: '-f' | '-d', path: string, signal?: AbortSignal): Promise<boolean> => {
  const r = await access.shell.exec(node, ['test', op, path], { sudo: true, timeoutMs: READ_MS, ...(signal ? { signal } : {}) });
  if (r.exitCode === 0 || r.exitCode === 1) return r.exitCode === 0;
  throw commandFailed(node, ['test', op, path], r);
};

/** The snapshot the upgrade took before `hop`, from the worker's verified copy and its record. */
function recordedSnapshot(access: ClusterAccess, hop: string): RestoreSnapshot {
  const { config } = access;
  const name = `etcd-${config.name}-${hop}.db`;
  const localPath = join(config.snapshots.dir, name);
  const [sumFile, metaFile] = [`${localPath}.sha256`, `${localPath}.json`];
  if (!existsSync(localPath) || !existsSync(sumFile) || !existsSync(metaFile)) {
    throw failure(
      ErrorType.SnapshotMissing,
      `no verified etcd snapshot of ${config.name} for hop ${hop} in ${config.snapshots.dir} (skewless history ${config.name} lists the snapshots taken)`,
    );
  }
  const sha256 = readFileSync(sumFile, 'utf8').split(/\s+/)[0] ?? '';
  const meta = JSON.parse(readFileSync(metaFile, 'utf8')) as { revision?: unknown; remotePath?: unknown };
  if (!SHA256.test(sha256) || typeof meta.revision !== 'number')
    throw failure(ErrorType.VerificationFailed, `the record of ${localPath} is unreadable`);
  const remotePath = typeof meta.remotePath === 'string' ? meta.remotePath : posix.join(config.etcd.remoteDir, name);
  return {
    hop,
    remotePath: checkRemotePath(remotePath, 'snapshot path'),
    localPath,
    sha256,
    revision: meta.revision,
    takenAt: statSync(sumFile).mtime.toISOString(),
  };
}

/** sha256 and `etcdutl snapshot status` of the file on `node`; SnapshotMissing when it is not there. */
async function snapshotOnHost(
  access: ClusterAccess,
  node: string,
  remotePath: string,
  signal?: AbortSignal,
): Promise<{ sha256: string; revision: number }> {
  if (!(await test(access, node, '-f', remotePath, signal))) {
    throw failure(
      ErrorType.SnapshotMissing,
      `${remotePath} is not on ${node}: copy the snapshot there (same path, owned by root) and retry`,
    );
  }
  const root = { sudo: true, timeoutMs: READ_MS, ...(signal ? { signal } : {}) };
  const sum = /^([0-9a-f]{64})\s/.exec((await run(access, node, ['sha256sum', remotePath], root)).stdout)?.[1];
  if (!sum) throw failure(ErrorType.VerificationFailed, `sha256sum of ${remotePath} on ${node} printed no hash`);
  const r = await access.shell.exec(node, ['etcdutl', 'snapshot', 'status', remotePath, '-w', 'json'], root);
  const status = r.exitCode === 0 ? parseSnapshotStatus(r.stdout) : undefined;
  if (!status)
    throw failure(
      ErrorType.VerificationFailed,
      `etcdutl snapshot status of ${remotePath} on ${node} failed (exit ${r.exitCode}): ${(r.stderr || r.stdout).trim().split('\n').at(-1) ?? ''}`,
    );
  return { sha256: sum, revision: status.revision };
}

/** The member `node` runs, from its etcd manifest (where the kubelet reads it, or parked by a stop). */
async function memberOf(access: ClusterAccess, node: string, signal?: AbortSignal): Promise<EtcdMember> {
  for (const dir of [MANIFESTS_DIR, PARKED_DIR]) {
    const path = `${dir}/etcd.yaml`;
    if (!(await test(access, node, '-f', path, signal))) continue;
    const text = (await run(access, node, ['cat', path], { sudo: true, timeoutMs: READ_MS, ...(signal ? { signal } : {}) })).stdout;
    const m = parseEtcdManifest(text);
    if (!m)
      throw failure(
        ErrorType.VerificationFailed,
        `${path} on ${node} names no etcd member (--name, --initial-advertise-peer-urls, the etcd-data hostPath): is this a stacked-etcd kubeadm control plane?`,
      );
    return { node, ...m };
  }
  throw failure(
    ErrorType.VerificationFailed,
    `${node} has no ${MANIFESTS_DIR}/etcd.yaml: not a stacked-etcd control plane (docs/restore.md: external etcd)`,
  );
}

export async function planRestore(
  access: ClusterAccess,
  input: { hop?: string; snapshotPath?: string; controlPlanes?: string[] },
): Promise<RestorePlan> {
  const scope = hostActivityScope();
  const { signal } = scope;
  if (input.hop === undefined && input.snapshotPath === undefined)
    throw invalid("name the snapshot by hop, by path, or both (the hop's record, the file at the path)");
  if (input.hop !== undefined && (typeof input.hop !== 'string' || !HOP.test(input.hop)))
    throw invalid(`invalid hop ${shown(input.hop, 40)}`);
  // The worker's own record first: a hop with no snapshot is refused before any host is asked.
  const recorded = input.hop !== undefined ? recordedSnapshot(access, input.hop) : undefined;
  let nodes: string[];
  if (input.controlPlanes !== undefined) {
    if (!Array.isArray(input.controlPlanes) || input.controlPlanes.length === 0 || input.controlPlanes.length > INITIAL_CLUSTER_MAX)
      throw invalid('controlPlanes: one to 16 node names');
    nodes = input.controlPlanes.map(checkNode);
  } else {
    const { items } = await kubeCall('list control-plane nodes', () => access.kube.core.listNode({ labelSelector: CONTROL_PLANE_LABEL }));
    nodes = items
      .map((n) => n.metadata?.name ?? '')
      .filter((n) => n !== '')
      .sort();
    if (nodes.length === 0)
      throw failure(ErrorType.NotFound, `no node of ${access.config.name} carries ${CONTROL_PLANE_LABEL}; name the control planes`);
  }
  const members: EtcdMember[] = [];
  for (const node of nodes)
    members.push(await heartbeatWhile(scope, () => ({ node, reading: 'etcd manifest' }), memberOf(access, node, signal)));
  let snapshot: RestoreSnapshot;
  if (recorded) {
    snapshot = recorded;
    // The recorded snapshot, found elsewhere on the hosts: checked against the record all the same.
    if (input.snapshotPath !== undefined) snapshot.remotePath = checkRemotePath(input.snapshotPath, 'snapshot path');
  } else {
    const remotePath = checkRemotePath(input.snapshotPath, 'snapshot path');
    const first = members[0] as EtcdMember;
    const found = await snapshotOnHost(access, first.node, remotePath, signal);
    snapshot = { remotePath, ...found };
  }
  const names = new Set(members.map((m) => m.name));
  if (names.size !== members.length)
    throw failure(
      ErrorType.VerificationFailed,
      `two control planes name the same etcd member: ${members.map((m) => `${m.node}=${m.name}`).join(', ')}`,
    );
  return {
    snapshot,
    members,
    initialCluster: members.map((m) => `${m.name}=${m.peerUrl}`).join(','),
    bumpRevision: BUMP_REVISION,
    tag: snapshot.hop ?? `sha-${snapshot.sha256.slice(0, 12)}`,
    ...(access.config.notify?.length ? { notify: sinkSubscriptions(access.config.notify) } : {}),
  };
}

/**
 * The upgrade took its snapshot on the first control plane only; every member's restore needs the
 * file. A control plane without it (or with another file there) gets the worker's verified copy:
 * SFTP as the SSH user into /tmp (mode 0600), then root moves it into place and owns it. The check
 * that follows (checkRestoreSnapshot) hashes it on the host.
 */
export async function placeSnapshot(access: ClusterAccess, input: { node: string; hop: string }) {
  const node = checkNode(input.node);
  if (typeof input.hop !== 'string' || !HOP.test(input.hop)) throw invalid(`invalid hop ${shown(input.hop, 40)}`);
  const record = recordedSnapshot(access, input.hop);
  const scope = hostActivityScope();
  const { signal } = scope;
  const root = { sudo: true, timeoutMs: READ_MS, ...(signal ? { signal } : {}) };
  const { remotePath, localPath } = record;
  if (await test(access, node, '-f', remotePath, signal)) {
    const sum = /^([0-9a-f]{64})\s/.exec((await run(access, node, ['sha256sum', remotePath], root)).stdout)?.[1];
    if (sum === record.sha256) return { node, remotePath, placed: false };
  }
  const upload = access.shell.upload?.bind(access.shell);
  if (!upload || !localPath)
    throw failure(
      ErrorType.SnapshotMissing,
      `${remotePath} is not on ${node} and this worker cannot copy files onto hosts: copy it there by hand and retry`,
    );
  const temp = `/tmp/${posix.basename(remotePath)}.skewless-part`;
  await heartbeatWhile(
    scope,
    () => ({ node, step: 'copying snapshot onto the host', remotePath }),
    upload(node, localPath, temp, { timeoutMs: COPY_MS, ...(signal ? { signal } : {}) }),
  );
  await run(access, node, ['mkdir', '-p', posix.dirname(remotePath)], root);
  await run(access, node, ['mv', '-T', temp, remotePath], root);
  await run(access, node, ['chown', 'root', remotePath], root);
  return { node, remotePath, placed: true };
}

export async function checkRestoreSnapshot(
  access: ClusterAccess,
  input: { node: string; remotePath: string; sha256: string; revision: number },
) {
  const node = checkNode(input.node);
  const remotePath = checkRemotePath(input.remotePath, 'snapshot path');
  if (typeof input.sha256 !== 'string' || !SHA256.test(input.sha256)) throw invalid(`invalid sha256 ${shown(input.sha256)}`);
  const found = await snapshotOnHost(access, node, remotePath, hostActivityScope().signal);
  if (found.sha256 !== input.sha256)
    throw failure(
      ErrorType.VerificationFailed,
      `${remotePath} on ${node} hashes to ${found.sha256}, the recorded snapshot to ${input.sha256}: not the snapshot that was taken`,
    );
  if (found.revision !== input.revision)
    throw failure(
      ErrorType.VerificationFailed,
      `${remotePath} on ${node} is at revision ${found.revision}, the recorded snapshot at ${String(input.revision)}`,
    );
  return { node, remotePath, ...found };
}

/** The static pods still running on `node` (pgrep; exit 1: none). */
async function runningStaticPods(access: ClusterAccess, node: string, signal?: AbortSignal): Promise<string[]> {
  const argv = ['pgrep', '-l', '-x', STATIC_POD_PROGRAMS];
  const r = await access.shell.exec(node, argv, { timeoutMs: READ_MS, ...(signal ? { signal } : {}) });
  if (r.exitCode === 1) return [];
  if (r.exitCode !== 0) throw commandFailed(node, argv, r);
  return [
    ...new Set(
      r.stdout
        .trim()
        .split('\n')
        .map((l) => l.replace(/^\d+\s+/, '').trim())
        .filter((l) => l !== ''),
    ),
  ];
}

export async function stopStaticPods(access: ClusterAccess, input: { node: string; timeoutSeconds?: number }) {
  const node = checkNode(input.node);
  const timeoutSeconds = input.timeoutSeconds ?? 300;
  if (typeof timeoutSeconds !== 'number' || !Number.isFinite(timeoutSeconds) || timeoutSeconds < 1 || timeoutSeconds > STOP_MAX)
    throw invalid(`invalid timeoutSeconds ${shown(timeoutSeconds)}`);
  const scope = hostActivityScope();
  const { signal } = scope;
  const root = { sudo: true, timeoutMs: READ_MS, ...(signal ? { signal } : {}) };
  await run(access, node, ['mkdir', '-p', PARKED_DIR], root);
  const moved: string[] = [];
  for (const m of [...STATIC_POD_MANIFESTS].reverse()) {
    if (await test(access, node, '-f', `${MANIFESTS_DIR}/${m}`, signal)) {
      await run(access, node, ['mv', `${MANIFESTS_DIR}/${m}`, `${PARKED_DIR}/${m}`], root);
      moved.push(m);
    } else if (m === 'etcd.yaml' && !(await test(access, node, '-f', `${PARKED_DIR}/${m}`, signal))) {
      throw failure(
        ErrorType.VerificationFailed,
        `${node} has no etcd.yaml in ${MANIFESTS_DIR} nor in ${PARKED_DIR}: not a stacked-etcd control plane`,
      );
    }
  }
  // The kubelet stops a static pod whose manifest left (it looks every 20 s): wait until it has.
  await pollUntil(
    () => runningStaticPods(access, node, signal),
    (running) => running.length === 0,
    (running) => {
      throw failure(
        ErrorType.HostCommandTimedOut,
        `${node} still runs ${running.join(', ')} ${timeoutSeconds} s after its manifests left ${MANIFESTS_DIR}`,
        false,
      );
    },
    {
      timeoutMs: timeoutSeconds * 1000,
      intervalMs: POLL_MS,
      signal,
      onPending: (running) => scope.heartbeat({ node, waitingFor: running }),
    },
  );
  return { node, moved, parkedIn: PARKED_DIR };
}

export async function restoreEtcdMember(
  access: ClusterAccess,
  input: { node: string; member: EtcdMember; remotePath: string; initialCluster: string; bumpRevision: number; tag: string },
) {
  const node = checkNode(input.node);
  const member = checkMember(input.member, node);
  const remotePath = checkRemotePath(input.remotePath, 'snapshot path');
  const initialCluster = checkInitialCluster(input.initialCluster);
  const tag = checkTag(input.tag);
  const bump = input.bumpRevision;
  if (typeof bump !== 'number' || !Number.isInteger(bump) || bump < 0 || bump > 1e12) throw invalid(`invalid bumpRevision ${shown(bump)}`);
  if (!initialCluster.split(',').includes(`${member.name}=${member.peerUrl}`))
    throw invalid(`the initial cluster does not name ${member.name}=${member.peerUrl}`);
  const scope = hostActivityScope();
  const { signal } = scope;
  const root = { sudo: true, timeoutMs: READ_MS, ...(signal ? { signal } : {}) };
  const { dataDir } = member;
  const restored = `${dataDir}.skewless-restored-${tag}`;
  const previous = `${dataDir}.skewless-before-${tag}`;
  // Never under a running etcd: its data dir is about to move.
  const running = await runningStaticPods(access, node, signal);
  if (running.includes('etcd'))
    throw failure(ErrorType.StaticPodsRunning, `etcd still runs on ${node}: stop the static pods first (stopStaticPods)`);

  const [hasPrevious, hasData, hasRestored] = [
    await test(access, node, '-d', previous, signal),
    await test(access, node, '-d', dataDir, signal),
    await test(access, node, '-d', restored, signal),
  ];
  if (hasPrevious && hasData && !hasRestored) return { node, dataDir, previousDataDir: previous, restoredNow: false }; // swapped already
  if (hasPrevious && (hasData || !hasRestored)) {
    throw failure(
      ErrorType.VerificationFailed,
      `${node}: ${previous} exists, and ${hasData ? `so do ${dataDir} and ${restored}` : `neither ${dataDir} nor ${restored}`}; sort the data dirs out by hand (docs/restore.md)`,
    );
  }
  if (!hasRestored) {
    // etcdutl writes into a dir of its own, renamed once complete: `restored` is always whole.
    const partial = `${restored}.partial-${Date.now()}`;
    await heartbeatWhile(
      scope,
      () => ({ node, step: 'etcdutl snapshot restore' }),
      run(
        access,
        node,
        [
          'etcdutl',
          'snapshot',
          'restore',
          remotePath,
          '--data-dir',
          partial,
          '--name',
          member.name,
          '--initial-cluster',
          initialCluster,
          '--initial-advertise-peer-urls',
          member.peerUrl,
          '--bump-revision',
          String(bump),
          '--mark-compacted',
        ],
        { ...root, timeoutMs: RESTORE_MS },
      ),
    );
    await run(access, node, ['mv', '-T', partial, restored], root);
  }
  // -T: never into an existing directory (a stray dir at the target fails instead of swallowing the data).
  if (hasData) await run(access, node, ['mv', '-T', dataDir, previous], root);
  await run(access, node, ['mv', '-T', restored, dataDir], root);
  return { node, dataDir, previousDataDir: previous, restoredNow: true };
}

export async function startStaticPods(access: ClusterAccess, input: { node: string }) {
  const node = checkNode(input.node);
  const { signal } = hostActivityScope();
  const root = { sudo: true, timeoutMs: READ_MS, ...(signal ? { signal } : {}) };
  const moved: string[] = [];
  for (const m of STATIC_POD_MANIFESTS) {
    if (!(await test(access, node, '-f', `${PARKED_DIR}/${m}`, signal))) continue;
    if (await test(access, node, '-f', `${MANIFESTS_DIR}/${m}`, signal)) continue; // back already (an operator's hand): leave the parked copy
    await run(access, node, ['mv', `${PARKED_DIR}/${m}`, `${MANIFESTS_DIR}/${m}`], root);
    moved.push(m);
  }
  if (!(await test(access, node, '-f', `${MANIFESTS_DIR}/etcd.yaml`, signal)))
    throw failure(ErrorType.VerificationFailed, `${node} has no ${MANIFESTS_DIR}/etcd.yaml after the start`);
  return { node, moved };
}

export async function verifyEtcdRestore(access: ClusterAccess, input: { node: string; minRevision: number; timeoutSeconds?: number }) {
  const node = checkNode(input.node);
  const min = input.minRevision;
  if (typeof min !== 'number' || !Number.isInteger(min) || min < 0) throw invalid(`invalid minRevision ${shown(min)}`);
  const timeoutSeconds = input.timeoutSeconds ?? 300;
  if (typeof timeoutSeconds !== 'number' || !Number.isFinite(timeoutSeconds) || timeoutSeconds < 1 || timeoutSeconds > VERIFY_MAX)
    throw invalid(`invalid timeoutSeconds ${shown(timeoutSeconds)}`);
  const scope = hostActivityScope();
  const { signal } = scope;
  const { etcd } = access.config;
  const argv = [
    'etcdctl',
    `--endpoints=${etcd.endpoint}`,
    `--cacert=${etcd.caCert}`,
    `--cert=${etcd.cert}`,
    `--key=${etcd.key}`,
    'endpoint',
    'status',
    '-w',
    'json',
  ];
  /** The revision etcd serves, or why it did not answer. */
  const endpointStatus = async (): Promise<{ revision: number } | { last: string }> => {
    const r = await access.shell.exec(node, argv, {
      sudo: true,
      env: { ETCDCTL_API: '3' },
      timeoutMs: READ_MS,
      ...(signal ? { signal } : {}),
    });
    const revision = r.exitCode === 0 ? Number(/"revision":\s*(\d+)/.exec(r.stdout)?.[1] ?? Number.NaN) : Number.NaN;
    if (Number.isSafeInteger(revision)) return { revision };
    return { last: `exit ${r.exitCode}: ${(r.stderr || r.stdout).trim().split('\n').at(-1) ?? ''}`.slice(0, 300) };
  };
  const { revision } = await pollUntil(
    endpointStatus,
    (s): s is { revision: number } => 'revision' in s,
    (s) => {
      const last = 'last' in s ? s.last : '';
      throw failure(ErrorType.Unhealthy, `etcd on ${node} did not answer within ${timeoutSeconds} s of the start (${last})`);
    },
    {
      timeoutMs: timeoutSeconds * 1000,
      intervalMs: POLL_MS * 2,
      signal,
      onPending: (s) => scope.heartbeat({ node, waitingFor: 'etcd endpoint status', last: 'last' in s ? s.last : '' }),
    },
  );
  if (revision < min)
    throw failure(
      ErrorType.VerificationFailed,
      `etcd on ${node} is at revision ${revision}, below ${min} (the snapshot's revision plus the bump): the restored data is not what it serves`,
    );
  return { node, revision };
}

/**
 * The apiserver ready again after the restart: /readyz with the worker's own credentials. Right after
 * a start the apiserver refuses (401/403) what its authorizer has not loaded yet (RBAC comes from the
 * restored etcd), so a refusal counts as "not yet" until the deadline, unlike checkApiserver's.
 */
export async function verifyRestoredApiserver(access: ClusterAccess, input: { timeoutSeconds?: number }): Promise<ReadyzResult> {
  const timeoutSeconds = input.timeoutSeconds ?? 240;
  if (typeof timeoutSeconds !== 'number' || !Number.isFinite(timeoutSeconds) || timeoutSeconds < 1 || timeoutSeconds > VERIFY_MAX)
    throw invalid(`invalid timeoutSeconds ${shown(timeoutSeconds)}`);
  const scope = hostActivityScope();
  /** /readyz, with a refusal of the authorizer taken as "not yet". */
  const ready = async (): Promise<ReadyzResult | { last: string }> => {
    try {
      const r = await readyz(access.config, scope.signal);
      return r.healthy ? r : { last: r.error ?? 'not ready' };
    } catch (err) {
      if (!(err instanceof ApplicationFailure && err.type === ErrorType.Forbidden)) throw err;
      return { last: err.message };
    }
  };
  return pollUntil(
    ready,
    (s): s is ReadyzResult => !('last' in s),
    (s) => {
      const last = 'last' in s ? s.last : '';
      throw failure(
        ErrorType.Unhealthy,
        `the apiserver of ${access.config.name} is not ready ${timeoutSeconds} s after the restore: ${last}`,
      );
    },
    {
      timeoutMs: timeoutSeconds * 1000,
      intervalMs: POLL_MS,
      signal: scope.signal,
      onPending: (s) => scope.heartbeat({ waitingFor: 'apiserver /readyz', last: 'last' in s ? s.last : '' }),
    },
  );
}

export function createRestoreActivities(deps: { clusters: ClusterResolver }) {
  const on = (cluster: string) => deps.clusters(cluster);
  return {
    /** The snapshot's record and every control plane's etcd member (read-only). */
    planRestore: async (input: { cluster: string; hop?: string; snapshotPath?: string; controlPlanes?: string[] }) =>
      planRestore(on(input.cluster), input),
    placeSnapshot: async (input: { cluster: string; node: string; hop: string }) => placeSnapshot(on(input.cluster), input),
    checkRestoreSnapshot: async (input: { cluster: string; node: string; remotePath: string; sha256: string; revision: number }) =>
      checkRestoreSnapshot(on(input.cluster), input),
    stopStaticPods: async (input: { cluster: string; node: string; timeoutSeconds?: number }) => stopStaticPods(on(input.cluster), input),
    restoreEtcdMember: async (input: {
      cluster: string;
      node: string;
      member: EtcdMember;
      remotePath: string;
      initialCluster: string;
      bumpRevision: number;
      tag: string;
    }) => restoreEtcdMember(on(input.cluster), input),
    startStaticPods: async (input: { cluster: string; node: string }) => startStaticPods(on(input.cluster), input),
    verifyEtcdRestore: async (input: { cluster: string; node: string; minRevision: number; timeoutSeconds?: number }) =>
      verifyEtcdRestore(on(input.cluster), input),
    verifyRestoredApiserver: async (input: { cluster: string; timeoutSeconds?: number }) =>
      verifyRestoredApiserver(on(input.cluster), input),
  };
}

export type RestoreActivities = ReturnType<typeof createRestoreActivities>;
