import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { isLoopbackHost, parseNotifySinks, RuleError, sinksFor, urlProblem } from '../../rules/index.js';

/** Each bad row: one line naming the key, as the configuration loader prints it (exit 2). */
const BAD: { name: string; notify: unknown; error: RegExp }[] = [
  { name: 'not a list', notify: { name: 'x' }, error: /^notify must be a list of sinks$/ },
  {
    name: 'unknown event name',
    notify: [{ name: 'ops', type: 'webhook', url: 'https://hooks.example/x', events: ['run.started', 'run.strated'] }],
    error: /^notify\[0\]\.events\[1\]: unknown event "run\.strated" \(run\.started, run\.waiting, /,
  },
  {
    name: 'http:// to a non-loopback host without allowInsecure',
    notify: [{ name: 'ops', type: 'webhook', url: 'http://hooks.example/x' }],
    error: /^notify\[0\]\.url is http:\/\/ to hooks\.example, not loopback: use https, or allowInsecure: true$/,
  },
  {
    name: 'unknown type',
    notify: [{ name: 'ops', type: 'teams', url: 'https://h.example' }],
    error: /^notify\[0\]\.type must be webhook, slack, cloudevents, got "teams"$/,
  },
  {
    name: 'unknown key',
    notify: [{ name: 'ops', type: 'slack', url: 'https://h.example', token: 'x' }],
    error: /^notify\[0\]\.token is not a known key/,
  },
  { name: 'no URL', notify: [{ name: 'ops', type: 'slack' }], error: /^notify\[0\]\.url must be given \(or urlFile, or urlEnv\)$/ },
  {
    name: 'URL twice',
    notify: [{ name: 'ops', type: 'slack', url: 'https://h.example', urlEnv: 'SLACK_URL' }],
    error: /^notify\[0\]\.url is given with urlFile or urlEnv: one of them$/,
  },
  {
    name: 'relative urlFile',
    notify: [{ name: 'ops', type: 'slack', urlFile: 'slack.url' }],
    error: /^notify\[0\]\.urlFile must be an absolute path$/,
  },
  {
    name: 'bad env name',
    notify: [{ name: 'ops', type: 'slack', urlEnv: 'A-B' }],
    error: /^notify\[0\]\.urlEnv must be an environment variable name$/,
  },
  {
    name: 'a name twice',
    notify: [
      { name: 'ops', type: 'slack', urlEnv: 'A' },
      { name: 'ops', type: 'webhook', urlEnv: 'B' },
    ],
    error: /^notify\[1\]\.name ops is given twice$/,
  },
  {
    name: 'user info in the URL',
    notify: [{ name: 'ops', type: 'webhook', url: 'https://u:p@h.example' }],
    error: /^notify\[0\]\.url must not carry user info/,
  },
  {
    name: 'timeout too long',
    notify: [{ name: 'ops', type: 'webhook', url: 'https://h.example', timeoutSeconds: 31 }],
    error: /^notify\[0\]\.timeoutSeconds must be an integer from 1 to 30$/,
  },
];

describe('notify: sinks in the cluster configuration', () => {
  for (const c of BAD) {
    it(`refuses ${c.name} in one line naming the key`, () => {
      assert.throws(
        () => parseNotifySinks(c.notify),
        (err: unknown) => err instanceof RuleError && c.error.test(err.message) && !err.message.includes('\n'),
      );
    });
  }

  it('takes the three types, a URL from a file or the environment, and defaults to every event but test', () => {
    const sinks = parseNotifySinks([
      { name: 'hook', type: 'webhook', url: 'http://127.0.0.1:8080/in', events: ['run.waiting'] },
      { name: 'chat', type: 'slack', urlEnv: 'SLACK_URL', secretFile: '/etc/skewless/token' },
      { name: 'bus', type: 'cloudevents', urlFile: '/etc/skewless/bus-url', allowInsecure: true, timeoutSeconds: 3 },
    ]);
    assert.deepEqual(sinks[0], {
      name: 'hook',
      type: 'webhook',
      url: { value: 'http://127.0.0.1:8080/in' },
      events: ['run.waiting'],
      allowInsecure: false,
      timeoutSeconds: 10,
    });
    assert.deepEqual(sinks[1]?.url, { env: 'SLACK_URL' });
    assert.deepEqual(sinks[1]?.secret, { file: '/etc/skewless/token' });
    assert.ok(!sinks[1]?.events.includes('test') && sinks[1]?.events.includes('run.failed'));
    assert.deepEqual(sinksFor(sinks, 'run.waiting'), ['hook', 'chat', 'bus']);
    assert.deepEqual(sinksFor(sinks, 'run.started'), ['chat', 'bus']);
    assert.deepEqual(sinksFor(sinks, 'test'), ['hook', 'chat', 'bus']);
  });

  it('lets plain http reach loopback only, or anywhere with allowInsecure', () => {
    for (const h of ['localhost', '127.0.0.1', '127.3.2.1', '[::1]']) assert.equal(isLoopbackHost(h), true, h);
    for (const h of ['10.0.0.1', 'localhost.example', '128.0.0.1']) assert.equal(isLoopbackHost(h), false, h);
    assert.equal(urlProblem('http://10.0.0.1/x', true), undefined);
    assert.match(urlProblem('ftp://h.example/x', true) ?? '', /must be http\(s\), got ftp:/);
    // The refusal never shows the URL: a Slack webhook's path is its secret.
    assert.doesNotMatch(urlProblem('http://hooks.example/T000/B000/SECRETPATH', false) ?? '', /SECRETPATH/);
  });
});
