// checkAlerts (activities/alerts.ts) against a real Prometheus (Debian's package) scraping gauges this
// test sets: an alert that fires is reported with its labels and since when, one that clears is not,
// the matchers select as Prometheus selects, and every way of not getting an answer is its own typed,
// one-line failure that names Prometheus without its password.
import assert from 'node:assert/strict';
import { createServer, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { ApplicationFailure } from '@temporalio/common';
import { createAlertActivities } from '../../activities/alerts.js';
import type { ClusterAccess } from '../../activities/cluster-access.js';
import { parseClusterConfig, ALERTS_POLL } from '../../activities/cluster-config.js';
import { judgeOperatorSignals } from '../../rules/readiness/operator-signals.js';
import { startPrometheus, type TestPrometheus } from '../helpers/prometheus.js';

const BASE = 'name: lab\nkubeconfig: /k\nssh: {user: u, privateKeyPath: /p, knownHostsPath: /h}\nsnapshots: {dir: /s}\n';

/** checkAlerts for a cluster whose configuration has `alerts` (YAML flow mapping), parsed by the worker's own loader. */
function checkAlertsWith(alerts: string | undefined) {
  const config = parseClusterConfig(`${BASE}${alerts === undefined ? '' : `alerts: ${alerts}\n`}`, 'lab.yaml');
  const acts = createAlertActivities({ clusters: () => ({ config }) as ClusterAccess });
  return () => acts.checkAlerts({ cluster: 'lab' });
}

async function failsWith(promise: Promise<unknown>, type: string, nonRetryable: boolean, pattern: RegExp): Promise<string> {
  let message = '';
  await assert.rejects(promise, (err: unknown) => {
    assert.ok(err instanceof ApplicationFailure, String(err));
    assert.equal(err.type, type);
    assert.equal(err.nonRetryable, nonRetryable, `${type} nonRetryable`);
    assert.match(err.message, pattern);
    assert.ok(!err.message.includes('\n'), 'one line');
    message = err.message;
    return true;
  });
  return message;
}

/**
 * A reverse proxy in front of Prometheus under the path prefix /prom/ that wants basic auth
 * (user `gate`, password `s3cr3t`), as Prometheus often sits behind one; `mode` makes it answer 503.
 */
async function authProxy(upstream: string): Promise<{ server: Server; base: string; mode: { unavailable: boolean }; seen: string[] }> {
  const mode = { unavailable: false };
  const seen: string[] = [];
  const server = createServer((req, res) => {
    seen.push(req.url ?? '');
    if (req.headers.authorization !== `Basic ${Buffer.from('gate:s3cr3t').toString('base64')}`) {
      res.writeHead(401, { 'www-authenticate': 'Basic realm="prom"' }).end('unauthorized');
      return;
    }
    if (mode.unavailable) return void res.writeHead(503).end('upstream restarting');
    if (!req.url?.startsWith('/prom/')) return void res.writeHead(404).end('not here');
    const fwd = request(`${upstream}${req.url.slice('/prom'.length)}`, (up) => {
      res.writeHead(up.statusCode ?? 502, up.headers);
      up.pipe(res);
    });
    fwd.on('error', () => res.writeHead(502).end());
    fwd.end();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, base: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, mode, seen };
}

describe('checkAlerts against a real Prometheus', () => {
  let prom: TestPrometheus;
  let proxy: Awaited<ReturnType<typeof authProxy>>;

  before(async () => {
    prom = await startPrometheus([
      { alert: 'NodeDown', labels: { severity: 'critical', node: 'worker-1' } },
      { alert: 'DiskFull', labels: { severity: 'warning' } },
      { alert: 'Watchdog', labels: { severity: 'none' } }, // kube-prometheus's always-firing alert
      { alert: 'SlowBurn', labels: { severity: 'critical' }, for: '1h' }, // pending for an hour before it fires
    ]);
    console.log(`prometheus ${prom.version} ready in ${prom.startMs} ms`);
    prom.setGauge('Watchdog', 1);
    await prom.waitForFiring(['Watchdog']);
    proxy = await authProxy(prom.url);
  });
  after(async () => {
    proxy?.server.close();
    await prom?.close();
  });

  it('without an alerts block asks nothing and reports nothing firing', async () => {
    assert.deepEqual(await checkAlertsWith(undefined)(), { cluster: 'lab', configured: false, firing: [] });
  });

  it('reports an alert once it fires, with its labels and since when; not once it clears', async () => {
    const check = checkAlertsWith(`{prometheusUrl: "${prom.url}", matchers: ['alertname!="Watchdog"']}`);
    const quiet = await check();
    assert.deepEqual(quiet, {
      cluster: 'lab',
      configured: true,
      prometheus: `${prom.url}/`,
      query: 'ALERTS{alertstate="firing",alertname!="Watchdog"}',
      firing: [],
      pollSeconds: ALERTS_POLL.default, // how often a held phase asks again (none configured)
    });

    const flipped = Date.now();
    prom.setGauge('NodeDown', 1);
    await prom.waitForFiring(['NodeDown', 'Watchdog']);
    const { firing } = await check();
    assert.equal(firing.length, 1);
    const [alert] = firing;
    assert.equal(alert?.name, 'NodeDown');
    assert.deepEqual(alert?.labels, { instance: alert?.labels.instance, job: 'skewless-test', node: 'worker-1', severity: 'critical' });
    const since = Date.parse(alert?.since ?? '');
    assert.ok(
      since >= flipped - 2000 && since <= Date.now(),
      `since ${alert?.since} is when the gauge flipped (${new Date(flipped).toISOString()})`,
    );

    // What the gate makes of it: the phase does not start; after a phase it halts; acknowledged, it goes on.
    const signals = { hop: '1.33', phase: 'batch-1', alerts: firing, probes: [], acknowledged: [] };
    const before = judgeOperatorSignals({ ...signals, moment: 'before-phase' });
    assert.equal(before.verdict, 'wait');
    assert.equal(before.held[0]?.ack, 'alert:NodeDown');
    assert.equal(before.held[0]?.node, 'worker-1');
    assert.equal(judgeOperatorSignals({ ...signals, moment: 'after-phase' }).verdict, 'halt');
    assert.equal(judgeOperatorSignals({ ...signals, moment: 'after-phase', acknowledged: ['alert:NodeDown'] }).verdict, 'proceed');

    prom.setGauge('NodeDown', 0);
    await prom.waitForFiring(['Watchdog']);
    assert.deepEqual((await check()).firing, []);
  });

  it('selects as Prometheus does: all matchers hold, regexes anchored; no matcher: every firing alert', async () => {
    prom.setGauge('NodeDown', 1);
    prom.setGauge('DiskFull', 1);
    await prom.waitForFiring(['DiskFull', 'NodeDown', 'Watchdog']);
    const names = async (alerts: string) => (await checkAlertsWith(alerts)()).firing.map((a) => a.name);
    assert.deepEqual(await names(`{prometheusUrl: "${prom.url}"}`), ['DiskFull', 'NodeDown', 'Watchdog']);
    assert.deepEqual(await names(`{prometheusUrl: "${prom.url}", matchers: ['severity=~"critical|page"']}`), ['NodeDown']);
    assert.deepEqual(await names(`{prometheusUrl: "${prom.url}", matchers: ['severity=~"crit"']}`), []); // anchored
    assert.deepEqual(await names(`{prometheusUrl: "${prom.url}", matchers: ['severity!="none"', 'alertname=~"Disk.*"']}`), ['DiskFull']);
    assert.deepEqual(await names(`{prometheusUrl: "${prom.url}", matchers: ['alertname!~"Watchdog|DiskFull"']}`), ['NodeDown']);
    prom.setGauge('NodeDown', 0);
    prom.setGauge('DiskFull', 0);
    await prom.waitForFiring(['Watchdog']);
  });

  it("a pending alert (its rule's for: not yet met) does not count, as with kured --alert-firing-only", async () => {
    prom.setGauge('SlowBurn', 1);
    await prom.waitForPending(['SlowBurn']);
    try {
      assert.deepEqual(
        (await checkAlertsWith(`{prometheusUrl: "${prom.url}"}`)()).firing.map((a) => a.name),
        ['Watchdog'],
      );
    } finally {
      prom.setGauge('SlowBurn', 0);
      await prom.waitForPending([]);
    }
  });

  it('behind a path prefix and basic auth: the user info is sent as a header and never shown', async () => {
    const result = await checkAlertsWith(`{prometheusUrl: "http://gate:s3cr3t@${proxy.base.slice('http://'.length)}/prom"}`)();
    assert.deepEqual(
      result.firing.map((a) => a.name),
      ['Watchdog'],
    );
    assert.equal(result.prometheus, `${proxy.base}/prom`);
    assert.ok(
      proxy.seen.some((u) => u.startsWith('/prom/api/v1/query?query=ALERTS')),
      proxy.seen.join(' '),
    );
    assert.ok(!JSON.stringify(result).includes('s3cr3t'));

    const message = await failsWith(
      checkAlertsWith(`{prometheusUrl: "http://gate:wrong@${proxy.base.slice('http://'.length)}/prom"}`)(),
      'Forbidden',
      true,
      new RegExp(`^Prometheus at ${proxy.base}/prom refused the query: HTTP 401$`),
    );
    assert.ok(!message.includes('wrong'));
  });

  it('a query Prometheus refuses (RE2 repeats at most 1000) is a configuration error, not retried', async () => {
    await failsWith(
      checkAlertsWith(`{prometheusUrl: "${prom.url}", matchers: ['alertname=~"x{1001}"']}`)(),
      'ClusterConfigInvalid',
      true,
      /^alerts\.matchers: Prometheus at http:\/\/127\.0\.0\.1:\d+\/ refused the query ALERTS\{alertstate="firing",alertname=~"x\{1001\}"\}: .*invalid repeat count/,
    );
  });

  it('a URL that is not Prometheus (404 under the prefix) is a configuration error, not retried', async () => {
    await failsWith(
      checkAlertsWith(`{prometheusUrl: "http://gate:s3cr3t@${proxy.base.slice('http://'.length)}/elsewhere"}`)(),
      'ClusterConfigInvalid',
      true,
      /^alerts\.prometheusUrl http:\/\/127\.0\.0\.1:\d+\/elsewhere does not answer as Prometheus's HTTP API \(HTTP 404 at .*\/elsewhere\/api\/v1\/query\)$/,
    );
  });

  it('a Prometheus answering 503 is PrometheusUnreachable, retried', async () => {
    proxy.mode.unavailable = true;
    try {
      await failsWith(
        checkAlertsWith(`{prometheusUrl: "http://gate:s3cr3t@${proxy.base.slice('http://'.length)}/prom"}`)(),
        'PrometheusUnreachable',
        false,
        /^Prometheus at http:\/\/127\.0\.0\.1:\d+\/prom answered HTTP 503$/,
      );
    } finally {
      proxy.mode.unavailable = false;
    }
  });

  it('Prometheus stopped: PrometheusUnreachable, retried, in one line', async () => {
    const check = checkAlertsWith(`{prometheusUrl: "${prom.url}", timeoutSeconds: 2}`);
    assert.equal((await check()).configured, true);
    await prom.stop();
    const started = Date.now();
    await failsWith(check(), 'PrometheusUnreachable', false, new RegExp(`^Prometheus at ${prom.url}/ is unreachable: ECONNREFUSED$`));
    assert.ok(Date.now() - started < 2000, 'a refused connection fails at once');
  });
});
