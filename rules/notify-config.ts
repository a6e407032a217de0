import { NOTIFICATION_EVENT_KINDS, type NotificationEventKind } from '../contracts/notification-event.js';
import { SETTING_LIMITS } from '../contracts/time-limits.js';
import { RuleError } from './rule-error.js';

/**
 * The cluster configuration's `notify:` list, judged key by key: each problem is one line naming the
 * key (`notify[1].events[0]: unknown event "run.strated" (...)`), thrown as RuleError InvalidPolicy,
 * which the configuration loader turns into its own one-line refusal (exit 2). Pure: the URL or
 * secret in a file or environment variable is read by the worker at delivery, never here.
 */
export const SINK_TYPES = ['webhook', 'slack', 'cloudevents'] as const;
export type SinkType = (typeof SINK_TYPES)[number];

/** Where a secret comes from on the worker's side: a file's first line or an environment variable. */
export type SecretSource = { file: string } | { env: string };

export interface NotifySink {
  /** Names the sink in history and in `notify test`'s answers (letters, digits, `.`, `_`, `-`). */
  name: string;
  type: SinkType;
  /** The URL as written (not a secret), or where the worker reads it. */
  url: { value: string } | SecretSource;
  /** Sent as `Authorization: Bearer <secret>`; absent: no header. */
  secret?: SecretSource;
  /** The kinds this sink gets; all but `test` when the key is absent (`test` always goes). */
  events: NotificationEventKind[];
  /** Allows `http://` to a host other than loopback (the body would cross the network in clear). */
  allowInsecure: boolean;
  /** Per request. */
  timeoutSeconds: number;
}

/** What a workflow needs to decide whether to send anything: names and kinds, never a URL. */
export type SinkSubscription = Pick<NotifySink, 'name' | 'events'>;

export const NOTIFY_KEYS = [
  'name',
  'type',
  'url',
  'urlFile',
  'urlEnv',
  'secretFile',
  'secretEnv',
  'events',
  'allowInsecure',
  'timeoutSeconds',
] as const;
export const NOTIFY_TIMEOUT = { default: 10, max: SETTING_LIMITS['notify.timeoutSeconds'].max } as const;
const SINK_NAME = /^[A-Za-z0-9._-]{1,63}$/;
const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

const bad = (key: string, message: string) => new RuleError('InvalidPolicy', `${key} ${message}`);

/** Loopback by name or address: the only hosts plain http:// may reach without allowInsecure. */
export function isLoopbackHost(hostname: string): boolean {
  const h = hostname.replace(/^\[|\]$/g, '').toLowerCase();
  return h === 'localhost' || h === '::1' || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(h);
}

/**
 * A sink URL's refusal, or undefined: http(s) only, no user info, plain http only to loopback unless
 * allowed. Never shows the URL (a Slack webhook's path is its secret): `key` names where it came from.
 */
export function urlProblem(text: string, allowInsecure: boolean): string | undefined {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return 'is not a URL';
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') return `must be http(s), got ${url.protocol}`;
  if (url.username || url.password) return 'must not carry user info (use secretFile or secretEnv)';
  if (url.protocol === 'http:' && !allowInsecure && !isLoopbackHost(url.hostname))
    return `is http:// to ${url.hostname}, not loopback: use https, or allowInsecure: true`;
  return undefined;
}

function secretSource(r: Record<string, unknown>, key: string, file: string, env: string): SecretSource | undefined {
  if (r[file] !== undefined && r[env] !== undefined) throw bad(`${key}.${file}`, `and ${key}.${env} are both given: one of them`);
  if (r[file] !== undefined) {
    const f = r[file];
    if (typeof f !== 'string' || !f.startsWith('/')) throw bad(`${key}.${file}`, 'must be an absolute path');
    return { file: f };
  }
  if (r[env] !== undefined) {
    const e = r[env];
    if (typeof e !== 'string' || !ENV_NAME.test(e)) throw bad(`${key}.${env}`, 'must be an environment variable name');
    return { env: e };
  }
  return undefined;
}

