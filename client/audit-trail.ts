import { defaultPayloadConverter } from '@temporalio/common';
import type { temporal } from '@temporalio/proto';

type HistoryEvent = temporal.api.history.v1.IHistoryEvent;
type Payload = temporal.api.common.v1.IPayload;

/** One run of a workflow, as fetched (or loaded from a saved history). */
export interface RunHistory {
  workflowId: string;
  runId: string;
  events: HistoryEvent[];
}

export type StepOutcome = 'completed' | 'failed' | 'timed out' | 'canceled' | 'running';

/** One line of the audit trail. Only named fields are ever taken from payloads. */
export type TrailEntry = { time: string } & (
  | {
      kind: 'started';
      workflowId: string;
      to?: string;
      continued: boolean;
      /** Findings and PDBs the operator let go at the start (policy.acknowledge), by whom and why. */
      acknowledged?: { names: string[]; by?: string; reason?: string; reasons?: Record<string, string> };
    }
  | {
      kind: 'step';
      node?: string;
      activity: string;
      summary?: string;
      version?: string;
      outcome: StepOutcome;
      message?: string;
      retries: number;
      durationMs?: number;
      /** What a completed step found instead of doing its work (a node cordoned by someone else, left so). */
      note?: string;
    }
  | { kind: 'snapshot'; node?: string; path?: string; sha256?: string; revision?: number }
  | { kind: 'approval'; gate?: string; by?: string; comment?: string; failed?: string }
  | {
      kind: 'resolution';
      node?: string;
      action?: string;
      by?: string;
      pods?: string[];
      comment?: string;
      failed?: string;
      of?: 'drain' | 'step' | 'halt';
      step?: string;
    }
  | { kind: 'signal'; signal: 'pause' | 'resume' | 'abort'; by?: string; reason?: string }
  | { kind: 'blocked'; node?: string; message?: string; step?: string; failure?: string }
  | { kind: 'node'; node?: string; step?: string; version?: string; outcome: string; message?: string; durationMs?: number }
  | { kind: 'closed'; workflowId: string; status: string; outcome?: string; message?: string }
);

/** The start's acknowledgements (an upgrade's policy.acknowledge and acknowledgedBy), names only. */
function acknowledgedIn(
  input: Record<string, unknown>,
): { names: string[]; by?: string; reason?: string; reasons?: Record<string, string> } | undefined {
  const policy = record(input.policy);
  const names = Array.isArray(policy.acknowledge) ? policy.acknowledge.filter((n): n is string => typeof n === 'string') : [];
  if (names.length === 0) return undefined;
  const who = record(input.acknowledgedBy);
  // An acknowledgement's own reason (--reason NAME=TEXT), for the names acknowledged only.
  const own = Object.fromEntries(
    names.flatMap((n) => {
      const why = str(record(who.reasons)[n]);
      return why ? [[n, why]] : [];
    }),
  );
  return compact({ names, by: str(who.by), reason: str(who.reason), reasons: Object.keys(own).length > 0 ? own : undefined });
}

/** Decodes a JSON payload; anything else (an encrypted or binary payload) is left alone. */
function decode(payload: Payload | null | undefined): Record<string, unknown> | string | undefined {
  if (!payload) return undefined;
  try {
    const value = defaultPayloadConverter.fromPayload<unknown>(payload as never);
    return typeof value === 'string' || (typeof value === 'object' && value !== null)
      ? (value as Record<string, unknown> | string)
      : undefined;
  } catch {
    return undefined;
  }
}

export const record = (v: unknown): Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Record<string, unknown>) : {};
/** A string field, one line and bounded: free text from operators or tools is never shown raw. */
export const str = (v: unknown, max = 200): string | undefined => {
  if (typeof v !== 'string' || v === '') return undefined;
  const line = v.replace(/\s*\n\s*/g, ' ').trim();
  return line.length > max ? `${line.slice(0, max - 1)}…` : line;
};
const num = (v: unknown): number | undefined => (typeof v === 'number' && Number.isFinite(v) ? v : undefined);
const strings = (v: unknown): string[] | undefined =>
  Array.isArray(v) ? v.map((x) => str(x, 120)).filter((x): x is string => x !== undefined) : undefined;
