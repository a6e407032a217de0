import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { runInSuite, suiteLab } from './suite-run.js';

/**
 * The fault harness on the production stack, short: the Temporal server on PostgreSQL, a 3 + 3 node
 * shared world. PostgreSQL SIGKILLed (postmaster and backends) twice, inside `kubeadm upgrade apply`
 * and inside a drain, the Temporal server once inside apply, the worker three times; every final check
 * holds and every history replays with the current bundle. Apply takes 20 s here, so that both the
 * server's and PostgreSQL's outages fit in one (they take turns).
 */
const LAB = suiteLab('stackfaults', 20000);

describe('fault harness: PostgreSQL, the Temporal server and the worker crash mid-upgrade on the stack', () => {
  it('upgrades through PostgreSQL SIGKILLs inside apply and a drain, keeping every promise', { timeout: 20 * 60_000 }, async (t) => {
    const { report, trace } = await runInSuite(
      t,
      {
        seed: 20261206,
        kills: 3,
        serverRestarts: 1,
        dbRestarts: 2,
        temporal: 'stack',
        description: LAB,
        schedule: { randomAfterMs: [2_000, 8_000] },
      },
      /\] (kill|server restart|PostgreSQL kill) \d/,
    );
    assert.deepEqual(report.problems, [], trace);
    // More than planned when a missed target was tried again (kill-schedule.ts's tryAgainAfter).
    assert.ok(report.dbRestarts.length >= 2, `${report.dbRestarts.length} PostgreSQL kills${trace}`);
    assert.ok(report.serverRestarts.length >= 1, `${report.serverRestarts.length} server restarts${trace}`);
    assert.ok(report.kills.length >= 3, `${report.kills.length} kills${trace}`);
    const inApply = report.dbRestarts.find((r) => r.target === 'apply' && r.hit);
    const inDrain = report.dbRestarts.find((r) => r.target === 'drain' && r.hit);
    assert.ok(
      inApply?.commands.some((c) => /kubeadm upgrade apply/.test(c)),
      `PostgreSQL died during apply${trace}`,
    );
    assert.ok(inDrain, `PostgreSQL died during a drain${trace}`);
    const server = report.serverRestarts.find((r) => r.target === 'apply' && r.hit);
    assert.ok(server?.hit && server.commands.some((c) => /kubeadm upgrade apply/.test(c)), `the server died during apply${trace}`);
    assert.equal(report.status?.phase, 'done', trace);
  });
});
