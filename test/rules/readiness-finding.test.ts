import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { acknowledgementNameProblem, gateFindings, type ReadinessFinding } from '../../rules/readiness/finding.js';

const finding = (over: Partial<ReadinessFinding>): ReadinessFinding => ({
  check: 'removed-api',
  severity: 'hold',
  hop: '1.33',
  what: 'authentication.k8s.io/v1beta1 selfsubjectreviews requested',
  todo: 'move the client to authentication.k8s.io/v1',
  source: 'https://kubernetes.io/docs/reference/using-api/deprecation-guide/',
  ack: 'removed-api:authentication.k8s.io/v1beta1/selfsubjectreviews',
  ...over,
});

describe('rules: readiness findings and their acknowledgements', () => {
  it('holds every unacknowledged hold, releases the acknowledged ones, never holds on a warning', () => {
    const api = finding({});
    const cgroup = finding({ check: 'cgroup-v1', node: 'worker-3', ack: 'cgroup-v1:worker-3' });
    const drain = finding({ check: 'drain-block', severity: 'warn', ack: 'drain-block:default/db-0' });
    const gate = gateFindings([api, cgroup, drain], ['cgroup-v1:worker-3']);
    assert.deepEqual(gate.held, [api]);
    assert.deepEqual(gate.acknowledged, [cgroup]);
    assert.deepEqual(gate.warnings, [drain]);
    assert.deepEqual(gateFindings([api, cgroup], [api.ack, cgroup.ack]).held, []);
  });

  const names: [string, boolean][] = [
    ['removed-api:authentication.k8s.io/v1beta1/selfsubjectreviews', true],
    ['cgroup-v1:worker-3', true],
    ['removed-apis:x', false],
    ['removed-api:', false],
    [':worker-1', false],
    ['cgroup-v1', false],
    ['cgroup-v1:worker 3', false],
  ];
  for (const [name, ok] of names) {
    it(`${ok ? 'takes' : 'refuses in one line'} the acknowledgement ${JSON.stringify(name)}`, () => {
      const problem = acknowledgementNameProblem(name);
      if (ok) assert.equal(problem, undefined);
      else assert.match(problem ?? '', /^unknown acknowledgement "[^\n]*": expected <check>:<subject>/);
    });
  }
});
