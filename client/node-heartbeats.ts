import type { Client } from '@temporalio/client';
import type { NodeState } from '../workflows/rollout-messages.js';

/** How long `status` waits for one node workflow's description. */
const DESCRIBE_WAIT_MS = 2_000;

export interface Heartbeat {
  activity: string;
  details: Record<string, unknown>;
}

/**
 * The last heartbeat of each activity a node workflow is running, from its description (pending activities)
 * opened with the client's codecs: not a query, so reading it costs the worker nothing. Empty when the
 * workflow cannot be described in time; what the heartbeats say is extra, the node's phase is shown either way.
 */
async function lastHeartbeats(client: Client, nodeWorkflowId: string): Promise<Heartbeat[]> {
  try {
    const d = await client.withDeadline(Date.now() + DESCRIBE_WAIT_MS, () => client.workflow.getHandle(nodeWorkflowId).describe());
    const { payloadCodecs, payloadConverter } = client.options.loadedDataConverter;
    const beats: Heartbeat[] = [];
    for (const a of d.raw.pendingActivities ?? []) {
      let payloads = a.heartbeatDetails?.payloads ?? [];
      if (payloads.length === 0) continue;
      for (const codec of [...payloadCodecs].reverse()) payloads = await codec.decode(payloads);
      const details = payloadConverter.fromPayload(payloads[0] as Parameters<typeof payloadConverter.fromPayload>[0]);
      if (details && typeof details === 'object')
        beats.push({ activity: a.activityType?.name ?? 'activity', details: details as Record<string, unknown> });
    }
    return beats;
  } catch {
    return []; // deliberate: see above
  }
}

/** The last heartbeats of a node workflow's activities, by its workflow id. */
export type HeartbeatReader = (nodeWorkflowId: string) => Promise<Heartbeat[]>;

/** One description per node workflow, however many notes one `status` reads from it (throttling, drain round). */
export function heartbeatReader(client: Client): HeartbeatReader {
  const read = new Map<string, Promise<Heartbeat[]>>();
  return (id) => {
    let beats = read.get(id);
    if (!beats) read.set(id, (beats = lastHeartbeats(client, id)));
    return beats;
  };
}

const readerOf = (from: Client | HeartbeatReader): HeartbeatReader =>
  typeof from === 'function' ? from : (id) => lastHeartbeats(from, id);

/**
 * What a node's running activity says about the API server in its last heartbeat: throttled by Priority
 * and Fairness (with Retry-After), or away (restarting). Undefined when there is nothing to say.
 */
export async function apiNoteOf(from: Client | HeartbeatReader, nodeWorkflowId: string): Promise<string | undefined> {
  for (const { activity, details } of await readerOf(from)(nodeWorkflowId)) {
    if (typeof details.apiError !== 'string') continue;
    const throttled = typeof details.throttled === 'number' ? ` (${details.throttled} request(s) throttled this attempt)` : '';
    return `${activity}: ${details.apiError}${throttled}`;
  }
  return undefined;
}

/**
 * The round a node's drain is in (drainRules orders), from its running drainNode's last heartbeat
 * (activities/drain.ts DrainProgress); undefined when it drains in one round or does not say.
 */
export async function drainRoundOf(from: Client | HeartbeatReader, nodeWorkflowId: string): Promise<NodeState['drainRound']> {
  const drain = (await readerOf(from)(nodeWorkflowId)).find((b) => b.activity === 'drainNode');
  const r = drain?.details.round as NodeState['drainRound'];
  return r && typeof r.index === 'number' && typeof r.of === 'number' && typeof r.order === 'number' ? r : undefined;
}
