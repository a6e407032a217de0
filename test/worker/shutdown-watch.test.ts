import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { State } from '@temporalio/worker';
import { watchForStalledShutdown } from '../../worker/shutdown-watch.js';

/** A watch over a worker whose state the test sets, on a clock the test moves; `reported` is what it resolved with. */
function watched(initial: State, o: { asked: boolean; graceMs: number }) {
  const t = { state: initial, clock: 0, reported: undefined as State | undefined };
  const watch = watchForStalledShutdown(
    { getState: () => t.state },
    { asked: () => o.asked, graceMs: o.graceMs, pollMs: 2, now: () => t.clock },
  );
  void watch.stalled.then((state) => (t.reported = state));
  return { t, stop: watch.stop };
}

const settle = (ms = 30) => new Promise((resolve) => setTimeout(resolve, ms));

describe('the watch for a shutdown nobody asked for', () => {
  it('reports a worker that left RUNNING on its own and is still draining after the grace', async () => {
    const { t, stop } = watched('RUNNING', { asked: false, graceMs: 1000 });
    t.state = 'DRAINING';
    await settle();
    t.clock = 999;
    await settle();
    assert.equal(t.reported, undefined, 'within the grace it waits');
    t.clock = 1000;
    await settle();
    assert.equal(t.reported, 'DRAINING');
    stop();
  });

  it('leaves alone a shutdown the process asked for, and one that finishes', async () => {
    for (const [asked, last] of [
      [true, 'DRAINING'],
      [false, 'STOPPED'],
    ] as const) {
      const { t, stop } = watched('RUNNING', { asked, graceMs: 10 });
      t.state = 'DRAINING';
      await settle();
      t.state = last;
      t.clock = 10_000;
      await settle();
      assert.equal(t.reported, undefined, `asked ${asked}, ended ${last}`);
      stop();
    }
  });

  it('does not count the time before the worker started running', async () => {
    const { t, stop } = watched('INITIALIZED', { asked: false, graceMs: 100 });
    t.clock = 5000;
    await settle();
    t.state = 'RUNNING';
    await settle();
    t.state = 'STOPPING';
    await settle();
    assert.equal(t.reported, undefined, 'the grace starts when it leaves RUNNING');
    t.clock = 5100;
    await settle();
    assert.equal(t.reported, 'STOPPING');
    stop();
  });
});
