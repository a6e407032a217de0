import assert from 'node:assert/strict';
import { appendFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { WorkflowHandle } from '@temporalio/client';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import type { Worker } from '@temporalio/worker';
import { formatAvailability, startAvailabilitySampler, type AvailabilitySampler } from '../../sim/availability-sampler.js';
import { mergePatch } from '../../sim/cluster/kube-clients.js';
import { waitFor } from '../../sim/cluster/wait-for.js';
import { packageInstallCounts, readDpkgLog } from '../../sim/hosts/dpkg-database.js';
import { clusterUpgradeWorkflow } from '../../workflows/cluster-upgrade-workflow.js';
import type { UpgradeStatus } from '../../workflows/rollout-messages.js';
import type { TestCluster } from '../helpers/sim-cluster.js';
import { untilStatus } from '../helpers/status-polling.js';
import { uniqueTaskQueue } from '../helpers/temporal-env.js';
import { judgeSimulation, nodeLines } from '../helpers/upgrade-evidence.js';
import { simWorker } from '../helpers/workers.js';
import { startClusterWorld } from '../helpers/sim-world.js';

// `hold` allows no disruption until the test relaxes it: a drain of a node running one of its pods
// waits on it, which is where the API server is restarted.
const LAB = `
name: transient
version: 1.32.4
repository: [1.32.4, 1.33.7]
rebootSeconds: 1
nodes:
  - {name: cp, role: control-plane}
  - {name: worker, role: worker, count: 3}
workloads:
  - {kind: Deployment, name: web, replicas: 3, pdb: {maxUnavailable: 1}}
  - {kind: Deployment, name: hold, replicas: 2, pdb: {minAvailable: 2}}
  - {kind: DaemonSet, name: agent}
`;
const NODES = ['cp', 'worker-1', 'worker-2', 'worker-3'];
const FETCH_FAILED =
  "E: Failed to fetch https://pkgs.k8s.io/core:/stable:/v1.33/deb/amd64/kubeadm_1.33.7-1.1_amd64.deb  Temporary failure resolving 'pkgs.k8s.io'\nE: Unable to fetch some archives, maybe run apt-get update or try with --fix-missing?";
/** The kubelet/kubectl install of the hop (sudo and env stripped, as faults match). */
const KUBELET_INSTALL = 'apt-get install -y -q -o DPkg::Lock::Timeout=120 -o Dpkg::Options::=--force-confold kubelet=1.33.7-1.1';

interface ActivityRun {
  activity: string;
  /** The attempt that the history recorded as started (the last one), 1 when it never had to retry. */
  attempt: number;
  /** The failure type of the attempt before it, when there was one. */
  lastFailure?: string;
}

/** Every activity a workflow ran, from its history: retries are visible as attempt > 1 with the previous failure. */
async function activityRuns(handle: WorkflowHandle): Promise<ActivityRun[]> {
  const events = (await handle.fetchHistory()).events ?? [];
  const names = new Map<string, string>();
  const runs: ActivityRun[] = [];
  for (const e of events) {
    const scheduled = e.activityTaskScheduledEventAttributes;
    if (scheduled) names.set(String(e.eventId), scheduled.activityType?.name ?? '?');
    const started = e.activityTaskStartedEventAttributes;
    if (started) {
      const type = started.lastFailure?.applicationFailureInfo?.type ?? (started.lastFailure?.timeoutFailureInfo ? 'timeout' : undefined);
      runs.push({
        activity: names.get(String(started.scheduledEventId)) ?? '?',
        attempt: started.attempt ?? 1,
        ...(type ? { lastFailure: type } : {}),
      });
    }
  }
  return runs;
}

/**
 * One upgrade (1.32.4 → 1.33.7) of a 1+3 simulated cluster with a real worker and the real dev
 * server, through recoverable faults that Temporal's retries must ride through: an apt mirror failing
 * twice on worker-1, a hung apt-get on worker-2, worker-3 rebooting in the middle of its kubelet
 * install, and the API server restarted in the middle of a drain. No operator steps in.
 */
describe('e2e: an upgrade rides through transient host and cluster faults', () => {
  let env: TestWorkflowEnvironment;
  let tc: TestCluster;
  let worker: Worker;
  let running: Promise<void>;
  let sampler: AvailabilitySampler | undefined;
  let handle: WorkflowHandle<typeof clusterUpgradeWorkflow>;
  let result: UpgradeStatus;
  let drainedThroughRestart: string;
  const taskQueue = uniqueTaskQueue('transient');
  const child = (node: string) => env.client.workflow.getHandle(`upgrade/transient/1.33.7/${node}`);

  before(async () => {
    [env, tc] = await startClusterWorld(LAB);
    // The operator's fast local mirror: an install that has not finished in 5 s is hung.
    appendFileSync(join(tc.clustersDir, 'transient.yaml'), 'timeouts: {packageInstallSeconds: 5}\n');
    worker = await simWorker(env, tc.clustersDir, taskQueue);
    running = worker.run();
  });
  after(async () => {
    await sampler?.stop();
    worker?.shutdown();
    await running;
    await tc?.stop();
    await env?.teardown();
  });

  it('finishes the upgrade with no operator action while the faults hit', async () => {
    tc.sim.hosts.setFault('worker-1', { kind: 'fail', command: 'apt-get install', times: 2, exitCode: 100, stderr: FETCH_FAILED });
    tc.sim.hosts.setFault('worker-2', { kind: 'hang', command: 'apt-get install', times: 1 });
    tc.sim.hosts.setFault('worker-3', { kind: 'rebootDuring', command: KUBELET_INSTALL });
    const holders = (await tc.kube.core.listNamespacedPod({ namespace: 'default', labelSelector: 'app=hold' })).items.map(
      (p) => p.spec?.nodeName as string,
    );
    assert.equal(holders.length, 2);
    sampler = startAvailabilitySampler(tc.kube, { intervalMs: 250 });
    handle = await env.client.workflow.start(clusterUpgradeWorkflow, {
      taskQueue,
      workflowId: 'upgrade/transient',
      workflowIdConflictPolicy: 'FAIL',
      args: [
        {
          cluster: 'transient',
          to: '1.33',
          policy: {
            canary: 1,
            batchSize: 1,
            maxUnavailable: 1,
            drainTimeoutSeconds: 240,
            verifySeconds: 60,
            acknowledge: ['default/hold'],
          },
        },
      ],
    });

    // The first drain of a node running a `hold` pod waits on its PDB: restart the API server then.
    const status = await untilStatus(
      handle,
      'a node running a hold pod draining',
      (s) => holders.some((n) => s.nodes[n]?.phase === 'draining'),
      180_000,
    );
    drainedThroughRestart = holders.find((n) => status.nodes[n]?.phase === 'draining') as string;
    await waitFor(
      `the drain of ${drainedThroughRestart} refused by the hold PDB`,
      async () => {
        const pending = (await child(drainedThroughRestart).describe()).raw.pendingActivities ?? [];
        // Heartbeat details are JSON payloads: the drain names the PDB that refuses (`default/hold`).
        const details = (a: (typeof pending)[number]) =>
          (a.heartbeatDetails?.payloads ?? []).map((p) => Buffer.from(p.data ?? []).toString('utf8')).join('');
        return pending.some((a) => a.activityType?.name === 'drainNode' && details(a).includes('"default/hold"'));
      },
      60_000,
      250,
    );
    const restartStarted = Date.now();
    await tc.sim.controlPlane.restartApiserver();
    const restartSeconds = (Date.now() - restartStarted) / 1000;
    const node = await tc.kube.core.readNode({ name: drainedThroughRestart });
    assert.equal(node.spec?.unschedulable, true, 'still cordoned, still draining');
    // The owners relax the budget; the drain that outlived the restart goes on by itself.
    await tc.kube.policy.patchNamespacedPodDisruptionBudget(
      { name: 'hold', namespace: 'default', body: { spec: { minAvailable: 1 } } },
      mergePatch,
    );

    // Fails fast (instead of waiting forever) if a step gave up and the node waits for the operator.
    const end = await untilStatus(
      handle,
      'the upgrade finished, or a node waiting for the operator',
      (s) =>
        ['done', 'failed', 'aborted'].includes(s.phase) ||
        s.halted !== undefined ||
        Object.values(s.nodes).some((n) => n.blocked !== undefined),
      300_000,
    );
    assert.deepEqual(
      Object.entries(end.nodes)
        .filter(([, n]) => n.blocked)
        .map(([name, n]) => `${name}: ${n.blocked?.message}`),
      [],
      'no node waits for the operator',
    );
    result = await handle.result();
    assert.equal(result.phase, 'done', result.events.join('\n'));
    assert.ok(
      Object.values(result.nodes).every((n) => n.phase === 'done'),
      JSON.stringify(result.nodes),
    );
    console.log(`# apiserver restart took ${restartSeconds.toFixed(1)} s, during the drain of ${drainedThroughRestart}`);
  });

  it('retried the failing, hung and cut-short installs: the histories show attempts > 1 and why', async () => {
    const installs = async (node: string) => (await activityRuns(child(node))).filter((r) => r.activity === 'installPackages');
    // worker-1: kubeadm's install failed twice on the mirror, the third attempt went through.
    assert.deepEqual((await installs('worker-1'))[0], { activity: 'installPackages', attempt: 3, lastFailure: 'HostCommandTransient' });
    // worker-2: kubeadm's install hung, was abandoned after 5 s and run again.
    assert.deepEqual((await installs('worker-2'))[0], { activity: 'installPackages', attempt: 2, lastFailure: 'HostCommandTimedOut' });
    // worker-3: the kubelet install was cut by the reboot; later attempts met the host down or back.
    const cut = (await installs('worker-3'))[1];
    assert.ok(cut && cut.attempt >= 2 && cut.lastFailure === 'HostUnreachable', JSON.stringify(cut));
    for (const n of NODES) {
      const runs = await activityRuns(child(n));
      const others = runs.filter((r) => r.activity !== 'installPackages' && r.activity !== 'drainNode');
      assert.deepEqual(
        others.filter((r) => r.attempt > 1),
        [],
        `${n}: nothing else had to retry`,
      );
    }
  });

  it('the drain rode through the API server restart within one attempt', async () => {
    const drains = (await activityRuns(child(drainedThroughRestart))).filter((r) => r.activity === 'drainNode');
    assert.deepEqual(drains, [{ activity: 'drainNode', attempt: 1 }]);
  });

  it('installed every package version once: worker-3 configured what the reboot left unpacked, nothing twice', () => {
    for (const n of NODES) {
      const counts = packageInstallCounts(readDpkgLog(tc.sim.stateDir, n));
      assert.deepEqual(Object.keys(counts).sort(), ['kubeadm 1.33.7-1.1', 'kubectl 1.33.7-1.1', 'kubelet 1.33.7-1.1'], n);
      for (const [pkg, c] of Object.entries(counts)) assert.deepEqual(c, { unpacked: 1, configured: 1 }, `${n} ${pkg}`);
      assert.equal(tc.sim.hosts.state(n).unconfigured, undefined, n);
    }
    const w3 = tc.sim.hosts
      .commandLog('worker-3')
      .map((e) => `${e.command.replace(/^sudo -n (DEBIAN_FRONTEND=\S+ )?/, '')} → ${e.exitCode}`);
    const kubeletInstalls = w3.filter((c) => c.startsWith(KUBELET_INSTALL));
    assert.deepEqual(kubeletInstalls, [`${KUBELET_INSTALL} kubectl=1.33.7-1.1 → null`], 'the cut install is not run again');
    assert.ok(w3.includes('dpkg --configure -a → 0'), w3.join('\n'));
  });

  it('leaves every node at 1.33.7 and uncordoned, with no PDB violated and the skew policy held in every state', async () => {
    assert.deepEqual(
      await nodeLines(tc.kube),
      NODES.map((x) => `${x} v1.33.7 schedulable`),
    );
    const report = await (sampler as AvailabilitySampler).stop();
    sampler = undefined;
    assert.equal(report.violated, false, formatAvailability(report));
    assert.deepEqual(
      report.pdbs.map((p) => p.name),
      ['hold', 'web'],
    );
    assert.deepEqual((await judgeSimulation(tc.sim)).problems, []);
  });
});
