import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  etcdPatchHop,
  etcdPatchTarget,
  etcdTagVersion,
  judgeEtcdHealth,
  planEtcdPatch,
  type EtcdEndpointStatus,
  type EtcdMemberFacts,
} from '../../rules/etcd-patch.js';
import { RuleError } from '../../rules/rule-error.js';
import { gateFindings } from '../../rules/readiness/finding.js';
import { checkHopPrerequisites } from '../../rules/readiness/hop-prerequisites.js';

const m = (node: string, imageTag: string, leader = false): EtcdMemberFacts => ({ node, name: node, imageTag, leader });

describe('etcdTagVersion', () => {
  const CASES: [string | undefined, [number, number, number] | undefined][] = [
    ['3.5.24-0', [3, 5, 24]],
    ['v3.5.26', [3, 5, 26]],
    ['3.5.26_1', [3, 5, 26]],
    ['3.6.5-0', [3, 6, 5]],
    ['latest', undefined],
    ['3.5', undefined],
    [undefined, undefined],
  ];
  for (const [tag, want] of CASES) it(`${String(tag)} → ${String(want)}`, () => assert.deepEqual(etcdTagVersion(tag), want));
});

describe('etcdPatchTarget', () => {
  it('defaults to the newest known 3.5 image, at or past 3.5.26', () => {
    const v = etcdTagVersion(etcdPatchTarget());
    assert.ok(v && v[0] === 3 && v[1] === 5 && v[2] >= 26, String(v));
  });
  it('takes the configured tag of a 3.5 patch at or past 3.5.26', () => assert.equal(etcdPatchTarget('3.5.27-0'), '3.5.27-0'));
  for (const bad of ['3.5.25-0', '3.6.5-0', '3.4.30-0', 'latest', ''])
    it(`refuses the configured tag ${JSON.stringify(bad)}`, () =>
      assert.throws(
        () => etcdPatchTarget(bad),
        (e: unknown) => e instanceof RuleError && /etcd\.patchImageTag/.test(e.message),
      ));
});

describe('planEtcdPatch', () => {
  /** [case, members, target, moves as node order, unchanged nodes, refused nodes] */
  const CASES: [string, EtcdMemberFacts[], string, string[], string[], string[]][] = [
    [
      'followers by name first, the leader last',
      [m('cp-1', '3.5.24-0', true), m('cp-3', '3.5.24-0'), m('cp-2', '3.5.24-0')],
      '3.5.26-0',
      ['cp-2', 'cp-3', 'cp-1'],
      [],
      [],
    ],
    [
      'a leader named last whatever its name',
      [m('a', '3.5.24-0'), m('z', '3.5.24-0'), m('b', '3.5.24-0', true)],
      '3.5.26-0',
      ['a', 'z', 'b'],
      [],
      [],
    ],
    ['no leader known: by name', [m('cp-2', '3.5.24-0'), m('cp-1', '3.5.24-0')], '3.5.26-0', ['cp-1', 'cp-2'], [], []],
    [
      'a member already at the target stays; one past 3.5.26 but below the target moves',
      [m('cp-1', '3.5.26-0'), m('cp-2', '3.5.27-0', true), m('cp-3', '3.5.24-0')],
      '3.5.27-0',
      ['cp-1', 'cp-3'],
      ['cp-2'],
      [],
    ],
    ['a member on 3.6 stays', [m('cp-1', '3.6.5-0'), m('cp-2', '3.5.24-0')], '3.5.26-0', ['cp-2'], ['cp-1'], []],
    [
      'a 3.4 member or an unreadable tag cannot be patched',
      [m('cp-1', '3.4.30-0'), m('cp-2', 'latest'), m('cp-3', '3.5.24-0')],
      '3.5.26-0',
      ['cp-3'],
      [],
      ['cp-1', 'cp-2'],
    ],
  ];
  for (const [name, members, target, moves, unchanged, refused] of CASES) {
    it(name, () => {
      const plan = planEtcdPatch(members, target);
      assert.deepEqual(
        plan.moves.map((x) => x.node),
        moves,
      );
      assert.ok(plan.moves.every((x) => x.to === target));
      assert.deepEqual(plan.unchanged.map((x) => x.node).sort(), unchanged);
      assert.deepEqual(plan.refused.map((x) => x.node).sort(), refused);
    });
  }
});

