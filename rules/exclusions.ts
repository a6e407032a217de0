import { instantOfWall, parseTimeZone } from './maintenance-window.js';
import { minorOf, parseVersion } from './version.js';
import { RuleError } from './rule-error.js';

/**
 * Blackout dates (issue 39; GKE's maintenance exclusions, AKS's notAllowedTime): dated periods in
 * which no run starts and no phase of nodes begins. `scope: all` holds every run; `minor` holds only
 * a move to another minor (GKE's NO_MINOR_UPGRADES), so patch upgrades still go. `from` and `to` are
 * wall times (`2026-12-20` or `2026-12-20T18:00`) in the exclusion's IANA time zone, read as
 * maintenance windows read theirs (rules/maintenance-window.ts). Pure: `now` is an argument.
 */
export const EXCLUSION_SCOPES = ['all', 'minor'] as const;
export type ExclusionScope = (typeof EXCLUSION_SCOPES)[number];

export interface Exclusion {
  from: string;
  to: string;
  timeZone: string;
  scope: ExclusionScope;
  /** Why (a change freeze): shown in status and in a skipped schedule firing. */
  reason?: string;
}

const WALL = /^(\d{4})-(\d{2})-(\d{2})(?:T(\d{2}):(\d{2})(?::(\d{2}))?)?$/;
const bad = (where: string, message: string) => new RuleError('InvalidPolicy', `${where} ${message}`);

/** A wall time as if UTC (ms), or undefined when it is not one. */
function wallOf(text: unknown): number | undefined {
  const m = typeof text === 'string' ? WALL.exec(text) : null;
  if (!m) return undefined;
  const [y, mo, d, h, mi, s] = m.slice(1).map((x) => Number(x ?? 0)) as [number, number, number, number, number, number];
  const t = Date.UTC(y, mo - 1, d, h, mi, s);
  const back = new Date(t);
  // 2026-02-30 is no day: Date.UTC would roll it over to March.
  if (back.getUTCMonth() !== mo - 1 || back.getUTCDate() !== d || h > 23 || mi > 59 || s > 59) return undefined;
  return t;
}

/** The period as instants [from, to), in epoch ms. */
export function exclusionSpan(e: Exclusion): { from: number; to: number } {
  return { from: instantOfWall(e.timeZone, wallOf(e.from) as number), to: instantOfWall(e.timeZone, wallOf(e.to) as number) };
}

export function parseExclusion(raw: unknown, where: string): Exclusion {
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) throw bad(where, 'must be a mapping with from, to, timeZone');
  const r = raw as Record<string, unknown>;
  const unknown = Object.keys(r).find((k) => !['from', 'to', 'timeZone', 'scope', 'reason'].includes(k));
  if (unknown !== undefined) throw bad(`${where}.${unknown}`, 'is not a known key (from, to, timeZone, scope, reason)');
  for (const k of ['from', 'to'] as const)
    if (wallOf(r[k]) === undefined)
      throw bad(`${where}.${k}`, `must be a date or date and time, 2026-12-20 or 2026-12-20T18:00, got ${JSON.stringify(r[k])}`);
  const timeZone = parseTimeZone(r.timeZone ?? 'UTC', `${where}.timeZone`);
  const scope = r.scope ?? 'all';
  if (!(EXCLUSION_SCOPES as readonly unknown[]).includes(scope))
    throw bad(`${where}.scope`, `must be all or minor, got ${JSON.stringify(scope)}`);
  if (r.reason !== undefined && (typeof r.reason !== 'string' || r.reason.length > 200))
    throw bad(`${where}.reason`, 'must be text of at most 200 characters');
  const e: Exclusion = {
    from: r.from as string,
    to: r.to as string,
    timeZone,
    scope: scope as ExclusionScope,
    ...(r.reason ? { reason: r.reason as string } : {}),
  };
  const span = exclusionSpan(e);
  if (span.to <= span.from) throw bad(`${where}.to`, `${e.to} is not after from ${e.from}`);
  return e;
}

/** `exclusions:` as written (absent: none). */
export function parseExclusions(raw: unknown, where = 'exclusions'): Exclusion[] {
  if (raw === undefined || raw === null) return [];
  if (!Array.isArray(raw)) throw bad(where, 'must be a list of periods');
  return raw.map((e, i) => parseExclusion(e, `${where}[${i}]`));
}

/** `--exclusion FROM..TO[:scope]`, wall times in `timeZone` (the schedule's). */
export function parseExclusionFlag(text: string, timeZone = 'UTC'): Exclusion {
  const m = /^([^.]+)\.\.([^.]+?)(?::(all|minor))?$/.exec(text);
  if (!m)
    throw new RuleError(
      'InvalidPolicy',
      `--exclusion must be FROM..TO[:all|minor] (2026-12-20..2027-01-05:minor), got ${JSON.stringify(text)}`,
    );
  try {
    return parseExclusion({ from: m[1], to: m[2], timeZone, scope: m[3] ?? 'all' }, '--exclusion');
  } catch (err) {
    if (err instanceof RuleError) throw new RuleError('InvalidPolicy', err.message.replace(/^--exclusion\.(\w+)/, '--exclusion $1'));
    throw err;
  }
}

/** The exclusion holding a run at `now` (the one that ends last), or undefined. `minor`: the run moves to another minor. */
export function exclusionAt(
  exclusions: readonly Exclusion[],
  now: number,
  minor: boolean,
): { exclusion: Exclusion; until: number } | undefined {
  let found: { exclusion: Exclusion; until: number } | undefined;
  for (const e of exclusions) {
    if (e.scope === 'minor' && !minor) continue;
    const { from, to } = exclusionSpan(e);
    if (now >= from && now < to && (!found || to > found.until)) found = { exclusion: e, until: to };
  }
  return found;
}

/** `2026-12-20..2027-01-05 Europe/Berlin (minor: change freeze)`. */
export const describeExclusion = (e: Exclusion): string =>
  `${e.from}..${e.to} ${e.timeZone} (${e.scope}${e.reason ? `: ${e.reason}` : ''})`;

/** Whether going from `from` to `to` changes the minor (what a `minor` exclusion holds). */
export const changesMinor = (from: string, to: string): boolean => minorOf(parseVersion(from)) !== minorOf(parseVersion(to));
