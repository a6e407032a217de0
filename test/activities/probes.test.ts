// runProbes (activities/health.ts) against real HTTP servers, as the operator-signal gate will call it
// after each phase (issue 21): each probe's name, verdict, target and one-line reason, enough for
// rules/readiness/operator-signals.ts to hold the rollout on `probe:<name>`, and never a secret of the URL.
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { ApplicationFailure } from '@temporalio/common';
import type { ClusterAccess } from '../../activities/cluster-access.js';
import { parseClusterConfig } from '../../activities/cluster-config.js';
import { createHealthActivities } from '../../activities/health.js';
import { judgeOperatorSignals } from '../../rules/readiness/operator-signals.js';
import { freePort } from '../../tooling/free-port.js';

const BASE = 'name: lab\nkubeconfig: /k\nssh: {user: u, privateKeyPath: /p, knownHostsPath: /h}\nsnapshots: {dir: /s}\n';

describe('runProbes against real HTTP servers: what the operator-signal gate needs', () => {
  let server: Server;
  let base: string;
  let hostPort: string;
  let closedPort: number;
  const seen: { url: string; authorization?: string }[] = [];
  let shopStatus = 200;

  before(async () => {
    server = createServer((req, res) => {
      seen.push({ url: req.url ?? '', ...(req.headers.authorization ? { authorization: req.headers.authorization } : {}) });
      if (req.url === '/healthz') return void res.writeHead(200).end('ok');
      if (req.url?.startsWith('/shop')) return void res.writeHead(shopStatus).end();
      if (req.url === '/admin') {
        const ok = req.headers.authorization === `Basic ${Buffer.from('ops:hunter2').toString('base64')}`;
        return void res.writeHead(ok ? 204 : 401).end();
      }
      if (req.url === '/slow') return; // never answers
      res.writeHead(404).end();
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    hostPort = `127.0.0.1:${(server.address() as AddressInfo).port}`;
    base = `http://${hostPort}`;
    closedPort = await freePort(); // nothing listens there
  });
  after(() => {
    server?.closeAllConnections();
    server?.close();
  });

  const probesOf = (yaml: string) => {
    const config = parseClusterConfig(`${BASE}probes:\n${yaml}`, 'lab.yaml');
    return createHealthActivities({ clusters: () => ({ config }) as ClusterAccess });
  };

  it('reports each probe by name with its verdict, target and reason; the gate holds on the failing ones', async () => {
    shopStatus = 503;
    const health = probesOf(
      [
        `  - {name: web, url: "${base}/healthz"}`,
        `  - {name: shop, url: "${base}/shop?token=hunter2"}`,
        `  - {name: admin, url: "http://ops:hunter2@${hostPort}/admin", expectStatus: 204}`,
        `  - {name: gone, url: "http://127.0.0.1:${closedPort}/healthz"}`,
        `  - {name: slow, url: "${base}/slow", timeoutSeconds: 1}`,
        '',
      ].join('\n'),
    );
    const result = await health.runProbes({ cluster: 'lab' });
    assert.equal(result.healthy, false);
    assert.deepEqual(result.failed, ['shop', 'gone', 'slow']);
    assert.deepEqual(
      result.probes.map((p) => [p.name, p.ok, p.target, p.status, p.error]),
      [
        ['web', true, `${base}/healthz`, 200, undefined],
        ['shop', false, `${base}/shop`, 503, 'HTTP 503, expected 200'],
        ['admin', true, `${base}/admin`, 204, undefined],
        ['gone', false, `http://127.0.0.1:${closedPort}/healthz`, undefined, 'ECONNREFUSED'],
        ['slow', false, `${base}/slow`, undefined, 'no answer within 1 s'],
      ],
    );
    // The user info went as basic auth (fetch refuses a URL with credentials, quoting it), and nothing secret is in the result.
    assert.ok(seen.some((r) => r.url === '/admin' && r.authorization?.startsWith('Basic ')));
    assert.ok(
      seen.some((r) => r.url === '/shop?token=hunter2'),
      'the query string is sent',
    );
    assert.ok(!JSON.stringify(result).includes('hunter2'), JSON.stringify(result));

    const gate = judgeOperatorSignals({
      moment: 'after-phase',
      hop: '1.33',
      phase: 'canary',
      alerts: [],
      probes: result.probes,
      acknowledged: ['probe:slow'],
    });
    assert.equal(gate.verdict, 'halt');
    assert.equal(gate.reason, 'halted after canary of 1.33: probe:shop, probe:gone');
    assert.equal(gate.held[0]?.what, `probe shop (${base}/shop) failing: HTTP 503, expected 200`);
    assert.ok(!JSON.stringify(gate).includes('hunter2'));
  });

  it('with require, a failing probe is Unhealthy (not retried by the healthCheck profile); once it passes, healthy', async () => {
    shopStatus = 500;
    const health = probesOf(`  - {name: shop, url: "${base}/shop"}\n`);
    await assert.rejects(health.runProbes({ cluster: 'lab', require: true }), (err: unknown) => {
      assert.ok(err instanceof ApplicationFailure);
      assert.equal(err.type, 'Unhealthy');
      assert.equal(err.message, 'probe(s) failing: shop (HTTP 500, expected 200)');
      return true;
    });
    shopStatus = 200;
    const result = await health.runProbes({ cluster: 'lab', require: true });
    assert.deepEqual([result.healthy, result.failed], [true, []]);
  });

  it('waits up to waitSeconds for a failing probe to pass', async () => {
    shopStatus = 503;
    const health = probesOf(`  - {name: shop, url: "${base}/shop"}\n`);
    const timer = setTimeout(() => (shopStatus = 200), 1500);
    try {
      const started = Date.now();
      const result = await health.runProbes({ cluster: 'lab', waitSeconds: 20 });
      assert.equal(result.healthy, true);
      assert.ok(Date.now() - started >= 1400, 'it waited for the probe to recover');
    } finally {
      clearTimeout(timer);
    }
  });
});
