import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import type { Activities } from '../../activities/index.js';
import { clusterUpgradeWorkflow } from '../../workflows/cluster-upgrade-workflow.js';
import { approveUpdate, type UpgradeStatus } from '../../workflows/rollout-messages.js';
import { fakeCluster } from '../helpers/fake-cluster.js';
import { untilStatus } from '../helpers/status-polling.js';
import { startDevServer } from '../helpers/temporal-env.js';
import { withMockedWorker } from '../helpers/workers.js';
import { windowBetween } from './window-clock.js';

const iso = (t: number) => new Date(t).toISOString();

describe('maintenance windows survive continue-as-new (mocked activities, real dev server)', () => {
  let env: TestWorkflowEnvironment;
  before(async () => {
    env = await startDevServer();
  });
  after(async () => {
    await env?.teardown();
  });

  it('a later run, which never read the configuration, still waits for the window', async () => {
    const c = fakeCluster();
    // Window A is open now and closes while the workers gate waits; window B opens a little later.
    const t0 = Date.now();
    const a = windowBetween(t0 - 10_000, t0 + 20_000, 'Europe/Berlin');
    const b = windowBetween(a.closesAt + 10_000, a.closesAt + 10 * 60_000, 'Europe/Berlin');
    const fake = c.acts as unknown as Record<string, (i: Record<string, unknown>) => Promise<object>>;
    const cordoned: Record<string, number> = {};
    const acts = {
      ...c.acts,
      // Only the run that plans reads the inventory's windows; later runs get them from the carried plan.
      takeInventory: async (i: Record<string, unknown>) => ({
        ...(await fake.takeInventory?.(i)),
        maintenanceWindows: [a.window, b.window],
      }),
      cordonNode: async (i: Record<string, unknown>) => ((cordoned[String(i.node)] ??= Date.now()), fake.cordonNode?.(i)),
    } as unknown as Partial<Activities>;
    const status = await withMockedWorker(env, acts, 'carried-windows', async (taskQueue) => {
      const handle = await env.client.workflow.start(clusterUpgradeWorkflow, {
        taskQueue,
        workflowId: `upgrade/carried-${taskQueue}`,
        args: [{ cluster: 'lab', to: '1.33', policy: { approveWorkers: true, continueAsNewAfterEvents: 1 } }],
      });
      await untilStatus(handle, 'the workers gate', (s) => s.gates.some((g) => g.name === 'workers-1.33.7'), 60_000);
      await new Promise((r) => setTimeout(r, Math.max(0, a.closesAt + 500 - Date.now())));
      await handle.executeUpdate(approveUpdate, { args: [{ gate: 'workers-1.33.7', by: 'ana' }] });
      // The canary's phase is the first safe point after the gate: a new run starts there, then waits.
      const latest = env.client.workflow.getHandle(handle.workflowId);
      const waiting = await untilStatus(latest, 'the canary waiting in a later run', (s) => s.waiting !== undefined, 60_000);
      assert.deepEqual([waiting.waiting?.phase, waiting.waiting?.opensAt], ['canary', iso(b.opensAt)]);
      assert.ok(waiting.runs >= 1, `runs: ${waiting.runs}`);
      return latest.result() as Promise<UpgradeStatus>;
    });
    assert.equal(status.phase, 'done', status.events.join('\n'));
    assert.ok(
      status.events.some((e) => /^canary of 1\.33\.7 waited \d+ s for the maintenance window$/.test(e)),
      status.events.join('\n'),
    );
    assert.equal(c.calls.filter(([n]) => n === 'takeInventory').length, 2, 'the plan and the post-hop check: no run re-read the windows');
    const w1 = cordoned.w1;
    assert.ok(
      w1 !== undefined && w1 >= b.opensAt,
      `the canary's cordon at ${w1 === undefined ? 'never' : iso(w1)}, window B opened ${iso(b.opensAt)}`,
    );
  });
});
