import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { State } from '@temporalio/worker';
import { watchForStalledShutdown } from '../../worker/shutdown-watch.js';

/** A worker whose state the test sets, and a clock the test moves. */
function fakeWorker(initial: State) {
  const worker = { state: initial, getState: () => worker.state };
  return worker;
}

const settle = (ms = 30) => new Promise((resolve) => setTimeout(resolve, ms));

describe('the watch for a shutdown nobody asked for', () => {
  it('reports a worker that left RUNNING on its own and is still draining after the grace', async () => {
    const worker = fakeWorker('RUNNING');
    let clock = 0;
    const watch = watchForStalledShutdown(worker, { asked: () => false, graceMs: 1000, pollMs: 2, now: () => clock });
    let reported: State | undefined;
    void watch.stalled.then((state) => (reported = state));
    worker.state = 'DRAINING';
    await settle();
    clock = 999;
    await settle();
    assert.equal(reported, undefined, 'within the grace it waits');
    clock = 1000;
    await settle();
    assert.equal(reported, 'DRAINING');
    watch.stop();
  });

  it('leaves alone a shutdown the process asked for, and one that finishes', async () => {
    for (const [asked, last] of [
      [true, 'DRAINING'],
      [false, 'STOPPED'],
    ] as const) {
      const worker = fakeWorker('RUNNING');
      let clock = 0;
      const watch = watchForStalledShutdown(worker, { asked: () => asked, graceMs: 10, pollMs: 2, now: () => clock });
      let reported: State | undefined;
      void watch.stalled.then((state) => (reported = state));
      worker.state = 'DRAINING';
      await settle();
      worker.state = last;
      clock = 10_000;
      await settle();
      assert.equal(reported, undefined, `asked ${asked}, ended ${last}`);
      watch.stop();
    }
  });

  it('does not count the time before the worker started running', async () => {
    const worker = fakeWorker('INITIALIZED');
    let clock = 0;
    const watch = watchForStalledShutdown(worker, { asked: () => false, graceMs: 100, pollMs: 2, now: () => clock });
    let reported: State | undefined;
    void watch.stalled.then((state) => (reported = state));
    clock = 5000;
    await settle();
    worker.state = 'RUNNING';
    await settle();
    worker.state = 'STOPPING';
    await settle();
    assert.equal(reported, undefined, 'the grace starts when it leaves RUNNING');
    clock = 5100;
    await settle();
    assert.equal(reported, 'STOPPING');
    watch.stop();
  });
});
