import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { msToNumber } from '@temporalio/common/lib/time.js';
import { ALERTS_POLL, ALERTS_TIMEOUT, parseClusterConfig } from '../../activities/cluster-config.js';
import { NEVER_RETRY } from '../../contracts/failure-types.js';
import { PROFILE_OF } from '../../workflows/activity-options.js';

const BASE = 'name: lab\nkubeconfig: /k\nssh: {user: u, privateKeyPath: /p, knownHostsPath: /h}\nsnapshots: {dir: /s}\n';
const parse = (extra: string) => parseClusterConfig(`${BASE}${extra}`, 'lab.yaml');
const refuse = (extra: string, message: RegExp, secret?: string) =>
  assert.throws(
    () => parse(extra),
    (err: Error & { type?: string; nonRetryable?: boolean }) => {
      assert.match(err.message, message);
      assert.ok(!err.message.includes('\n'), 'one line');
      assert.equal(err.type, 'ClusterConfigInvalid');
      assert.equal(err.nonRetryable, true);
      if (secret) assert.ok(!err.message.includes(secret), `${err.message} shows ${secret}`);
      return true;
    },
  );

describe('cluster configuration: alerts (the alert gate)', () => {
  it('absent: no gate; present: the URL, the matchers parsed, the timeout', () => {
    assert.equal(parse('').alerts, undefined);
    assert.deepEqual(parse('alerts: {prometheusUrl: "http://prometheus.monitoring:9090"}\n').alerts, {
      prometheusUrl: 'http://prometheus.monitoring:9090/',
      matchers: [],
      timeoutSeconds: ALERTS_TIMEOUT.default,
      pollSeconds: ALERTS_POLL.default,
    });
    const alerts = parse(
      [
        'alerts:',
        '  prometheusUrl: https://ops:pw@prom.example/prometheus',
        '  matchers:',
        '    - severity=~"critical|page"',
        '    - \'alertname!="Watchdog"\'',
        '  timeoutSeconds: 30',
        '  pollSeconds: 5',
        '',
      ].join('\n'),
    ).alerts;
    assert.deepEqual(alerts, {
      prometheusUrl: 'https://ops:pw@prom.example/prometheus',
      matchers: [
        { label: 'severity', op: '=~', value: 'critical|page' },
        { label: 'alertname', op: '!=', value: 'Watchdog' },
      ],
      timeoutSeconds: 30,
      pollSeconds: 5,
    });
  });

  const bad: [string, string, RegExp, string?][] = [
    ['not a mapping', 'alerts: http://prom:9090\n', /^lab\.yaml: alerts must be a mapping$/],
    ['no URL', 'alerts: {matchers: []}\n', /^lab\.yaml: alerts\.prometheusUrl must be a non-empty string$/],
    [
      'a misspelt key',
      'alerts: {prometheusUrl: "http://p:9090", matcher: []}\n',
      /^lab\.yaml: unknown key alerts\.matcher \(known: prometheusUrl, matchers, timeoutSeconds, pollSeconds\)$/,
    ],
    ['not a URL', 'alerts: {prometheusUrl: "prometheus:9090/x y"}\n', /alerts\.prometheusUrl (is not a URL|must be http\(s\))/],
    [
      'a non-http URL, its password never shown',
      'alerts: {prometheusUrl: "ftp://ops:hunter2@prom:21/"}\n',
      /^lab\.yaml: alerts\.prometheusUrl must be http\(s\), got ftp: \(e\.g\. http:\/\/prometheus\.monitoring:9090\)$/,
      'hunter2',
    ],
    [
      'a query string (it may hold a token), never shown',
      'alerts: {prometheusUrl: "https://prom:9090/api?token=hunter2"}\n',
      /^lab\.yaml: alerts\.prometheusUrl must be Prometheus's base URL without \?query or #fragment, got https:\/\/prom:9090\/api\?…/,
      'hunter2',
    ],
    [
      'matchers as one string',
      'alerts: {prometheusUrl: "http://p:9090", matchers: \'severity="critical"\'}\n',
      /^lab\.yaml: alerts\.matchers must be a list of matchers, e\.g\. \['severity=~"critical\|page"', 'alertname!="Watchdog"'\]$/,
    ],
    [
      'a bad matcher, named by its index',
      'alerts: {prometheusUrl: "http://p:9090", matchers: [\'severity="critical"\', NodeDown]}\n',
      /^lab\.yaml: alerts\.matchers\[1\] "NodeDown" is not a matcher: label, one of = != =~ !~, value/,
    ],
    [
      'a matcher on alertstate',
      'alerts: {prometheusUrl: "http://p:9090", matchers: [\'alertstate="pending"\']}\n',
      /^lab\.yaml: alerts\.matchers\[0\] "alertstate=\\"pending\\"": alertstate is not a matcher's to set/,
    ],
    [
      'a broken regex',
      'alerts: {prometheusUrl: "http://p:9090", matchers: [\'alertname=~"(Node"\']}\n',
      /^lab\.yaml: alerts\.matchers\[0\] .*not a regex/,
    ],
    [
      'a matcher that is not a string',
      'alerts: {prometheusUrl: "http://p:9090", matchers: [{severity: critical}]}\n',
      /alerts\.matchers\[0\] must be a matcher/,
    ],
    [
      'a timeout out of range',
      `alerts: {prometheusUrl: "http://p:9090", timeoutSeconds: ${ALERTS_TIMEOUT.max + 1}}\n`,
      /^lab\.yaml: alerts\.timeoutSeconds must be an integer from 1 to 30, got 31$/,
    ],
    [
      'a poll interval of zero',
      'alerts: {prometheusUrl: "http://p:9090", pollSeconds: 0}\n',
      new RegExp(`^lab\\.yaml: alerts\\.pollSeconds must be an integer from 1 to ${ALERTS_POLL.max}, got 0$`),
    ],
  ];
  for (const [name, yaml, message, secret] of bad) it(`refuses ${name}, in one line`, () => refuse(yaml, message, secret));

  it('probe names are acknowledgeable (probe:<name>): one word, each once', () => {
    assert.deepEqual(
      parse('probes: [{name: web.front_1, url: "http://a/"}]\n').probes.map((p) => p.name),
      ['web.front_1'],
    );
    refuse('probes: [{name: "web front", url: "http://a/"}]\n', /^lab\.yaml: probes\[0\]\.name must be letters, digits, '\.', '_' or '-'/);
    refuse('probes: [{name: web, url: "http://a/"}, {name: web, url: "http://b/"}]\n', /^lab\.yaml: probes\[1\]\.name web is given twice$/);
  });

  it('checkAlerts: an unreachable Prometheus is retried briefly, a refused query never; the longest query fits the profile', () => {
    const profile = PROFILE_OF.checkAlerts;
    const nonRetryable = profile.retry?.nonRetryableErrorTypes ?? [];
    assert.ok(!nonRetryable.includes('PrometheusUnreachable'));
    for (const t of ['ClusterConfigInvalid', 'Forbidden']) assert.ok(nonRetryable.includes(t) && NEVER_RETRY.includes(t as never), t);
    assert.ok((profile.retry?.maximumAttempts ?? 0) > 1 && (profile.retry?.maximumAttempts ?? 0) <= 10);
    // Two queries run side by side, each within alerts.timeoutSeconds.
    assert.ok(ALERTS_TIMEOUT.max * 1000 < msToNumber(profile.startToCloseTimeout ?? 0));
  });
});
