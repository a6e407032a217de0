// The watch-based waits (activities/watch-until.ts, pdb-budget-watch.ts) against what a real watch stream
// does now and then and the simulation's API server cannot be made to do on demand: a 410 Gone (its watch
// cache keeps every event since it started). An API server restart under each wait is in
// test/activities/health.test.ts; the API server's own throttling (429 of Priority and Fairness) is told
// from a PDB's 429 here, through the real client over HTTP (the simulation runs its API servers without
// APF: a 1,000-node simulation must not queue behind it).
import assert from 'node:assert/strict';
import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, describe, it } from 'node:test';
import { CoreV1Api, KubeConfig } from '@kubernetes/client-node';
import { evictPod } from '../../activities/drain-eviction.js';
import { isBudgetRefusal } from '../../activities/errors.js';
import type { KubeApi, KubeWatch } from '../../activities/kube-api.js';
import { ObjectWatch } from '../../activities/object-watch.js';
import { PdbBudgetWatch } from '../../activities/pdb-budget-watch.js';
import { throttledFor } from '../../activities/throttling.js';
import { watchUntilHealthy } from '../../activities/watch-until.js';

type OnEvent = (type: string, object: unknown) => void;
interface OpenWatch {
  path: string;
  query: Record<string, unknown>;
  send: OnEvent;
  end: (err: unknown) => void;
}

function scriptedWatch() {
  const opened: OpenWatch[] = [];
  const kube: KubeWatch = {
    watch: (path, query, onEvent, done) => {
      const ctl = new AbortController();
      opened.push({ path, query, send: onEvent, end: done });
      ctl.signal.addEventListener('abort', () => done(new Error('aborted')));
      return Promise.resolve(ctl);
    },
  };
  return { kube, opened };
}

const until = async (what: string, check: () => boolean) => {
  for (let i = 0; i < 200 && !check(); i++) await new Promise((r) => setTimeout(r, 25));
  assert.ok(check(), what);
};

const node = (ready: boolean, rv: string) => ({
  metadata: { uid: 'n1', name: 'w1', resourceVersion: rv },
  status: { conditions: [{ type: 'Ready', status: ready ? 'True' : 'False' }] },
});
type NodeLike = { status?: { conditions?: { type: string; status: string }[] } };
const judgeReady = ([items]: unknown[][]) => ({
  healthy: ((items?.[0] as NodeLike | undefined)?.status?.conditions ?? []).some((c) => c.type === 'Ready' && c.status === 'True'),
});

/** An ApiException as @kubernetes/client-node throws it. */
const apiError = (code: number, body: unknown, headers: Record<string, string> = {}) =>
  Object.assign(new Error(`HTTP-Code: ${code}`), { code, body, headers });
const APF_HEADERS = { 'x-kubernetes-pf-flowschema-uid': 'fs-1', 'x-kubernetes-pf-prioritylevel-uid': 'pl-1' };
const PDB_STATUS = {
  kind: 'Status',
  status: 'Failure',
  message: "Cannot evict pod as it would violate the pod's disruption budget.",
  reason: 'TooManyRequests',
  details: { causes: [{ reason: 'DisruptionBudget', message: 'The disruption budget web needs 2 healthy pods and has 2 currently' }] },
  code: 429,
};

