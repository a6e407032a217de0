import { unknownKey } from './input-shapes.js';
import { RuleError } from './rule-error.js';

/**
 * Maintenance windows: when the disruptive phases of an upgrade (a hop's control plane, each batch of
 * workers) may start. A window opens on each of its days at `start` and closes at `end`, wall-clock
 * time in its IANA time zone; an `end` at or before `start` closes the next day (the window belongs
 * to the day it opens). `24:00` ends a window at midnight.
 *
 * Time is elapsed time, not wall-clock readings: a window is the interval between the instant it
 * opens and the instant it closes, so a DST change inside it makes it one hour shorter or longer
 * and never closes and reopens it. A wall time that does not exist that day (the hour skipped in
 * spring) is read as the same time on the clock before the change, which lands one gap later (02:30
 * in Europe/Berlin on the last Sunday of March opens at 03:30 CEST); a time the clock shows twice
 * (autumn) is the first of the two. (These are Temporal's and java.time's "compatible" choices.)
 *
 * Pure: no clock, `now` is an argument. The zone rules come from Intl.DateTimeFormat, i.e. the ICU
 * time zone data of the Node build the worker runs: deterministic for a given build (workflow replay
 * on the same build computes the same instants); a tzdata update between builds may move an instant
 * only where a zone's rules changed.
 */

export const WEEKDAYS = ['Mon', 'Tue', 'Wed', 'Thu', 'Fri', 'Sat', 'Sun'] as const;
export type Weekday = (typeof WEEKDAYS)[number];

export interface MaintenanceWindow {
  days: Weekday[];
  /** Time of day, `HH:MM` or `HH:MM:SS`. */
  start: string;
  end: string;
  /** IANA time zone such as `Europe/Berlin` or `UTC`. */
  timeZone: string;
}

/** One opening of the windows, in epoch milliseconds: [opensAt, closesAt). */
export interface WindowSpan {
  opensAt: number;
  closesAt: number;
}

export type WindowVerdict = ({ open: true } & WindowSpan) | ({ open: false } & WindowSpan);

const DAY_MS = 86_400_000;
const FULL_NAMES = ['monday', 'tuesday', 'wednesday', 'thursday', 'friday', 'saturday', 'sunday'];
const TIME = /^([01]\d|2[0-3]):([0-5]\d)(?::([0-5]\d))?$/;
const MIDNIGHT_END = /^24:00(?::00)?$/;

const bad = (where: string, message: string) => new RuleError('InvalidPolicy', `${where}: ${message}`);

function parseDay(value: unknown, where: string): Weekday {
  const text = typeof value === 'string' ? value.trim().toLowerCase() : '';
  const i = WEEKDAYS.findIndex((d, k) => d.toLowerCase() === text || FULL_NAMES[k] === text);
  if (i < 0) throw bad(where, `unknown day ${JSON.stringify(value)} (Mon, Tue, Wed, Thu, Fri, Sat, Sun)`);
  return WEEKDAYS[i] as Weekday;
}

/** Seconds since midnight of "HH:MM" or "HH:MM:SS" (and "24:00" where `end` is meant). */
function secondsOf(value: unknown, where: string, isEnd: boolean): number {
  if (typeof value === 'string' && isEnd && MIDNIGHT_END.test(value)) return DAY_MS / 1000;
  const m = typeof value === 'string' ? TIME.exec(value) : null;
  if (!m)
    throw bad(where, `bad time ${JSON.stringify(value)}: expected HH:MM or HH:MM:SS from 00:00 to 23:59:59${isEnd ? ' (or 24:00)' : ''}`);
  return Number(m[1]) * 3600 + Number(m[2]) * 60 + Number(m[3] ?? 0);
}

const formatters = new Map<string, Intl.DateTimeFormat>();
function formatter(timeZone: string): Intl.DateTimeFormat {
  let f = formatters.get(timeZone);
  if (!f) {
    f = new Intl.DateTimeFormat('en-US', {
      timeZone,
      hourCycle: 'h23',
      year: 'numeric',
      month: 'numeric',
      day: 'numeric',
      hour: 'numeric',
      minute: 'numeric',
      second: 'numeric',
    });
    formatters.set(timeZone, f);
  }
  return f;
}

/** An IANA time zone the runtime knows, or a one-line refusal naming `where` (exclusions read zones as windows do). */
export function parseTimeZone(value: unknown, where: string): string {
  if (typeof value !== 'string' || value === '')
    throw new RuleError('InvalidPolicy', `${where} must be an IANA time zone such as Europe/Berlin or UTC`);
  try {
    formatter(value);
  } catch {
    throw new RuleError(
      'InvalidPolicy',
      `${where}: unknown time zone ${JSON.stringify(value)} (an IANA name such as Europe/Berlin or UTC)`,
    );
  }
  return value;
}

function checkTimeZone(value: unknown, where: string): string {
  if (typeof value !== 'string' || value === '') throw bad(where, 'timeZone is required (an IANA name such as Europe/Berlin or UTC)');
  try {
    formatter(value);
  } catch {
    throw bad(where, `unknown time zone ${JSON.stringify(value)} (an IANA name such as Europe/Berlin or UTC)`);
  }
  return value;
}

/** Checks one window as the cluster configuration spells it; every problem is one line naming `where`. */
const WINDOW_KEYS = ['days', 'start', 'end', 'timeZone'] as const;