export const firstArg = (payloads: { payloads?: Payload[] | null } | null | undefined) => decode(payloads?.payloads?.[0]);
/** Milliseconds of a proto Timestamp, whose seconds are a Long when fetched and a number or string when loaded from JSON. */
export const tsToMs = (ts: HistoryEvent['eventTime']): number =>
  Number(String(ts?.seconds ?? 0)) * 1000 + Math.floor((ts?.nanos ?? 0) / 1e6);
const iso = (e: HistoryEvent) => new Date(tsToMs(e.eventTime)).toISOString();
const failureMessage = (f: { message?: string | null } | null | undefined) => str(f?.message ?? undefined, 300);
const compact = <T extends object>(o: T): T => Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as T;

/**
 * A cordon step that left the node as it found it says so: "completed" would read as if the node had
 * been uncordoned (activities/node-activities.ts: CordonResult, UncordonResult).
 */
function cordonNote(activity: string, r: Record<string, unknown>): string | undefined {
  const by = str(r.cordonedBy, 120);
  if (activity === 'uncordonNode' && r.uncordoned === false) {
    return r.notFound === true ? 'nothing to uncordon: node not found' : `left cordoned: cordoned by ${by ?? 'someone else'}`;
  }
  if (activity === 'cordonNode' && r.ownedByUs === false) return `already cordoned by ${by ?? 'someone else'}: left to them`;
  return undefined;
}

type BlockOf = Map<string, { of: 'drain' | 'step'; step?: string }>;
type ScheduledAttributes = NonNullable<HistoryEvent['activityTaskScheduledEventAttributes']>;

function startedEntry(time: string, workflowId: string, input: Record<string, unknown>, continued: boolean): TrailEntry {
  return compact({ time, kind: 'started' as const, workflowId, to: str(input.to), continued, acknowledged: acknowledgedIn(input) });
}

/** A step as scheduled: its node (the activity's, else the node workflow's), activity, summary and version; running until it closes. */
function stepEntry(e: HistoryEvent, a: ScheduledAttributes, runNode: string | undefined): Extract<TrailEntry, { kind: 'step' }> {
  const args = record(firstArg(a.input));
  const summary = decode(e.userMetadata?.summary);
  return compact({
    time: iso(e),
    kind: 'step' as const,
    node: str(args.node) ?? runNode,
    activity: a.activityType?.name ?? '?',
    summary: typeof summary === 'string' ? str(summary) : undefined,
    version: str(args.version) ?? str(args.hop),
    outcome: 'running' as StepOutcome,
    retries: 0,
  });
}

function snapshotEntry(time: string, node: string | undefined, r: Record<string, unknown>): TrailEntry {
  return compact({
    time,
    kind: 'snapshot' as const,
    node,
    path: str(r.localPath) ?? str(r.remotePath),
    sha256: str(r.sha256, 64),
    revision: num(r.revision),
  });
}

/** An accepted approve or resolveDrain update (a resolution says what it answered: a drain, a failed step, a halt). */
function updateEntry(
  time: string,
  name: string | null | undefined,
  args: Record<string, unknown>,
  blockOf: BlockOf,
): Extract<TrailEntry, { kind: 'approval' | 'resolution' }> | undefined {
  if (name === 'approve')
    return compact({ time, kind: 'approval' as const, gate: str(args.gate), by: str(args.by), comment: str(args.comment) });
  if (name !== 'resolveDrain') return undefined;
  const node = str(args.node);
  const block = node ? (blockOf.get(node) ?? { of: 'drain' as const }) : { of: 'halt' as const };
  return compact({
    time,
    kind: 'resolution' as const,
    node,
    action: str(args.action),
    by: str(args.by),
    pods: args.action === 'force' ? strings(args.pods) : undefined,
    comment: str(args.comment),
    ...block,
  });
}

