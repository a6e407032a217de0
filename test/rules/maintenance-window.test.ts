import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  describeWindow,
  insideWindow,
  parseMaintenanceWindow,
  parseMaintenanceWindows,
  RuleError,
  windowAt,
  type MaintenanceWindow,
  type Weekday,
} from '../../rules/index.js';

const w = (days: Weekday[], start: string, end: string, timeZone = 'UTC'): MaintenanceWindow => ({ days, start, end, timeZone });
const ms = (iso: string) => Date.parse(iso);
const iso = (t: number) => new Date(t).toISOString();

// Dates: 2025-03-29 is a Saturday, 2025-03-30 the last Sunday of March (Europe/Berlin: 02:00 CET →
// 03:00 CEST, at 01:00Z), 2025-03-31 a Monday, 2025-10-26 the last Sunday of October (03:00 CEST →
// 02:00 CET, at 01:00Z), 2025-03-09 the second Sunday of March (America/New_York: 02:00 EST → 03:00 EDT).
interface Case {
  name: string;
  windows: MaintenanceWindow[];
  at: string;
  open: boolean;
  /** The opening `at` is in (open) or the next one (closed), as UTC instants. */
  opensAt: string;
  closesAt: string;
}

const office = w(['Mon', 'Tue', 'Wed', 'Thu', 'Fri'], '09:00', '17:00');
const friNight = w(['Fri'], '22:00', '02:00');
const cases: Case[] = [
  {
    name: 'inside a weekday window',
    windows: [office],
    at: '2025-03-31T10:00:00Z',
    open: true,
    opensAt: '2025-03-31T09:00:00Z',
    closesAt: '2025-03-31T17:00:00Z',
  },
  {
    name: 'the start is inside',
    windows: [office],
    at: '2025-03-31T09:00:00Z',
    open: true,
    opensAt: '2025-03-31T09:00:00Z',
    closesAt: '2025-03-31T17:00:00Z',
  },
  {
    name: 'the end is outside: the next day opens',
    windows: [office],
    at: '2025-03-31T17:00:00Z',
    open: false,
    opensAt: '2025-04-01T09:00:00Z',
    closesAt: '2025-04-01T17:00:00Z',
  },
  {
    name: 'a weekend waits for Monday',
    windows: [office],
    at: '2025-03-29T10:00:00Z',
    open: false,
    opensAt: '2025-03-31T09:00:00Z',
    closesAt: '2025-03-31T17:00:00Z',
  },
  {
    name: 'one second before the start',
    windows: [office],
    at: '2025-03-31T08:59:59Z',
    open: false,
    opensAt: '2025-03-31T09:00:00Z',
    closesAt: '2025-03-31T17:00:00Z',
  },
  {
    name: 'seconds in the times (a test clock)',
    windows: [w(['Mon'], '10:00:05', '10:00:25')],
    at: '2025-03-31T10:00:04.999Z',
    open: false,
    opensAt: '2025-03-31T10:00:05Z',
    closesAt: '2025-03-31T10:00:25Z',
  },
  {
    name: 'a window over midnight is open after midnight: it belongs to the day it opened',
    windows: [friNight],
    at: '2025-03-29T01:00:00Z',
    open: true,
    opensAt: '2025-03-28T22:00:00Z',
    closesAt: '2025-03-29T02:00:00Z',
  },
  {
    name: 'a window over midnight is closed the evening of a day it is not on',
    windows: [friNight],
    at: '2025-03-29T22:30:00Z',
    open: false,
    opensAt: '2025-04-04T22:00:00Z',
    closesAt: '2025-04-05T02:00:00Z',
  },
  {
    name: 'a window over midnight is open before midnight',
    windows: [friNight],
    at: '2025-03-28T23:59:59Z',
    open: true,
    opensAt: '2025-03-28T22:00:00Z',
    closesAt: '2025-03-29T02:00:00Z',
  },
  {
    name: 'an end of 24:00 closes at midnight',
    windows: [w(['Mon'], '20:00', '24:00')],
    at: '2025-03-31T23:59:59Z',
    open: true,
    opensAt: '2025-03-31T20:00:00Z',
    closesAt: '2025-04-01T00:00:00Z',
  },
  {
    name: 'an end of 00:00 closes at midnight too',
    windows: [w(['Mon'], '20:00', '00:00')],
    at: '2025-04-01T00:00:00Z',
    open: false,
    opensAt: '2025-04-07T20:00:00Z',
    closesAt: '2025-04-08T00:00:00Z',
  },
  {
    name: 'a week ahead: Sunday night seen from Wednesday',
    windows: [w(['Sun'], '23:00', '01:00')],
    at: '2025-04-02T12:00:00Z',
    open: false,
    opensAt: '2025-04-06T23:00:00Z',
    closesAt: '2025-04-07T01:00:00Z',
  },
  {
    name: 'the same window a week later, from just after it closed',
    windows: [w(['Sun'], '23:00', '01:00')],
    at: '2025-04-07T01:00:00Z',
    open: false,
    opensAt: '2025-04-13T23:00:00Z',
    closesAt: '2025-04-14T01:00:00Z',
  },
  // Time zones.
  {
    name: 'a half-hour zone (Asia/Kolkata, +05:30)',
    windows: [w(['Mon'], '09:00', '10:00', 'Asia/Kolkata')],
    at: '2025-03-31T03:00:00Z',
    open: false,
    opensAt: '2025-03-31T03:30:00Z',
    closesAt: '2025-03-31T04:30:00Z',
  },
  {
    name: 'the local day counts, not the UTC day (Asia/Tokyo Monday 01:00 is Sunday in UTC)',
    windows: [w(['Mon'], '01:00', '03:00', 'Asia/Tokyo')],
    at: '2025-03-30T16:30:00Z',
    open: true,
    opensAt: '2025-03-30T16:00:00Z',
    closesAt: '2025-03-30T18:00:00Z',
  },
  {
    name: 'Berlin in winter is UTC+1',
    windows: [w(['Sat'], '02:00', '06:00', 'Europe/Berlin')],
    at: '2025-03-29T00:00:00Z',
    open: false,
    opensAt: '2025-03-29T01:00:00Z',
    closesAt: '2025-03-29T05:00:00Z',
  },
  {
    name: 'Berlin in summer is UTC+2',
    windows: [w(['Sat'], '02:00', '06:00', 'Europe/Berlin')],
    at: '2025-04-05T00:00:00Z',
    open: true,
    opensAt: '2025-04-05T00:00:00Z',
    closesAt: '2025-04-05T04:00:00Z',
  },
  // DST changes, Europe/Berlin.
  {
    name: 'spring forward inside a window: 01:30 CET to 03:30 CEST is one hour',
    windows: [w(['Sun'], '01:30', '03:30', 'Europe/Berlin')],
    at: '2025-03-30T01:15:00Z',
    open: true,
    opensAt: '2025-03-30T00:30:00Z',
    closesAt: '2025-03-30T01:30:00Z',
  },
  {
    name: 'spring forward: a start in the skipped hour opens one gap later (02:30 → 03:30 CEST)',
    windows: [w(['Sun'], '02:30', '04:00', 'Europe/Berlin')],
    at: '2025-03-30T01:00:00Z',
    open: false,
    opensAt: '2025-03-30T01:30:00Z',
    closesAt: '2025-03-30T02:00:00Z',
  },
  {
    name: 'fall back inside a window: 02:30 (the first, CEST) to 03:30 CET is two hours, never closed between',
    windows: [w(['Sun'], '02:30', '03:30', 'Europe/Berlin')],
    at: '2025-10-26T01:45:00Z',
    open: true,
    opensAt: '2025-10-26T00:30:00Z',
    closesAt: '2025-10-26T02:30:00Z',
  },
  {
    name: 'fall back: a window ending in the repeated hour ends at its first pass',
    windows: [w(['Sun'], '01:00', '02:30', 'Europe/Berlin')],
    at: '2025-10-26T01:15:00Z',
    open: false,
    opensAt: '2025-11-02T00:00:00Z',
    closesAt: '2025-11-02T01:30:00Z',
  },
  {
    name: 'the week after the change uses the new offset',
    windows: [w(['Sun'], '02:30', '03:30', 'Europe/Berlin')],
    at: '2025-10-27T00:00:00Z',
    open: false,
    opensAt: '2025-11-02T01:30:00Z',
    closesAt: '2025-11-02T02:30:00Z',
  },
  {
    name: 'a window over midnight across the spring change (Sat 22:00 CET → Sun 04:00 CEST is five hours)',
    windows: [w(['Sat'], '22:00', '04:00', 'Europe/Berlin')],
    at: '2025-03-30T01:59:59Z',
    open: true,
    opensAt: '2025-03-29T21:00:00Z',
    closesAt: '2025-03-30T02:00:00Z',
  },
  {
    name: 'America/New_York spring forward (second Sunday of March)',
    windows: [w(['Sun'], '01:00', '05:00', 'America/New_York')],
    at: '2025-03-09T08:59:00Z',
    open: true,
    opensAt: '2025-03-09T06:00:00Z',
    closesAt: '2025-03-09T09:00:00Z',
  },
  // Several windows.
  {
    name: 'two windows the same day: between them, the second is next',
    windows: [w(['Mon'], '10:00', '11:00'), w(['Mon'], '12:00', '13:00')],
    at: '2025-03-31T11:30:00Z',
    open: false,
    opensAt: '2025-03-31T12:00:00Z',
    closesAt: '2025-03-31T13:00:00Z',
  },
  {
    name: 'overlapping windows count as one opening',
    windows: [w(['Sat'], '02:00', '04:00'), w(['Sat'], '03:00', '06:00')],
    at: '2025-03-29T02:30:00Z',
    open: true,
    opensAt: '2025-03-29T02:00:00Z',
    closesAt: '2025-03-29T06:00:00Z',
  },
  {
    name: 'touching windows in two zones count as one opening',
    windows: [w(['Sat'], '02:00', '04:00'), w(['Sat'], '05:00', '07:00', 'Europe/Berlin')],
    at: '2025-03-29T03:59:00Z',
    open: true,
    opensAt: '2025-03-29T02:00:00Z',
    closesAt: '2025-03-29T06:00:00Z',
  },
  {
    name: 'the earliest of several next openings, whichever window is listed first',
    windows: [w(['Wed'], '01:00', '02:00'), w(['Tue'], '23:00', '23:30', 'Europe/Berlin')],
    at: '2025-03-31T12:00:00Z',
    open: false,
    opensAt: '2025-04-01T21:00:00Z',
    closesAt: '2025-04-01T21:30:00Z',
  },
  {
    name: 'whole days back to back: Mon and Tue 00:00–24:00 close Wednesday at midnight',
    windows: [w(['Mon', 'Tue'], '00:00', '24:00')],
    at: '2025-03-31T05:00:00Z',
    open: true,
    opensAt: '2025-03-31T00:00:00Z',
    closesAt: '2025-04-02T00:00:00Z',
  },
];

