import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import { historyToJSON } from '@temporalio/common/lib/proto-utils.js';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { formatAvailability, startAvailabilitySampler, type AvailabilityReport } from '../../sim/availability-sampler.js';
import { readVersionHistory } from '../../sim/cluster/version-recorder.js';
import { simWorker } from '../helpers/workers.js';
import { clusterUpgradeWorkflow } from '../../workflows/cluster-upgrade-workflow.js';
import { nodeWorkflowId } from '../../contracts/workflow-ids.js';
import type { TestCluster } from '../helpers/sim-cluster.js';
import { failureChain, judgeVersionHistory } from '../helpers/upgrade-evidence.js';
import { uniqueTaskQueue } from '../helpers/temporal-env.js';
import { startClusterWorld } from '../helpers/sim-world.js';
import { progressLine } from '../../client/commands/watch.js';
import { upgradeSpan } from '../../client/status-text.js';

const LAB = `
name: e2e
version: 1.32.13
repository: [1.32.13, 1.33.13, 1.34.4]
# Each control plane runs its own real kube-apiserver, controller-manager and scheduler of the
# release its manifests name: the HA skew in the middle of a hop is real (sim/cluster/static-pods.ts).
controlPlane: per-node
rebootSeconds: 1
nodes:
  - {name: cp, role: control-plane, count: 3}
  - {name: worker, role: worker, count: 5}
workloads:
  - {kind: Deployment, name: web, replicas: 4, pdb: {minAvailable: 3}}
  - {kind: StatefulSet, name: db, replicas: 3, pdb: {maxUnavailable: 1}}
  - {kind: DaemonSet, name: agent}
`;

const ETCD_ACKS = ['etcd-version:cp-1', 'etcd-version:cp-2', 'etcd-version:cp-3'];
const ACK_REASON = 'members never changed: no 3.5 upgrade blocker applies';

