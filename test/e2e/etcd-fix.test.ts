import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { readVersionHistory } from '../../sim/cluster/version-recorder.js';
import { clusterUpgradeWorkflow } from '../../workflows/cluster-upgrade-workflow.js';
import { simWorker } from '../helpers/workers.js';
import { startTestCluster, type TestCluster } from '../helpers/sim-cluster.js';
import { failureChain, judgeVersionHistory } from '../helpers/upgrade-evidence.js';
import { startDevServer, uniqueTaskQueue } from '../helpers/temporal-env.js';

// kubeadm 1.32.13's cluster: three control planes, each with its own real etcd member at 3.5.24 (the
// per-node world, sim/build/REAL-KUBEADM.md), and a worker. The upgrade to 1.34 with fixPrerequisites.
const LAB = `
name: etcdfix
version: 1.32.13
repository: [1.32.13, 1.33.13, 1.34.4]
controlPlane: per-node
nodes:
  - {name: cp, role: control-plane, count: 3}
  - {name: worker, role: worker, count: 1}
`;
const CPS = ['cp-1', 'cp-2', 'cp-3'];
/** The per-node world's etcd members, one real etcd per control plane (wip/etcd-sim). */
const REAL_MEMBERS = existsSync(new URL('../../sim/cluster/etcd-members.js', import.meta.url));

describe(
  'e2e: 1.32.13 → 1.34 with --fix-prerequisites: etcd patched member by member to 3.5.36, then 3.6, no acknowledgement',
  { skip: REAL_MEMBERS ? false : 'the per-node world runs no etcd member per control plane yet (wip/etcd-sim)' },
  () => {
    let env: TestWorkflowEnvironment;
    let tc: TestCluster;
    before(async () => {
      [env, tc] = await Promise.all([startDevServer(), startTestCluster(LAB)]);
    });
    after(async () => {
      await tc?.stop();
      await env?.teardown();
    });

    it('patches each 3.5.24 member to 3.5.36 (followers, then the leader) before the 1.34 hop moves them to 3.6.5; skew and quorum in every state', async () => {
      const taskQueue = uniqueTaskQueue('etcdfix');
      const worker = await simWorker(env, tc.clustersDir, taskQueue);
      const status = await worker
        .runUntil(
          env.client.workflow.execute(clusterUpgradeWorkflow, {
            taskQueue,
            workflowId: 'upgrade/etcdfix',
            args: [{ cluster: 'etcdfix', to: '1.34', policy: { verifySeconds: 5, fixPrerequisites: true } }],
          }),
        )
        .catch((err: unknown) => assert.fail(failureChain(err)));
      assert.equal(status.phase, 'done', status.events.join('\n'));
      for (const cp of CPS)
        assert.ok(
          status.events.some((e) => e.startsWith(`readiness: etcd-version:${cp} fixed by the runbook before 1.34`)),
          status.events.join('\n'),
        );
      assert.ok(!status.events.some((e) => e.includes(' acknowledged')), 'nothing acknowledged');
      assert.deepEqual(
        status.snapshots.map((s) => s.hop),
        ['1.33.13', '1.34.4-before-etcd-3.5.36-0', '1.34.4'],
      );

      await tc.sim.versionHistorySettled();
      const history = readVersionHistory(tc.sim.stateDir);
      // Each recorded state's etcd members as their own /version says (the per-node world's record, wip/etcd-sim).
      const etcdOf = (h: (typeof history)[number]) => (h as { etcd?: { node: string; version: string }[] }).etcd ?? [];
      assert.deepEqual(judgeVersionHistory(history).problems, [], 'the skew policy in every recorded state');
      for (const h of history) {
        const members = etcdOf(h);
        assert.ok(members.length >= 2, `etcd quorum at "${h.cause}": ${JSON.stringify(members)}`);
      }
      for (const node of CPS) {
        const seen = [
          ...new Set(
            history.flatMap((h) =>
              etcdOf(h)
                .filter((m) => m.node === node)
                .map((m) => m.version),
            ),
          ),
        ];
        assert.deepEqual(seen, ['3.5.24', '3.5.36', '3.6.5'], `${node}'s etcd versions`);
      }
      // One member at a time, the leader (named in the step's notes) last, all before the first 3.6 member.
      const causes = history.map((h) => h.cause);
      const patched = causes.filter((c) => /^static-pod cp-\d etcd 3\.5\.36$/.test(c)).map((c) => c.split(' ')[1]);
      assert.equal(patched.length, 3, causes.join('\n'));
      const leaderNote = status.events.find((e) => e.startsWith('etcd patch before 1.34.4:')) ?? '';
      assert.match(leaderNote, new RegExp(`${patched[0]} 3\\.5\\.24-0 → 3\\.5\\.36-0, ${patched[1]} .*, ${patched[2]} .*the leader last`));
      const lastPatch = causes.findLastIndex((c) => / etcd 3\.5\.36$/.test(c));
      const first36 = causes.findIndex((c) => / etcd 3\.6\.5$/.test(c));
      assert.ok(lastPatch >= 0 && first36 > lastPatch, causes.join('\n'));
      for (const i of [lastPatch, first36]) assert.equal(etcdOf(history[i]!).length, 3, `every member up at "${causes[i]}"`);
    });
  },
);