describe('windowAt: is now inside a maintenance window, and when the next one opens or the current one closes', () => {
  for (const c of cases) {
    it(c.name, () => {
      const v = windowAt(c.windows, ms(c.at));
      assert.ok(v, 'a verdict for a non-empty list');
      assert.deepEqual(
        { open: v.open, opensAt: iso(v.opensAt), closesAt: iso(v.closesAt) },
        { open: c.open, opensAt: new Date(c.opensAt).toISOString(), closesAt: new Date(c.closesAt).toISOString() },
      );
      assert.equal(insideWindow(c.windows, ms(c.at)), c.open);
    });
  }

  it('no windows: no verdict, and always inside (nothing to wait for)', () => {
    assert.equal(windowAt([], ms('2025-03-31T10:00:00Z')), undefined);
    assert.equal(insideWindow([], ms('2025-03-31T10:00:00Z')), true);
  });

  it('walking a week two minutes at a time, open exactly between each opening and its close', () => {
    const windows = [w(['Sat', 'Sun'], '22:00', '03:00', 'Europe/Berlin'), w(['Wed'], '12:00:30', '12:05:30')];
    let opened = 0;
    let wasOpen = false;
    for (let t = ms('2025-03-24T03:00:00Z'); t < ms('2025-04-01T00:00:00Z'); t += 120_000) {
      const v = windowAt(windows, t);
      assert.ok(v);
      assert.ok(v.opensAt < v.closesAt);
      if (v.open) assert.ok(v.opensAt <= t && t < v.closesAt, iso(t));
      else assert.ok(v.opensAt > t, `${iso(t)}: next opening ${iso(v.opensAt)} is in the future`);
      if (v.open && !wasOpen) opened++;
      wasOpen = v.open;
    }
    // Wed 12:00:30, Sat night, Sun night (which spans the spring change).
    assert.equal(opened, 3);
  });
});

