import { hostname, userInfo } from 'node:os';
import { isDnsLabel } from '../rules/input-shapes.js';
import type { Client, Connection } from '@temporalio/client';
import { isClientError, loadTemporalClient } from './temporal-sdk.js';
import {
  CONNECTION_FLAGS,
  connectionOptions,
  connectionSettings,
  redactSecrets,
  UnreachableError,
  type ConnectionFlags,
} from '../worker/config.js';
import { payloadCodec } from '../worker/payload-codec.js';
import { ROLLOUT_KINDS, rolloutWorkflowId, type RolloutKind } from '../contracts/workflow-ids.js';
import { registerSecret, UsageError } from './cli-support.js';

export { UnreachableError };
export type { RolloutKind };

/** The flags of every command that talks to Temporal (see CONNECTION_HELP). */
export const TEMPORAL_OPTIONS = CONNECTION_FLAGS;

/**
 * A client from the connection flags, else the TEMPORAL_* variables, like the temporal CLI. The
 * TLS files and the payload key file are read before connecting; a bad one is a usage error (exit 2),
 * and a server that does not answer within 5 s is exit 3. Messages never carry the API key. Payloads
 * are encrypted and decrypted with the key file's keys, if one is given (docs/security.md).
 * The client's identity is the operator (`by`, else user@host): Temporal records it on every start,
 * signal and update, so the UI's identity field says who, not the CLI's process id.
 */
export async function connectClient(values: ConnectionFlags, by?: string): Promise<{ client: Client; close: () => Promise<void> }> {
  const settings = connectionSettings(values);
  if (settings.apiKey) registerSecret(settings.apiKey);
  const options = connectionOptions(settings);
  const codec = payloadCodec(settings);
  const { Client, Connection } = await loadTemporalClient();
  let connection: Connection;
  try {
    connection = await Connection.connect({ ...options, connectTimeout: 5000 });
  } catch (err) {
    const reason = redactSecrets((err as Error).message.split('\n')[0] ?? '', settings);
    throw new UnreachableError(`cannot reach Temporal at ${settings.address}: ${reason}`);
  }
  const identity = operatorIdentity(by);
  return {
    client: new Client({ connection, namespace: settings.namespace, identity, dataConverter: { payloadCodecs: [codec] } }),
    close: () => connection.close(),
  };
}

/** Who acts: the --by of the command, else the login name and host (`dana@laptop`). */
export function operatorIdentity(by: string | undefined): string {
  if (by) return by;
  let user = process.env.USER;
  try {
    user ||= userInfo().username;
  } catch {
    // no passwd entry (a container's arbitrary uid): the host alone still says where
  }
  return `${user || 'unknown'}@${hostname()}`;
}

export function clusterName(value: string | undefined, flag = 'NAME'): string {
  if (!value) throw new UsageError(`${flag} (the cluster) is required`);
  if (!isDnsLabel(value)) throw new UsageError(`invalid cluster name ${JSON.stringify(value)}: a DNS label`);
  return value;
}

/** What each rollout is called in a refusal, and how the operator follows it. */
const ROLLOUT_NOUNS: Record<RolloutKind, { noun: string; follow: (cluster: string) => string }> = {
  upgrade: { noun: 'an upgrade', follow: (c) => `skewless watch ${c}` },
  maintain: { noun: 'an OS maintenance', follow: (c) => `skewless watch ${c} --workflow maintain` },
  restore: { noun: 'an etcd restore', follow: (c) => `skewless restore --cluster ${c} --watch` },
  bluegreen: { noun: 'a blue/green pool replacement', follow: (c) => `skewless watch ${c} --workflow bluegreen` },
};

/**
 * Refuses (exit 2, before the start) while another rollout of the cluster runs: they would cordon
 * and restart the same nodes under two plans. The workflows check it too (findRunningRollout);
 * this is the operator's answer without a started-and-failed run.
 */
export async function refuseWhileAnotherRolloutRuns(
  client: Client,
  cluster: string,
  self: RolloutKind | undefined,
  verb: string,
): Promise<void> {
  for (const kind of ROLLOUT_KINDS) {
    if (kind === self) continue;
    const id = rolloutWorkflowId(kind, cluster);
    const running = await client.workflow
      .getHandle(id)
      .describe()
      .then(
        (d) => d.status.name === 'RUNNING',
        (err: unknown) => {
          if (isClientError(err, 'WorkflowNotFoundError')) return false;
          throw err;
        },
      );
    if (running)
      throw new UsageError(
        `${ROLLOUT_NOUNS[kind].noun} of ${cluster} is running (${id}); ${verb} once it ends: "${ROLLOUT_NOUNS[kind].follow(cluster)}"`,
      );
  }
}

/**
 * The runs the operator controls take (`--workflow`): the upgrade, OS maintenance, the etcd restore and
 * the blue/green replacement of a pool (contracts/workflow-ids.ts ROLLOUT_KINDS). The restore has its own
 * status (restoreStatus) and nothing to resolve or watch node by node.
 */
const ALL_KINDS: readonly RolloutKind[] = ROLLOUT_KINDS;
/** The rollouts of nodes (status query, resolve, node workflows): what watch, history and resolve take. */
export const NODE_ROLLOUTS: readonly RolloutKind[] = ['upgrade', 'maintain', 'bluegreen'];

/** `--workflow KIND` (one of `kinds`), checked before Temporal is contacted. */
export function rolloutKind(value: string | undefined, kinds: readonly RolloutKind[] = ALL_KINDS): RolloutKind | undefined {
  if (value === undefined) return undefined;
  if (!(kinds as readonly string[]).includes(value)) {
    const names = `${kinds.slice(0, -1).join(', ')} or ${kinds[kinds.length - 1] ?? ''}`;
    throw new UsageError(`--workflow must be ${names}, got ${JSON.stringify(value)}`);
  }
  return value as RolloutKind;
}

/**
 * Which of the cluster's runs a control (status, watch, approve, resolve, pause, resume, abort)
 * means: the one named with --workflow; else, among `kinds`, the one running (in `kinds` order);
 * else the one started last; else the upgrade (whose "not found" the caller reports).
 */
export async function chooseRollout(
  client: Client,
  cluster: string,
  kind: RolloutKind | undefined,
  kinds: readonly RolloutKind[] = ALL_KINDS,
): Promise<{ kind: RolloutKind; workflowId: string }> {
  if (kind) return { kind, workflowId: rolloutWorkflowId(kind, cluster) };
  const found: { kind: RolloutKind; running: boolean; start: number }[] = [];
  for (const k of kinds) {
    try {
      const d = await client.workflow.getHandle(rolloutWorkflowId(k, cluster)).describe();
      found.push({ kind: k, running: d.status.name === 'RUNNING', start: d.startTime.getTime() });
    } catch (err) {
      if (!isClientError(err, 'WorkflowNotFoundError')) throw err;
    }
  }
  const pick = found.find((f) => f.running) ?? [...found].sort((a, b) => b.start - a.start)[0];
  const chosen = pick?.kind ?? 'upgrade';
  return { kind: chosen, workflowId: rolloutWorkflowId(chosen, cluster) };
}
