import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import type { Activities } from '../../activities/index.js';
import type { Exclusion } from '../../rules/index.js';
import { clusterUpgradeWorkflow } from '../../workflows/cluster-upgrade-workflow.js';
import { scheduledUpgradeWorkflow } from '../../workflows/scheduled-upgrade-workflow.js';
import { approveUpdate, type UpgradeStatus } from '../../workflows/rollout-messages.js';
import { fakeCluster } from '../helpers/fake-cluster.js';
import { untilStatus } from '../helpers/status-polling.js';
import { startDevServer } from '../helpers/temporal-env.js';
import { withMockedWorker } from '../helpers/workers.js';

const iso = (t: number) => new Date(t).toISOString();
/** A wall time in UTC to the second, as the configuration spells it. */
const wall = (t: number) => iso(Math.ceil(t / 1000) * 1000).slice(0, 19);

describe('exclusions: blackout dates hold phases and skip schedule firings (mocked activities, real dev server)', () => {
  let env: TestWorkflowEnvironment;
  before(async () => {
    env = await startDevServer();
  });
  after(async () => {
    await env?.teardown();
  });

  it('an exclusion that starts mid-run holds the next phase until it ends; status says until when and why', async () => {
    const c = fakeCluster();
    const t0 = Date.now();
    // It begins while the workers gate waits and ends 20 s later: the canary's phase waits for its end.
    const exclusion: Exclusion = {
      from: wall(t0 + 8_000),
      to: wall(t0 + 28_000),
      timeZone: 'UTC',
      scope: 'minor',
      reason: 'change freeze',
    };
    const ends = Date.parse(`${exclusion.to}Z`);
    const fake = c.acts as unknown as Record<string, (i: Record<string, unknown>) => Promise<object>>;
    const cordoned: Record<string, number> = {};
    const acts = {
      ...c.acts,
      takeInventory: async (i: Record<string, unknown>) => ({ ...(await fake.takeInventory?.(i)), exclusions: [exclusion] }),
      cordonNode: async (i: Record<string, unknown>) => ((cordoned[String(i.node)] ??= Date.now()), fake.cordonNode?.(i)),
    } as unknown as Partial<Activities>;
    const status = await withMockedWorker(env, acts, 'exclusions', async (taskQueue) => {
      const handle = await env.client.workflow.start(clusterUpgradeWorkflow, {
        taskQueue,
        workflowId: `upgrade/exclusions-${taskQueue}`,
        args: [{ cluster: 'lab', to: '1.33', policy: { approveWorkers: true } }],
      });
      await untilStatus(handle, 'the workers gate', (s) => s.gates.some((g) => g.name === 'workers-1.33.7'), 60_000);
      await new Promise((r) => setTimeout(r, Math.max(0, Date.parse(`${exclusion.from}Z`) + 500 - Date.now())));
      await handle.executeUpdate(approveUpdate, { args: [{ gate: 'workers-1.33.7', by: 'ana' }] });
      const waiting = await untilStatus(handle, 'the canary held by the exclusion', (s) => s.waiting !== undefined, 30_000);
      assert.deepEqual(waiting.waiting, {
        for: 'exclusion',
        reason: `${exclusion.from}..${exclusion.to} UTC (minor: change freeze)`,
        phase: 'canary',
        hop: '1.33.7',
        since: waiting.waiting?.since,
        opensAt: iso(ends),
      });
      return handle.result() as Promise<UpgradeStatus>;
    });
    assert.equal(status.phase, 'done', status.events.join('\n'));
    assert.ok(
      status.events.some((e) => /^canary of 1\.33\.7 waited \d+ s for the end of the exclusion$/.test(e)),
      status.events.join('\n'),
    );
    const w1 = cordoned.w1;
    assert.ok(
      w1 !== undefined && w1 >= ends,
      `the canary's cordon at ${w1 === undefined ? 'never' : iso(w1)}, the exclusion ended ${iso(ends)}`,
    );
  });

  it('no upgrade starts inside one: refused in one line, until when and why', async () => {
    const c = fakeCluster();
    const fake = c.acts as unknown as Record<string, (i: Record<string, unknown>) => Promise<object>>;
    const now = Date.now();
    const exclusion: Exclusion = { from: wall(now - 3_600_000), to: wall(now + 3_600_000), timeZone: 'UTC', scope: 'all' };
    const acts = {
      ...c.acts,
      takeInventory: async (i: Record<string, unknown>) => ({ ...(await fake.takeInventory?.(i)), exclusions: [exclusion] }),
    } as unknown as Partial<Activities>;
    await withMockedWorker(env, acts, 'exclusion-start', async (taskQueue) => {
      await assert.rejects(
        env.client.workflow.execute(clusterUpgradeWorkflow, {
          taskQueue,
          workflowId: `upgrade/excl-${taskQueue}`,
          args: [{ cluster: 'lab', to: '1.33' }],
        }),
        (err: Error & { cause?: Error }) =>
          err.cause?.message ===
          `refusing to start: inside the exclusion ${exclusion.from}..${exclusion.to} UTC (all) until ${iso(Date.parse(`${exclusion.to}Z`))}`,
      );
    });
    assert.equal(c.calls.filter(([n]) => n === 'cordonNode').length, 0, 'nothing touched');
  });

  it("a schedule's firing inside its --exclusion (scope minor, the run a minor move) is skipped and says so", async () => {
    const c = fakeCluster();
    const now = Date.now();
    const minorOnly: Exclusion = {
      from: wall(now - 3_600_000),
      to: wall(now + 3_600_000),
      timeZone: 'UTC',
      scope: 'minor',
      reason: 'year end',
    };
    const result = await withMockedWorker(env, c.acts, 'exclusion-schedule', (taskQueue) =>
      env.client.workflow.execute(scheduledUpgradeWorkflow, {
        taskQueue,
        workflowId: `scheduled-upgrade/excl-${taskQueue}`,
        args: [{ cluster: 'lab', to: '1.33', schedule: 'upgrade-schedule/lab', exclusions: [minorOnly] }],
      }),
    );
    assert.equal(result.outcome, 'skipped');
    assert.equal(
      result.message,
      `skipped: inside the exclusion ${minorOnly.from}..${minorOnly.to} UTC (minor: year end) until ${iso(Date.parse(`${minorOnly.to}Z`))}`,
    );
    assert.equal(c.calls.filter(([n]) => n === 'cordonNode').length, 0, 'no upgrade started');
  });
});
