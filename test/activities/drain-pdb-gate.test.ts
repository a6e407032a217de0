import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { CoreV1Api } from '@kubernetes/client-node';
import { MockActivityEnvironment } from '@temporalio/testing';
import type { ClusterAccess, RemoteShell } from '../../activities/cluster-access.js';
import { createDrainActivities, type DrainResult } from '../../activities/drain.js';
import type { KubeApi } from '../../activities/kube-api.js';
import { mergePatch } from '../../activities/kube-api.js';
import type { PdbSnapshot } from '../../activities/pdb-admission.js';
import { PdbGate, pdbGateKey } from '../../activities/pdb-gate.js';
import { LEASE_PREFIX, leaseName, PdbLease } from '../../activities/pdb-lease.js';
import { waitFor } from '../../sim/cluster/wait-for.js';
import { clusterWorld } from '../helpers/sim-world.js';

const tick = () => new Promise((r) => setImmediate(r));

describe('PdbGate: turns per key', () => {
  it('runs tasks under one key in order, one at a time, other keys beside them, and forgets a key once idle', async () => {
    const gate = new PdbGate();
    const log: string[] = [];
    const inFlight = new Map<string, number>();
    let maxSame = 0;
    let maxAll = 0;
    const task =
      (k: string, id: string, fail = false) =>
      async () => {
        inFlight.set(k, (inFlight.get(k) ?? 0) + 1);
        maxSame = Math.max(maxSame, inFlight.get(k)!);
        maxAll = Math.max(
          maxAll,
          [...inFlight.values()].reduce((a, b) => a + b, 0),
        );
        log.push(`start ${id}`);
        await tick();
        await tick();
        inFlight.set(k, inFlight.get(k)! - 1);
        if (fail) throw new Error(`${id} failed`);
        return id;
      };
    const results = await Promise.allSettled([
      gate.run('a', { send: task('a', 'a1') }),
      gate.run('a', { send: task('a', 'a2', true) }),
      gate.run('a', { send: task('a', 'a3') }),
      gate.run('b', { send: task('b', 'b1') }),
      gate.run(undefined, { send: task('-', 'free') }),
    ]);
    assert.deepEqual(
      results.map((r) => (r.status === 'fulfilled' ? r.value : (r.reason as Error).message)),
      ['a1', 'a2 failed', 'a3', 'b1', 'free'],
    );
    assert.equal(maxSame, 1, 'never two under one key');
    assert.equal(maxAll, 3, 'a, b and the unkeyed task ran side by side');
    assert.deepEqual(
      log.filter((l) => l.includes(' a')),
      ['start a1', 'start a2', 'start a3'],
      'in the order asked, past a failure',
    );
    assert.equal(gate.busy, 0);
  });

  // A fake API server under one PDB allowing 3 disruptions: each request is admitted (its PDB write seen)
  // when the test lets it, and answered when the test lets it, so the gate's turns can be followed step by step.
  it('sends the next request once the previous is seen admitted, up to the budget in flight, and waits for answers beyond it', async () => {
    const gate = new PdbGate();
    const budget = 3;
    let admittedSoFar = 0;
    const sent: string[] = [];
    let inFlight = 0;
    let maxInFlight = 0;
    const answers = new Map<string, () => void>();
    const admissions = new Map<string, (s: PdbSnapshot | undefined) => void>();
    const request = (id: string) =>
      gate.run('k', {
        send: async () => {
          sent.push(id);
          inFlight++;
          maxInFlight = Math.max(maxInFlight, inFlight);
          await new Promise<void>((r) => answers.set(id, r));
          inFlight--;
          return id;
        },
        admitted: () => new Promise((r) => admissions.set(id, r)),
      });
    const admit = async (id: string) => {
      admittedSoFar++;
      admissions.get(id)!({ disruptionsAllowed: budget - admittedSoFar, disruptedPods: {} });
      for (let i = 0; i < 5; i++) await tick();
    };
    const answer = async (id: string) => {
      answers.get(id)!();
      for (let i = 0; i < 5; i++) await tick();
    };
    const results = Promise.all(['r1', 'r2', 'r3', 'r4', 'r5'].map(request));
    for (let i = 0; i < 5; i++) await tick();
    assert.deepEqual(sent, ['r1'], 'the budget is unknown: one request, until it is seen admitted');
    await admit('r1');
    assert.deepEqual(sent, ['r1', 'r2'], 'r1 admitted with 2 more allowed: r2 goes while r1 is in flight');
    await admit('r2');
    await admit('r3');
    assert.deepEqual(sent, ['r1', 'r2', 'r3'], 'no disruption left: r4 waits');
    await answer('r1');
    await answer('r2');
    assert.deepEqual(sent, ['r1', 'r2', 'r3'], 'still none allowed as last seen, and r3 in flight');
    await answer('r3');
    assert.deepEqual(sent, ['r1', 'r2', 'r3', 'r4'], 'nothing in flight: one goes (the server judges it)');
    // r4 is answered before anything saw its write (refused, or the look came late): the turn passes on the answer.
    await answer('r4');
    assert.deepEqual(sent, ['r1', 'r2', 'r3', 'r4', 'r5']);
    await answer('r5');
    assert.deepEqual(await results, ['r1', 'r2', 'r3', 'r4', 'r5']);
    assert.equal(maxInFlight, budget, 'as many in flight as the budget allowed, never more');
    assert.equal(gate.busy, 0);
  });

  it('keys by cluster, namespace and the covering PDBs; a pod no PDB covers has no key', () => {
    assert.equal(pdbGateKey('prod', 'shop', ['web']), 'prod/shop/web');
    assert.equal(pdbGateKey('prod', 'shop', ['web', 'all']), 'prod/shop/all+web');
    assert.equal(pdbGateKey('prod', 'shop', []), undefined);
  });

  it('names the Lease of one PDB after it, of several (or a long name) by a hash of the sorted set', () => {
    assert.equal(leaseName(['web']), 'skewless-evictions-web');
    assert.equal(leaseName(['web', 'all']), leaseName(['all', 'web']));
    assert.match(leaseName(['web', 'all']), /^skewless-evictions-[0-9a-f]{20}$/);
    assert.notEqual(leaseName(['web', 'all']), leaseName(['web', 'api']));
    assert.ok(leaseName(['x'.repeat(253)]).length <= 253);
  });
});

