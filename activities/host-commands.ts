// Shared by the host activities: input checks, running a command whose failure is a typed
// HostCommandFailed (exit code and a short stderr tail in details), and reading a Node's state.
import type { V1Node } from '@kubernetes/client-node';
import { ApplicationFailure } from '@temporalio/activity';
import { isNodeName } from '../rules/index.js';
import { parseVersion } from '../rules/index.js';
import type { ClusterAccess, ExecOptions, ExecResult } from './cluster-access.js';
import { ErrorType, kubeCall } from './errors.js';
import { heartbeatWhile, hostActivityScope, type HostActivityScope } from './host-activity-context.js';
import { pollUntil } from '../tooling/poll-until.js';
import { isTransientFailure } from './host-transient.js';
import { maskUrlCredentials } from './parsers/kubernetes-repository.js';

export const invalid = (message: string): ApplicationFailure =>
  ApplicationFailure.create({ type: ErrorType.Invalid, message, nonRetryable: true });

/**
 * An input value for an error message: a string quoted and cut, anything else by its kind. Never
 * String(value): an object from JSON input such as {"toString":1} makes that throw a TypeError.
 */
export function shown(value: unknown, max = 80): string {
  if (typeof value === 'string') return JSON.stringify(value.slice(0, max));
  return value === null ? 'null' : Array.isArray(value) ? 'a list' : `a ${typeof value}`;
}

/** A node name fit for an API path and a log line. */
export function checkNode(node: unknown): string {
  if (!isNodeName(node)) throw invalid(`invalid node name ${shown(node)}`);
  return node;
}

/** `1.33.7` / `v1.33.7` → `1.33.7`, through the rules' parser (its charset is safe on a command line). */
export function checkVersion(version: unknown): string {
  try {
    return parseVersion(version).text;
  } catch (err) {
    throw invalid((err as Error).message);
  }
}

/** The last lines of stderr, bounded: enough to see why, never a whole log. */
export function stderrTail(stderr: string, lines = 8, chars = 800): string {
  const tail = stderr.trimEnd().split('\n').slice(-lines).join('\n');
  return tail.length > chars ? `…${tail.slice(-chars)}` : tail;
}

/** kubeadm (cobra) ends every error with this hint: the line before it is the tool's own reason. */
const STACK_TRACE_HINT = /^To see the stack trace of this error execute with --v=5 or higher$/;

/** The last line of `tail` that says something (not a tool's generic hint), for a one-line message. */
export function reasonLine(tail: string): string | undefined {
  return tail
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l !== '' && !STACK_TRACE_HINT.test(l))
    .at(-1);
}

/** HostCommandFailed (not retried: the operator decides), or HostCommandTransient when the output names a passing cause. */
export function commandFailed(node: string, argv: readonly string[], result: ExecResult, what?: string): ApplicationFailure {
  // A mirror's URL may carry a user and password (apt and dnf print URLs in their errors): never into history.
  const tail = maskUrlCredentials(stderrTail(result.stderr || result.stdout));
  const transient = isTransientFailure(argv, result);
  return ApplicationFailure.create({
    type: transient ? ErrorType.HostCommandTransient : ErrorType.HostCommandFailed,
    nonRetryable: !transient,
    message: `${what ?? `'${maskUrlCredentials(argv.join(' '))}'`} on ${node} exited ${result.exitCode}${reasonLine(tail) ? `: ${reasonLine(tail)}` : ''}`,
    details: [{ node, command: maskUrlCredentials(argv.join(' ')), exitCode: result.exitCode, stderrTail: tail }],
  });
}

/**
 * Runs argv; a non-zero exit is a HostCommandFailed. Heartbeats while it runs: a quick command can
 * still take a connect timeout and more, and a silent activity looks like a dead worker to Temporal.
 */
export async function run(
  access: ClusterAccess,
  node: string,
  argv: readonly string[],
  options: ExecOptions,
  what?: string,
): Promise<ExecResult> {
  const result = await heartbeatWhile(
    hostActivityScope(),
    () => ({ node, running: argv.slice(0, 3).join(' ') }),
    access.shell.exec(node, argv, options),
  );
  if (result.exitCode !== 0) throw commandFailed(node, argv, result, what);
  return result;
}