describe('watch-based waits', () => {
  it('a wait lists, judges, then watches: an event ends it, and a 410 Gone makes a new list that does', async () => {
    const { kube, opened } = scriptedWatch();
    const listings = [node(false, '10'), node(false, '30'), node(true, '50')];
    let lists = 0;
    const wait = (what: string) =>
      watchUntilHealthy({
        what,
        cluster: 'c',
        waitSeconds: 30,
        kube,
        collections: [
          {
            what: 'read node w1',
            path: '/api/v1/nodes',
            query: { fieldSelector: 'metadata.name=w1' },
            list: () => Promise.resolve({ items: [listings[lists++] ?? node(true, '99')], resourceVersion: '' }),
          },
        ],
        judge: judgeReady,
      });

    const byEvent = wait('by event');
    await until('a watch from the list', () => opened.length === 1);
    assert.equal(opened[0]?.path, '/api/v1/nodes');
    assert.equal(opened[0]?.query.fieldSelector, 'metadata.name=w1');
    opened[0]?.send('MODIFIED', node(true, '12'));
    assert.deepEqual(await byEvent, { healthy: true });
    assert.equal(lists, 1, 'one list, then the event');

    const by410 = wait('by 410');
    await until('a second watch', () => opened.length === 2);
    opened[1]?.send('ERROR', { kind: 'Status', code: 410, reason: 'Expired' });
    opened[1]?.end(null);
    assert.deepEqual(await by410, { healthy: true });
    assert.equal(lists, 3, 'the 410 made a new list, which found the node Ready');
  });

  it("a restarted API server's first 403s after a broken watch are ridden; a 403 with no outage before it fails at once", async () => {
    const { kube, opened } = scriptedWatch();
    const forbidden = apiError(
      403,
      JSON.stringify({ kind: 'Status', code: 403, message: 'pods is forbidden: User "skewless-worker" cannot list resource "pods"' }),
    );
    let lists = 0;
    const answers = [
      () => Promise.resolve({ items: [node(false, '10')], resourceVersion: '10' }),
      // The relist after the watch broke meets the restarted server before its RBAC authorizer synced.
      () => Promise.reject(forbidden),
      () => Promise.resolve({ items: [node(true, '20')], resourceVersion: '20' }),
    ];
    const collection = { what: 'list pods on w1', path: '/api/v1/nodes', list: () => (answers[lists++] ?? answers[2]!)() };
    const wait = watchUntilHealthy({ what: 'node', cluster: 'c', waitSeconds: 30, kube, collections: [collection], judge: judgeReady });
    await until('a watch from the list', () => opened.length === 1);
    opened[0]?.end(Object.assign(new Error('read ECONNRESET'), { code: 'ECONNRESET' }));
    assert.deepEqual(await wait, { healthy: true });
    assert.equal(lists, 3, 'the 403 was listed again, not taken as missing RBAC');

    const refused = watchUntilHealthy({
      what: 'node',
      cluster: 'c',
      waitSeconds: 30,
      kube,
      collections: [{ ...collection, list: () => Promise.reject(forbidden) }],
      judge: judgeReady,
    });
    await assert.rejects(refused, /list pods on w1: HTTP 403: pods is forbidden/);
  });

  it('a wait that passes at once opens no watch; one that ends unhealthy returns the last judgement', async () => {
    const { kube, opened } = scriptedWatch();
    const collection = (ready: boolean) => ({
      what: 'read node w1',
      path: '/api/v1/nodes',
      list: () => Promise.resolve({ items: [node(ready, '1')], resourceVersion: '1' }),
    });
    const base = { what: 'node', cluster: 'c', kube, judge: judgeReady };
    assert.deepEqual(await watchUntilHealthy({ ...base, waitSeconds: 30, collections: [collection(true)] }), { healthy: true });
    assert.equal(opened.length, 0);
    assert.deepEqual(await watchUntilHealthy({ ...base, waitSeconds: 0.3, collections: [collection(false)] }), { healthy: false });
  });

  it('abandons a watch the server never answers (going down as it opened) and lists again', async () => {
    let opens = 0;
    const kube: KubeWatch = {
      // The first watch hangs before its headers, as one sent to an API server going down can.
      watch: () => (++opens === 1 ? new Promise(() => undefined) : Promise.resolve(new AbortController())),
    };
    let lists = 0;
    const stop = new AbortController();
    const watch = new ObjectWatch({
      kube,
      path: '/api/v1/pods',
      list: () => Promise.resolve({ items: [{ metadata: { uid: `pod-${++lists}` } }], resourceVersion: String(lists) }),
      onChange: () => undefined,
      onFailure: (err) => assert.fail(String(err)),
      signal: stop.signal,
      openMs: 200,
    });
    try {
      await watch.start();
      await until('listed and watched again', () => lists === 2 && opens === 2);
      assert.deepEqual(
        watch.objects()?.map((o) => o.metadata?.uid),
        ['pod-2'],
      );
    } finally {
      stop.abort();
    }
  });

  it('a list the API server throttles is tried again after its Retry-After, not before', async () => {
    const { kube } = scriptedWatch();
    const at: number[] = [];
    const started = Date.now();
    const result = await watchUntilHealthy({
      what: 'node',
      cluster: 'c',
      waitSeconds: 30,
      kube,
      judge: judgeReady,
      collections: [
        {
          what: 'read node w1',
          path: '/api/v1/nodes',
          list: () => {
            at.push(Date.now() - started);
            return at.length === 1
              ? Promise.reject(apiError(429, 'Too many requests, please try again later.\n', { 'retry-after': '2', ...APF_HEADERS }))
              : Promise.resolve({ items: [node(true, '1')], resourceVersion: '1' });
          },
        },
      ],
    });
    assert.deepEqual(result, { healthy: true });
    assert.equal(at.length, 2);
    assert.ok((at[1] ?? 0) - (at[0] ?? 0) >= 1900, `tried again after Retry-After: ${at.join(', ')} ms`);
  });

  it("a refused eviction's PDB is watched: the wait ends when it allows a disruption, and survives a 410 Gone", async () => {
    const { kube: watch, opened } = scriptedWatch();
    const pdb = (allowed: number, rv: string) => ({
      metadata: { uid: 'p1', name: 'web', namespace: 'default', generation: 1, resourceVersion: rv },
      status: { observedGeneration: 1, disruptionsAllowed: allowed },
    });
    const listings = [pdb(0, '10'), pdb(1, '40')];
    let lists = 0;
    const kube = {
      watch,
      policy: {
        listNamespacedPodDisruptionBudget: () => Promise.resolve({ items: [listings[lists++]], metadata: { resourceVersion: '' } }),
      },
    } as unknown as KubeApi;
    const stop = new AbortController();
    const budgets = new PdbBudgetWatch(kube, stop.signal);
    try {
      const first = budgets.untilAllowed('default', 'web', { maxMs: 20_000, fallbackMs: 500 });
      await until('the PDB watched', () => opened.length === 1);
      assert.equal(opened[0]?.path, '/apis/policy/v1/namespaces/default/poddisruptionbudgets');
      assert.equal(opened[0]?.query.fieldSelector, 'metadata.name=web');
      let done = false;
      void first.then(() => (done = true));
      await new Promise((r) => setTimeout(r, 100));
      assert.equal(done, false, 'no disruption allowed: still waiting');
      opened[0]?.send('ERROR', { kind: 'Status', code: 410, reason: 'Expired' });
      opened[0]?.end(null);
      const t0 = Date.now();
      await first;
      assert.ok(Date.now() - t0 < 5_000, 'ended by the new list, not by maxMs');
      assert.equal(lists, 2);
      // Refused again while the watch still shows a disruption allowed: it lags the server, so the next
      // eviction waits for an event showing one allowed, or a second: never a loop faster.
      const t1 = Date.now();
      await budgets.untilAllowed('default', 'web', { maxMs: 20_000, fallbackMs: 500 });
      assert.ok(Date.now() - t1 >= 900, `waited ${Date.now() - t1} ms`);
      const again = budgets.untilAllowed('default', 'web', { maxMs: 20_000, fallbackMs: 500 });
      const t2 = Date.now();
      opened.at(-1)?.send('MODIFIED', pdb(2, '60'));
      await again;
      assert.ok(Date.now() - t2 < 500, 'an event showing a disruption allowed ends the wait at once');
      assert.equal(lists, 2, 'no list for any of it');
    } finally {
      budgets.close();
      stop.abort();
    }
  });

  it("tells the API server's throttling from a PDB's refusal, though both are 429s with APF's headers", () => {
    const apf = apiError(429, 'Too many requests, please try again later.\n', { 'Retry-After': '3', ...APF_HEADERS });
    assert.deepEqual(throttledFor(apf), { retryAfterMs: 3000, flowSchemaUid: 'fs-1', priorityLevelUid: 'pl-1' });
    const pdbRefusal = apiError(429, JSON.stringify(PDB_STATUS), APF_HEADERS);
    assert.equal(throttledFor(pdbRefusal), undefined);
    assert.equal(isBudgetRefusal(pdbRefusal), true);
    assert.equal(isBudgetRefusal(apf), false);
    // Max-in-flight's 429 (APF off) has no PF headers and is throttling too; a silly Retry-After is bounded.
    assert.deepEqual(throttledFor(apiError(429, 'Too many requests', { 'retry-after': '86400' })), { retryAfterMs: 60_000 });
    assert.equal(throttledFor(apiError(500, 'etcd timeout')), undefined);
  });

  describe('an eviction through the real client, answered at the HTTP layer as an API server does', () => {
    let server: Server;
    let answer: (res: ServerResponse) => void = () => undefined;
    after(() => server?.close());

    const core = async () => {
      server ??= createServer((_req, res) => answer(res));
      if (!server.listening) await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
      const kc = new KubeConfig();
      kc.loadFromOptions({
        clusters: [{ name: 'c', server: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, skipTLSVerify: true }],
        users: [{ name: 'u' }],
        contexts: [{ name: 'x', cluster: 'c', user: 'u' }],
        currentContext: 'x',
      });
      return { core: kc.makeApiClient(CoreV1Api) } as unknown as KubeApi;
    };
    const pod = { namespace: 'default', name: 'web-1', uid: 'u1' };

    it("APF's 429 (plain text, Retry-After, X-Kubernetes-PF-*) is throttling; a PDB's 429 (a Status naming the budget) is a refusal", async () => {
      const kube = await core();
      answer = (res) => {
        res.writeHead(429, { 'Content-Type': 'text/plain; charset=utf-8', 'Retry-After': '1', ...APF_HEADERS });
        res.end('Too many requests, please try again later.\n');
      };
      const throttled = await evictPod(kube, pod);
      assert.deepEqual(throttled, { kind: 'throttled', throttle: { retryAfterMs: 1000, flowSchemaUid: 'fs-1', priorityLevelUid: 'pl-1' } });

      answer = (res) => {
        res.writeHead(429, { 'Content-Type': 'application/json', ...APF_HEADERS });
        res.end(JSON.stringify(PDB_STATUS));
      };
      const refused = await evictPod(kube, pod);
      assert.equal(refused.kind, 'blocked');
      assert.equal(refused.kind === 'blocked' && refused.byBudget, true);
    });
  });
});
