import assert from 'node:assert/strict';
import { appendFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { BatchV1Api, KubeConfig } from '@kubernetes/client-node';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { strategicMergePatch } from '../../activities/kube-api.js';
import { nodeWorkflowId } from '../../contracts/workflow-ids.js';
import { DRAIN_LABEL } from '../../rules/index.js';
import { waitFor } from '../../sim/cluster/wait-for.js';
import { clusterUpgradeWorkflow } from '../../workflows/cluster-upgrade-workflow.js';
import { resolveDrainUpdate, statusQuery, type UpgradeStatus } from '../../workflows/rollout-messages.js';
import type { TestCluster } from '../helpers/sim-cluster.js';
import { startClusterWorld } from '../helpers/sim-world.js';
import { untilStatus } from '../helpers/status-polling.js';
import { uniqueTaskQueue } from '../helpers/temporal-env.js';
import { simWorker } from '../helpers/workers.js';

// Two workers: whichever runs `osd` drains it last (order 10), `agent` is never evicted (skip), a batch
// Job's pod on worker-2 (label skewless.io/drain=wait-completed) is waited for until it completes, and
// worker-2 carries node-problem-detector's KernelDeadlock when its kubelet comes back.
const LAB = `
name: drainrules
version: 1.32.4
repository: [1.32.4, 1.33.7]
nodes:
  - {name: cp, role: control-plane, count: 1}
  - {name: worker, role: worker, count: 2}
workloads:
  - {kind: Deployment, name: web, replicas: 4}
  - {kind: Deployment, name: osd, replicas: 1}
  - {kind: Deployment, name: agent, replicas: 1}
`;
const CONFIG = `drainRules:
  - {namespace: default, labels: {app: osd}, order: 10}
  - {labels: {app: agent}, skip: true}
nodeHealth: {waitSeconds: 3, conditions: [KernelDeadlock]}
`;

/** When each pod was first seen terminating and when it was gone, by name, from a 100 ms poll. */
interface PodTimes {
  node: string;
  terminating?: number;
  gone?: number;
}

describe('e2e: drain rules and the node check after the kubelet restart', () => {
  let env: TestWorkflowEnvironment;
  let tc: TestCluster;
  before(async () => {
    [env, tc] = await startClusterWorld(LAB);
    appendFileSync(join(tc.clustersDir, 'drainrules.yaml'), `\n${CONFIG}`);
  });
  after(async () => {
    await tc?.stop();
    await env?.teardown();
  });

  it('drains osd after the rest of its node is gone, never evicts agent, waits for a Job pod to complete, halts worker-1 on a kube-proxy pod not Ready and worker-2 on KernelDeadlock', async () => {
    const pods = new Map<string, PodTimes>();
    let watching = true;
    const follow = (async () => {
      while (watching) {
        const now = Date.now();
        const listed = (await tc.kube.core.listNamespacedPod({ namespace: 'default' })).items;
        const seen = new Set<string>();
        for (const p of listed) {
          const name = p.metadata?.name as string;
          seen.add(name);
          const t = pods.get(name) ?? { node: p.spec?.nodeName ?? '' };
          if (p.metadata?.deletionTimestamp && t.terminating === undefined) t.terminating = now;
          pods.set(name, t);
        }
        for (const [name, t] of pods) if (!seen.has(name) && t.gone === undefined) t.gone = now;
        await new Promise((r) => setTimeout(r, 100));
      }
    })();
    const kernelDeadlock = (status: 'True' | 'False') =>
      tc.kube.core.patchNodeStatus(
        {
          name: 'worker-2',
          body: {
            status: {
              conditions: [
                {
                  type: 'KernelDeadlock',
                  status,
                  reason: status === 'True' ? 'AUFSUmountHung' : 'KernelHasNoDeadlock',
                  message: 'task umount.aufs:21568 blocked',
                },
              ],
            },
          },
        },
        strategicMergePatch,
      );
    // A restarted kubelet reports its Running pods Ready again (sim/cluster/kube-effects.ts): the canary's
    // kube-proxy pod is put in phase Unknown, which no part of the simulation heals, as a pod that never came back.
    const proxyPod = async (node: string, phase: 'Unknown' | 'Running') => {
      const pod = (
        await tc.kube.core.listNamespacedPod({
          namespace: 'kube-system',
          labelSelector: 'k8s-app=kube-proxy',
          fieldSelector: `spec.nodeName=${node}`,
        })
      ).items[0];
      const status = phase === 'Running' ? 'True' : 'False';
      await tc.kube.core.patchNamespacedPodStatus(
        {
          name: pod?.metadata?.name as string,
          namespace: 'kube-system',
          body: {
            status: {
              phase,
              conditions: [
                { type: 'Ready', status },
                { type: 'ContainersReady', status },
              ],
            },
          },
        },
        strategicMergePatch,
      );
    };
    // A nightly report on worker-2: the real job controller makes its pod, kwok runs it; the test completes it.
    const batch = (() => {
      const kc = new KubeConfig();
      kc.loadFromFile(tc.sim.kubeconfig);
      return kc.makeApiClient(BatchV1Api);
    })();
    await batch.createNamespacedJob({
      namespace: 'default',
      body: {
        metadata: { name: 'report' },
        spec: {
          backoffLimit: 0,
          template: {
            // kwok completes a Job's pod at once unless told how long it runs (sim/cluster/control-plane.ts).
            metadata: {
              labels: { app: 'report', [DRAIN_LABEL]: 'wait-completed' },
              annotations: { 'pod-complete.stage.kwok.x-k8s.io/delay': '1h' },
            },
            spec: { restartPolicy: 'Never', nodeName: 'worker-2', containers: [{ name: 'report', image: 'registry.example/report:1' }] },
          },
        },
      },
    });
    const reportPod = async () => (await tc.kube.core.listNamespacedPod({ namespace: 'default', labelSelector: 'app=report' })).items[0];
    await waitFor('the report pod Running', async () => (await reportPod())?.status?.phase === 'Running', 60_000, 250);
    const reportUid = (await reportPod())?.metadata?.uid;
    let completedAt = 0;
    const agentBefore = (await tc.kube.core.listNamespacedPod({ namespace: 'default', labelSelector: 'app=agent' })).items[0];
    await kernelDeadlock('True');

    const taskQueue = uniqueTaskQueue('drainrules');
    const worker = await simWorker(env, tc.clustersDir, taskQueue);
    let status: UpgradeStatus;
    try {
      status = await worker.runUntil(async () => {
        const handle = await env.client.workflow.start(clusterUpgradeWorkflow, {
          taskQueue,
          workflowId: 'upgrade/drainrules',
          args: [{ cluster: 'drainrules', to: '1.33', policy: { canary: 1, maxUnavailable: 1, verifySeconds: 5 } }],
        });
        // The canary's kube-proxy does not come back Ready after the kubelet restart: the node check names it.
        await untilStatus(
          handle,
          'worker-1 draining',
          (s) => ['draining', 'upgrading'].includes(s.nodes['worker-1']?.phase ?? ''),
          300_000,
        );
        await proxyPod('worker-1', 'Unknown');
        const halted = await untilStatus(
          handle,
          'worker-1 halted by its node check',
          (s) => s.nodes['worker-1']?.phase === 'blocked',
          120_000,
        );
        assert.match(
          halted.nodes['worker-1']?.blocked?.message ?? '',
          /^node worker-1 is Ready but not healthy: DaemonSet kube-system\/kube-proxy's pod kube-proxy-\S+ is not Ready \(Unknown\)/,
        );
        assert.equal((await tc.kube.core.readNode({ name: 'worker-1' })).spec?.unschedulable, true, 'left cordoned for the operator');
        await proxyPod('worker-1', 'Running');
        await handle.executeUpdate(resolveDrainUpdate, { args: [{ node: 'worker-1', action: 'retry', by: 'ops', comment: 'CNI back' }] });
        // worker-2's drain evicts the rest and waits for the report to complete: its heartbeat names it.
        const report = `default/${(await reportPod())?.metadata?.name}`;
        let seen = '';
        for (const deadline = Date.now() + 300_000; ;) {
          const d = await env.client.workflow
            .getHandle(nodeWorkflowId('upgrade/drainrules', 'worker-2', '1.33.7'))
            .describe()
            .catch((err: unknown) => ({ raw: { pendingActivities: [] }, err }));
          const beats = (d.raw.pendingActivities ?? []).map(
            (a) =>
              `${a.activityType?.name}: ${(a.heartbeatDetails?.payloads ?? []).map((p) => Buffer.from(p.data ?? []).toString('utf8')).join('')}`,
          );
          seen = `${beats.join('\n')} ${'err' in d ? String(d.err) : ''} ${JSON.stringify((await handle.query(statusQuery)).nodes['worker-2'])}`;
          if (beats.some((b) => b.startsWith('drainNode') && b.includes(`"waitingToComplete":["${report}"]`))) break;
          assert.ok(Date.now() < deadline, `worker-2's drain never waited for ${report} to complete: ${seen}`);
          await new Promise((r) => setTimeout(r, 250));
        }
        await new Promise((r) => setTimeout(r, 2000)); // still waiting two seconds later: nothing evicts it meanwhile
        assert.equal((await reportPod())?.metadata?.deletionTimestamp, undefined, 'the report pod is waited for, never evicted');
        completedAt = Date.now();
        await tc.kube.core.patchNamespacedPodStatus(
          {
            name: report.split('/')[1] as string,
            namespace: 'default',
            body: { status: { phase: 'Succeeded', conditions: [{ type: 'Ready', status: 'False', reason: 'PodCompleted' }] } },
          },
          strategicMergePatch,
        );
        const blocked = await untilStatus(
          handle,
          'worker-2 halted by its node check',
          (s) => s.nodes['worker-2']?.phase === 'blocked',
          300_000,
        );
        const block = blocked.nodes['worker-2']?.blocked;
        assert.equal(block?.kind, 'StepFailed');
        assert.match(block?.message ?? '', /^node worker-2 is Ready but not healthy: condition KernelDeadlock is True \(AUFSUmountHung: /);
        const w2 = await tc.kube.core.readNode({ name: 'worker-2' });
        assert.equal(w2.spec?.unschedulable, true, 'nothing remediated: the node stays cordoned, waiting for the operator');
        await kernelDeadlock('False');
        await handle.executeUpdate(resolveDrainUpdate, {
          args: [{ node: 'worker-2', action: 'retry', by: 'ops', comment: 'kernel fixed' }],
        });
        return handle.result();
      });
    } finally {
      watching = false;
      await follow;
    }
    assert.equal(status.phase, 'done', status.events.join('\n'));

    // The worker's evictions, from the apiserver's audit log; a pod's leaving from the 100 ms poll above
    // (kwok deletes an evicted pod at once: its terminating moment is often too short to see).
    const evictions = tc.sim
      .auditEvents()
      .filter((e) => e.resource === 'pods/eviction' && e.verb === 'create' && e.code === 201)
      .map((e) => ({ name: e.name ?? '', at: Date.parse(e.time) }));
    const osd = evictions.find((e) => e.name.startsWith('osd-'));
    assert.ok(osd, `osd was evicted: ${JSON.stringify(evictions)}`);
    const node = pods.get(osd.name)?.node;
    const roundZero = evictions.filter((e) => e.name !== osd.name && pods.get(e.name)?.node === node && e.at <= osd.at + 60_000);
    assert.ok(roundZero.length > 0, `other pods drained from ${node}: ${JSON.stringify(evictions)}`);
    for (const e of roundZero) {
      assert.ok(e.at < osd.at, `${e.name} evicted at ${e.at}, before osd at ${osd.at}`);
      const gone = pods.get(e.name)?.gone;
      // Seen gone by the poll no later than a poll's period after osd's eviction: it left first.
      assert.ok(
        gone !== undefined && gone <= osd.at + 250,
        `${e.name} gone at ${gone}, osd evicted at ${osd.at}: order 10 waits for round 0`,
      );
    }

    // The report was never evicted, and worker-2's kubelet moved only after it completed.
    assert.ok(!evictions.some((e) => e.name.startsWith('report-')), `the report pod was not evicted: ${JSON.stringify(evictions)}`);
    assert.equal((await reportPod())?.metadata?.uid, reportUid);
    const restart = tc.sim.hosts.commandLog('worker-2').find((e) => e.command === 'sudo -n systemctl restart kubelet');
    assert.ok(
      restart && Date.parse(restart.time) > completedAt,
      `worker-2's kubelet restarted after the report completed (${restart?.time})`,
    );

    const agentAfter = await tc.kube.core.readNamespacedPod({ name: agentBefore?.metadata?.name as string, namespace: 'default' });
    assert.equal(agentAfter.metadata?.uid, agentBefore?.metadata?.uid, 'the skip pod stayed while its node was upgraded');
    assert.equal(agentAfter.metadata?.deletionTimestamp, undefined);
    const nodes = (await tc.kube.core.listNode()).items;
    assert.ok(nodes.every((n) => n.status?.nodeInfo?.kubeletVersion === 'v1.33.7'));
    assert.ok(
      nodes.find((n) => n.metadata?.name === agentAfter.spec?.nodeName)?.status?.nodeInfo?.kubeletVersion === 'v1.33.7',
      'the node under the skip pod was upgraded with it in place',
    );
  });
});
