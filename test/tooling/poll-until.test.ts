import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { pollUntil, sleep } from '../../tooling/poll-until.js';

/** An attempt that answers `answers` in turn (the last one from then on), recording when it ran. */
function scripted<T>(answers: T[]) {
  const at: number[] = [];
  const start = Date.now();
  return {
    at,
    attempt: async (): Promise<T> => {
      at.push(Date.now() - start);
      return answers[Math.min(at.length - 1, answers.length - 1)] as T;
    },
  };
}
const timedOut = (last: unknown) => ({ timedOut: last });

describe('pollUntil: one way to wait', () => {
  it('returns the first result that is done, without waiting once it is', async () => {
    const s = scripted([false, false, true]);
    const pending: [boolean, number][] = [];
    const r = await pollUntil(s.attempt, (v) => v, timedOut, {
      timeoutMs: 5_000,
      intervalMs: 20,
      onPending: (v, n) => pending.push([v, n]),
    });
    assert.equal(r, true);
    assert.equal(s.at.length, 3);
    assert.deepEqual(pending, [
      [false, 1],
      [false, 2],
    ]);
    assert.ok((s.at[2] as number) >= 40, `waited the interval twice: ${s.at.join(', ')}`);
  });

  it('at the deadline, hands the last result to onTimeout, its last attempt at the deadline and not an interval past', async () => {
    const s = scripted([1, 2, 3, 4, 5, 6, 7, 8, 9]);
    const started = Date.now();
    const r = await pollUntil(s.attempt, () => false, timedOut, { timeoutMs: 250, intervalMs: 100 });
    const took = Date.now() - started;
    assert.deepEqual(r, { timedOut: s.at.length });
    assert.equal(s.at.length, 4, `attempts at 0, 100, 200, 250: ${s.at.join(', ')}`);
    assert.ok((s.at[3] as number) < 290, `the last attempt at the deadline: ${s.at.join(', ')}`);
    assert.ok(took >= 250 && took < 340, `took ${took} ms`);
  });

  it('makes one attempt when there is no time to wait, and lets onTimeout throw the caller’s message', async () => {
    const s = scripted<boolean>([false]);
    await assert.rejects(
      pollUntil(
        s.attempt,
        (v) => v,
        () => {
          throw new Error('node-1 was not Ready within 0 s');
        },
        { timeoutMs: 0, intervalMs: 1_000 },
      ),
      /node-1 was not Ready within 0 s/,
    );
    assert.equal(s.at.length, 1);
  });

  it('spaces the attempts by a backoff of the attempt number', async () => {
    const s = scripted([false, false, false, true]);
    const asked: number[] = [];
    await pollUntil(s.attempt, (v) => v, timedOut, {
      timeoutMs: 5_000,
      intervalMs: (n) => {
        asked.push(n);
        return n * 30;
      },
    });
    assert.deepEqual(asked, [1, 2, 3]);
    const gaps = s.at.slice(1).map((t, i) => t - (s.at[i] as number));
    gaps.forEach((g, i) => assert.ok(g >= (i + 1) * 30 - 2, `gap ${i + 1}: ${g} ms`));
  });

  it('stops waiting at once when cancelled, with the signal’s own reason', async () => {
    const cancel = new AbortController();
    const reason = new Error('activity cancelled');
    const s = scripted<boolean>([false]);
    setTimeout(() => cancel.abort(reason), 50);
    const started = Date.now();
    await assert.rejects(
      pollUntil(s.attempt, (v: boolean) => v, timedOut, { timeoutMs: 60_000, intervalMs: 10_000, signal: cancel.signal }),
      (err) => err === reason,
    );
    assert.ok(Date.now() - started < 1_000, 'not the interval');
    assert.equal(s.at.length, 1);
    // Already cancelled: no attempt at all.
    const t = scripted<boolean>([true]);
    await assert.rejects(
      pollUntil(t.attempt, (v: boolean) => v, timedOut, { timeoutMs: 1_000, intervalMs: 10, signal: cancel.signal }),
      (err) => err === reason,
    );
    assert.equal(t.at.length, 0);
  });

  it('sleep: waits, and rejects with the reason of a signal aborted meanwhile', async () => {
    const started = Date.now();
    await sleep(30);
    assert.ok(Date.now() - started >= 29);
    const cancel = new AbortController();
    setTimeout(() => cancel.abort('stop'), 10);
    await assert.rejects(sleep(10_000, cancel.signal), (err) => err === 'stop');
  });
});
