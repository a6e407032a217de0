import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { compareVersions, normalizeVersion, parseMinor, parseTarget, parseVersion, RuleError } from '../../rules/index.js';

describe('parseVersion', () => {
  const valid: [string, string][] = [
    ['1.33.2', '1.33.2'],
    ['v1.33.2', '1.33.2'],
    ['v1.34.0-rc.1', '1.34.0-rc.1'],
    ['1.35.0-alpha.1', '1.35.0-alpha.1'],
    ['1.9.10', '1.9.10'],
  ];
  for (const [input, expected] of valid) {
    it(`normalises ${input} to ${expected}`, () => assert.equal(normalizeVersion(input), expected));
  }

  it('reads major, minor, patch and pre-release', () => {
    assert.deepEqual(parseVersion('v1.34.0-rc.1'), { major: 1, minor: 34, patch: 0, pre: 'rc.1', text: '1.34.0-rc.1' });
    assert.equal(parseVersion('1.33.2').pre, undefined);
  });

  const invalid: unknown[] = [
    '',
    '1.33',
    '1.33.2.1',
    'V1.33.2',
    'vv1.33.2',
    ' 1.33.2',
    '1.33.2 ',
    '01.33.2',
    '1.033.2',
    '1.33.02',
    '1.33.x',
    'latest',
    '1.33.2-',
    '1.33.2-rc..1',
    '1.33.2+build.5',
    '1.33.2;reboot',
    '1.33.2 && rm -rf /',
    '$(id)',
    '1.33.2`id`',
    '1.33.2|sh',
    '1.33.2\n',
    "1.33.2'",
    '1.33.2-rc.1;id',
    '1.33.2-' + 'a'.repeat(80),
    33,
    null,
    undefined,
    {},
    ['1.33.2'],
  ];
  for (const input of invalid) {
    it(`rejects ${JSON.stringify(input) ?? String(input)} with a one-line message`, () => {
      assert.throws(
        () => parseVersion(input),
        (err: unknown) => {
          assert.ok(err instanceof RuleError);
          assert.equal(err.code, 'InvalidVersion');
          assert.match(err.message, /expected MAJOR\.MINOR\.PATCH/);
          assert.ok(!err.message.includes('\n'), 'message is one line');
          return true;
        },
      );
    });
  }

  it('never lets a shell metacharacter through, whatever the input', () => {
    const alphabet = 'v1.23-rc;$`|&<>()\'" \\\n*?!#~{}[]abc0';
    let seed = 7;
    for (let i = 0; i < 5000; i++) {
      let s = '';
      const len = 1 + (i % 14);
      for (let j = 0; j < len; j++) {
        seed = (seed * 1103515245 + 12345) % 2 ** 31;
        s += alphabet[seed % alphabet.length];
      }
      try {
        assert.match(parseVersion(s).text, /^[0-9A-Za-z.-]+$/);
      } catch (err) {
        if (!(err instanceof RuleError)) throw err;
      }
    }
  });
});

describe('parseMinor and parseTarget', () => {
  it('reads minors with or without v', () => {
    assert.equal(parseMinor('1.34').text, '1.34');
    assert.equal(parseMinor('v1.34').text, '1.34');
    assert.throws(() => parseMinor('1.34.1'), RuleError);
    assert.throws(() => parseMinor('1'), RuleError);
  });
  it('tells exact targets from minor targets', () => {
    assert.deepEqual(parseTarget('v1.34'), { kind: 'minor', minor: { major: 1, minor: 34, text: '1.34' } });
    const exact = parseTarget('1.34.2');
    assert.equal(exact.kind, 'exact');
    assert.throws(() => parseTarget('1.34.x'), /invalid target "1\.34\.x"/);
  });
});

describe('compareVersions', () => {
  it('orders by semver: pre-releases before their release, numerically', () => {
    const sorted = ['1.34.0', '1.34.0-rc.1', '1.33.10', '1.33.9', '1.34.0-alpha.2', '1.34.0-rc.2']
      .map(parseVersion)
      .sort(compareVersions)
      .map((v) => v.text);
    assert.deepEqual(sorted, ['1.33.9', '1.33.10', '1.34.0-alpha.2', '1.34.0-rc.1', '1.34.0-rc.2', '1.34.0']);
  });
});
