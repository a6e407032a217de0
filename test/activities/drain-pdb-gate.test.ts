import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { CoreV1Api } from '@kubernetes/client-node';
import { MockActivityEnvironment } from '@temporalio/testing';
import type { ClusterAccess, RemoteShell } from '../../activities/cluster-access.js';
import { createDrainActivities, type DrainResult } from '../../activities/drain.js';
import type { KubeApi } from '../../activities/kube-api.js';
import { mergePatch } from '../../activities/kube-api.js';
import { PdbGate, pdbGateKey } from '../../activities/pdb-gate.js';
import { waitFor } from '../../sim/cluster/wait-for.js';
import { startTestCluster, type TestCluster } from '../helpers/sim-cluster.js';

const tick = () => new Promise((r) => setImmediate(r));

describe('PdbGate: one request at a time per key', () => {
  it('runs tasks under one key in order, one at a time, other keys beside them, and forgets a key once idle', async () => {
    const gate = new PdbGate();
    const log: string[] = [];
    const inFlight = new Map<string, number>();
    let maxSame = 0;
    let maxAll = 0;
    const task = (k: string, id: string, fail = false) => async () => {
      inFlight.set(k, (inFlight.get(k) ?? 0) + 1);
      maxSame = Math.max(maxSame, inFlight.get(k)!);
      maxAll = Math.max(maxAll, [...inFlight.values()].reduce((a, b) => a + b, 0));
      log.push(`start ${id}`);
      await tick();
      await tick();
      inFlight.set(k, inFlight.get(k)! - 1);
      if (fail) throw new Error(`${id} failed`);
      return id;
    };
    const results = await Promise.allSettled([
      gate.run('a', task('a', 'a1')), gate.run('a', task('a', 'a2', true)), gate.run('a', task('a', 'a3')),
      gate.run('b', task('b', 'b1')), gate.run(undefined, task('-', 'free')),
    ]);
    assert.deepEqual(results.map((r) => (r.status === 'fulfilled' ? r.value : (r.reason as Error).message)), ['a1', 'a2 failed', 'a3', 'b1', 'free']);
    assert.equal(maxSame, 1, 'never two under one key');
    assert.equal(maxAll, 3, 'a, b and the unkeyed task ran side by side');
    assert.deepEqual(log.filter((l) => l.includes(' a')), ['start a1', 'start a2', 'start a3'], 'in the order asked, past a failure');
    assert.equal(gate.busy, 0);
  });

  it('keys by cluster, namespace and the covering PDBs; a pod no PDB covers has no key', () => {
    assert.equal(pdbGateKey('prod', 'shop', ['web']), 'prod/shop/web');
    assert.equal(pdbGateKey('prod', 'shop', ['web', 'all']), 'prod/shop/all+web');
    assert.equal(pdbGateKey('prod', 'shop', []), undefined);
  });
});

// Two workers drained at once, each with pods of two Deployments under their own PDBs: the worker's
// evictions reach the real API server at most one at a time per PDB, and both drains finish.
const DESCRIPTION = `
name: gates
version: 1.32.4
repository: [1.32.4]
nodes:
  - {name: cp, role: control-plane, count: 1}
  - {name: worker, role: worker, count: 3}
workloads:
  - {kind: Deployment, name: a, replicas: 6, pdb: {maxUnavailable: 6}}
  - {kind: Deployment, name: b, replicas: 6, pdb: {maxUnavailable: 6}}
`;
const noShell: RemoteShell = { exec: () => Promise.reject(new Error('no SSH here')), download: () => Promise.reject(new Error('no SSH here')) };

describe('drains under shared PDBs, against the simulated cluster', () => {
  let tc: TestCluster;
  before(async () => {
    tc = await startTestCluster(DESCRIPTION);
  });
  after(async () => tc?.stop());

  it('sends the evictions of two concurrent drains one at a time per PDB, and both finish', async () => {
    const inFlight = new Map<string, number>();
    const max = new Map<string, number>();
    let maxAll = 0;
    const core = tc.workerKube.core;
    // The worker's own client, counting its eviction requests in flight by Deployment (pod names start with it).
    const counting = new Proxy(core, {
      get(target, prop, receiver) {
        if (prop !== 'createNamespacedPodEviction') return Reflect.get(target, prop, receiver);
        return async (...args: Parameters<CoreV1Api['createNamespacedPodEviction']>) => {
          const app = args[0].name.split('-')[0] as string;
          inFlight.set(app, (inFlight.get(app) ?? 0) + 1);
          max.set(app, Math.max(max.get(app) ?? 0, inFlight.get(app)!));
          maxAll = Math.max(maxAll, [...inFlight.values()].reduce((x, y) => x + y, 0));
          try {
            return await target.createNamespacedPodEviction(...args);
          } finally {
            inFlight.set(app, inFlight.get(app)! - 1);
          }
        };
      },
    });
    const kube: KubeApi = { ...tc.workerKube, core: counting };
    const drains = createDrainActivities({ clusters: (): ClusterAccess => ({ config: tc.config, kube, shell: noShell }) });
    const nodes = ['worker-1', 'worker-2'];
    const podsOn = async (node: string) =>
      (await tc.kube.core.listPodForAllNamespaces({ fieldSelector: `spec.nodeName=${node}` })).items
        .filter((p) => p.metadata?.namespace === 'default').map((p) => `default/${p.metadata?.name}`).sort();
    await waitFor('both PDBs observe 6 healthy pods', async () => {
      const pdbs = (await tc.kube.policy.listNamespacedPodDisruptionBudget({ namespace: 'default' })).items;
      return pdbs.length === 2 && pdbs.every((p) => p.status?.currentHealthy === 6 && p.status?.disruptionsAllowed === 6);
    });
    const before = await Promise.all(nodes.map(podsOn));
    assert.ok(before.every((pods) => pods.length > 0), `pods on both nodes: ${JSON.stringify(before)}`);
    for (const name of nodes) await tc.kube.core.patchNode({ name, body: { spec: { unschedulable: true } } }, mergePatch);

    const results = (await Promise.all(nodes.map((node) =>
      new MockActivityEnvironment({ heartbeatTimeoutMs: 60_000 }).run(drains.drainNode, { cluster: 'gates', node, timeoutSeconds: 60 })))) as DrainResult[];

    assert.deepEqual(results.map((r) => r.gone), before, 'each drain evicted exactly the pods its node had');
    assert.deepEqual(Object.fromEntries(max), { a: 1, b: 1 }, 'never two evictions under one PDB at once');
    assert.equal(maxAll, 2, "the two PDBs' evictions went side by side");
    assert.deepEqual(await Promise.all(nodes.map(podsOn)), [[], []]);
  });
});
