import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { writeFileSync } from 'node:fs';
import { ApplicationFailure } from '@temporalio/common';
import { historyToJSON } from '@temporalio/common/lib/proto-utils.js';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import type { Activities } from '../../activities/index.js';
import type { FiringAlert } from '../../rules/readiness/operator-signals.js';
import { upgradeWorkflowId } from '../../contracts/workflow-ids.js';
import { clusterUpgradeWorkflow } from '../../workflows/cluster-upgrade-workflow.js';
import { approveUpdate } from '../../workflows/rollout-messages.js';
import { fakeCluster } from '../helpers/fake-cluster.js';
import { untilStatus } from '../helpers/status-polling.js';
import { startDevServer } from '../helpers/temporal-env.js';
import { withMockedWorker } from '../helpers/workers.js';

/**
 * The alert gate and the soak after every phase in the rollout core (issue 21), with mocked
 * activities: what the workflow does with what checkAlerts answers. checkAlerts itself is tested
 * against a real Prometheus (test/activities/alerts.test.ts, test/e2e/alert-gate.test.ts).
 */

type Acts = Partial<Activities>;
const nodeDown: FiringAlert = { name: 'NodeDown', labels: { severity: 'page' } };

/** checkAlerts answering from `firing()` (configured), each call recorded with the cordons so far. */
function alerting(c: ReturnType<typeof fakeCluster>, firing: () => FiringAlert[] | Error): Acts {
  return {
    ...c.acts,
    checkAlerts: (async (i: { cluster: string }) => {
      c.calls.push(['checkAlerts', i]);
      const now = firing();
      if (now instanceof Error) throw now;
      return { cluster: i.cluster, configured: true, prometheus: 'http://prom:9090/', query: 'ALERTS', firing: now, pollSeconds: 1 };
    }) as unknown as Activities['checkAlerts'],
  };
}

const cordoned = (c: ReturnType<typeof fakeCluster>) => c.calls.filter(([n]) => n === 'cordonNode').map(([, i]) => i.node as string);

