// Restarting the kubelet and rebooting a node, each followed by a heartbeated wait until the Node is
// Ready (at the expected kubelet version); NodeNotReady when the wait runs out.
import type { V1Node } from '@kubernetes/client-node';
import { ApplicationFailure } from '@temporalio/activity';
import { FieldError, FieldPath, integer } from '../rules/index.js';
import type { ClusterAccess } from './cluster-access.js';
import { REBOOT_COMMANDS } from './cluster-config.js';
import { ErrorType } from './errors.js';
import { SETTING_LIMITS } from '../contracts/time-limits.js';
import { hostActivityScope, type HostActivityScope } from './host-activity-context.js';
import { pollUntil } from '../tooling/poll-until.js';
import { checkNode, checkVersion, invalid, nodeStateOf, readNodeState, run, type NodeState } from './host-commands.js';
import { nodeCollection } from './health-watches.js';
import { watchUntilHealthy } from './watch-until.js';

/** Quick host commands (kubelet --version, systemctl, reboot): the cluster configuration's timeouts.commandSeconds. */
const quickMs = (access: ClusterAccess): number => access.config.timeouts.commandSeconds * 1000;
const BOOT_ID = '/proc/sys/kernel/random/boot_id';

/** The wait's timeout, within what the policy allows (contracts/time-limits.ts): the activity reports its own timeout. */
function checkTimeout(seconds: unknown, setting: 'kubeletTimeoutSeconds' | 'rebootTimeoutSeconds'): number {
  try {
    return integer({ min: 1, max: SETTING_LIMITS[setting].max })(seconds, FieldPath.root('timeoutSeconds'));
  } catch (err) {
    throw err instanceof FieldError ? invalid(err.message) : err;
  }
}

/**
 * Waits for the Node until `done`, heartbeating what it sees (merged into the activity's own progress, which
 * a retry resumes from); NodeNotReady at the deadline. A read, then a watch of the Node (watch-until.ts):
 * it is often Ready within a second or two of a restart, and the event says so at once, where a poll
 * looked every 0.2-1 s.
 */
async function waitForNode(
  access: ClusterAccess,
  scope: HostActivityScope,
  node: string,
  timeoutSeconds: number,
  want: string,
  done: (s: NodeState) => boolean,
  phase: object = {},
): Promise<NodeState> {
  const state = await watchUntilHealthy({
    what: `${node} ${want}`,
    cluster: access.config.name,
    waitSeconds: timeoutSeconds,
    kube: access.kube.watch,
    collections: [nodeCollection(access.kube, node)],
    judge: ([nodes]) => {
      const s = nodeStateOf(nodes?.[0] as V1Node | undefined);
      return { ...s, healthy: done(s) };
    },
    beat: (details) => scope.heartbeat({ ...phase, node, waitingFor: want, ...details }),
  });
  if (!state.healthy)
    throw ApplicationFailure.create({
      type: ErrorType.NodeNotReady,
      nonRetryable: true,
      message: `${node} was not ${want} within ${timeoutSeconds} s (Ready: ${state.ready}, kubelet ${state.kubeletVersion ?? 'unknown'})`,
    });
  return { ready: state.ready, ...(state.kubeletVersion ? { kubeletVersion: state.kubeletVersion } : {}) };
}

export interface RestartKubeletResult {
  node: string;
  version: string;
  /** False when the node already ran the version, Ready, and nothing was restarted. */
  restarted: boolean;
}

export async function restartKubelet(
  access: ClusterAccess,
  input: { node: string; version: string; timeoutSeconds: number },
): Promise<RestartKubeletResult> {
  const node = checkNode(input.node);
  const version = checkVersion(input.version);
  const timeoutSeconds = checkTimeout(input.timeoutSeconds, 'kubeletTimeoutSeconds');
  const scope = hostActivityScope();
  const target = (s: NodeState): boolean => s.ready && s.kubeletVersion === version;
  if (target(await readNodeState(access, node))) return { node, version, restarted: false };
  // Restarting cannot help if the package is not there yet: say so instead of timing out.
  const binary = (await run(access, node, ['kubelet', '--version'], { timeoutMs: quickMs(access), signal: scope.signal })).stdout.trim();
  if (binary !== `Kubernetes v${version}`)
    throw invalid(`${node} has ${binary || 'no kubelet'} installed, not v${version}: install the kubelet package first`);
  const root = { timeoutMs: quickMs(access), sudo: true, signal: scope.signal };
  await run(access, node, ['systemctl', 'daemon-reload'], root);
  await run(access, node, ['systemctl', 'restart', 'kubelet'], root);
  await waitForNode(access, scope, node, timeoutSeconds, `Ready at kubelet v${version}`, target);
  return { node, version, restarted: true };
}

/** What a reboot attempt heartbeats, so a retry after the command went out waits instead of rebooting again. */
interface RebootProgress {
  phase: 'reboot-issued';
  bootId: string | null;
  /** Without a boot id: the host was seen going down, so the next Ready is the rebooted one. */
  seenDown?: boolean;
}