export function parseMaintenanceWindow(raw: unknown, where = 'maintenance window'): MaintenanceWindow {
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw))
    throw bad(where, 'must be a mapping with days, start, end and timeZone');
  const r = raw as Record<string, unknown>;
  const unknown = unknownKey(r, WINDOW_KEYS);
  if (unknown !== undefined) throw bad(where, `unknown key ${unknown} (known: ${WINDOW_KEYS.join(', ')})`);
  if (!Array.isArray(r.days)) throw bad(where, 'days must be a list such as [Sat, Sun]');
  if (r.days.length === 0) throw bad(where, 'empty window: days is an empty list');
  const days = [...new Set(r.days.map((d) => parseDay(d, where)))].sort((a, b) => WEEKDAYS.indexOf(a) - WEEKDAYS.indexOf(b));
  const start = secondsOf(r.start, `${where} start`, false);
  const end = secondsOf(r.end, `${where} end`, true);
  if (start === end) throw bad(where, `empty window: start and end are both ${String(r.start)}`);
  return { days, start: r.start as string, end: r.end as string, timeZone: checkTimeZone(r.timeZone, where) };
}

/** Checks a list of windows (`maintenanceWindows:`); an absent list is no windows. */
export function parseMaintenanceWindows(raw: unknown, where = 'maintenanceWindows'): MaintenanceWindow[] {
  if (raw === undefined || raw === null) return [];
  if (!Array.isArray(raw)) throw bad(where, 'must be a list of windows');
  return raw.map((w, i) => parseMaintenanceWindow(w, `${where}[${i}]`));
}

/** Offset of the zone's wall clock from UTC at `at` (ms, whole seconds). */
function offsetAt(timeZone: string, at: number): number {
  const t = Math.floor(at / 1000) * 1000;
  const p = Object.fromEntries(
    formatter(timeZone)
      .formatToParts(new Date(t))
      .map((x) => [x.type, Number(x.value)]),
  );
  return Date.UTC(p.year as number, (p.month as number) - 1, p.day as number, p.hour, p.minute, p.second) - t;
}

/** The instant the zone's clock reads `wall` (a wall time written as if UTC), "compatible" as above. */
export function instantOfWall(timeZone: string, wall: number): number {
  return instantOf(timeZone, wall);
}

function instantOf(timeZone: string, wall: number): number {
  const before = offsetAt(timeZone, wall - DAY_MS);
  const after = offsetAt(timeZone, wall + DAY_MS);
  const valid = [wall - before, wall - after].filter((t) => t + offsetAt(timeZone, t) === wall);
  return valid.length > 0 ? Math.min(...valid) : wall - before;
}

/** Every opening of `w` whose local day lies in [fromDay, toDay] (days as epoch ms of local midnights, as if UTC). */
function openings(w: MaintenanceWindow, fromDay: number, toDay: number): WindowSpan[] {
  const start = secondsOf(w.start, 'start', false) * 1000;
  const end = secondsOf(w.end, 'end', true) * 1000;
  const out: WindowSpan[] = [];
  for (let day = fromDay; day <= toDay; day += DAY_MS) {
    const weekday = WEEKDAYS[(new Date(day).getUTCDay() + 6) % 7] as Weekday;
    if (!w.days.includes(weekday)) continue;
    const opensAt = instantOf(w.timeZone, day + start);
    const closesAt = instantOf(w.timeZone, day + (end > start ? end : end + DAY_MS));
    if (closesAt > opensAt) out.push({ opensAt, closesAt });
  }
  return out;
}

/**
 * Where `now` stands: inside a window (`open`, with the opening it is in: overlapping or touching
 * windows count as one), or outside (the next opening). A week and a day ahead always holds the next
 * opening; a chain of windows longer than that reports its close at the horizon. Undefined: no windows.
 */
export function windowAt(windows: readonly MaintenanceWindow[], now: number): WindowVerdict | undefined {
  const spans: WindowSpan[] = [];
  for (const w of windows) {
    const localDay = Math.floor((now + offsetAt(w.timeZone, now)) / DAY_MS) * DAY_MS;
    spans.push(...openings(w, localDay - 2 * DAY_MS, localDay + 8 * DAY_MS));
  }
  spans.sort((a, b) => a.opensAt - b.opensAt);
  const merged: WindowSpan[] = [];
  for (const s of spans) {
    const last = merged.at(-1);
    if (last && s.opensAt <= last.closesAt) last.closesAt = Math.max(last.closesAt, s.closesAt);
    else merged.push({ ...s });
  }
  const current = merged.find((s) => s.opensAt <= now && now < s.closesAt);
  if (current) return { open: true, ...current };
  const next = merged.find((s) => s.opensAt > now);
  return next ? { open: false, ...next } : undefined;
}

/** True when there are no windows (nothing to wait for) or `now` is inside one. */
export function insideWindow(windows: readonly MaintenanceWindow[], now: number): boolean {
  return windows.length === 0 || windowAt(windows, now)?.open === true;
}

/** One line per window for people: `Sat,Sun 02:00–06:00 Europe/Berlin`. */
export function describeWindow(w: MaintenanceWindow): string {
  return `${w.days.join(',')} ${w.start}–${w.end} ${w.timeZone}`;
}

/** What waits for a window, in words: `batch-1 of 1.33.7` for an upgrade's hop, `batch-1` for an OS maintenance run. */
export function windowPhaseLabel(phase: string, hop: string): string {
  return hop ? `${phase} of ${hop}` : phase;
}