describe('workflow: the alert gate and the soak after every phase (mocked activities)', () => {
  let env: TestWorkflowEnvironment;
  before(async () => {
    env = await startDevServer();
  });
  after(async () => {
    await env?.teardown();
  });
  const withWorker = <T>(acts: Acts, body: (taskQueue: string) => Promise<T>) => withMockedWorker(env, acts, 'alerts', body);
  const start = (taskQueue: string, name: string, policy: Record<string, unknown> = {}) =>
    env.client.workflow.start(clusterUpgradeWorkflow, {
      taskQueue,
      workflowId: upgradeWorkflowId(`${name}-${taskQueue}`),
      args: [{ cluster: 'lab', to: '1.33', policy: { verifySeconds: 1, ...policy } }],
    });

  it('no alerts block: asked once, never again in the run', async () => {
    const c = fakeCluster();
    const status = await withWorker(c.acts, async (tq) => (await start(tq, 'none')).result());
    assert.equal(status.phase, 'done');
    assert.equal(c.calls.filter(([n]) => n === 'checkAlerts').length, 1);
  });

  it('a firing alert holds the control plane until it clears; nothing is touched meanwhile', async () => {
    const c = fakeCluster();
    let fire = true;
    const status = await withWorker(
      alerting(c, () => (fire ? [nodeDown] : [])),
      async (tq) => {
        const h = await start(tq, 'before');
        const s = await untilStatus(h, 'the control plane held', (st) =>
          st.gates.some((g) => g.name === 'alerts-before-control-plane-1.33.7'),
        );
        assert.ok(
          s.events.some((e) =>
            e.startsWith('control-plane of 1.33.7 waits: alert:NodeDown; skewless approve lab --gate alerts-before-control-plane-1.33.7'),
          ),
          s.events.join('\n'),
        );
        await new Promise((r) => setTimeout(r, 2_500)); // two more asks, still firing
        assert.ok(!c.calls.some(([n]) => n === 'snapshotEtcd' || n === 'installPackages'), 'no snapshot, no package while held');
        assert.ok(c.calls.filter(([n]) => n === 'checkAlerts').length >= 2, 'asked again while held');
        fire = false;
        return h.result();
      },
    );
    assert.equal(status.phase, 'done', status.events.join('\n'));
    assert.ok(status.events.includes('alerts cleared: control-plane of 1.33.7 starts'), status.events.join('\n'));
    assert.equal(status.gates.find((g) => g.name === 'alerts-before-control-plane-1.33.7')?.approvedBy, 'alerts cleared');
  });

  it('an alert that fires after the canary halts the rollout until the operator approves; the batch starts after', async () => {
    const c = fakeCluster();
    // Fires once the canary's node moved (one worker kubelet restarted), for good.
    const firing = () =>
      c.calls.filter(([n, i]) => n === 'restartKubelet' && String(i.node).startsWith('w')).length >= 1 ? [nodeDown] : [];
    const status = await withWorker(alerting(c, firing), async (tq) => {
      const h = await start(tq, 'after', { canary: 1, batchSize: 1 });
      await untilStatus(h, 'halted after the canary', (st) =>
        st.gates.some((g) => g.name === 'alerts-after-canary-1.33.7' && !g.approvedBy),
      );
      await new Promise((r) => setTimeout(r, 1_500));
      assert.deepEqual(cordoned(c).filter((n) => n.startsWith('w')).length, 1, 'only the canary moved while halted');
      await h.executeUpdate(approveUpdate, { args: [{ gate: 'alerts-after-canary-1.33.7', by: 'alice', comment: 'known, paged' }] });
      // The batch is held before it starts too (the alert still fires): the operator lets it go as well.
      await untilStatus(h, 'the batch held', (st) => st.gates.some((g) => g.name === 'alerts-before-batch-1-1.33.7' && !g.approvedBy));
      await h.executeUpdate(approveUpdate, { args: [{ gate: 'alerts-before-batch-1-1.33.7', by: 'alice' }] });
      await untilStatus(h, 'halted after the batch', (st) =>
        st.gates.some((g) => g.name === 'alerts-after-batch-1-1.33.7' && !g.approvedBy),
      );
      await h.executeUpdate(approveUpdate, { args: [{ gate: 'alerts-after-batch-1-1.33.7', by: 'alice' }] });
      return h.result();
    });
    assert.equal(status.phase, 'done', status.events.join('\n'));
    assert.ok(status.events.includes('gate alerts-after-canary-1.33.7 approved by alice: known, paged'), status.events.join('\n'));
    assert.ok(
      status.events.some((e) => e.startsWith('halted after canary of 1.33.7: alert:NodeDown;')),
      status.events.join('\n'),
    );
  });

  it('an acknowledged alert holds nothing, and says so once', async () => {
    const c = fakeCluster();
    const status = await withWorker(
      alerting(c, () => [nodeDown]),
      async (tq) => (await start(tq, 'ack', { acknowledge: ['alert:NodeDown'] })).result(),
    );
    assert.equal(status.phase, 'done', status.events.join('\n'));
    assert.deepEqual(
      status.gates.filter((g) => g.name.startsWith('alerts-')),
      [],
    );
    assert.equal(status.events.filter((e) => e.includes('acknowledged (alert:NodeDown)')).length, 1, status.events.join('\n'));
  });

  it('a Prometheus that cannot be asked holds the phase (fails closed), naming why', async () => {
    const c = fakeCluster();
    let down = true;
    const unreachable = () =>
      ApplicationFailure.create({
        type: 'PrometheusUnreachable',
        message: 'Prometheus at http://prom:9090/ is unreachable: ECONNREFUSED',
        nonRetryable: true,
      });
    const status = await withWorker(
      alerting(c, () => (down ? unreachable() : [])),
      async (tq) => {
        const h = await start(tq, 'down');
        const s = await untilStatus(h, 'held', (st) => st.gates.some((g) => g.name === 'alerts-before-control-plane-1.33.7'));
        assert.ok(
          s.events.some((e) =>
            e.startsWith('control-plane of 1.33.7 waits: cannot ask Prometheus: Prometheus at http://prom:9090/ is unreachable'),
          ),
          s.events.join('\n'),
        );
        down = false;
        return h.result();
      },
    );
    assert.equal(status.phase, 'done', status.events.join('\n'));
  });

  it('phaseSoakSeconds soaks after the control plane and every phase; without it only the canary soaks', async () => {
    const c = fakeCluster();
    const soaked = await withWorker(c.acts, async (tq) => {
      const h = await start(tq, 'soak', { canary: 1, batchSize: 1, phaseSoakSeconds: 1 });
      const result = await h.result();
      // SKEWLESS_SAVE_HISTORIES=dir keeps it for the replay test (the phase-soak patch).
      const dir = process.env.SKEWLESS_SAVE_HISTORIES;
      if (dir) writeFileSync(`${dir}/${h.workflowId.replace(/\//g, '_')}@phase-soak.json`, historyToJSON(await h.fetchHistory()));
      return result;
    });
    assert.deepEqual(
      soaked.gates.map((g) => [g.name, g.approvedBy]),
      [
        ['workers-1.33.7', 'soak'],
        ['canary-1.33.7', 'soak'],
        ['soak-batch-1-1.33.7', 'soak'],
      ],
    );
    const plain = await withWorker(fakeCluster().acts, async (tq) =>
      (await start(tq, 'nosoak', { canary: 1, batchSize: 1, soakSeconds: 1 })).result(),
    );
    assert.deepEqual(
      plain.gates.map((g) => g.name),
      ['canary-1.33.7'],
    );
  });
});
