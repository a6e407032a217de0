import { DETAILS_OF, NOTIFICATION_EVENT_SCHEMA, type NotificationEventKind } from '../contracts/notification-event.js';

/**
 * The notification event checked against its JSON Schema (contracts/notification-event.ts, printed in
 * docs/notifications.md) and each kind's details keys. A small interpreter of the keywords the schema
 * uses (type, required, properties, additionalProperties, enum, minLength, pattern), so the test that
 * holds every delivered event to the document needs no schema library.
 */
type Schema = {
  type?: string;
  required?: readonly string[];
  properties?: Record<string, Schema>;
  additionalProperties?: boolean;
  enum?: readonly unknown[];
  minLength?: number;
  pattern?: string;
};

function typeOk(value: unknown, type: string): boolean {
  if (type === 'object') return typeof value === 'object' && value !== null && !Array.isArray(value);
  if (type === 'integer') return Number.isInteger(value);
  if (type === 'array') return Array.isArray(value);
  return typeof value === type;
}

function check(value: unknown, schema: Schema, at: string, problems: string[]): void {
  if (schema.type && !typeOk(value, schema.type)) {
    problems.push(`${at || '(root)'}: not ${schema.type}`);
    return;
  }
  if (schema.enum && !schema.enum.includes(value)) problems.push(`${at}: ${JSON.stringify(value)} not one of ${schema.enum.join(', ')}`);
  if (typeof value === 'string') {
    if (schema.minLength !== undefined && value.length < schema.minLength) problems.push(`${at}: shorter than ${schema.minLength}`);
    if (schema.pattern !== undefined && !new RegExp(schema.pattern).test(value)) problems.push(`${at}: does not match ${schema.pattern}`);
  }
  if (schema.type !== 'object') return;
  const obj = value as Record<string, unknown>;
  for (const k of schema.required ?? []) if (!(k in obj)) problems.push(`${at}${at ? '.' : ''}${k}: missing`);
  for (const [k, v] of Object.entries(obj)) {
    const sub = schema.properties?.[k];
    if (sub) check(v, sub, `${at}${at ? '.' : ''}${k}`, problems);
    else if (schema.additionalProperties === false) problems.push(`${at}${at ? '.' : ''}${k}: not in the schema`);
  }
}

/** Every way `doc` departs from the event schema; empty when it conforms. */
export function notificationEventProblems(doc: unknown): string[] {
  const problems: string[] = [];
  check(doc, NOTIFICATION_EVENT_SCHEMA as unknown as Schema, '', problems);
  if (problems.length > 0) return problems;
  const { kind, details, command } = doc as { kind: NotificationEventKind; details: Record<string, unknown>; command?: string };
  for (const k of DETAILS_OF[kind]) if (!(k in details)) problems.push(`details.${k}: missing for ${kind}`);
  if (kind === 'run.waiting' && command === undefined) problems.push('command: missing for run.waiting');
  return problems;
}
