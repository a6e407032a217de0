import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { alertsSinceQuery, firingAlertsQuery, parseAlertMatcher, type AlertMatcher } from '../../rules/readiness/alert-matchers.js';
import { acknowledgementNameProblem } from '../../rules/readiness/finding.js';
import {
  alertFindings,
  judgeOperatorSignals,
  probeFindings,
  type FiringAlert,
  type ProbeSignal,
  type SignalMoment,
  type SignalVerdict,
} from '../../rules/readiness/operator-signals.js';

describe('rules: the alert gate matchers (Prometheus label matchers)', () => {
  const taken: [string, AlertMatcher][] = [
    ['alertname="NodeDown"', { label: 'alertname', op: '=', value: 'NodeDown' }],
    ['severity=~"critical|page"', { label: 'severity', op: '=~', value: 'critical|page' }],
    ['alertname!="Watchdog"', { label: 'alertname', op: '!=', value: 'Watchdog' }],
    ['namespace!~"dev-.*"', { label: 'namespace', op: '!~', value: 'dev-.*' }],
    [' severity = critical ', { label: 'severity', op: '=', value: 'critical' }], // bare word, spaces around
    ['severity=~critical|page', { label: 'severity', op: '=~', value: 'critical|page' }],
    ['team=""', { label: 'team', op: '=', value: '' }], // the label absent, as in PromQL
    ['instance=~"node-\\\\d+:9100"', { label: 'instance', op: '=~', value: 'node-\\d+:9100' }],
    ['summary="say \\"hi\\""', { label: 'summary', op: '=', value: 'say "hi"' }],
    ['severity=~"(?i)CRIT.*"', { label: 'severity', op: '=~', value: '(?i)CRIT.*' }], // RE2's flag group
  ];
  for (const [text, matcher] of taken) {
    it(`takes ${text}`, () => assert.deepEqual(parseAlertMatcher(text), { matcher }));
  }

  const refused: [unknown, RegExp][] = [
    ['', /^must be a matcher label="value"/],
    [42, /^must be a matcher label="value"/],
    ['NodeDown', /is not a matcher: label, one of = != =~ !~, value/],
    ['alertname=="NodeDown"', /the value is not one double-quoted string|quote the value/],
    ['1abc="x"', /"1abc" is not a label name/],
    ['sev-erity="x"', /"sev-erity" is not a label name/],
    ['alertstate="pending"', /alertstate is not a matcher's to set \(the gate reads firing alerts only/],
    ['__name__="up"', /__name__ is not a matcher's to set/],
    ['severity="critical', /the value is not one double-quoted string/],
    ['instance=~"node-\\d+"', /the value is not one double-quoted string \(escape a backslash as \\\\/],
    ['severity=critical page', /quote the value/],
    ['severity=', /quote the value \("…"\) when it is empty/],
    ['alertname=~"(Node"', /not a regex: /],
    ['alertname=~"(?=Node)"', /RE2 \(Prometheus\) has no lookahead or lookbehind/],
    ['alertname=~"(a)\\\\1"', /RE2 \(Prometheus\) has no backreferences/],
    ['alertname="a"\nseverity="b"', /holds a line break/],
  ];
  for (const [text, problem] of refused) {
    it(`refuses ${JSON.stringify(text)} in one line`, () => {
      const parsed = parseAlertMatcher(text);
      assert.ok('problem' in parsed, `taken: ${JSON.stringify(parsed)}`);
      assert.match(parsed.problem, problem);
      assert.ok(!parsed.problem.includes('\n'));
    });
  }

  it('builds the queries: firing only, every matcher, values quoted for PromQL', () => {
    const matchers = ['severity=~"critical|page"', 'summary="say \\"hi\\""'].map(
      (t) => (parseAlertMatcher(t) as { matcher: AlertMatcher }).matcher,
    );
    assert.equal(firingAlertsQuery([]), 'ALERTS{alertstate="firing"}');
    assert.equal(firingAlertsQuery(matchers), 'ALERTS{alertstate="firing",severity=~"critical|page",summary="say \\"hi\\""}');
    assert.equal(alertsSinceQuery([]), 'ALERTS_FOR_STATE');
    assert.equal(alertsSinceQuery(matchers.slice(0, 1)), 'ALERTS_FOR_STATE{severity=~"critical|page"}');
  });
});

const nodeDown = (node: string): FiringAlert => ({
  name: 'NodeDown',
  labels: { node, severity: 'critical' },
  since: '2026-12-02T07:00:00.000Z',
});
const disk: FiringAlert = { name: 'DiskFull', labels: { severity: 'warning', mountpoint: '/var' } };
const web: ProbeSignal = { name: 'web', ok: true, target: 'https://app.example.com/healthz' };
const shop: ProbeSignal = { name: 'shop', ok: false, target: 'https://shop.example.com/', error: 'HTTP 503, expected 200' };

describe('rules: operator signals become readiness findings', () => {
  it('one finding per firing alert, sorted, acknowledged by alert:<alertname>, naming the node when the alert does', () => {
    const findings = alertFindings([nodeDown('worker-2'), disk, nodeDown('worker-1')], '1.33');
    assert.deepEqual(
      findings.map((f) => [f.check, f.severity, f.hop, f.node, f.ack]),
      [
        ['alert', 'hold', '1.33', undefined, 'alert:DiskFull'],
        ['alert', 'hold', '1.33', 'worker-1', 'alert:NodeDown'],
        ['alert', 'hold', '1.33', 'worker-2', 'alert:NodeDown'],
      ],
    );
    assert.equal(findings[0]?.what, 'alert DiskFull firing {mountpoint="/var", severity="warning"}');
    assert.equal(findings[1]?.what, 'alert NodeDown firing since 2026-12-02T07:00:00.000Z {node="worker-1", severity="critical"}');
    assert.match(findings[1]?.todo ?? '', /acknowledge alert:NodeDown/);
    assert.match(findings[1]?.source ?? '', /^https:\/\/github\.com\/kubereboot\/kured\//);
    for (const f of findings) assert.equal(acknowledgementNameProblem(f.ack), undefined, f.ack);
  });

  it('a failing probe is a finding acknowledged by probe:<name>; a passing one finds nothing', () => {
    const findings = probeFindings([web, shop], '1.34');
    assert.equal(findings.length, 1);
    assert.deepEqual(
      { ...findings[0], source: undefined },
      {
        check: 'probe',
        severity: 'hold',
        hop: '1.34',
        what: 'probe shop (https://shop.example.com/) failing: HTTP 503, expected 200',
        todo: 'make shop pass again, or acknowledge probe:shop to go on without it',
        source: undefined,
        ack: 'probe:shop',
      },
    );
    assert.equal(acknowledgementNameProblem('probe:shop'), undefined);
  });
});

describe('rules: the operator-signal gate around a phase', () => {
  const cases: [string, SignalMoment, FiringAlert[], ProbeSignal[], string[], SignalVerdict, string][] = [
    ['nothing fires, probes pass: the phase starts', 'before-phase', [], [web], [], 'proceed', ''],
    ['nothing fires after the phase: the rollout goes on', 'after-phase', [], [web], [], 'proceed', ''],
    ['an alert fires: the phase does not start', 'before-phase', [disk], [], [], 'wait', 'batch-2 of 1.33 waits: alert:DiskFull'],
    ['an alert fires after the phase: halt', 'after-phase', [disk], [], [], 'halt', 'halted after batch-2 of 1.33: alert:DiskFull'],
    [
      'an alert of two instances is counted, and a failing probe named',
      'after-phase',
      [nodeDown('w-1'), nodeDown('w-2')],
      [shop],
      [],
      'halt',
      'halted after batch-2 of 1.33: alert:NodeDown (2 firing), probe:shop',
    ],
    ['acknowledged alert: the phase starts', 'before-phase', [disk], [], ['alert:DiskFull'], 'proceed', ''],
    [
      'one acknowledgement covers every instance of the alert',
      'after-phase',
      [nodeDown('w-1'), nodeDown('w-2')],
      [],
      ['alert:NodeDown'],
      'proceed',
      '',
    ],
    [
      'an acknowledgement of another alert does not',
      'before-phase',
      [disk],
      [],
      ['alert:NodeDown'],
      'wait',
      'batch-2 of 1.33 waits: alert:DiskFull',
    ],
    ['a failing probe before a phase: wait', 'before-phase', [], [shop], [], 'wait', 'batch-2 of 1.33 waits: probe:shop'],
    ['an acknowledged probe', 'after-phase', [], [shop], ['probe:shop'], 'proceed', ''],
    [
      'an acknowledged probe does not cover an alert',
      'after-phase',
      [disk],
      [shop],
      ['probe:shop'],
      'halt',
      'halted after batch-2 of 1.33: alert:DiskFull',
    ],
  ];
  for (const [name, moment, alerts, probes, acknowledged, verdict, reason] of cases) {
    it(name, () => {
      const gate = judgeOperatorSignals({ moment, hop: '1.33', phase: 'batch-2', alerts, probes, acknowledged });
      assert.equal(gate.verdict, verdict);
      assert.equal(gate.reason, reason);
      assert.equal(gate.findings.length, alerts.length + probes.filter((p) => !p.ok).length);
      assert.equal(gate.held.length + gate.acknowledged.length, gate.findings.length);
      for (const f of gate.acknowledged) assert.ok(acknowledged.includes(f.ack));
      for (const f of gate.held) assert.ok(!acknowledged.includes(f.ack));
    });
  }
});
