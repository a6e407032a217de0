import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { hopReversibility, planReversibility, reversibleRefusal } from '../../rules/index.js';

// Whether a hop can run as a trial that rolls back without an etcd restore (issue 36), and why not.

describe('the reversibility verdict of a hop', () => {
  const cases: { name: string; from: string; hop: string; etcd?: string; alpha?: string[]; reasons: string[] }[] = [
    { name: '1.32 → 1.33: 1.33.13 emulates 1.32 (--help kube=1.31..1.33)', from: '1.32.13', hop: '1.33.13', etcd: '3.5.24', reasons: [] },
    { name: '1.33 → 1.34: 1.34.4 emulates 1.33', from: '1.33.13', hop: '1.34.4', etcd: '3.5.24', reasons: [] },
    {
      name: '1.31 → 1.32: 1.32.13 emulates nothing older (--help kube=1.32..1.32.13)',
      from: '1.31.9',
      hop: '1.32.13',
      reasons: ['cannot-emulate'],
    },
    { name: 'two minors at once is no hop', from: '1.32.13', hop: '1.34.4', reasons: ['not-one-minor'] },
    { name: 'a patch hop has nothing to emulate', from: '1.33.2', hop: '1.33.13', reasons: ['not-one-minor'] },
    {
      name: 'etcd 3.4 stays behind: the new apiserver was never seen on it',
      from: '1.32.13',
      hop: '1.33.13',
      etcd: '3.4.30',
      reasons: ['etcd-too-old'],
    },
    {
      name: 'alpha feature gates: KEP-4330 does not emulate them',
      from: '1.32.13',
      hop: '1.33.13',
      alpha: ['MutatingAdmissionPolicy'],
      reasons: ['alpha-feature-gates'],
    },
    { name: 'unknown facts are not held against a hop', from: '1.32.13', hop: '1.33.13', reasons: [] },
  ];
  for (const c of cases) {
    it(c.name, () => {
      const v = hopReversibility(c.from, c.hop, {
        ...(c.etcd ? { etcd: c.etcd } : {}),
        ...(c.alpha ? { alphaFeatureGates: c.alpha } : {}),
      });
      assert.deepEqual(
        v.reasons.map((r) => r.id),
        c.reasons,
      );
      assert.equal(v.reversible, c.reasons.length === 0);
      assert.equal(v.ack, `reversible:${c.hop}`);
    });
  }

  it('a plan judges each hop from the one before it', () => {
    const verdicts = planReversibility('1.31.9', ['1.32.13', '1.33.13', '1.34.4']);
    assert.deepEqual(
      verdicts.map((v) => [v.hop, v.emulates, v.reversible]),
      [
        ['1.32.13', '1.31', false],
        ['1.33.13', '1.32', true],
        ['1.34.4', '1.33', true],
      ],
    );
    assert.match(
      verdicts[0]?.reasons[0]?.text ?? '',
      /the 1\.32\.13 binaries cannot emulate 1\.31: their --emulated-version accepts 1\.32\.\.1\.32/,
    );
  });

  it('--reversible refuses in one line an unacknowledged hop that cannot be, names the ack; acknowledged, it passes', () => {
    const verdicts = planReversibility('1.31.9', ['1.32.13', '1.33.13']);
    const line = reversibleRefusal(verdicts, []);
    assert.equal(
      line,
      '--reversible: hop 1.32.13 cannot be reversible: the 1.32.13 binaries cannot emulate 1.31: their --emulated-version accepts 1.32..1.32 (KEP-4330); acknowledge it with --acknowledge reversible:1.32.13 to run it without a trial',
    );
    assert.ok(!line?.includes('\n'));
    assert.equal(reversibleRefusal(verdicts, ['reversible:1.32.13']), undefined);
    assert.equal(reversibleRefusal(planReversibility('1.32.13', ['1.33.13', '1.34.4']), []), undefined);
  });
});
