import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { firstHopBreakingQuarantine, quarantineSkewAt } from '../../rules/index.js';

// A quarantined node keeps its old kubelet for the rest of the run (issue 22): each later hop is
// judged against it with the skew policy's kubelet rule, the hop's version being the newest apiserver.

describe('quarantined kubelets against a hop', () => {
  const cases: { name: string; kubelets: [string, string][]; hop: string; broken: string[]; rule?: RegExp }[] = [
    { name: 'one minor behind', kubelets: [['w1', '1.32.4']], hop: '1.33.7', broken: [] },
    { name: 'three minors behind from 1.28 (KEP-3935)', kubelets: [['w1', '1.31.2']], hop: '1.34.2', broken: [] },
    {
      name: 'four minors behind',
      kubelets: [['w1', '1.30.9']],
      hop: '1.34.2',
      broken: ['w1'],
      rule: /kubelet may be at most 3 minors older than the newest kube-apiserver \(1\.34\)/,
    },
    {
      name: 'three minors behind a 1.27 apiserver: only 2 before 1.28',
      kubelets: [['w1', '1.24.3']],
      hop: '1.27.16',
      broken: ['w1'],
      rule: /at most 2 minors older.*the 3-minor allowance starts with kube-apiserver 1\.28/,
    },
    { name: 'two behind a 1.27 apiserver', kubelets: [['w1', '1.25.3']], hop: '1.27.16', broken: [] },
    {
      name: 'only the node that falls out is named',
      kubelets: [
        ['w1', '1.31.0'],
        ['w2', '1.30.0'],
        ['w3', '1.33.1'],
      ],
      hop: '1.34.0',
      broken: ['w2'],
    },
    { name: 'patch versions do not count', kubelets: [['w1', '1.31.0']], hop: '1.34.99', broken: [] },
    { name: 'nothing quarantined', kubelets: [], hop: '1.34.2', broken: [] },
  ];
  for (const c of cases) {
    it(c.name, () => {
      const v = quarantineSkewAt(
        c.kubelets.map(([node, version]) => ({ node, version })),
        c.hop,
      );
      assert.deepEqual(
        v.map((x) => x.node),
        c.broken,
      );
      for (const x of v) {
        assert.equal(x.component, 'kubelet');
        assert.equal(x.ruleId, 'node-too-old');
        if (c.rule) assert.match(x.rule, c.rule);
      }
    });
  }
});

describe('the first hop that would break a quarantine', () => {
  it('holds through the run while the kubelet stays within 3 minors', () => {
    assert.equal(firstHopBreakingQuarantine([{ node: 'w1', version: '1.31.4' }], ['1.32.5', '1.33.7', '1.34.2']), undefined);
  });
  it('names the hop four minors ahead of a kubelet quarantined at 1.31', () => {
    const first = firstHopBreakingQuarantine([{ node: 'w1', version: '1.31.4' }], ['1.32.5', '1.33.7', '1.34.2', '1.35.0']);
    assert.equal(first?.hop, '1.35.0');
    assert.deepEqual(
      first?.violations.map((v) => `${v.node} ${v.version}`),
      ['w1 1.31.4'],
    );
  });
  it('names the first of several quarantined nodes to fall out, at the earliest hop', () => {
    const first = firstHopBreakingQuarantine(
      [
        { node: 'w1', version: '1.32.0' },
        { node: 'w2', version: '1.31.0' },
      ],
      ['1.33.0', '1.34.0', '1.35.0', '1.36.0'],
    );
    assert.equal(first?.hop, '1.35.0');
    assert.deepEqual(
      first?.violations.map((v) => v.node),
      ['w2'],
    );
  });
});
