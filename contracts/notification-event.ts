/**
 * The event document skewless sends to the cluster configuration's `notify:` sinks (and that its
 * hooks receive): versioned, one per transition of a run, with an idempotency key a receiver
 * deduplicates on. Names, versions, commands and counts only: never a URL, token or credential, since
 * the same document is a workflow argument and lands in history. docs/notifications.md shows it.
 */
export const NOTIFICATION_SCHEMA_VERSION = 1;

/**
 * Every kind of event; a sink's `events:` names some of them (none: all). `test` is `skewless notify
 * test`'s; `hook` is what a change hook receives (`hooks:`), never sent to a sink.
 */
export const NOTIFICATION_EVENT_KINDS = [
  'run.started',
  'run.waiting',
  'run.resumed',
  'hop.done',
  'node.quarantined',
  'run.finished',
  'run.failed',
  'run.aborted',
  'test',
  'hook',
] as const;
export type NotificationEventKind = (typeof NOTIFICATION_EVENT_KINDS)[number];

/** What a `run.waiting` event waits for: an approval gate, a blocked node (drain or failed step), a halted rollout. */
export const WAITING_FOR = ['gate', 'node', 'halt'] as const;

export interface NotificationEvent {
  schemaVersion: typeof NOTIFICATION_SCHEMA_VERSION;
  kind: NotificationEventKind;
  /** The idempotency key: the workflow id, its first run and the transition (notificationKey): the same for every retry and replay. */
  id: string;
  /** When the transition happened (workflow time, ISO 8601). */
  at: string;
  cluster: string;
  /** `upgrade/lab`, `maintain/lab`, ... */
  workflowId: string;
  /** One line for humans: what happened, and for a wait what answers it. */
  summary: string;
  /** The exact `skewless` command that answers a wait (or finishes a failed run); absent when nothing is asked. */
  command?: string;
  /** Kind-specific facts: target, hop, gate, node, pods, pdbs, outcome, reason (see docs/notifications.md). */
  details: Record<string, unknown>;
}

/**
 * The idempotency key of one transition of one run: `<workflowId>/<firstRunId>/<transition>`. The
 * first run id stays across continue-as-new, so a transition replayed or redone after a worker crash
 * has the same key, and a later upgrade of the same cluster another.
 */
export const notificationKey = (workflowId: string, firstRunId: string, transition: string) => `${workflowId}/${firstRunId}/${transition}`;

/** The document's JSON Schema (draft 2020-12 subset), as docs/notifications.md prints it; test/contracts checks both agree. */
export const NOTIFICATION_EVENT_SCHEMA = {
  $schema: 'https://json-schema.org/draft/2020-12/schema',
  $id: 'https://skewless.io/schemas/notification-event-v1.json',
  type: 'object',
  required: ['schemaVersion', 'kind', 'id', 'at', 'cluster', 'workflowId', 'summary', 'details'],
  additionalProperties: false,
  properties: {
    schemaVersion: { type: 'integer', enum: [NOTIFICATION_SCHEMA_VERSION] },
    kind: { type: 'string', enum: [...NOTIFICATION_EVENT_KINDS] },
    id: { type: 'string', minLength: 1 },
    at: { type: 'string', pattern: '^\\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}:\\d{2}(\\.\\d+)?Z$' },
    cluster: { type: 'string', minLength: 1 },
    workflowId: { type: 'string', minLength: 1 },
    summary: { type: 'string', minLength: 1 },
    command: { type: 'string', pattern: '^skewless ' },
    details: { type: 'object' },
  },
} as const;

/** The `details` keys each kind always carries (docs/notifications.md); more may come, never fewer. */
export const DETAILS_OF: Record<NotificationEventKind, readonly string[]> = {
  'run.started': ['from', 'to', 'hops', 'nodes'],
  'run.waiting': ['waitingFor'],
  'run.resumed': ['waitingFor'],
  'hop.done': ['hop'],
  'node.quarantined': ['node', 'hop'],
  'run.finished': ['outcome', 'exit'],
  'run.failed': ['reason'],
  'run.aborted': ['reason', 'outcome'],
  test: [],
  hook: ['point'],
};
