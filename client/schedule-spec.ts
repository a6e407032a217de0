import type { CalendarSpec, DayOfWeek, ScheduleSpec } from '@temporalio/client';
import { UsageError } from './cli-support.js';

/**
 * When a schedule fires, as the operator types it, checked before Temporal is contacted: a cron
 * expression (five fields or @daily and the like), a calendar line ("Sat 02:00", "Mon-Fri 22:30",
 * "daily 03:00") or an interval ("5s", "6h"). Temporal would refuse some of these itself, but
 * later and in words of its own; here each gets one line naming the flag.
 */

const DAYS = ['SUN', 'MON', 'TUE', 'WED', 'THU', 'FRI', 'SAT'];
const DAY_NAMES: DayOfWeek[] = ['SUNDAY', 'MONDAY', 'TUESDAY', 'WEDNESDAY', 'THURSDAY', 'FRIDAY', 'SATURDAY'];
const MONTHS = ['JAN', 'FEB', 'MAR', 'APR', 'MAY', 'JUN', 'JUL', 'AUG', 'SEP', 'OCT', 'NOV', 'DEC'];
const SHORTHANDS = ['@yearly', '@annually', '@monthly', '@weekly', '@daily', '@midnight', '@hourly'];
/** minute, hour, day of month, month, day of week: [min, max, names (index = value - min)]. */
const FIELDS: [string, number, number, string[]?][] = [
  ['minute', 0, 59],
  ['hour', 0, 23],
  ['day of month', 1, 31],
  ['month', 1, 12, MONTHS],
  ['day of week', 0, 6, DAYS],
];

function cronValue(text: string, min: number, max: number, names?: string[]): number | undefined {
  if (/^\d{1,2}$/.test(text)) {
    const n = Number(text);
    return n >= min && n <= max ? n : undefined;
  }
  const i = names?.indexOf(text.toUpperCase()) ?? -1;
  return i >= 0 ? i + min : undefined;
}

function cronFieldOk(field: string, min: number, max: number, names?: string[]): boolean {
  return field.split(',').every((part) => {
    const [range, step, ...rest] = part.split('/');
    if (rest.length > 0 || range === undefined || range === '') return false;
    if (step !== undefined && !(/^\d{1,2}$/.test(step) && Number(step) >= 1)) return false;
    if (range === '*') return true;
    const [a, b, ...more] = range.split('-');
    if (more.length > 0 || a === undefined) return false;
    const lo = cronValue(a, min, max, names);
    if (lo === undefined) return false;
    if (b === undefined) return step === undefined;
    const hi = cronValue(b, min, max, names);
    return hi !== undefined && hi >= lo;
  });
}

/** A five-field cron expression ("0 3 * * SAT") or a shorthand (@daily); one line on anything else. */
export function cronExpression(value: string): string {
  const text = value.trim().replace(/\s+/g, ' ');
  if (SHORTHANDS.includes(text)) return text;
  const fields = text.split(' ');
  const bad = () =>
    new UsageError(
      `--cron takes five fields (minute hour day-of-month month day-of-week, such as "0 3 * * SAT") or @daily/@weekly/@monthly/@hourly, got ${JSON.stringify(value)}`,
    );
  if (fields.length !== 5 || value.length > 200) throw bad();
  fields.forEach((f, i) => {
    const [name, min, max, names] = FIELDS[i] as (typeof FIELDS)[number];
    if (!cronFieldOk(f, min, max, names)) {
      throw new UsageError(
        `--cron ${JSON.stringify(value)}: the ${name} field ${JSON.stringify(f)} is not ${min}-${max}${names ? `, ${names[0]}-${names.at(-1)}` : ''}, a range, a list or */N`,
      );
    }
  });
  return text;
}

function dayIndex(text: string, value: string): number {
  const i = DAYS.indexOf(text.slice(0, 3).toUpperCase());
  if (i < 0 || !DAY_NAMES[i]?.startsWith(text.toUpperCase())) throw badCalendar(value);
  return i;
}