/** A node's block (its nodeBlocked signal), remembered in `blockOf` for the resolution that answers it. */
function blockedEntry(time: string, args: Record<string, unknown>, blockOf: BlockOf): TrailEntry {
  const block = record(args.block);
  const node = str(args.node);
  const step = block.kind === 'StepFailed' ? str(block.step) : undefined;
  if (node) blockOf.set(node, step ? { of: 'step', step } : { of: 'drain' });
  return compact({
    time,
    kind: 'blocked' as const,
    node,
    message: str(block.message, 300),
    step,
    failure: step ? str(block.failure) : undefined,
  });
}

type Closing = { status: string; message?: string | undefined; result?: Record<string, unknown> | undefined };

/** The event that ends a run, as a status (and the failure's message, or the result); undefined for any other event. */
function closingOf(e: HistoryEvent): Closing | undefined {
  if (e.workflowExecutionCompletedEventAttributes)
    return { status: 'completed', result: record(firstArg(e.workflowExecutionCompletedEventAttributes.result)) };
  if (e.workflowExecutionFailedEventAttributes)
    return { status: 'failed', message: failureMessage(e.workflowExecutionFailedEventAttributes.failure) };
  if (e.workflowExecutionContinuedAsNewEventAttributes) return { status: 'continued as new' };
  if (e.workflowExecutionCanceledEventAttributes) return { status: 'canceled' };
  if (e.workflowExecutionTerminatedEventAttributes)
    return { status: 'terminated', message: str(e.workflowExecutionTerminatedEventAttributes.reason ?? undefined) };
  if (e.workflowExecutionTimedOutEventAttributes) return { status: 'timed out' };
  return undefined;
}

/** How the run ended: a node workflow's outcome and duration, or the parent's status. */
function closedEntry(
  e: HistoryEvent,
  c: Closing,
  of: { input: Record<string, unknown>; startMs: number } | { workflowId: string },
): TrailEntry {
  const { status, message, result } = c;
  if ('workflowId' in of)
    return compact({ time: iso(e), kind: 'closed' as const, workflowId: of.workflowId, status, outcome: str(result?.outcome), message });
  return compact({
    time: iso(e),
    kind: 'node' as const,
    node: str(of.input.node),
    step: str(of.input.step),
    version: str(of.input.version),
    outcome: status === 'completed' ? (str(result?.outcome) ?? 'done') : status,
    message,
    durationMs: tsToMs(e.eventTime) - of.startMs,
  });
}