describe('e2e: 1.32 → 1.34 on the simulated cluster with a real worker and the real dev server', () => {
  let env: TestWorkflowEnvironment;
  let tc: TestCluster;
  before(async () => {
    [env, tc] = await startClusterWorld(LAB);
  });
  after(async () => {
    await tc?.stop();
    await env?.teardown();
  });

  it('upgrades every node and component over two hops, each worker drained once, with no PDB violated and the skew policy held in every state, leaving nothing cordoned or labelled', async () => {
    const nodeNames = ['cp-1', 'cp-2', 'cp-3', 'worker-1', 'worker-2', 'worker-3', 'worker-4', 'worker-5'];
    let availability: AvailabilityReport | undefined;
    const taskQueue = uniqueTaskQueue('e2e');
    const worker = await simWorker(env, tc.clustersDir, taskQueue);
    const sampler = startAvailabilitySampler(tc.kube, { intervalMs: 250 });
    const status = await worker
      .runUntil(
        env.client.workflow.execute(clusterUpgradeWorkflow, {
          taskQueue,
          workflowId: 'upgrade/e2e',
          args: [
            {
              cluster: 'e2e',
              to: '1.34',
              // Readiness holds 1.34 on etcd 3.5.24 (the real members kubeadm 1.32's manifests name; etcd wants 3.5.26
              // before 3.6, for clusters whose membership changed): acknowledged, the real 3.5.24 members go to 3.6.5.
              policy: { canary: 1, batchSize: 2, maxUnavailable: 2, verifySeconds: 60, acknowledge: ETCD_ACKS },
              acknowledgedBy: { by: 'e2e test', reason: ACK_REASON },
            },
          ],
        }),
      )
      .catch((err: unknown) => assert.fail(failureChain(err)))
      .finally(() => sampler.stop().then((r) => (availability = r)));
    assert.equal(status.phase, 'done', status.events.join('\n'));
    for (const ack of ETCD_ACKS)
      assert.ok(
        status.events.some((e) => e.startsWith(`readiness: ${ack} acknowledged by e2e test (${ACK_REASON}): etcd on`)),
        status.events.join('\n'),
      );

    // No workload with a PDB dropped below it at any sample of the run.
    assert.ok(availability, 'the sampler reported');
    assert.equal(availability.violated, false, formatAvailability(availability));
    assert.deepEqual(
      availability.pdbs.map((p) => p.name),
      ['db', 'web'],
    );
    assert.ok(availability.samples >= 20, `${availability.samples} samples over the run`);

    // The skew policy held in every state the cluster passed through, as the sim recorded it.
    await tc.sim.versionHistorySettled();
    const history = readVersionHistory(tc.sim.stateDir);
    const verdict = judgeVersionHistory(history);
    assert.deepEqual(verdict.problems, []);
    // 3 control planes' components and kubelets × 2 hops, and 5 workers' kubelets once, after the initial state.
    assert.ok(verdict.states - 1 >= 3 * 2 * 2 + 5, `${verdict.states} states: ${history.map((h) => h.cause).join(', ')}`);
    for (const node of nodeNames) {
      // The control planes go through each minor; a worker's kubelet straight from 1.32 to 1.34 (n-3 holds at 1.33 with it at 1.32).
      assert.deepEqual(
        verdict.versionsSeen[`kubelets ${node}`],
        node.startsWith('cp-') ? ['1.32.13', '1.33.13', '1.34.4'] : ['1.32.13', '1.34.4'],
        `${node}'s kubelet`,
      );
      if (node.startsWith('cp-')) assert.deepEqual(verdict.versionsSeen[`apiservers ${node}`], ['1.32.13', '1.33.13', '1.34.4']);
    }
    // A recorded state had 1.34 apiservers with the workers' kubelets still at 1.32: the skew the plan relies on, judged above.
    assert.ok(
      history.some(
        (h) =>
          h.inventory.apiservers?.every((a) => a.version === '1.34.4') &&
          h.inventory.kubelets?.some((k) => k.node.startsWith('worker-') && k.version === '1.32.13'),
      ),
      'a state with every apiserver at 1.34 and a worker at 1.32',
    );
    // Each worker drained once: its node workflow ran at the last hop only, and the real kubeadm 1.34 ran
    // `upgrade node` there once, on a node whose kubelet was 1.32.
    for (const node of nodeNames.filter((n) => n.startsWith('worker-'))) {
      const child = (hop: string) => env.client.workflow.getHandle(nodeWorkflowId('upgrade/e2e', node, hop)).describe();
      assert.equal((await child('1.34.4')).status.name, 'COMPLETED', node);
      await assert.rejects(child('1.33.13'), /not found/i, `${node} has no node workflow at 1.33.13`);
      assert.ok((status.nodes[node]?.drainSeconds ?? -1) >= 0, `${node} was drained`);
      const log = tc.sim.hosts.commandLog(node).map((e) => `${e.exitCode} ${e.command}`);
      assert.deepEqual(
        log.filter((l) => /kubeadm upgrade node$/.test(l)),
        ['0 sudo -n kubeadm upgrade node'],
        log.join('\n'),
      );
      assert.ok(!log.some((l) => l.includes('install') && /1\.33\.13/.test(l)), `no 1.33 package on ${node}: ${log.join('\n')}`);
    }
    assert.deepEqual(status.hops, ['1.33.13', '1.34.4']);
    // What watch's bar and status's header say of it: the node upgrades the plan did (3 control planes ×
    // 2 hops + 5 workers once = 11, not 8 nodes × 2 hops), from 1.32.13 to 1.34.4.
    assert.match(progressLine(status), /^\[#{20}\] 11\/11 node upgrades, hop 1\.34\.4 of 1\.33\.13 → 1\.34\.4, done$/);
    assert.equal(upgradeSpan(status), '1.32.13 → 1.34.4');
    // Mid-hop, apiservers of two minors served the same etcd at once, each reporting its own /version.
    assert.ok(
      history.some((h) => new Set(h.inventory.apiservers?.map((a) => a.version)).size === 2),
      'a recorded state with a real HA skew',
    );
    const cp = tc.sim.controlPlane;
    assert.ok(cp.mode === 'per-node', 'each control plane runs its own programs');
    for (const n of cp.nodes.values()) {
      for (const c of ['kube-apiserver', 'kube-controller-manager', 'kube-scheduler'] as const)
        assert.equal(await n.reportedVersion(c), '1.34.4', `${n.node}'s ${c} runs 1.34.4`);
    }
    // The real kubeadm of each hop did its own work: CoreDNS and etcd as kubeadm 1.34 wants them.
    const coredns = await tc.kube.apps.readNamespacedDeployment({ name: 'coredns', namespace: 'kube-system' });
    assert.equal(coredns.spec?.template.spec?.containers[0]?.image, 'registry.k8s.io/coredns/coredns:v1.12.1');
    const etcdPod = await tc.kube.core.readNamespacedPod({ name: 'etcd-cp-3', namespace: 'kube-system' });
    assert.equal(etcdPod.spec?.containers[0]?.image, 'registry.k8s.io/etcd:3.6.5-0');
    // ...and the real members went there: each 3.5.24 member restarted at 3.6.5 on its data dir, a quorum in every state.
    for (const node of ['cp-1', 'cp-2', 'cp-3']) {
      assert.equal((await cp.etcdMembers.reportedVersion(node))?.server, '3.6.5', `${node}'s etcd member`);
      const seen = [...new Set(history.flatMap((h) => (h.etcd ?? []).filter((m) => m.node === node).map((m) => m.version)))];
      assert.deepEqual(seen, ['3.5.24', '3.6.5'], `${node}'s etcd versions`);
    }
    for (const h of history) assert.ok((h.etcd?.length ?? 0) >= 2, `etcd quorum at "${h.cause}": ${JSON.stringify(h.etcd)}`);

    const nodes = (await tc.kube.core.listNode()).items;
    assert.ok(
      nodes.every((n) => n.status?.nodeInfo?.kubeletVersion === 'v1.34.4'),
      nodes.map((n) => `${n.metadata?.name} ${n.status?.nodeInfo?.kubeletVersion}`).join(', '),
    );
    assert.ok(
      nodes.every((n) => !n.spec?.unschedulable),
      'no node left cordoned',
    );
    assert.ok(
      nodes.every((n) => !n.metadata?.labels?.['skewless.io/stage']),
      'no stage label left',
    );
    const mirrors = (
      await tc.kube.core.listNamespacedPod({ namespace: 'kube-system', labelSelector: 'tier=control-plane,component!=etcd' })
    ).items;
    assert.ok(
      mirrors.every((p) => p.spec?.containers[0]?.image?.endsWith(':v1.34.4')),
      mirrors.map((p) => p.spec?.containers[0]?.image).join(', '),
    );

    const applies = tc.sim.hosts
      .commandLog('cp-1')
      .filter((e) => /kubeadm upgrade apply/.test(e.command) && e.exitCode === 0)
      .map((e) => e.command);
    assert.equal(applies.length, 2, applies.join('\n'));
    assert.equal(status.snapshots.length, 2);

    // SKEWLESS_SAVE_HISTORIES=dir keeps this run's histories for the replay test (test/replay/histories).
    const dir = process.env.SKEWLESS_SAVE_HISTORIES;
    if (dir) {
      for (const id of ['upgrade/e2e', 'upgrade/e2e/1.34.4/worker-3', 'upgrade/e2e/1.33.13/cp-1']) {
        const history = await env.client.workflow.getHandle(id).fetchHistory();
        writeFileSync(`${dir}/${id.replace(/\//g, '_')}.json`, historyToJSON(history)); // the temporal CLI's JSON form
      }
    }
  });
});
