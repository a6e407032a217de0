// snapshotEtcd: an etcd snapshot on a control plane, verified (status and sha256 on the host), handed
// to the SSH user (chown), copied off the node with SFTP and hashed again locally. One deterministic file per cluster and hop; once the local copy and
// its `.sha256` (written last) agree, a later call returns it without touching the host.
import { createHash } from 'node:crypto';
import { createReadStream, existsSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join, posix } from 'node:path';
import { ApplicationFailure } from '@temporalio/activity';
import type { ClusterAccess, ClusterResolver } from './cluster-access.js';
import { ErrorType } from './errors.js';
import { heartbeatWhile, hostActivityScope } from './host-activity-context.js';
import { checkNode, invalid, run, shown } from './host-commands.js';
import { parseSnapshotStatus, type SnapshotStatus } from './parsers/snapshot-status.js';

export interface EtcdSnapshotResult {
  remotePath: string;
  localPath: string;
  sizeBytes: number;
  sha256: string;
  revision: number;
  totalKeys: number;
}

const HOP = /^[0-9A-Za-z][0-9A-Za-z._-]{0,39}$/;
// Save + copy stay below the etcdSnapshot profile's 30-minute startToClose.
const SAVE_MS = 10 * 60_000;
const READ_MS = 2 * 60_000;
const COPY_MS = 15 * 60_000;

const verificationFailed = (message: string): ApplicationFailure =>
  ApplicationFailure.create({ type: ErrorType.VerificationFailed, nonRetryable: true, message });

async function sha256File(path: string): Promise<string> {
  const hash = createHash('sha256');
  for await (const chunk of createReadStream(path)) hash.update(chunk as Buffer);
  return hash.digest('hex');
}

/** The recorded result, if the local copy is there and still hashes to what `.sha256` says. */
async function verifiedLocal(localPath: string): Promise<EtcdSnapshotResult | undefined> {
  const [sumFile, metaFile] = [`${localPath}.sha256`, `${localPath}.json`];
  if (!existsSync(localPath) || !existsSync(sumFile) || !existsSync(metaFile)) return undefined;
  const recorded = readFileSync(sumFile, 'utf8').split(/\s+/)[0];
  if (!recorded || (await sha256File(localPath)) !== recorded) return undefined;
  const meta = JSON.parse(readFileSync(metaFile, 'utf8')) as EtcdSnapshotResult;
  return { ...meta, localPath, sizeBytes: statSync(localPath).size, sha256: recorded };
}

async function snapshotStatus(access: ClusterAccess, node: string, remotePath: string, signal?: AbortSignal): Promise<SnapshotStatus> {
  const opts = { timeoutMs: READ_MS, sudo: true, signal };
  let r = await access.shell.exec(node, ['etcdutl', 'snapshot', 'status', remotePath, '-w', 'json'], opts);
  if (r.exitCode === 127) {
    // No etcdutl (etcd < 3.5 hosts): etcdctl still had `snapshot status` then.
    r = await access.shell.exec(node, ['etcdctl', 'snapshot', 'status', remotePath, '-w', 'json'], { ...opts, env: { ETCDCTL_API: '3' } });
  }
  const status = r.exitCode === 0 ? parseSnapshotStatus(r.stdout) : undefined;
  if (!status)
    throw verificationFailed(
      `snapshot status of ${remotePath} on ${node} failed (exit ${r.exitCode}): ${(r.stderr || r.stdout).trim().split('\n').at(-1) ?? ''}`,
    );
  if (status.totalKeys === 0) throw verificationFailed(`snapshot ${remotePath} on ${node} holds no keys`);
  return status;
}

export async function snapshotEtcd(access: ClusterAccess, input: { node: string; hop: string }): Promise<EtcdSnapshotResult> {
  const node = checkNode(input.node);
  if (typeof input.hop !== 'string' || !HOP.test(input.hop))
    throw invalid(`invalid hop ${shown(input.hop, 40)}: letters, digits, '.', '_', '-'`);
  const { config } = access;
  const name = `etcd-${config.name}-${input.hop}.db`;
  const remotePath = posix.join(config.etcd.remoteDir, name);
  const localPath = join(config.snapshots.dir, name);
  const done = await verifiedLocal(localPath);
  if (done) return done;

  const scope = hostActivityScope();
  const { signal } = scope;
  const root = { sudo: true, signal };
  await run(access, node, ['mkdir', '-p', config.etcd.remoteDir], { ...root, timeoutMs: READ_MS });
  await heartbeatWhile(
    scope,
    () => ({ node, step: 'etcdctl snapshot save', remotePath }),
    run(
      access,
      node,
      [
        'etcdctl',
        `--endpoints=${config.etcd.endpoint}`,
        `--cacert=${config.etcd.caCert}`,
        `--cert=${config.etcd.cert}`,
        `--key=${config.etcd.key}`,
        'snapshot',
        'save',
        remotePath,
      ],
      { ...root, env: { ETCDCTL_API: '3' }, timeoutMs: SAVE_MS },
    ),
  );
  const status = await snapshotStatus(access, node, remotePath, signal);
  const remoteSum = /^([0-9a-f]{64})\s/.exec(
    (await run(access, node, ['sha256sum', remotePath], { ...root, timeoutMs: READ_MS })).stdout,
  )?.[1];
  if (!remoteSum) throw verificationFailed(`sha256sum of ${remotePath} on ${node} printed no hash`);

  // etcdctl run through sudo wrote the file as root, mode 0600: hand it to the SSH user, who copies it
  // with SFTP (still 0600, so no one else can read the cluster's secrets). A no-op for a root login.
  await run(access, node, ['chown', config.ssh.user, remotePath], { ...root, timeoutMs: READ_MS });
  // Stale metadata from a copy that no longer verifies goes first, so nothing half-old is ever trusted.
  for (const f of [`${localPath}.sha256`, `${localPath}.json`]) rmSync(f, { force: true });
  await heartbeatWhile(
    scope,
    () => ({ node, step: 'copying snapshot', remotePath }),
    access.shell.download(node, remotePath, localPath, { timeoutMs: COPY_MS, signal }),
  );
  const sha256 = await sha256File(localPath);
  if (sha256 !== remoteSum) {
    rmSync(localPath, { force: true });
    throw verificationFailed(`copy of ${remotePath} from ${node} hashes to ${sha256}, the host's file to ${remoteSum}`);
  }
  const result: EtcdSnapshotResult = {
    remotePath,
    localPath,
    sizeBytes: statSync(localPath).size,
    sha256,
    revision: status.revision,
    totalKeys: status.totalKeys,
  };
  writeFileSync(`${localPath}.json`, `${JSON.stringify(result, null, 2)}\n`);
  // The checksum file is written last and atomically: its presence means "verified".
  writeFileSync(`${localPath}.sha256.tmp`, `${sha256}  ${name}\n`);
  renameSync(`${localPath}.sha256.tmp`, `${localPath}.sha256`);
  return result;
}

export function createEtcdActivities(deps: { clusters: ClusterResolver }) {
  return {
    /** Snapshot etcd on `node` for `hop`, verify it, copy it off; returns the recorded copy when it is already there. */
    snapshotEtcd: async (input: { cluster: string; node: string; hop: string }) => snapshotEtcd(deps.clusters(input.cluster), input),
  };
}

export type EtcdActivities = ReturnType<typeof createEtcdActivities>;