function parseEvents(value: unknown, key: string): NotificationEventKind[] {
  const all = NOTIFICATION_EVENT_KINDS.filter((k) => k !== 'test' && k !== 'hook');
  if (value === undefined) return all;
  if (!Array.isArray(value) || value.length === 0) throw bad(key, `must be a list of events (${all.join(', ')})`);
  return value.map((e: unknown, i) => {
    if (typeof e !== 'string' || !(all as readonly string[]).includes(e))
      throw bad(`${key}[${i}]:`, `unknown event ${JSON.stringify(e)} (${all.join(', ')})`);
    return e as NotificationEventKind;
  });
}

function parseSink(value: unknown, i: number, names: Set<string>): NotifySink {
  const key = `notify[${i}]`;
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw bad(key, 'must be a mapping');
  const r = value as Record<string, unknown>;
  const unknown = Object.keys(r).find((k) => !(NOTIFY_KEYS as readonly string[]).includes(k));
  if (unknown !== undefined) throw bad(`${key}.${unknown}`, `is not a known key (${NOTIFY_KEYS.join(', ')})`);
  const name = r.name;
  if (typeof name !== 'string' || !SINK_NAME.test(name)) throw bad(`${key}.name`, "must be letters, digits, '.', '_' or '-'");
  if (names.has(name)) throw bad(`${key}.name`, `${name} is given twice`);
  names.add(name);
  const type = r.type;
  if (typeof type !== 'string' || !(SINK_TYPES as readonly string[]).includes(type))
    throw bad(`${key}.type`, `must be ${SINK_TYPES.join(', ')}, got ${JSON.stringify(type)}`);
  if (r.allowInsecure !== undefined && typeof r.allowInsecure !== 'boolean') throw bad(`${key}.allowInsecure`, 'must be true or false');
  const allowInsecure = r.allowInsecure === true;
  const from = secretSource(r, key, 'urlFile', 'urlEnv');
  if (from && r.url !== undefined) throw bad(`${key}.url`, 'is given with urlFile or urlEnv: one of them');
  if (!from && (typeof r.url !== 'string' || r.url === '')) throw bad(`${key}.url`, 'must be given (or urlFile, or urlEnv)');
  if (!from) {
    const problem = urlProblem(r.url as string, allowInsecure);
    if (problem) throw bad(`${key}.url`, problem);
  }
  const secret = secretSource(r, key, 'secretFile', 'secretEnv');
  const t = r.timeoutSeconds ?? NOTIFY_TIMEOUT.default;
  if (typeof t !== 'number' || !Number.isInteger(t) || t < 1 || t > NOTIFY_TIMEOUT.max)
    throw bad(`${key}.timeoutSeconds`, `must be an integer from 1 to ${NOTIFY_TIMEOUT.max}`);
  return {
    name,
    type: type as SinkType,
    url: from ?? { value: r.url as string },
    ...(secret ? { secret } : {}),
    events: parseEvents(r.events, `${key}.events`),
    allowInsecure,
    timeoutSeconds: t,
  };
}

/** `notify:` as written (absent: no sink). */
export function parseNotifySinks(value: unknown): NotifySink[] {
  if (value === undefined) return [];
  if (!Array.isArray(value)) throw bad('notify', 'must be a list of sinks');
  const names = new Set<string>();
  return value.map((v, i) => parseSink(v, i, names));
}

/** The sinks that want `kind` (a test event goes to every sink). */
export const sinksFor = (sinks: readonly SinkSubscription[], kind: NotificationEventKind): string[] =>
  sinks.filter((s) => kind === 'test' || s.events.includes(kind)).map((s) => s.name);

/** What a workflow may know of the sinks: names and events, never a URL or where a secret lies. */
export const sinkSubscriptions = (sinks: readonly NotifySink[]): SinkSubscription[] => sinks.map(({ name, events }) => ({ name, events }));