/** The audit trail of one run: its activities, operator messages, snapshots and how it ended. */
export function runTrail(run: RunHistory): TrailEntry[] {
  const out: TrailEntry[] = [];
  const steps = new Map<string, { entry: Extract<TrailEntry, { kind: 'step' }>; scheduledMs: number }>();
  const updates = new Map<string, Extract<TrailEntry, { kind: 'approval' | 'resolution' }>>();
  let startMs = 0;
  let input: Record<string, unknown> = {};
  let isNode = false;
  /** What each node was last blocked on (nodeBlocked signals), so a resolution says what it answered. */
  const blockOf: BlockOf = new Map();

  const close = (e: HistoryEvent, outcome: StepOutcome, scheduledEventId: unknown, message?: string) => {
    const step = steps.get(String(scheduledEventId));
    if (!step) return undefined;
    Object.assign(step.entry, compact({ outcome, message, durationMs: tsToMs(e.eventTime) - step.scheduledMs }));
    return step.entry;
  };

  for (const e of run.events) {
    const time = iso(e);
    if (e.workflowExecutionStartedEventAttributes) {
      const a = e.workflowExecutionStartedEventAttributes;
      startMs = tsToMs(e.eventTime);
      input = record(firstArg(a.input));
      isNode = a.workflowType?.name === 'nodeUpgradeWorkflow';
      if (!isNode) out.push(startedEntry(time, run.workflowId, input, Boolean(a.continuedExecutionRunId)));
    } else if (e.activityTaskScheduledEventAttributes) {
      const entry = stepEntry(e, e.activityTaskScheduledEventAttributes, isNode ? str(input.node) : undefined);
      steps.set(String(e.eventId), { entry, scheduledMs: tsToMs(e.eventTime) });
      out.push(entry);
    } else if (e.activityTaskStartedEventAttributes) {
      const a = e.activityTaskStartedEventAttributes;
      const step = steps.get(String(a.scheduledEventId));
      if (step) step.entry.retries = Math.max(0, (a.attempt ?? 1) - 1);
    } else if (e.activityTaskCompletedEventAttributes) {
      const a = e.activityTaskCompletedEventAttributes;
      const step = close(e, 'completed', a.scheduledEventId);
      const note = step ? cordonNote(step.activity, record(firstArg(a.result))) : undefined;
      if (step && note) step.note = note;
      if (step?.activity === 'snapshotEtcd') out.push(snapshotEntry(time, step.node, record(firstArg(a.result))));
    } else if (e.activityTaskFailedEventAttributes) {
      close(e, 'failed', e.activityTaskFailedEventAttributes.scheduledEventId, failureMessage(e.activityTaskFailedEventAttributes.failure));
    } else if (e.activityTaskTimedOutEventAttributes) {
      close(
        e,
        'timed out',
        e.activityTaskTimedOutEventAttributes.scheduledEventId,
        failureMessage(e.activityTaskTimedOutEventAttributes.failure),
      );
    } else if (e.activityTaskCanceledEventAttributes) {
      close(e, 'canceled', e.activityTaskCanceledEventAttributes.scheduledEventId);
    } else if (e.workflowExecutionUpdateAcceptedEventAttributes) {
      const request = e.workflowExecutionUpdateAcceptedEventAttributes.acceptedRequest;
      const id = request?.meta?.updateId ?? '';
      const entry = updateEntry(time, request?.input?.name, record(firstArg(request?.input?.args)), blockOf);
      if (entry) {
        updates.set(id, entry);
        out.push(entry);
      }
    } else if (e.workflowExecutionUpdateCompletedEventAttributes) {
      const a = e.workflowExecutionUpdateCompletedEventAttributes;
      const entry = updates.get(a.meta?.updateId ?? '');
      if (entry && a.outcome?.failure) entry.failed = failureMessage(a.outcome.failure) ?? 'failed';
    } else if (e.workflowExecutionSignaledEventAttributes) {
      const a = e.workflowExecutionSignaledEventAttributes;
      const args = record(firstArg(a.input));
      if (a.signalName === 'pause' || a.signalName === 'resume' || a.signalName === 'abort') {
        out.push(compact({ time, kind: 'signal' as const, signal: a.signalName, by: str(args.by), reason: str(args.reason) }));
      } else if (a.signalName === 'nodeBlocked' && args.block) out.push(blockedEntry(time, args, blockOf));
    } else {
      const c = closingOf(e);
      if (c) out.push(closedEntry(e, c, isNode ? { input, startMs } : { workflowId: run.workflowId }));
    }
  }
  return out;
}

/** The trail of an upgrade: every run of the parent and of its children, merged in time order. */
export function auditTrail(runs: RunHistory[]): TrailEntry[] {
  return runs
    .flatMap((run) => runTrail(run))
    .map((entry, i) => ({ entry, i }))
    .sort((a, b) => a.entry.time.localeCompare(b.entry.time) || a.i - b.i)
    .map(({ entry }) => entry);
}

export function formatDuration(ms: number | undefined): string {
  if (ms === undefined) return '';
  if (ms < 60_000) return `${(ms / 1000).toFixed(1)} s`;
  const s = Math.round(ms / 1000);
  return s < 3600
    ? `${Math.floor(s / 60)} min ${String(s % 60).padStart(2, '0')} s`
    : `${Math.floor(s / 3600)} h ${String(Math.floor((s % 3600) / 60)).padStart(2, '0')} min`;
}