describe('judgeEtcdHealth', () => {
  const members = [
    { id: '11', name: 'cp-1' },
    { id: '22', name: 'cp-2' },
    { id: '33', name: 'cp-3' },
  ];
  const up = (id: string, version: string, leader = '11'): EtcdEndpointStatus => ({
    endpoint: `https://${id}`,
    memberId: id,
    version,
    leader,
  });
  /** [case, statuses, expect, healthy, leader, problem pattern] */
  const CASES: [string, EtcdEndpointStatus[], { member: string; version: string } | undefined, boolean, string | undefined, RegExp?][] = [
    ['all up on one leader', [up('11', '3.5.24'), up('22', '3.5.24'), up('33', '3.5.24')], undefined, true, 'cp-1'],
    [
      'the moved member at the new version',
      [up('11', '3.5.24'), up('22', '3.5.26'), up('33', '3.5.24')],
      { member: 'cp-2', version: '3.5.26-0' },
      true,
      'cp-1',
    ],
    [
      'the moved member still old',
      [up('11', '3.5.24'), up('22', '3.5.24'), up('33', '3.5.24')],
      { member: 'cp-2', version: '3.5.26-0' },
      false,
      'cp-1',
      /cp-2 runs 3\.5\.24, not 3\.5\.26/,
    ],
    [
      'a member missing (quorum held, but not all up)',
      [up('11', '3.5.24'), up('22', '3.5.24')],
      undefined,
      false,
      'cp-1',
      /cp-3 does not answer/,
    ],
    [
      'an endpoint error',
      [up('11', '3.5.24'), up('22', '3.5.24'), up('33', '3.5.24'), { endpoint: 'https://x:2379', errors: ['context deadline exceeded'] }],
      undefined,
      false,
      'cp-1',
      /deadline/,
    ],
    [
      'no leader',
      [up('11', '3.5.24', '0'), up('22', '3.5.24', '0'), up('33', '3.5.24', '0')],
      undefined,
      false,
      undefined,
      /no member knows a leader/,
    ],
    [
      'split leaders',
      [up('11', '3.5.24', '11'), up('22', '3.5.24', '22'), up('33', '3.5.24', '11')],
      undefined,
      false,
      undefined,
      /2 different leaders/,
    ],
    [
      'a member reporting errors',
      [up('11', '3.5.24'), { ...up('22', '3.5.24'), errors: ['NOSPACE'] }, up('33', '3.5.24')],
      undefined,
      false,
      'cp-1',
      /NOSPACE/,
    ],
  ];
  for (const [name, statuses, expect, healthy, leader, problem] of CASES) {
    it(name, () => {
      const h = judgeEtcdHealth(members, statuses, expect);
      assert.equal(h.healthy, healthy, h.problems.join('; '));
      assert.equal(h.leader, leader);
      if (problem) assert.match(h.problems.join('; '), problem);
    });
  }
});

describe('etcdPatchHop', () => {
  it('is the first hop at or past 1.34', () => assert.equal(etcdPatchHop(['1.33.13', '1.34.4', '1.35.0']), '1.34.4'));
  it('is none before 1.34', () => assert.equal(etcdPatchHop(['1.33.13']), undefined));
});

describe('the etcd-version hold with --fix-prerequisites', () => {
  const facts = (tag: string) => ({
    nodes: [{ name: 'cp-1', role: 'control-plane' as const, etcdImageTag: tag }],
    now: '2026-12-02T08:00:00Z',
    runSeconds: 60,
  });
  it('a 3.5 member below 3.5.26 is fixable: held without the key, fixed with it', () => {
    const findings = checkHopPrerequisites(['1.34'], facts('3.5.24-0'));
    assert.equal(findings[0]?.fix?.step, 'etcd-patch');
    assert.equal(gateFindings(findings, []).held.length, 1);
    const fixing = gateFindings(findings, [], true);
    assert.deepEqual([fixing.held.length, fixing.fixed.length], [0, 1]);
  });
  it('a 3.4 member is not: it holds even with the key', () => {
    const findings = checkHopPrerequisites(['1.34'], facts('3.4.30-0'));
    assert.equal(findings[0]?.fix, undefined);
    assert.equal(gateFindings(findings, [], true).held.length, 1);
  });
});
