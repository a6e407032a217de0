import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { auditPdb, auditPdbs, selectorMatches, type LabelSelector, type PdbFacts } from '../../rules/index.js';

const pdb = (facts: Partial<PdbFacts>): PdbFacts => ({
  name: 'web',
  namespace: 'shop',
  coveredPods: 3,
  expectedPods: 3,
  disruptionsAllowed: 1,
  ...facts,
});

interface Case {
  name: string;
  facts: PdbFacts;
  /** Expected findings as `severity/ruleId`; empty means the PDB lets drains through. */
  expect: string[];
}

const cases: Case[] = [
  // maxUnavailable
  { name: 'maxUnavailable 0 blocks', facts: pdb({ maxUnavailable: 0, disruptionsAllowed: 0 }), expect: ['error/max-unavailable-zero'] },
  {
    name: 'maxUnavailable "0%" blocks',
    facts: pdb({ maxUnavailable: '0%', disruptionsAllowed: 0 }),
    expect: ['error/max-unavailable-zero'],
  },
  {
    name: 'maxUnavailable 0 blocks even with no pods yet',
    facts: pdb({ maxUnavailable: 0, coveredPods: 0, expectedPods: 0 }),
    expect: ['error/max-unavailable-zero'],
  },
  { name: 'maxUnavailable 1 lets one through', facts: pdb({ maxUnavailable: 1 }), expect: [] },
  { name: 'maxUnavailable "10%" of 3 rounds up to 1', facts: pdb({ maxUnavailable: '10%' }), expect: [] },

  // minAvailable
  { name: 'minAvailable = replicas blocks', facts: pdb({ minAvailable: 3, disruptionsAllowed: 0 }), expect: ['error/min-available-all'] },
  { name: 'minAvailable > replicas blocks', facts: pdb({ minAvailable: 5, disruptionsAllowed: 0 }), expect: ['error/min-available-all'] },
  { name: 'minAvailable "100%" blocks', facts: pdb({ minAvailable: '100%', disruptionsAllowed: 0 }), expect: ['error/min-available-all'] },
  {
    name: 'minAvailable "100%" blocks with no pods yet',
    facts: pdb({ minAvailable: '100%', coveredPods: 0, expectedPods: 0 }),
    expect: ['error/min-available-all'],
  },
  { name: 'minAvailable "90%" of 3 rounds up to 3 and blocks', facts: pdb({ minAvailable: '90%' }), expect: ['error/min-available-all'] },
  { name: 'minAvailable "50%" of 3 rounds up to 2', facts: pdb({ minAvailable: '50%' }), expect: [] },
  { name: 'minAvailable replicas-1 lets one through', facts: pdb({ minAvailable: 2 }), expect: [] },
  { name: 'minAvailable as a digits string is a count', facts: pdb({ minAvailable: '3' }), expect: ['error/min-available-all'] },
  {
    name: 'minAvailable counts expected pods when some are missing',
    facts: pdb({ minAvailable: 3, coveredPods: 2, expectedPods: 4, disruptionsAllowed: 0 }),
    expect: ['warning/no-disruptions-allowed'],
  },
  {
    name: 'minAvailable 1 of a PDB covering nothing blocks nothing',
    facts: pdb({ minAvailable: 1, coveredPods: 0, expectedPods: 0, disruptionsAllowed: 0 }),
    expect: [],
  },
  { name: 'minAvailable 0 never blocks', facts: pdb({ minAvailable: 0 }), expect: [] },

  // disruptionsAllowed now
  {
    name: 'healthy budget exhausted now: warning',
    facts: pdb({ maxUnavailable: 1, disruptionsAllowed: 0 }),
    expect: ['warning/no-disruptions-allowed'],
  },
  { name: 'unobserved status is not judged', facts: pdb({ maxUnavailable: 1, disruptionsAllowed: undefined }), expect: [] },
  {
    name: 'a blocker is not repeated as a warning',
    facts: pdb({ minAvailable: 3, disruptionsAllowed: 0 }),
    expect: ['error/min-available-all'],
  },

  // unreadable
  { name: 'unreadable percentage', facts: pdb({ maxUnavailable: '150%' }), expect: ['warning/unreadable-budget'] },
  { name: 'unreadable text', facts: pdb({ minAvailable: 'half' }), expect: ['warning/unreadable-budget'] },
];