describe('parseMaintenanceWindow(s): the configuration is checked, one line per problem', () => {
  it('reads days as short or full names in any case, sorted and without repeats', () => {
    assert.deepEqual(
      parseMaintenanceWindow({ days: ['sunday', 'SAT', 'Sat', 'mon'], start: '02:00', end: '06:00:30', timeZone: 'Europe/Berlin' }),
      { days: ['Mon', 'Sat', 'Sun'], start: '02:00', end: '06:00:30', timeZone: 'Europe/Berlin' },
    );
  });

  it('an absent list is no windows; a list is read in order', () => {
    assert.deepEqual(parseMaintenanceWindows(undefined), []);
    assert.deepEqual(parseMaintenanceWindows([{ days: ['Fri'], start: '22:00', end: '02:00', timeZone: 'UTC' }]).map(describeWindow), [
      'Fri 22:00–02:00 UTC',
    ]);
  });

  const refused: [string, unknown, RegExp][] = [
    [
      'an unknown day',
      { days: ['Mo'], start: '02:00', end: '04:00', timeZone: 'UTC' },
      /^maintenanceWindows\[0\]: unknown day "Mo" \(Mon, Tue, Wed, Thu, Fri, Sat, Sun\)$/,
    ],
    ['a day that is not a name', { days: [1], start: '02:00', end: '04:00', timeZone: 'UTC' }, /unknown day 1 /],
    [
      'days that are not a list',
      { days: 'Sat', start: '02:00', end: '04:00', timeZone: 'UTC' },
      /days must be a list such as \[Sat, Sun\]$/,
    ],
    [
      'no days',
      { days: [], start: '02:00', end: '04:00', timeZone: 'UTC' },
      /^maintenanceWindows\[0\]: empty window: days is an empty list$/,
    ],
    [
      'start equal to end',
      { days: ['Sat'], start: '02:00', end: '02:00:00', timeZone: 'UTC' },
      /empty window: start and end are both 02:00$/,
    ],
    [
      'an hour without its leading zero',
      { days: ['Sat'], start: '2:00', end: '04:00', timeZone: 'UTC' },
      /^maintenanceWindows\[0\] start: bad time "2:00": expected HH:MM or HH:MM:SS from 00:00 to 23:59:59$/,
    ],
    ['minute 60', { days: ['Sat'], start: '02:60', end: '04:00', timeZone: 'UTC' }, /start: bad time "02:60"/],
    ['second 60', { days: ['Sat'], start: '02:00', end: '04:00:60', timeZone: 'UTC' }, /end: bad time "04:00:60".*\(or 24:00\)$/],
    ['hour 25', { days: ['Sat'], start: '02:00', end: '25:00', timeZone: 'UTC' }, /end: bad time "25:00"/],
    ['24:00 as a start', { days: ['Sat'], start: '24:00', end: '04:00', timeZone: 'UTC' }, /start: bad time "24:00"/],
    [
      'a time as a number (YAML reads 02:00 unquoted as a string, 0200 as a number)',
      { days: ['Sat'], start: 200, end: '04:00', timeZone: 'UTC' },
      /start: bad time 200/,
    ],
    ['no start', { days: ['Sat'], end: '04:00', timeZone: 'UTC' }, /start: bad time undefined/],
    [
      'an unknown time zone',
      { days: ['Sat'], start: '02:00', end: '04:00', timeZone: 'Europe/Atlantis' },
      /^maintenanceWindows\[0\]: unknown time zone "Europe\/Atlantis" \(an IANA name such as Europe\/Berlin or UTC\)$/,
    ],
    ['no time zone', { days: ['Sat'], start: '02:00', end: '04:00' }, /timeZone is required/],
    [
      'an offset instead of a zone name',
      { days: ['Sat'], start: '02:00', end: '04:00', timeZone: '+02:00:99' },
      /unknown time zone "\+02:00:99"/,
    ],
    [
      'an unknown key',
      { days: ['Sat'], start: '02:00', end: '04:00', timeZone: 'UTC', zone: 'UTC' },
      /unknown key zone \(known: days, start, end, timeZone\)$/,
    ],
    [
      'a window that is not a mapping',
      'Sat 02:00-04:00',
      /^maintenanceWindows\[0\]: must be a mapping with days, start, end and timeZone$/,
    ],
  ];
  for (const [name, raw, message] of refused) {
    it(`refuses ${name}`, () => {
      assert.throws(
        () => parseMaintenanceWindows([raw]),
        (err: unknown) => {
          assert.ok(err instanceof RuleError);
          assert.equal(err.code, 'InvalidPolicy');
          assert.match(err.message, message);
          assert.ok(!err.message.includes('\n'), 'one line');
          return true;
        },
      );
    });
  }

  it('refuses a list that is not a list, and names the window that is wrong', () => {
    assert.throws(() => parseMaintenanceWindows({ days: ['Sat'] }), /maintenanceWindows: must be a list of windows$/);
    const good = { days: ['Sat'], start: '02:00', end: '04:00', timeZone: 'UTC' };
    assert.throws(
      () => parseMaintenanceWindows([good, { ...good, days: ['Caturday'] }]),
      /maintenanceWindows\[1\]: unknown day "Caturday"/,
    );
  });
});
