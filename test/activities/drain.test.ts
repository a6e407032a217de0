import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { V1Pod } from '@kubernetes/client-node';
import { CancelledFailure } from '@temporalio/activity';
import { MockActivityEnvironment } from '@temporalio/testing';
import type { ClusterAccess, RemoteShell } from '../../activities/cluster-access.js';
import type { ClusterConfig } from '../../activities/cluster-config.js';
import { createDrainActivities, type DrainProgress, type DrainResult } from '../../activities/drain.js';
import { evictPod } from '../../activities/drain-eviction.js';
import { mergePatch } from '../../activities/kube-api.js';
import { createNodeActivities } from '../../activities/node-activities.js';
import { waitFor } from '../../sim/cluster/wait-for.js';
import { workloadObjects } from '../../sim/cluster/workload-objects.js';
import { startTestCluster, type TestCluster } from '../helpers/sim-cluster.js';

const DESCRIPTION = `
name: drains
version: 1.32.4
repository: [1.32.4]
nodes:
  - {name: cp, role: control-plane, count: 1}
  - {name: worker, role: worker, count: 3}
workloads:
  - {kind: DaemonSet, name: agent}
  - {kind: Pod, name: lonely, node: worker-1}
`;
const OWNER = 'upgrade/drains';
const noShell: RemoteShell = {
  exec: () => Promise.reject(new Error('no SSH in drains')),
  download: () => Promise.reject(new Error('no SSH in drains')),
};
type Failure = Error & { type?: string; nonRetryable?: boolean; details?: unknown[] };