const isProgress = (d: unknown): d is RebootProgress => (d as RebootProgress | undefined)?.phase === 'reboot-issued';

async function bootId(access: ClusterAccess, node: string, signal?: AbortSignal): Promise<string | null> {
  const r = await access.shell.exec(node, ['cat', BOOT_ID], { timeoutMs: quickMs(access), signal });
  return r.exitCode === 0 && r.stdout.trim() ? r.stdout.trim() : null;
}

async function wentAway(access: ClusterAccess, node: string, signal?: AbortSignal): Promise<boolean> {
  if (!(await readNodeState(access, node)).ready) return true;
  try {
    await access.shell.exec(node, ['true'], { timeoutMs: 10_000, signal });
    return false;
  } catch (err) {
    if ((err as ApplicationFailure).type === ErrorType.HostUnreachable) return true;
    throw err;
  }
}

export interface RebootNodeResult {
  node: string;
  /** Whether the boot id changed (null: the host has no boot id to compare, see bootIdKnown). */
  bootIdChanged: boolean | null;
}

/**
 * Reboots and waits for SSH and Ready. A retry of an attempt that already sent the command (heartbeat
 * details) only waits. With a boot id the wait is for a new one; without (a host with no /proc boot_id),
 * it waits to see the host go away (SSH refused or the Node NotReady) before waiting for it to return.
 */
export async function rebootNode(
  access: ClusterAccess,
  input: { node: string; command?: string[]; timeoutSeconds: number },
): Promise<RebootNodeResult> {
  const node = checkNode(input.node);
  const timeoutSeconds = checkTimeout(input.timeoutSeconds, 'rebootTimeoutSeconds');
  const command = input.command ?? access.config.maintenance?.rebootCommand ?? ['reboot'];
  // Runs as root from a workflow input: only the reboot forms, never an arbitrary command.
  if (
    !Array.isArray(command) ||
    !REBOOT_COMMANDS.some((allowed) => allowed.length === command.length && allowed.every((w, i) => w === command[i]))
  ) {
    throw invalid(`command must be one of ${REBOOT_COMMANDS.map((c) => `[${c.join(' ')}]`).join(', ')}`);
  }
  const scope = hostActivityScope();
  const deadline = Date.now() + timeoutSeconds * 1000;
  let progress: RebootProgress;
  if (isProgress(scope.previousDetails)) progress = scope.previousDetails;
  else {
    progress = { phase: 'reboot-issued', bootId: await bootId(access, node, scope.signal) };
    // Heartbeat before sending: if the worker dies right after, the retry must not reboot twice.
    scope.heartbeat(progress);
    const r = await access.shell
      .exec(node, command, { timeoutMs: quickMs(access), sudo: true, signal: scope.signal })
      .catch((err: unknown) => {
        // The connection drops as the host goes down: that is the command working.
        if ((err as ApplicationFailure).type === ErrorType.HostUnreachable) return undefined;
        throw err;
      });
    if (r && r.exitCode !== 0)
      throw invalid(`'${command.join(' ')}' on ${node} exited ${r.exitCode}: ${r.stderr.trim().split('\n').at(-1) ?? ''}`);
  }
  const left = (): number => Math.max(1, Math.round((deadline - Date.now()) / 1000));
  if (progress.bootId === null && !progress.seenDown) {
    // A quick reboot may never show NotReady (the node controller waits ~40 s): a refused SSH counts too.
    const waiting = { ...progress, waitingFor: 'the host to go down' };
    await pollUntil(
      () => wentAway(access, node, scope.signal),
      (away) => away,
      () => {
        throw ApplicationFailure.create({
          type: ErrorType.NodeNotReady,
          nonRetryable: true,
          message: `${node} was never seen going down within ${timeoutSeconds} s of '${command.join(' ')}'`,
        });
      },
      { timeoutMs: deadline - Date.now(), intervalMs: 1000, signal: scope.signal, onPending: () => scope.heartbeat(waiting) },
    );
    progress = { ...progress, seenDown: true };
    scope.heartbeat(progress);
  }
  const before = progress.bootId;
  const backOverSsh = (): Promise<boolean> =>
    bootId(access, node, scope.signal).then(
      (now) => before === null || (now !== null && now !== before),
      (err: unknown) => {
        if ((err as ApplicationFailure).type !== ErrorType.HostUnreachable) throw err;
        return false; // still down
      },
    );
  const sshWait = { ...progress, waitingFor: 'SSH after reboot' };
  await pollUntil(
    backOverSsh,
    (back) => back,
    () => {
      throw ApplicationFailure.create({
        type: ErrorType.NodeNotReady,
        nonRetryable: true,
        message: `${node} did not come back over SSH within ${timeoutSeconds} s of the reboot`,
      });
    },
    { timeoutMs: deadline - Date.now(), intervalMs: 1000, signal: scope.signal, onPending: () => scope.heartbeat(sshWait) },
  );
  await waitForNode(access, scope, node, left(), 'Ready after the reboot', (s) => s.ready, progress);
  return { node, bootIdChanged: before === null ? null : true };
}