describe('auditPdb', () => {
  for (const c of cases) {
    it(c.name, () => {
      assert.deepEqual(
        auditPdb(c.facts).map((f) => `${f.severity}/${f.ruleId}`),
        c.expect,
      );
    });
  }

  it('names the PDB, says why with the numbers and what the operator can do, on one line', () => {
    const [f] = auditPdb(pdb({ minAvailable: 3, disruptionsAllowed: 0 }));
    assert.ok(f);
    assert.equal(f.namespace, 'shop');
    assert.equal(f.name, 'web');
    assert.match(f.reason, /minAvailable 3 is at least the 3 pod\(s\)/);
    assert.match(f.remedy, /scale the workload above 3 replica\(s\), lower minAvailable below 3/);
    assert.match(f.message, /^PodDisruptionBudget shop\/web: minAvailable 3 .*; scale/);
    assert.ok(!f.message.includes('\n'));

    const [pct] = auditPdb(pdb({ minAvailable: '90%' }));
    assert.match(pct?.reason ?? '', /minAvailable 90% \(3 of 3 pods\)/);
    const [zero] = auditPdb(pdb({ maxUnavailable: '0%' }));
    assert.match(zero?.remedy ?? '', /maxUnavailable to at least 1/);
  });
});

describe('auditPdbs', () => {
  it('keeps every finding, errors first, then by namespace and name', () => {
    const found = auditPdbs([
      pdb({ namespace: 'b', name: 'x', maxUnavailable: 1, disruptionsAllowed: 0 }),
      pdb({ namespace: 'b', name: 'a', maxUnavailable: 0 }),
      pdb({ namespace: 'a', name: 'z', minAvailable: '100%' }),
      pdb({ namespace: 'a', name: 'ok', maxUnavailable: 1 }),
    ]);
    assert.deepEqual(
      found.map((f) => `${f.severity} ${f.namespace}/${f.name}`),
      ['error a/z', 'error b/a', 'warning b/x'],
    );
  });
});

describe('selectorMatches', () => {
  const labels = { app: 'web', tier: 'front' };
  const table: [string, LabelSelector | undefined, Record<string, string> | undefined, boolean][] = [
    ['matchLabels subset', { matchLabels: { app: 'web' } }, labels, true],
    ['matchLabels mismatch', { matchLabels: { app: 'api' } }, labels, false],
    ['matchLabels on a pod without labels', { matchLabels: { app: 'web' } }, undefined, false],
    ['empty selector selects all', {}, labels, true],
    ['absent selector selects none', undefined, labels, false],
    ['In', { matchExpressions: [{ key: 'tier', operator: 'In', values: ['front', 'back'] }] }, labels, true],
    ['In, key missing', { matchExpressions: [{ key: 'zone', operator: 'In', values: ['a'] }] }, labels, false],
    ['NotIn', { matchExpressions: [{ key: 'tier', operator: 'NotIn', values: ['back'] }] }, labels, true],
    ['NotIn, key missing matches', { matchExpressions: [{ key: 'zone', operator: 'NotIn', values: ['a'] }] }, labels, true],
    ['NotIn, value listed', { matchExpressions: [{ key: 'tier', operator: 'NotIn', values: ['front'] }] }, labels, false],
    ['Exists', { matchExpressions: [{ key: 'app', operator: 'Exists' }] }, labels, true],
    ['DoesNotExist', { matchExpressions: [{ key: 'app', operator: 'DoesNotExist' }] }, labels, false],
    [
      'labels and expressions are ANDed',
      { matchLabels: { app: 'web' }, matchExpressions: [{ key: 'tier', operator: 'In', values: ['back'] }] },
      labels,
      false,
    ],
    ['unknown operator selects nothing', { matchExpressions: [{ key: 'app', operator: 'Gt', values: ['1'] }] }, labels, false],
  ];
  for (const [name, selector, podLabels, expected] of table) {
    it(name, () => assert.equal(selectorMatches(selector, podLabels), expected));
  }
});
