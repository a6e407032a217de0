import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { changesMinor, exclusionAt, exclusionSpan, parseExclusionFlag, parseExclusions, RuleError } from '../../rules/index.js';

const ms = (iso: string) => Date.parse(iso);

const BAD: { name: string; raw: unknown; error: RegExp }[] = [
  {
    name: 'an end before its start',
    raw: [{ from: '2027-01-05', to: '2026-12-20', timeZone: 'Europe/Berlin' }],
    error: /^exclusions\[0\]\.to 2026-12-20 is not after from 2027-01-05$/,
  },
  {
    name: 'a day that does not exist',
    raw: [{ from: '2026-02-30', to: '2026-03-02' }],
    error: /^exclusions\[0\]\.from must be a date or date and time, 2026-12-20 or 2026-12-20T18:00, got "2026-02-30"$/,
  },
  {
    name: 'an unknown zone',
    raw: [{ from: '2026-12-20', to: '2026-12-21', timeZone: 'Europe/Atlantis' }],
    error: /^exclusions\[0\]\.timeZone: unknown time zone "Europe\/Atlantis"/,
  },
  {
    name: 'an unknown scope',
    raw: [{ from: '2026-12-20', to: '2026-12-21', scope: 'patch' }],
    error: /^exclusions\[0\]\.scope must be all or minor, got "patch"$/,
  },
  { name: 'an unknown key', raw: [{ from: '2026-12-20', until: '2026-12-21' }], error: /^exclusions\[0\]\.until is not a known key/ },
  { name: 'not a list', raw: { from: '2026-12-20' }, error: /^exclusions must be a list of periods$/ },
];

describe('exclusions: blackout dates', () => {
  for (const c of BAD) {
    it(`refuses ${c.name} in one line naming the key`, () => {
      assert.throws(
        () => parseExclusions(c.raw),
        (err: unknown) => err instanceof RuleError && c.error.test(err.message) && !err.message.includes('\n'),
      );
    });
  }

  it('reads its dates as wall times in its zone, the end excluded', () => {
    const [e] = parseExclusions([{ from: '2026-12-20', to: '2027-01-05T06:00', timeZone: 'Europe/Berlin', reason: 'change freeze' }]);
    assert.ok(e);
    assert.deepEqual(exclusionSpan(e), { from: ms('2026-12-19T23:00:00Z'), to: ms('2027-01-05T05:00:00Z') });
    assert.equal(exclusionAt([e], ms('2026-12-19T22:59:59Z'), true), undefined);
    assert.deepEqual(exclusionAt([e], ms('2026-12-19T23:00:00Z'), true)?.until, ms('2027-01-05T05:00:00Z'));
    assert.equal(exclusionAt([e], ms('2027-01-05T05:00:00Z'), true), undefined);
  });

  it('scope minor holds only a run that changes the minor; of two, the one that ends last', () => {
    const ex = parseExclusions([
      { from: '2026-12-20', to: '2026-12-24', scope: 'minor' },
      { from: '2026-12-22', to: '2026-12-23', scope: 'all' },
    ]);
    const at = ms('2026-12-21T12:00:00Z');
    assert.equal(exclusionAt(ex, at, false), undefined, 'a patch upgrade goes');
    assert.equal(exclusionAt(ex, at, true)?.until, ms('2026-12-24T00:00:00Z'));
    assert.equal(exclusionAt(ex, ms('2026-12-22T12:00:00Z'), false)?.until, ms('2026-12-23T00:00:00Z'));
    assert.equal(exclusionAt(ex, ms('2026-12-22T12:00:00Z'), true)?.until, ms('2026-12-24T00:00:00Z'));
    assert.equal(changesMinor('1.33.2', '1.33.7'), false);
    assert.equal(changesMinor('1.33.7', '1.34.2'), true);
  });

  it('--exclusion FROM..TO[:scope] in the schedule zone; a bad one is one line naming the flag', () => {
    assert.deepEqual(parseExclusionFlag('2026-12-24T18:00..2026-12-27:minor', 'America/New_York'), {
      from: '2026-12-24T18:00',
      to: '2026-12-27',
      timeZone: 'America/New_York',
      scope: 'minor',
    });
    assert.equal(parseExclusionFlag('2026-12-20..2027-01-05').scope, 'all');
    assert.throws(
      () => parseExclusionFlag('2027-01-05..2026-12-20'),
      /^RuleError: --exclusion to 2026-12-20 is not after from 2027-01-05$/,
    );
    assert.throws(() => parseExclusionFlag('next week'), /^RuleError: --exclusion must be FROM\.\.TO\[:all\|minor\]/);
  });
});
