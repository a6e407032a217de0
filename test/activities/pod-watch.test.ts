// NodePodWatch's answers to what a real watch stream does now and then and the simulation's API server
// cannot be made to do on demand: a 410 Gone (its watch cache keeps every event since it started), and a
// connection that falls silent. The real list → watch → DELETED path and an API server restart are in
// test/activities/drain.test.ts.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { KubeWatch } from '../../activities/kube-api.js';
import { NodePodWatch, type PodListing } from '../../activities/pod-watch.js';

type OnEvent = (type: string, object: unknown) => void;
interface OpenWatch {
  query: Record<string, unknown>;
  send: OnEvent;
  end: (err: unknown) => void;
  aborted: boolean;
}

/** A KubeWatch whose streams the test drives: each open watch is kept, with what it was asked. */
function scriptedWatch() {
  const opened: OpenWatch[] = [];
  const kube: KubeWatch = {
    watch: (_path, query, onEvent, done) => {
      const ctl = new AbortController();
      const w: OpenWatch = { query, send: onEvent, end: done, aborted: false };
      ctl.signal.addEventListener('abort', () => {
        w.aborted = true;
        done(new Error('aborted'));
      });
      opened.push(w);
      return Promise.resolve(ctl);
    },
  };
  return { kube, opened };
}

const pod = (uid: string, resourceVersion: string) => ({ metadata: { uid, resourceVersion } });
const until = async (what: string, check: () => boolean) => {
  for (let i = 0; i < 200 && !check(); i++) await new Promise((r) => setTimeout(r, 25));
  assert.ok(check(), what);
};

describe('NodePodWatch', () => {
  it('goes on from the last resourceVersion seen when the server ends a watch, and relists on 410 Gone', async () => {
    const { kube, opened } = scriptedWatch();
    const listings: PodListing[] = [
      { uids: new Set(['a', 'b', 'c']), resourceVersion: '10' },
      { uids: new Set(['c']), resourceVersion: '50' },
    ];
    let lists = 0;
    let changes = 0;
    const stop = new AbortController();
    const watch = new NodePodWatch({
      kube,
      node: 'w1',
      list: () => Promise.resolve(listings[lists++] as PodListing),
      onChange: () => changes++,
      onFailure: (err) => assert.fail(String(err)),
      signal: stop.signal,
    });
    await watch.start();
    assert.equal(opened[0]?.query.resourceVersion, '10');
    assert.equal(opened[0]?.query.fieldSelector, 'spec.nodeName=w1');
    assert.equal(watch.isGone('a'), false);

    opened[0]?.send('DELETED', pod('a', '12'));
    assert.equal(watch.isGone('a'), true);
    assert.equal(changes, 2, 'the list, then the deletion');
    opened[0]?.send('BOOKMARK', { metadata: { resourceVersion: '20' } });
    opened[0]?.end(null); // the server's timeoutSeconds
    await until('a second watch', () => opened.length === 2);
    assert.equal(opened[1]?.query.resourceVersion, '20', 'from the bookmark, not a new list');
    assert.equal(lists, 1);

    // b is deleted while no watch can tell (history compacted): the 410 makes a new list, which does.
    opened[1]?.send('ERROR', { kind: 'Status', code: 410, reason: 'Expired' });
    opened[1]?.end(null);
    await until('relisted', () => lists === 2 && opened.length === 3);
    assert.equal(watch.isGone('b'), true);
    assert.equal(watch.isGone('c'), false);
    assert.equal(opened[2]?.query.resourceVersion, '50');
    stop.abort();
    assert.equal(opened[2]?.aborted, true, 'stopping ends the watch');
  });

  it('takes a watch the client cannot even open for a failed one: a new list, no rejection left unawaited', async () => {
    let opens = 0;
    const kube: KubeWatch = {
      watch: () => (++opens === 1 ? Promise.reject(new Error('exec credential plugin failed')) : new Promise(() => undefined)),
    };
    let lists = 0;
    const stop = new AbortController();
    const watch = new NodePodWatch({
      kube,
      node: 'w1',
      list: () => Promise.resolve({ uids: new Set([`pod-${++lists}`]), resourceVersion: String(lists) }),
      onChange: () => undefined,
      onFailure: (err) => assert.fail(String(err)),
      signal: stop.signal,
    });
    await watch.start();
    await until('listed again after the watch could not open', () => lists === 2 && opens === 2);
    assert.equal(watch.isGone('pod-1'), true, 'the new list is what the watch knows now');
    stop.abort();
  });

  it('reports a list that failed for good, and is not gone before its first list', async () => {
    const { kube } = scriptedWatch();
    const failures: unknown[] = [];
    const watch = new NodePodWatch({
      kube,
      node: 'w1',
      list: () => Promise.reject(new Error('the API server stayed away')),
      onChange: () => undefined,
      onFailure: (err) => failures.push(err),
      signal: new AbortController().signal,
    });
    assert.equal(watch.isGone('a'), false);
    await watch.start();
    assert.deepEqual(
      failures.map((e) => (e as Error).message),
      ['the API server stayed away'],
    );
    assert.equal(watch.isGone('a'), false);
  });
});