describe('drain activities against the simulated cluster', () => {
  let tc: TestCluster;
  const access = (drain: Partial<ClusterConfig['drain']> = {}) => ({
    clusters: (name: string): ClusterAccess => {
      assert.equal(name, 'drains');
      return { config: { ...tc.config, drain: { ...tc.config.drain, ...drain } }, kube: tc.workerKube, shell: noShell };
    },
  });
  let drains: ReturnType<typeof createDrainActivities>;
  let nodes: ReturnType<typeof createNodeActivities>;
  const c = 'drains';

  const podsOn = async (node: string): Promise<V1Pod[]> =>
    (await tc.kube.core.listPodForAllNamespaces({ fieldSelector: `spec.nodeName=${node}` })).items.filter(
      (p) => !p.metadata?.deletionTimestamp,
    );
  const uids = async (node: string) =>
    (await podsOn(node)).map((p) => `${p.metadata?.namespace}/${p.metadata?.name} ${p.metadata?.uid}`).sort();
  const names = (pods: V1Pod[], app: string) =>
    pods
      .filter((p) => p.metadata?.labels?.app === app)
      .map((p) => p.metadata?.name as string)
      .sort();
  const setMinAvailable = (n: number) =>
    tc.kube.policy.patchNamespacedPodDisruptionBudget(
      { name: 'web', namespace: 'default', body: { spec: { minAvailable: n } } },
      mergePatch,
    );
  const webAvailable = async () =>
    (await tc.kube.apps.readNamespacedDeployment({ name: 'web', namespace: 'default' })).status?.availableReplicas ?? 0;

  before(async () => {
    tc = await startTestCluster(DESCRIPTION);
    drains = createDrainActivities(access());
    nodes = createNodeActivities(access());
    // Steer web (2 replicas, PDB minAvailable 2) and cache (emptyDir) onto worker-1 by cordoning the others meanwhile.
    for (const n of ['worker-2', 'worker-3'])
      await tc.kube.core.patchNode({ name: n, body: { spec: { unschedulable: true } } }, mergePatch);
    const web = workloadObjects({ kind: 'Deployment', name: 'web', namespace: 'default', replicas: 2, pdb: { minAvailable: 2 } });
    const cache = workloadObjects({ kind: 'Deployment', name: 'cache', namespace: 'default', replicas: 1, emptyDir: true });
    await tc.kube.apps.createNamespacedDeployment({ namespace: 'default', body: web.deployment! });
    await tc.kube.policy.createNamespacedPodDisruptionBudget({ namespace: 'default', body: web.pdb! });
    await tc.kube.apps.createNamespacedDeployment({ namespace: 'default', body: cache.deployment! });
    await waitFor('web and cache available, PDB observed', async () => {
      const pdb = (await tc.kube.policy.readNamespacedPodDisruptionBudget({ name: 'web', namespace: 'default' })).status;
      const cacheReady =
        (await tc.kube.apps.readNamespacedDeployment({ name: 'cache', namespace: 'default' })).status?.availableReplicas ?? 0;
      return (await webAvailable()) === 2 && cacheReady === 1 && pdb?.currentHealthy === 2;
    });
    for (const n of ['worker-2', 'worker-3'])
      await tc.kube.core.patchNode({ name: n, body: { spec: { unschedulable: false } } }, mergePatch);
    const onWorker1 = await podsOn('worker-1');
    assert.equal(names(onWorker1, 'web').length, 2);
    assert.equal(names(onWorker1, 'cache').length, 1);
  });
  after(async () => tc?.stop());

  it('leaves mirror pods and DaemonSet pods of a control plane untouched', async () => {
    const plan = await drains.planDrain({ cluster: c, node: 'cp-1' });
    assert.deepEqual(plan.evict, []);
    assert.deepEqual(plan.blockers, []);
    assert.deepEqual(
      plan.skipped
        .filter((s) => s.filter === 'mirror')
        .map((s) => s.pod.name)
        .sort(),
      ['etcd-cp-1', 'kube-apiserver-cp-1', 'kube-controller-manager-cp-1', 'kube-scheduler-cp-1'],
    );
    assert.ok(plan.skipped.some((s) => s.filter === 'daemonSet' && s.pod.name.startsWith('kube-proxy-')));

    const strict = await createDrainActivities(access({ ignoreDaemonSets: false })).planDrain({ cluster: c, node: 'cp-1' });
    assert.equal(strict.blockers.length, 1);
    assert.equal(strict.blockers[0]?.override, 'ignoreDaemonSets');

    const before = await uids('cp-1');
    await nodes.cordonNode({ cluster: c, node: 'cp-1', owner: OWNER });
    const result = await drains.drainNode({ cluster: c, node: 'cp-1', timeoutSeconds: 10 });
    assert.deepEqual(result.gone, []);
    assert.deepEqual(await uids('cp-1'), before, 'same pods, same UIDs');
    await nodes.uncordonNode({ cluster: c, node: 'cp-1', owner: OWNER });
  });

  it('refuses a schedulable node, and an unmanaged or emptyDir pod without consent, evicting nothing', async () => {
    await assert.rejects(
      drains.drainNode({ cluster: c, node: 'worker-1' }),
      (err: Failure) => err.type === 'Invalid' && /cordon it/.test(err.message),
    );
    await nodes.cordonNode({ cluster: c, node: 'worker-1', owner: OWNER });
    const onWorker1 = await podsOn('worker-1');
    const [cachePod] = names(onWorker1, 'cache');
    const plan = await drains.planDrain({ cluster: c, node: 'worker-1' });
    assert.deepEqual(plan.blockers.map((b) => `${b.pod.name}:${b.override}`).sort(), [`${cachePod}:deleteEmptyDirData`, 'lonely:force']);
    assert.deepEqual(
      plan.evict.map((p) => p.name),
      names(onWorker1, 'web'),
    );
    assert.deepEqual(plan.skipped.map((s) => s.filter).sort(), ['daemonSet', 'daemonSet']);

    const before = await uids('worker-1');
    await assert.rejects(drains.drainNode({ cluster: c, node: 'worker-1' }), (err: Failure) => {
      assert.equal(err.type, 'DrainRefused');
      assert.equal(err.nonRetryable, true);
      assert.match(err.message, /unmanaged pod default\/lonely would be lost for good; force it by name to proceed/);
      assert.match(err.message, /set deleteEmptyDirData or force it by name/);
      return true;
    });
    assert.deepEqual(await uids('worker-1'), before, 'nothing evicted');
    const forced = await drains.planDrain({ cluster: c, node: 'worker-1', force: ['lonely', `default/${cachePod}`] });
    assert.deepEqual(forced.blockers, []);
    assert.equal(forced.evict.length, 4);
  });

  it('fails with DrainBlocked naming the pods and the PDB once the timeout passes, after evicting what it could', async () => {
    const onWorker1 = await podsOn('worker-1');
    const web = names(onWorker1, 'web');
    const started = Date.now();
    await assert.rejects(
      createDrainActivities(access({ deleteEmptyDirData: true })).drainNode({
        cluster: c,
        node: 'worker-1',
        force: ['lonely'],
        timeoutSeconds: 3,
      }),
      (err: Failure) => {
        assert.equal(err.type, 'DrainBlocked');
        assert.equal(err.nonRetryable, true);
        assert.match(err.message, /within 3 s; 2 pod\(s\) remain/);
        for (const name of web) assert.match(err.message, new RegExp(`default/${name} \\(PDB web\\)`));
        assert.deepEqual(err.details, [{ pods: web.map((name) => ({ namespace: 'default', name, pdbs: ['web'] })) }]);
        return true;
      },
    );
    const elapsed = Date.now() - started;
    assert.ok(elapsed >= 3000 && elapsed < 12_000, `took ${elapsed} ms`);
    const now = await podsOn('worker-1');
    assert.deepEqual(names(now, 'web'), web, 'web pods stay: the PDB refused');
    assert.deepEqual(names(now, 'cache'), [], 'emptyDir pod evicted with consent');
    await assert.rejects(
      tc.kube.core.readNamespacedPod({ name: 'lonely', namespace: 'default' }),
      (e: { code?: number }) => e.code === 404,
    );
    await waitFor('cache rescheduled elsewhere', async () =>
      (await tc.kube.core.listNamespacedPod({ namespace: 'default', labelSelector: 'app=cache' })).items.some(
        (p) => p.spec?.nodeName && p.spec.nodeName !== 'worker-1' && p.status?.phase === 'Running',
      ),
    );
  });

  it('completes when the PDB is relaxed while it waits, heartbeating the pods left and the PDB in the way', async () => {
    const env = new MockActivityEnvironment({ heartbeatTimeoutMs: 60_000 });
    const beats: DrainProgress[] = [];
    let relaxed: Promise<unknown> | undefined;
    env.on('heartbeat', (d: DrainProgress) => {
      beats.push(d);
      if (!relaxed && d.blockedBy.includes('default/web')) relaxed = setMinAvailable(1);
    });
    const web = names(await podsOn('worker-1'), 'web');
    const result = (await env.run(drains.drainNode, { cluster: c, node: 'worker-1', timeoutSeconds: 45 })) as DrainResult;
    await relaxed;
    assert.deepEqual(
      result.gone,
      web.map((n) => `default/${n}`),
    );
    assert.deepEqual(
      beats[0]?.remaining,
      web.map((n) => `default/${n}`),
    );
    assert.ok(
      beats.some((b) => b.blockedBy.includes('default/web') && b.remaining.length === 2),
      'a heartbeat named the PDB while both pods were left',
    );
    assert.deepEqual(beats.at(-1)?.remaining, []);

    const left = await podsOn('worker-1');
    assert.ok(
      left.every((p) => p.metadata?.ownerReferences?.some((o) => o.controller && o.kind === 'DaemonSet')),
      `only DaemonSet pods left: ${left.map((p) => p.metadata?.name).join(', ')}`,
    );
    await waitFor('web back to 2 available on other nodes', async () => {
      const pods = (await tc.kube.core.listNamespacedPod({ namespace: 'default', labelSelector: 'app=web' })).items;
      return (await webAvailable()) === 2 && pods.every((p) => p.spec?.nodeName !== 'worker-1');
    });

    // A retry after a crash re-plans from what is left: nothing to do, and it says it resumed.
    const before = await uids('worker-1');
    const retry = new MockActivityEnvironment({ attempt: 2, heartbeatDetails: beats.at(-2) });
    const again = (await retry.run(drains.drainNode, { cluster: c, node: 'worker-1', timeoutSeconds: 10 })) as DrainResult;
    assert.deepEqual({ gone: again.gone, resumed: again.resumed }, { gone: [], resumed: true });
    assert.deepEqual(await uids('worker-1'), before);
    await nodes.uncordonNode({ cluster: c, node: 'worker-1', owner: OWNER });
  });

  it('stops cleanly when the activity is cancelled while a PDB blocks', async () => {
    await setMinAvailable(2);
    await waitFor('PDB allows no disruption', async () => {
      const pdb = await tc.kube.policy.readNamespacedPodDisruptionBudget({ name: 'web', namespace: 'default' });
      const s = pdb.status;
      return s?.disruptionsAllowed === 0 && s.currentHealthy === 2 && (s.observedGeneration ?? 0) >= (pdb.metadata?.generation ?? 1);
    });
    const webPod = (await tc.kube.core.listNamespacedPod({ namespace: 'default', labelSelector: 'app=web' })).items[0] as V1Pod;
    const node = webPod.spec?.nodeName as string;
    await nodes.cordonNode({ cluster: c, node, owner: OWNER });
    const env = new MockActivityEnvironment();
    env.on('heartbeat', (d: DrainProgress) => {
      if (d.blockedBy.length > 0) env.cancel();
    });
    const started = Date.now();
    // The cache pod (emptyDir) may share the node: consent to it, so only the PDB stands in the way.
    const drainsWithConsent = createDrainActivities(access({ deleteEmptyDirData: true }));
    await assert.rejects(
      env.run(drainsWithConsent.drainNode, { cluster: c, node, timeoutSeconds: 60 }),
      (err: unknown) => err instanceof CancelledFailure,
    );
    assert.ok(Date.now() - started < 10_000, 'stopped long before the drain timeout');
    const after = await tc.kube.core.readNamespacedPod({ name: webPod.metadata?.name as string, namespace: 'default' });
    assert.equal(after.metadata?.uid, webPod.metadata?.uid, 'the blocked pod is still there');
    assert.equal(after.metadata?.deletionTimestamp, undefined);
    await nodes.uncordonNode({ cluster: c, node, owner: OWNER });
  });

  it('never evicts a same-named replacement: the UID precondition protects it', async () => {
    const body = workloadObjects({ kind: 'Pod', name: 'twin', namespace: 'default', replicas: 1, node: 'worker-3' }).pod!;
    const first = await tc.kube.core.createNamespacedPod({ namespace: 'default', body });
    await tc.kube.core.deleteNamespacedPod({ name: 'twin', namespace: 'default', gracePeriodSeconds: 0 });
    await waitFor('first twin gone', async () => {
      try {
        return (await tc.kube.core.readNamespacedPod({ name: 'twin', namespace: 'default' })).metadata?.uid !== first.metadata?.uid;
      } catch (err) {
        return (err as { code?: number }).code === 404;
      }
    });
    const second = await tc.kube.core.createNamespacedPod({ namespace: 'default', body });
    const outcome = await evictPod(tc.workerKube, { namespace: 'default', name: 'twin', uid: first.metadata?.uid as string });
    assert.deepEqual(outcome, { kind: 'gone' });
    const still = await tc.kube.core.readNamespacedPod({ name: 'twin', namespace: 'default' });
    assert.equal(still.metadata?.uid, second.metadata?.uid);
    assert.equal(still.metadata?.deletionTimestamp, undefined, 'the replacement was not evicted');
  });
});
