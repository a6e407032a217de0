import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import type { V1Pod } from '@kubernetes/client-node';
import { CancelledFailure } from '@temporalio/activity';
import { MockActivityEnvironment } from '@temporalio/testing';
import type { ClusterAccess, RemoteShell } from '../../activities/cluster-access.js';
import type { ClusterConfig } from '../../activities/cluster-config.js';
import { createDrainActivities, type DrainProgress, type DrainResult } from '../../activities/drain.js';
import { evictPod, podsOnNode } from '../../activities/drain-eviction.js';
import { mergePatch } from '../../activities/kube-api.js';
import { createNodeActivities } from '../../activities/node-activities.js';
import { NodePodWatch } from '../../activities/pod-watch.js';
import { PdbBudgetWatch } from '../../activities/pdb-budget-watch.js';
import type { AuditEvent } from '../../sim/cluster/audit-log.js';
import { WORKER_USER } from '../../sim/cluster/pki.js';
import { waitFor } from '../../sim/cluster/wait-for.js';
import { workloadObjects } from '../../sim/cluster/workload-objects.js';
import { clusterWorld } from '../helpers/sim-world.js';

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
  const tc = clusterWorld(DESCRIPTION);
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

  it('waits for an evicted pod through a watch of its node: one list and one watch, however long it terminates', async () => {
    const body = workloadObjects({ kind: 'Pod', name: 'slow', namespace: 'default', replicas: 1, node: 'worker-3' }).pod!;
    // A finalizer keeps the evicted pod terminating until the test lets it go: the drain must wait, and learn it at once.
    body.metadata = { ...body.metadata, finalizers: ['skewless.test/hold'] };
    await tc.kube.core.createNamespacedPod({ namespace: 'default', body });
    await waitFor(
      'slow running',
      async () => (await tc.kube.core.readNamespacedPod({ name: 'slow', namespace: 'default' })).status?.phase === 'Running',
    );
    await nodes.cordonNode({ cluster: c, node: 'worker-3', owner: OWNER });
    await setMinAvailable(1); // web's PDB is not this test's subject
    const seen = tc.sim.auditEvents().length;
    const released = (async () => {
      await waitFor('slow terminating', async () =>
        Boolean((await tc.kube.core.readNamespacedPod({ name: 'slow', namespace: 'default' })).metadata?.deletionTimestamp),
      );
      await new Promise((r) => setTimeout(r, 3_000));
      await tc.kube.core.patchNamespacedPod({ name: 'slow', namespace: 'default', body: { metadata: { finalizers: null } } }, mergePatch);
    })();
    // Whatever else the scheduler put there (the cache's emptyDir pod, the unmanaged twin) is consented to: the subject is `slow`.
    const consenting = createDrainActivities(access({ deleteEmptyDirData: true }));
    const result = await consenting.drainNode({ cluster: c, node: 'worker-3', force: ['slow', 'twin'], timeoutSeconds: 30 });
    await released;
    assert.ok(result.gone.includes('default/slow'), result.gone.join(', '));
    const onNode = (e: AuditEvent) =>
      e.user === WORKER_USER && e.resource === 'pods' && decodeURIComponent(e.uri).includes('spec.nodeName=worker-3');
    // A watch is logged when it ends: the drain closed it on return, the server notices within moments.
    await waitFor('the watch in the audit log', async () =>
      tc.sim
        .auditEvents()
        .slice(seen)
        .some((e) => onNode(e) && e.verb === 'watch'),
    );
    const requests = tc.sim.auditEvents().slice(seen).filter(onNode);
    const lists = requests.filter((e) => e.verb === 'list').length;
    // The drain's plan and the watch's start: a list every 250 ms would have made a dozen in those 3 s.
    assert.ok(lists <= 2, `${lists} lists of worker-3's pods: ${requests.map((e) => e.verb).join(' ')}`);
    await nodes.uncordonNode({ cluster: c, node: 'worker-3', owner: OWNER });
  });

  it('a node pod watch sees each deletion and goes on through an API server restart (410 Gone: pod-watch.test.ts)', async () => {
    const stop = new AbortController();
    let lists = 0;
    const failures: unknown[] = [];
    const body = (name: string) => workloadObjects({ kind: 'Pod', name, namespace: 'default', replicas: 1, node: 'worker-2' }).pod!;
    const watch = new NodePodWatch({
      kube: tc.workerKube.watch!,
      node: 'worker-2',
      list: async () => {
        for (;;) {
          try {
            lists++;
            return await podsOnNode(tc.workerKube, 'worker-2');
          } catch {
            await new Promise((r) => setTimeout(r, 500)); // the API server restarting
          }
        }
      },
      onChange: () => undefined,
      onFailure: (err) => failures.push(err),
      signal: stop.signal,
    });
    try {
      const first = await tc.kube.core.createNamespacedPod({ namespace: 'default', body: body('watched-1') });
      await watch.start();
      await tc.kube.core.deleteNamespacedPod({ name: 'watched-1', namespace: 'default', gracePeriodSeconds: 0 });
      await waitFor('watched-1 seen gone', async () => watch.isGone(first.metadata?.uid as string));

      await tc.sim.controlPlane.restartApiserver();
      const second = await tc.kube.core.createNamespacedPod({ namespace: 'default', body: body('watched-2') });
      await waitFor('watched-2 seen', async () => !watch.isGone(second.metadata?.uid as string));
      await tc.kube.core.deleteNamespacedPod({ name: 'watched-2', namespace: 'default', gracePeriodSeconds: 0 });
      await waitFor('watched-2 seen gone after the restart', async () => watch.isGone(second.metadata?.uid as string));
      assert.deepEqual(failures, []);
      assert.ok(lists >= 2, 'the watch that failed with the server was replaced by a new list');
    } finally {
      stop.abort();
    }
  });

  it('drains in rounds by drainRules order, never evicts a skip pod, and waits for a waitCompleted pod to complete', async () => {
    const node = 'worker-2';
    const bare = (name: string, labels: Record<string, string>, finalizers: string[] = []) => {
      const body = workloadObjects({ kind: 'Pod', name, namespace: 'default', replicas: 1, node }).pod!;
      body.metadata = { ...body.metadata, labels: { ...body.metadata?.labels, ...labels }, finalizers };
      return tc.kube.core.createNamespacedPod({ namespace: 'default', body });
    };
    // `first` is held terminating by a finalizer until the test lets it go: `osd` (order 10) must wait for it.
    await bare('first', { role: 'first' }, ['skewless.test/hold']);
    await bare('osd', { role: 'storage' });
    // Not named after the file's DaemonSet `agent`: its controller would adopt a pod with its label.
    const keeper = await bare('keeper', { 'skewless.io/drain': 'skip' });
    await bare('batch', { role: 'batch' });
    const read = (name: string) => tc.kube.core.readNamespacedPod({ name, namespace: 'default' });
    for (const name of ['first', 'osd', 'keeper', 'batch'])
      await waitFor(`${name} running`, async () => (await read(name)).status?.phase === 'Running');
    const ruled = createDrainActivities({
      clusters: (name: string): ClusterAccess => ({
        ...access({ deleteEmptyDirData: true }).clusters(name),
        config: {
          ...tc.config,
          drain: { ...tc.config.drain, deleteEmptyDirData: true },
          drainRules: [
            { labels: { role: 'storage' }, behavior: 'drain', order: 10 },
            { labels: { role: 'batch' }, behavior: 'waitCompleted', order: 0 },
          ],
        },
      }),
    });
    const plan = await ruled.planDrain({ cluster: c, node, force: ['first', 'osd', 'twin'] });
    assert.deepEqual(
      plan.waitCompleted.map((p) => p.name),
      ['batch'],
    );
    assert.ok(
      plan.skipped.some((s) => s.pod.name === 'keeper' && s.filter === 'drainRule'),
      JSON.stringify(plan.skipped),
    );
    assert.equal(plan.evict.find((p) => p.name === 'osd')?.order, 10);

    await nodes.cordonNode({ cluster: c, node, owner: OWNER });
    await setMinAvailable(1);
    const beats: DrainProgress[] = [];
    const env = new MockActivityEnvironment();
    env.on('heartbeat', (d: DrainProgress) => beats.push(d));
    let settled = false;
    const drained = (
      env.run(ruled.drainNode, { cluster: c, node, force: ['first', 'osd', 'twin'], timeoutSeconds: 60 }) as Promise<DrainResult>
    ).finally(() => (settled = true));
    await waitFor('first terminating', async () => Boolean((await read('first')).metadata?.deletionTimestamp));
    await new Promise((r) => setTimeout(r, 1_500));
    assert.equal((await read('osd')).metadata?.deletionTimestamp, undefined, 'order 10 waits while round 0 is not gone');
    assert.ok(beats.some((b) => b.round?.index === 1 && b.round.of === 2 && b.round.order === 0));
    await tc.kube.core.patchNamespacedPod({ name: 'first', namespace: 'default', body: { metadata: { finalizers: null } } }, mergePatch);
    await waitFor('osd evicted', async () => {
      try {
        return Boolean((await read('osd')).metadata?.deletionTimestamp);
      } catch {
        return true; // gone already
      }
    });
    assert.ok(beats.some((b) => b.round?.index === 2 && b.round.order === 10));
    const waitStarted = Date.now();
    await new Promise((r) => setTimeout(r, 3_000));
    assert.equal(settled, false, 'the drain waits for the batch pod to complete');
    // By watch: no list of the node's pods a second while the batch pod runs (the audit log of the worker's identity).
    const podLists = tc.sim
      .auditEvents()
      .filter((e) => e.verb === 'list' && e.resource === 'pods' && e.uri.includes(`spec.nodeName%3D${node}`))
      .filter((e) => Date.parse(e.time) > waitStarted + 500);
    assert.ok(podLists.length <= 1, `lists of ${node}'s pods while waiting: ${podLists.map((e) => e.time).join(', ')}`);
    assert.deepEqual(beats.at(-1)?.waitingToComplete, ['default/batch']);
    // The batch pod's work ends (a Job's pod would be completed by kwok at once: this one is bare, its phase set here).
    await tc.kube.core.patchNamespacedPodStatus(
      { name: 'batch', namespace: 'default', body: { status: { phase: 'Succeeded' } } },
      mergePatch,
    );
    const result = await drained;
    assert.deepEqual(result.completed, ['default/batch']);
    assert.equal(result.rounds, 2);
    assert.ok(result.gone.includes('default/first') && result.gone.includes('default/osd'), result.gone.join(', '));
    const still = await read('keeper');
    assert.equal(still.metadata?.uid, keeper.metadata?.uid);
    assert.equal(still.metadata?.deletionTimestamp, undefined, 'the skip pod was never evicted');
    await nodes.uncordonNode({ cluster: c, node, owner: OWNER });
  });

  it("a refused eviction's PDB watch goes on through an API server restart and ends when the PDB allows a disruption (410 Gone: watch-waits.test.ts)", async () => {
    await setMinAvailable(2); // web has 2 replicas: no disruption allowed
    await waitFor('the PDB allows none', async () => {
      const st = (await tc.kube.policy.readNamespacedPodDisruptionBudget({ name: 'web', namespace: 'default' })).status;
      return st?.disruptionsAllowed === 0;
    });
    const stop = new AbortController();
    // As the drain's guard does: a list that finds the API server away is tried again.
    const guard = async <T>(call: () => Promise<T>): Promise<T> => {
      for (;;) {
        try {
          return await call();
        } catch {
          await new Promise((r) => setTimeout(r, 500));
        }
      }
    };
    const budgets = new PdbBudgetWatch(tc.workerKube, stop.signal, guard);
    try {
      let done = false;
      const started = Date.now();
      const waiting = budgets.untilAllowed('default', 'web', { maxMs: 60_000, fallbackMs: 500 }).then(() => (done = true));
      await new Promise((r) => setTimeout(r, 1_000));
      assert.equal(done, false, 'no disruption allowed: waiting');
      await tc.sim.controlPlane.restartApiserver();
      assert.equal(done, false, 'still waiting after the restart');
      await setMinAvailable(1);
      await waiting;
      assert.ok(Date.now() - started < 30_000, `ended by the PDB's event, not by the 30 s cap: ${Date.now() - started} ms`);
    } finally {
      budgets.close();
      stop.abort();
    }
  });
});
