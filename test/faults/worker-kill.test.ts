import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { runInSuite, suiteLab } from './suite-run.js';
import { SHARED_TARGETS } from './kill-schedule.js';

/**
 * The fault harness in the suite: one upgrade 1.32 → 1.34 (two hops) with the worker SIGKILLed 8
 * times (each of the four targeted moments at least once) and the Temporal dev server SIGKILLed
 * and restarted on its file 5 times; every history then replays with the current bundle. Smaller than `npm run faults`
 * (suite-run.ts's lab) to keep the suite's cost down; the checks are the same.
 */
const LAB = suiteLab('crashes', 3000);

describe('fault harness: the worker and the Temporal server crash mid-upgrade', () => {
  it('upgrades through 8 worker kills and 5 server restarts, keeping every promise', { timeout: 20 * 60_000 }, async (t) => {
    const { report, trace } = await runInSuite(
      t,
      {
        seed: 20261130,
        kills: 8,
        serverRestarts: 5,
        description: LAB,
        schedule: { randomAfterMs: [2_000, 8_000], serverGapMs: [5_000, 20_000], serverDownMs: [500, 2_000] },
      },
      /\] (kill|server restart) \d/, // what each kill met: evidence that the kills landed where they say
    );
    assert.deepEqual(report.problems, [], trace);
    assert.ok(report.kills.length >= 8, `${report.kills.length} kills${trace}`); // more when a missed target was tried again
    assert.ok(report.serverRestarts.length >= 5, `${report.serverRestarts.length} server restarts${trace}`);
    for (const target of SHARED_TARGETS) assert.ok(report.targetsHit[target] >= 1, `no kill landed in ${target}${trace}`);
    // The cluster's workflow and every node's replayed with the current bundle (3 + 3 nodes, two hops for the control planes).
    assert.ok(report.replayed >= 10, `${report.replayed} histories replayed${trace}`);
    // Every targeted hit was a kill with the worker's work really out: a command running, or activities handed out.
    for (const k of report.kills.filter((k) => k.hit))
      assert.ok(k.commands.length + k.activities.length > 0, `kill ${k.n} found nothing in flight${trace}`);
    assert.equal(report.status?.phase, 'done', trace);
  });
});
