import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { describeTarget, parseTarget, planHops, planUpgrade, resolveTarget, RuleError } from '../../rules/index.js';

const AVAILABLE = [
  '1.32.0',
  '1.32.4',
  '1.32.9',
  '1.33.0',
  '1.33.5',
  '1.33.7',
  '1.33.8-rc.0',
  '1.34.0-rc.1',
  '1.34.0',
  '1.34.2',
  '1.35.0-rc.0',
];

describe('target expressions: parseTarget', () => {
  const rows: [string, unknown, string][] = [
    ['latest-patch', 'latest-patch', 'expression'],
    ['next-minor', 'next-minor', 'expression'],
    ['an exact version still', '1.34.2', 'exact'],
    ['a minor still', '1.34', 'minor'],
  ];
  for (const [name, input, kind] of rows) it(name, () => assert.equal(parseTarget(input).kind, kind));

  const refused: unknown[] = ['latest', 'Latest-Patch', 'latest-patch ', 'next-major', 'next-minor;reboot', 'previous-minor', '', 42];
  for (const input of refused) {
    it(`refuses ${JSON.stringify(input)}, naming what it takes`, () =>
      assert.throws(
        () => parseTarget(input),
        (e: unknown) =>
          e instanceof RuleError &&
          e.code === 'InvalidVersion' &&
          /expected a version such as 1\.34\.2, a minor such as 1\.34, latest-patch or next-minor$/.test(e.message),
      ));
  }
});

describe('target expressions: resolveTarget against the cluster and the repository', () => {
  const rows: [string, string, string, { to: string; nothing?: RegExp }, (readonly string[])?][] = [
    ['latest-patch: the newest release of the current minor', 'latest-patch', '1.33.0', { to: '1.33.7' }],
    [
      'latest-patch never takes a pre-release',
      'latest-patch',
      '1.33.7',
      { to: '1.33.7', nothing: /^1\.33\.7 is already the newest 1\.33 release the repository offers$/ },
    ],
    ['latest-patch from a pre-release goes to its release line', 'latest-patch', '1.34.0-rc.1', { to: '1.34.2' }],
    [
      'latest-patch: a repository behind the cluster is nothing to do, never a downgrade',
      'latest-patch',
      '1.34.5',
      { to: '1.34.5', nothing: /already the newest 1\.34 release/ },
    ],
    [
      'latest-patch with no release of the minor at all',
      'latest-patch',
      '1.31.3',
      { to: '1.31.3', nothing: /already the newest 1\.31 release/ },
    ],
    ['next-minor: the newest release of minor + 1', 'next-minor', '1.32.4', { to: '1.33.7' }],
    ['next-minor from an old patch skips no minor', 'next-minor', '1.33.0', { to: '1.34.2' }],
    [
      'next-minor with only pre-releases of the next minor: nothing to do',
      'next-minor',
      '1.34.2',
      { to: '1.34.2', nothing: /^the repository offers no 1\.35\.x release$/ },
    ],
    ['next-minor with nothing at all after', 'next-minor', '1.34.2', { to: '1.34.2', nothing: /no 1\.35\.x release/ }, ['1.34.2']],
    ['numeric, not lexical, patch order', 'latest-patch', '1.34.2', { to: '1.34.10' }, ['1.34.9', '1.34.10', '1.34.2']],
    ['an exact version is returned as asked', '1.34.2', '1.32.4', { to: '1.34.2' }],
    ['a minor is returned as asked', '1.34', '1.32.4', { to: '1.34' }],
  ];
  for (const [name, asked, from, want, available] of rows) {
    it(name, () => {
      const r = resolveTarget(asked, from, available ?? AVAILABLE);
      assert.equal(r.asked, asked);
      assert.equal(r.to, want.to);
      if (want.nothing) assert.match(r.nothingToDo ?? '(none)', want.nothing);
      else assert.equal(r.nothingToDo, undefined);
    });
  }

  it('refuses a repository list with a non-version, naming the entry', () =>
    assert.throws(() => resolveTarget('latest-patch', '1.33.0', ['1.33.1', 'latest']), /available version #2/));
});

describe('target expressions: the hops they plan', () => {
  const rows: [string, string, string, string[]][] = [
    ['latest-patch: one hop within the minor', '1.33.0', 'latest-patch', ['1.33.7']],
    ['latest-patch already there: zero hops, not an error', '1.33.7', 'latest-patch', []],
    ['next-minor: one hop to the next minor only', '1.32.4', 'next-minor', ['1.33.7']],
    ['next-minor with no release yet: zero hops', '1.34.2', 'next-minor', []],
    // The cluster's own version need not be offered for an expression with nothing to do.
    ['next-minor at a version the repository lost', '1.34.1', 'next-minor', []],
  ];
  for (const [name, from, to, hops] of rows) it(name, () => assert.deepEqual(planHops({ from, to, available: AVAILABLE }), hops));
});

describe('target expressions: the plan says what they became', () => {
  const inventory = {
    apiservers: [{ node: 'cp1', version: '1.33.5' }],
    kubelets: [
      { node: 'cp1', version: '1.33.5' },
      { node: 'w1', version: '1.33.5' },
    ],
  };
  it('latest-patch names the version in the plan', () => {
    const plan = planUpgrade({ inventory, to: 'latest-patch', available: AVAILABLE });
    assert.deepEqual(plan.hops, ['1.33.7']);
    assert.deepEqual(plan.target, { asked: 'latest-patch', to: '1.33.7' });
    assert.equal(describeTarget(plan.target), 'latest-patch (1.33.7)');
  });
  it('nothing to do is a plan with no hop and a reason', () => {
    const plan = planUpgrade({ inventory, to: 'next-minor', available: ['1.33.5', '1.34.0-rc.1'] });
    assert.deepEqual(plan.hops, []);
    assert.equal(describeTarget(plan.target), 'next-minor: the repository offers no 1.34.x release');
    assert.equal(plan.skew.compliant, true);
  });
  it('an exact target describes itself', () => {
    const plan = planUpgrade({ inventory, to: '1.34', available: AVAILABLE });
    assert.deepEqual(plan.hops, ['1.34.2']);
    assert.equal(describeTarget(plan.target), '1.34');
  });
});