// Two nodes drained at once, each with pods of two Deployments under their own PDBs: the worker's
// evictions reach the real API server at most the budget at a time per PDB, from one worker at a time
// per PDB, and both drains finish.
const DESCRIPTION = `
name: gates
version: 1.32.4
repository: [1.32.4]
nodes:
  - {name: cp, role: control-plane, count: 1}
  - {name: worker, role: worker, count: 5}
workloads:
  - {kind: Deployment, name: a, replicas: 6, pdb: {maxUnavailable: 6}}
  - {kind: Deployment, name: b, replicas: 6, pdb: {maxUnavailable: 6}}
`;
const noShell: RemoteShell = {
  exec: () => Promise.reject(new Error('no SSH here')),
  download: () => Promise.reject(new Error('no SSH here')),
};

describe('drains under shared PDBs, against the simulated cluster', () => {
  const tc = clusterWorld(DESCRIPTION);

  const podsOn = async (node: string) =>
    (await tc.kube.core.listPodForAllNamespaces({ fieldSelector: `spec.nodeName=${node}` })).items
      .filter((p) => p.metadata?.namespace === 'default')
      .map((p) => `default/${p.metadata?.name}`)
      .sort();

  /**
   * Drains `nodes` side by side, the drain of node i through `gateOf(i)` (undefined: the process's
   * gate), counting the eviction requests in flight by Deployment (pod names start with it) across all
   * drains, each answer held `holdMs` after the server gave it (a slow way back: the server has admitted
   * and deleted the pod, the worker does not know yet). Returns the most in flight per Deployment, overall,
   * and the most drains with requests in flight under one Deployment at once.
   */
  async function drainSideBySide(nodes: string[], gateOf: (i: number) => PdbGate | undefined, holdMs = 0) {
    const inFlight = new Map<string, number[]>();
    const max = new Map<string, number>();
    const maxDrains = new Map<string, number>();
    let maxAll = 0;
    const counting = (drain: number): KubeApi => {
      const core = tc.workerKube.core;
      const proxy = new Proxy(core, {
        get(target, prop, receiver) {
          if (prop !== 'createNamespacedPodEviction') return Reflect.get(target, prop, receiver);
          return async (...args: Parameters<CoreV1Api['createNamespacedPodEviction']>) => {
            const app = args[0].name.split('-')[0] as string;
            const byDrain = inFlight.get(app) ?? nodes.map(() => 0);
            inFlight.set(app, byDrain);
            byDrain[drain]!++;
            max.set(
              app,
              Math.max(
                max.get(app) ?? 0,
                byDrain.reduce((x, y) => x + y, 0),
              ),
            );
            maxDrains.set(app, Math.max(maxDrains.get(app) ?? 0, byDrain.filter((n) => n > 0).length));
            maxAll = Math.max(
              maxAll,
              [...inFlight.values()].flat().reduce((x, y) => x + y, 0),
            );
            try {
              const answer = await target.createNamespacedPodEviction(...args);
              await new Promise((r) => setTimeout(r, holdMs));
              return answer;
            } finally {
              byDrain[drain]!--;
            }
          };
        },
      });
      return { ...tc.workerKube, core: proxy };
    };
    await waitFor('both PDBs observe 6 healthy pods', async () => {
      const pdbs = (await tc.kube.policy.listNamespacedPodDisruptionBudget({ namespace: 'default' })).items;
      return pdbs.length === 2 && pdbs.every((p) => p.status?.currentHealthy === 6 && p.status?.disruptionsAllowed === 6);
    });
    const before = await Promise.all(nodes.map(podsOn));
    assert.ok(
      before.every((pods) => pods.length > 0),
      `pods on every node: ${JSON.stringify(before)}`,
    );
    for (const name of nodes) await tc.kube.core.patchNode({ name, body: { spec: { unschedulable: true } } }, mergePatch);

    const results = (await Promise.all(
      nodes.map((node, i) => {
        const gate = gateOf(i);
        const kube = counting(i);
        const drains = createDrainActivities({
          clusters: (): ClusterAccess => ({ config: tc.config, kube, shell: noShell }),
          ...(gate ? { pdbGate: gate } : {}),
        });
        return new MockActivityEnvironment({ heartbeatTimeoutMs: 60_000 }).run(drains.drainNode, {
          cluster: 'gates',
          node,
          timeoutSeconds: 60,
        });
      }),
    )) as DrainResult[];

    assert.deepEqual(
      results.map((r) => r.gone),
      before,
      'each drain evicted exactly the pods its node had',
    );
    assert.deepEqual(
      await Promise.all(nodes.map(podsOn)),
      nodes.map(() => []),
    );
    return { max: Object.fromEntries(max), maxAll, maxDrains: Object.fromEntries(maxDrains) };
  }

  it('sends the evictions of two concurrent drains side by side, at most the budget in flight per PDB, and both finish', async () => {
    const { max, maxAll } = await drainSideBySide(['worker-1', 'worker-2'], () => undefined, 150);
    for (const app of ['a', 'b']) assert.ok((max[app] ?? 0) >= 1 && (max[app] ?? 0) <= 6, `in flight under ${app}: ${JSON.stringify(max)}`);
    assert.ok(maxAll >= 2, "the two PDBs' evictions went side by side");
  });

  // Two worker processes: each drain through a gate of its own, as two `skewless worker`s have. Each
  // answer is held 150 ms, so gates that did not see each other would have requests in flight together.
  it('holds across two gates (two workers) through Leases in the cluster: one worker at a time in flight per PDB, no Lease left', async () => {
    const gates = [new PdbGate(), new PdbGate()];
    assert.notEqual(gates[0]!.holder, gates[1]!.holder);
    const { max, maxAll, maxDrains } = await drainSideBySide(['worker-3', 'worker-4'], (i) => gates[i], 150);
    assert.deepEqual(maxDrains, { a: 1, b: 1 }, 'never evictions of both workers in flight under one PDB at once');
    for (const app of ['a', 'b']) assert.ok((max[app] ?? 0) <= 6, `at most the budget in flight under ${app}: ${JSON.stringify(max)}`);
    assert.ok(maxAll >= 2, "the two PDBs' evictions went side by side");
    const leases = (await tc.kube.coordination.listNamespacedLease({ namespace: 'default' })).items.map((l) => l.metadata?.name ?? '');
    assert.deepEqual(
      leases.filter((n) => n.startsWith(LEASE_PREFIX)),
      [],
      'every Lease given back',
    );
    const created = tc.sim
      .auditEvents()
      .filter((e) => e.resource === 'leases' && e.verb === 'create' && e.code === 201)
      .map((e) => e.name);
    assert.ok(
      created.includes('skewless-evictions-a') && created.includes('skewless-evictions-b'),
      `the gates took the PDBs' Leases: ${created.join(', ')}`,
    );
  });

  it("takes over a Lease whose holder died, once it has seen it unchanged for the Lease's duration", async () => {
    const api = tc.workerKube.coordination;
    const dead = new PdbLease(api, 'default', ['orphan'], 'worker-a/1/dead', 2);
    await dead.acquire(); // and never given back: its worker was SIGKILLed
    const next = new PdbLease(api, 'default', ['orphan'], 'worker-b/2/next', 2);
    const t0 = Date.now();
    await next.acquire();
    const waited = Date.now() - t0;
    assert.ok(waited >= 2_000 && waited < 6_000, `took over after ${waited} ms`);
    const lease = await api.readNamespacedLease({ name: 'skewless-evictions-orphan', namespace: 'default' });
    assert.equal(lease.spec?.holderIdentity, 'worker-b/2/next');
    assert.equal(lease.spec?.leaseTransitions, 1);
    await next.release();
    await dead.release(); // its record is gone: nothing of its own to delete, no error
    await assert.rejects(
      api.readNamespacedLease({ name: 'skewless-evictions-orphan', namespace: 'default' }),
      (err: { code?: number }) => err.code === 404,
    );
  });
});