const quoted = (text: string | undefined) => (text ? ` ("${text}")` : '');

/** What happened, in words: the activity and its summary (or its node and version). */
function describe(entry: TrailEntry): string {
  switch (entry.kind) {
    case 'started': {
      const ack = entry.acknowledged;
      const acknowledged = ack
        ? `; acknowledged ${ack.names.map((n) => (ack.reasons?.[n] ? `${n} (${ack.reasons[n]})` : n)).join(', ')}${ack.by ? ` by ${ack.by}` : ''}${ack.reason ? `: ${ack.reason}` : ''}`
        : '';
      return `${entry.continued ? 'continued' : 'started'} ${entry.workflowId}${entry.to ? ` to ${entry.to}` : ''}${acknowledged}`;
    }
    case 'step':
      return entry.summary ? `${entry.activity}: ${entry.summary}` : `${entry.activity}${entry.version ? ` ${entry.version}` : ''}`;
    case 'snapshot':
      return `etcd snapshot ${entry.path ?? '?'} sha256 ${entry.sha256 ?? '?'} revision ${entry.revision ?? '?'}`;
    case 'approval':
      return `gate ${entry.gate ?? '?'} approved by ${entry.by ?? '?'}${quoted(entry.comment)}${entry.failed ? ` (failed: ${entry.failed})` : ''}`;
    case 'resolution':
      return `${entry.of === 'halt' ? 'halted rollout' : entry.of === 'step' ? `failed step ${entry.step ?? '?'} of ${entry.node ?? '?'}` : `drain of ${entry.node ?? '?'}`} resolved by ${entry.by ?? '?'}: ${entry.action ?? '?'}${entry.pods?.length ? ` ${entry.pods.join(',')}` : ''}${quoted(entry.comment)}${entry.failed ? ` (failed: ${entry.failed})` : ''}`;
    case 'signal':
      return `${entry.signal} by ${entry.by ?? '?'}${quoted(entry.reason)}`;
    case 'blocked':
      return entry.step
        ? `blocked: ${entry.step} failed (${entry.failure ?? '?'}): ${entry.message ?? ''}`
        : `drain blocked: ${entry.message ?? ''}`;
    case 'node':
      return `${entry.step === 'control-plane' ? 'control plane' : 'node'} upgrade to ${entry.version ?? '?'}: ${entry.outcome}${entry.message ? `: ${entry.message}` : ''}`;
    case 'closed':
      return `${entry.workflowId} ${entry.status}${entry.outcome ? `: ${entry.outcome}` : ''}${entry.message ? `: ${entry.message}` : ''}`;
  }
}

function outcome(entry: TrailEntry): string {
  if (entry.kind !== 'step') return '';
  const retried = entry.retries > 0 ? `, retried ${entry.retries} time${entry.retries === 1 ? '' : 's'}` : '';
  return `${entry.note ?? entry.outcome}${entry.message ? `: ${entry.message}` : ''}${retried}`;
}

/** One line per entry: time, node, what, duration, outcome. */
export function trailToText(entries: TrailEntry[]): string {
  const width = Math.min(60, Math.max(20, ...entries.filter((e) => e.kind === 'step').map((e) => describe(e).length)));
  const nodeWidth = Math.max(4, ...entries.map((e) => ('node' in e && e.node ? e.node.length : 1)));
  return entries
    .map((e) => {
      const node = ('node' in e && e.node) || '-';
      const head = `${e.time}  ${node.padEnd(nodeWidth)}  `;
      if (e.kind !== 'step')
        return `${head}${describe(e)}${e.kind === 'node' && e.durationMs !== undefined ? ` (${formatDuration(e.durationMs)})` : ''}`;
      return `${head}${describe(e).padEnd(width)}  ${formatDuration(e.durationMs).padStart(11)}  ${outcome(e)}`.trimEnd();
    })
    .join('\n');
}