export interface NodeState {
  ready: boolean;
  /** `1.33.7` (without the `v`), or undefined. */
  kubeletVersion?: string;
}

export async function readNodeState(access: ClusterAccess, node: string): Promise<NodeState> {
  return nodeStateOf(await kubeCall(`read node ${node}`, () => access.kube.core.readNode({ name: node })));
}

/** A Node object's Ready and kubelet version (a read's or a watch event's). */
export function nodeStateOf(n: V1Node | undefined): NodeState {
  const ready = n?.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? false;
  const kubelet = n?.status?.nodeInfo?.kubeletVersion?.replace(/^v/, '');
  return { ready, ...(kubelet ? { kubeletVersion: kubelet } : {}) };
}

/** Control-plane component versions on `node`, from its mirror pods' image tags (`kube-apiserver` → `1.33.7`). */
export async function controlPlaneVersions(access: ClusterAccess, node: string): Promise<Record<string, string>> {
  const { items } = await kubeCall(`list control-plane pods on ${node}`, () =>
    access.kube.core.listNamespacedPod({
      namespace: 'kube-system',
      labelSelector: 'tier=control-plane',
      fieldSelector: `spec.nodeName=${node}`,
    }),
  );
  const out: Record<string, string> = {};
  for (const pod of items) {
    const component = pod.metadata?.labels?.component;
    const tag = pod.spec?.containers[0]?.image?.split(':').at(-1);
    if (component && component !== 'etcd' && tag?.startsWith('v')) out[component] = tag.slice(1);
  }
  return out;
}

/** The cluster version kubeadm recorded (kube-system/kubeadm-config, `kubernetesVersion`), `1.33.7`. */
export async function clusterVersion(access: ClusterAccess): Promise<string | undefined> {
  const cm = await kubeCall('read kube-system/kubeadm-config', () =>
    access.kube.core.readNamespacedConfigMap({ name: 'kubeadm-config', namespace: 'kube-system' }),
  );
  return /^kubernetesVersion:\s*v?(\S+)\s*$/m.exec(cm.data?.ClusterConfiguration ?? '')?.[1];
}

const QUIET_POLL_MS = 2_000;

/**
 * Waits until no process named one of `programs` runs on the node. A command whose worker died can
 * outlive its SSH session (no terminal, so no SIGHUP) and still be at work when Temporal hands the
 * activity to another worker; a retry that looked before it ended would do the same work a second
 * time beside it (two `kubeadm upgrade apply`, an install of what is being installed). Without
 * pgrep on the host (exit 127) there is nothing to wait for that can be seen. Resolves true when it
 * had to wait: what the caller read before is stale then.
 */
export async function awaitQuietHost(
  access: ClusterAccess,
  node: string,
  programs: readonly string[],
  timeoutMs: number,
  scope: HostActivityScope,
): Promise<boolean> {
  const argv = ['pgrep', '-a', '-x', programs.join('|')];
  /** The earlier commands still running: none once pgrep finds nothing (or is not there to look). */
  const stillRunning = async (): Promise<string[]> => {
    const r = await heartbeatWhile(
      scope,
      () => ({ node, looking: "for an earlier attempt's command still running" }),
      access.shell.exec(node, argv, { timeoutMs: access.config.timeouts.commandSeconds * 1000, signal: scope.signal }),
    );
    if (r.exitCode === 1 || r.exitCode === 127) return [];
    if (r.exitCode !== 0) throw commandFailed(node, argv, r);
    return r.stdout
      .trim()
      .split('\n')
      .map((l) => l.replace(/^\d+\s+/, ''))
      .slice(0, 3);
  };
  let waited = false;
  await pollUntil(
    stillRunning,
    (running) => running.length === 0,
    (running) => {
      throw ApplicationFailure.create({
        type: ErrorType.HostCommandTimedOut,
        message: `${node} still runs ${running.map((c) => `'${c}'`).join(', ')} after ${Math.round(timeoutMs / 1000)} s; not starting another beside it`,
      });
    },
    {
      timeoutMs,
      intervalMs: QUIET_POLL_MS,
      signal: scope.signal,
      onPending: (running) => {
        waited = true;
        scope.heartbeat({ node, waitingFor: running });
      },
    },
  );
  return waited;
}