const badCalendar = (value: string) =>
  new UsageError(
    `--calendar takes "[DAYS] HH:MM" with DAYS daily, a day (Sat), a range (Mon-Fri) or a list (Sat,Sun), got ${JSON.stringify(value)}`,
  );

/** "Sat 02:00", "Mon-Fri 22:30", "Sat,Sun 02:00", "daily 03:00" or "03:00": a calendar entry. */
export function calendarSpec(value: string): CalendarSpec {
  const parts = value.trim().split(/\s+/);
  const time = parts.pop() ?? '';
  const m = /^([01]?\d|2[0-3]):([0-5]\d)$/.exec(time);
  if (!m || parts.length > 1) throw badCalendar(value);
  const spec: CalendarSpec = { hour: Number(m[1]), minute: Number(m[2]), comment: value.trim() };
  const days = parts[0];
  if (days === undefined || /^(daily|every ?day|\*)$/i.test(days)) return { ...spec, dayOfWeek: '*' };
  spec.dayOfWeek = days.split(',').map((d) => {
    const [a, b, ...rest] = d.split('-');
    if (rest.length > 0 || !a) throw badCalendar(value);
    const start = DAY_NAMES[dayIndex(a, value)] as DayOfWeek;
    if (b === undefined) return { start };
    const lo = dayIndex(a, value);
    const hi = dayIndex(b, value);
    if (hi < lo) throw badCalendar(value);
    return { start, end: DAY_NAMES[hi] as DayOfWeek };
  });
  return spec;
}

/** An interval: "5s", "30m", "6h", "7d" (at least a second). */
export function interval(value: string): string {
  const m = /^([1-9]\d{0,5})(s|m|h|d)$/.exec(value);
  if (!m) throw new UsageError(`--every takes a duration such as 30s, 10m, 6h or 7d, got ${JSON.stringify(value)}`);
  return value;
}

/** An IANA time zone the runtime knows (Europe/Berlin, UTC); the server loads the same database. */
export function timeZone(value: string): string {
  try {
    new Intl.DateTimeFormat('en', { timeZone: value });
  } catch {
    throw new UsageError(`--time-zone must be an IANA time zone such as Europe/Berlin or UTC, got ${JSON.stringify(value)}`);
  }
  if (!/^[A-Za-z][A-Za-z0-9_+\-/]*$/.test(value))
    throw new UsageError(`--time-zone must be an IANA time zone such as Europe/Berlin or UTC, got ${JSON.stringify(value)}`);
  return value;
}

export interface SpecFlags {
  cron?: string[] | undefined;
  calendar?: string[] | undefined;
  every?: string[] | undefined;
  'time-zone'?: string | undefined;
}

/** The schedule spec and the words it was given in (kept in the schedule's memo for list and describe). */
export function scheduleSpec(values: SpecFlags): { spec: ScheduleSpec; words: string[] } {
  const crons = (values.cron ?? []).map(cronExpression);
  const calendars = (values.calendar ?? []).map(calendarSpec);
  const every = (values.every ?? []).map(interval);
  if (crons.length + calendars.length + every.length === 0)
    throw new UsageError('a schedule needs --cron "EXPR", --calendar "Sat 02:00" or --every DURATION');
  const zone = values['time-zone'] === undefined ? undefined : timeZone(values['time-zone']);
  if (zone !== undefined && crons.length + calendars.length === 0)
    throw new UsageError('--time-zone applies to --cron and --calendar, not to --every');
  const words = [
    ...crons.map((c) => `cron "${c}"`),
    ...(values.calendar ?? []).map((c) => `calendar "${c.trim()}"`),
    ...every.map((e) => `every ${e}`),
  ];
  return {
    spec: {
      ...(crons.length ? { cronExpressions: crons } : {}),
      ...(calendars.length ? { calendars } : {}),
      ...(every.length ? { intervals: every.map((e) => ({ every: e as `${number}s` })) } : {}),
      ...(zone ? { timezone: zone } : {}),
    },
    words: zone ? [...words, `time zone ${zone}`] : words,
  };
}
