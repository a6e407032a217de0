import { existsSync, readFileSync } from 'node:fs';

/** One request as the apiserver's audit log records it at Metadata level (the fields tests read). */
export interface AuditEvent {
  verb: string;
  user: string;
  /** `pods`, `pods/eviction`, `nodes/status`... (resource and subresource joined by a slash). */
  resource: string;
  apiGroup: string;
  namespace?: string;
  name?: string;
  code?: number;
  /** RFC 3339 with microseconds, as the apiserver writes it: when the response was complete. */
  time: string;
  /** When the apiserver received the request (its requestReceivedTimestamp): with `time`, the request in flight. */
  received?: string;
  uri: string;
}

/** Verbs that change the cluster. */
export const WRITE_VERBS = new Set(['create', 'update', 'patch', 'delete', 'deletecollection']);

interface RawEvent {
  verb?: string;
  requestURI?: string;
  user?: { username?: string };
  objectRef?: { resource?: string; subresource?: string; apiGroup?: string; namespace?: string; name?: string };
  responseStatus?: { code?: number };
  stageTimestamp?: string;
  requestReceivedTimestamp?: string;
  stage?: string;
}

/**
 * The events in the audit logs, in time order (one log per apiserver; an apiserver that has not
 * logged anything yet has no file).
 */
export function readAuditEvents(paths: readonly string[]): AuditEvent[] {
  return paths.flatMap(readAuditLog).sort((a, b) => a.time.localeCompare(b.time));
}

function readAuditLog(path: string): AuditEvent[] {
  if (!existsSync(path)) return [];
  const out: AuditEvent[] = [];
  for (const line of readFileSync(path, 'utf8').split('\n')) {
    if (!line.trim()) continue;
    let raw: RawEvent;
    try {
      raw = JSON.parse(line) as RawEvent;
    } catch {
      continue; // the last line may be half-written while the apiserver runs
    }
    const ref = raw.objectRef ?? {};
    out.push({
      verb: raw.verb ?? '',
      user: raw.user?.username ?? '',
      resource: ref.subresource ? `${ref.resource}/${ref.subresource}` : (ref.resource ?? ''),
      apiGroup: ref.apiGroup ?? '',
      ...(ref.namespace ? { namespace: ref.namespace } : {}),
      ...(ref.name ? { name: ref.name } : {}),
      ...(raw.responseStatus?.code !== undefined ? { code: raw.responseStatus.code } : {}),
      time: raw.stageTimestamp ?? '',
      ...(raw.requestReceivedTimestamp ? { received: raw.requestReceivedTimestamp } : {}),
      uri: raw.requestURI ?? '',
    });
  }
  return out;
}

/** Writes (any verb that changes state, whatever the answer) in `events`, optionally by one user. */
export const writesIn = (events: AuditEvent[], user?: string): AuditEvent[] =>
  events.filter((e) => WRITE_VERBS.has(e.verb) && (user === undefined || e.user === user));
