import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { planHops, RuleError, type RuleErrorCode } from '../../rules/index.js';

const AVAILABLE = [
  '1.31.14',
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
  '1.35.0-alpha.1',
  '1.35.0-rc.0',
];

describe('planHops', () => {
  const ok: [string, string, string, string[], (readonly string[])?][] = [
    ['two minors to a minor target', '1.32.4', '1.34', ['1.33.7', '1.34.2']],
    ['two minors to an exact target', '1.32.4', '1.34.0', ['1.33.7', '1.34.0']],
    ['v-prefixed input alike', 'v1.32.4', 'v1.34', ['1.33.7', '1.34.2']],
    ['one minor', '1.33.0', '1.34', ['1.34.2']],
    ['patch upgrade within the minor', '1.34.0', '1.34', ['1.34.2']],
    ['exact patch within the minor', '1.32.0', '1.32.4', ['1.32.4']],
    ['already at the newest patch: zero hops', '1.34.2', '1.34', []],
    ['already at the exact target: zero hops', '1.34.2', '1.34.2', []],
    ['newer than anything in its minor: zero hops', '1.34.5', '1.34', [], ['1.34.2']],
    ['intermediate minor never takes a pre-release', '1.32.9', '1.34', ['1.33.7', '1.34.2']],
    ['pre-release taken when named exactly', '1.34.2', '1.35.0-rc.0', ['1.35.0-rc.0']],
    ['from a pre-release to its release', '1.34.0-rc.1', '1.34', ['1.34.2']],
    ['three minors', '1.31.14', '1.34', ['1.32.9', '1.33.7', '1.34.2']],
    ['order of the list does not matter', '1.32.4', '1.34', ['1.33.7', '1.34.2'], [...AVAILABLE].reverse()],
    ['newest patch is numeric, not lexical', '1.33.0', '1.34', ['1.34.10'], ['1.34.9', '1.34.10', '1.34.2']],
  ];
  for (const [name, from, to, hops, available] of ok) {
    it(name, () => assert.deepEqual(planHops({ from, to, available: available ?? AVAILABLE }), hops));
  }

  const refused: [string, string, string, RuleErrorCode, RegExp, (readonly string[])?][] = [
    ['downgrade of a minor', '1.34.2', '1.33', 'Downgrade', /refusing to downgrade 1\.34\.2 → 1\.33.*etcd snapshot/],
    ['downgrade of a patch', '1.34.2', '1.34.0', 'Downgrade', /refusing to downgrade 1\.34\.2 → 1\.34\.0/],
    [
      'missing intermediate minor',
      '1.32.4',
      '1.34',
      'MissingRelease',
      /no 1\.33\.x release is available, and minors cannot be skipped/,
      ['1.32.4', '1.34.2'],
    ],
    ['intermediate minor with only a pre-release', '1.32.4', '1.34', 'MissingRelease', /no 1\.33\.x release/, ['1.33.0-rc.1', '1.34.2']],
    [
      'target minor with only pre-releases',
      '1.34.2',
      '1.35',
      'MissingRelease',
      /no 1\.35\.x release is available \(pre-releases are used only when named exactly/,
    ],
    ['exact target not available', '1.33.0', '1.34.9', 'MissingRelease', /1\.34\.9 is not among the available versions/],
    ['across majors', '1.34.2', '2.0', 'UnsupportedMajor', /across major versions/],
    ['invalid from', '1.34', '1.35', 'InvalidVersion', /invalid Kubernetes version "1\.34"/],
    ['invalid to', '1.33.0', 'latest', 'InvalidVersion', /invalid target "latest"/],
    [
      'invalid available entry',
      '1.33.0',
      '1.34',
      'InvalidVersion',
      /available version #2: invalid Kubernetes version "1\.34\.x"/,
      ['1.34.1', '1.34.x'],
    ],
  ];
  for (const [name, from, to, code, message, available] of refused) {
    it(`refuses: ${name}`, () => {
      assert.throws(
        () => planHops({ from, to, available: available ?? AVAILABLE }),
        (err: unknown) => {
          assert.ok(err instanceof RuleError, String(err));
          assert.equal(err.code, code);
          assert.match(err.message, message);
          return true;
        },
      );
    });
  }

  it('refuses an available list that is not a list', () => {
    assert.throws(() => planHops({ from: '1.33.0', to: '1.34', available: '1.34.2' as unknown as string[] }), /must be a list/);
  });
});
