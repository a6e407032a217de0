import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, it } from 'node:test';
import type { CoreV1Api } from '@kubernetes/client-node';
import { MockActivityEnvironment } from '@temporalio/testing';
import type { ClusterAccess, RemoteShell } from '../../activities/cluster-access.js';
import { createDrainActivities, type DrainResult } from '../../activities/drain.js';
import { mergePatch, type KubeApi } from '../../activities/kube-api.js';
import { LEASE_PREFIX } from '../../activities/pdb-lease.js';
import { apiserverGet } from '../../activities/readiness/apiserver-get.js';
import { waitFor } from '../../sim/cluster/wait-for.js';
import type { DrainProcessOutput } from '../helpers/drain-process.js';
import type { TestCluster } from '../helpers/sim-cluster.js';
import { clusterWorld } from '../helpers/sim-world.js';

/**
 * Evictions under one PodDisruptionBudget as parallel as its budget allows, and never a storm of
 * conflicts, seen from the API server. One Deployment of 24 pods under a PDB allowing 4 disruptions;
 * worker-4 stays open for the replacements. The API server's own counters say how the evictions went:
 * an eviction that took over 0.4 s in the server waited at least one of its 500 ms conflict retries
 * (k8s.io/kubernetes pkg/registry/core/pod/storage/eviction.go, EvictionsRetry), and a PDB status write
 * refused with 409 is a conflict, the eviction handler's or the disruption controller's (whose writes race
 * the evictions' and its own: a few whatever the evictions do, 4 for 3 evictions sent one at a time).
 * Measured on this simulation, 20 evictions of one node under one PDB: sent one at a time 0-6 slow
 * evictions and 12-15 such 409s; 5 at once 5-9 and 26-32; 20 at once 17 and 48-59.
 */

const BUDGET = 4;
const DESCRIPTION = `
name: budgets
version: 1.32.4
repository: [1.32.4]
terminationGraceSeconds: 1
nodes:
  - {name: cp, role: control-plane, count: 1}
  - {name: worker, role: worker, count: 4}
workloads:
  - {kind: Deployment, name: web, replicas: 24, pdb: {maxUnavailable: ${BUDGET}}}
`;
const noShell: RemoteShell = {
  exec: () => Promise.reject(new Error('no SSH here')),
  download: () => Promise.reject(new Error('no SSH here')),
};
const drainProcess = fileURLToPath(new URL('../helpers/drain-process.js', import.meta.url));

/** The API server's counters this test reads, from its /metrics. */
interface ServerCounts {
  evictions: Record<string, number>;
  evictionsOver400ms: number;
  pdbStatusConflicts: number;
}

async function serverCounts(tc: TestCluster): Promise<ServerCounts> {
  const text = await apiserverGet(tc.config, '/metrics');
  const out: ServerCounts = { evictions: {}, evictionsOver400ms: 0, pdbStatusConflicts: 0 };
  for (const line of text.split('\n')) {
    const labels = Object.fromEntries([...line.matchAll(/(\w+)="([^"]*)"/g)].map((m) => [m[1], m[2]]));
    const value = Number(line.split(' ').at(-1));
    const eviction = labels.resource === 'pods' && labels.subresource === 'eviction';
    if (line.startsWith('apiserver_request_total{')) {
      if (eviction) out.evictions[labels.code ?? '?'] = (out.evictions[labels.code ?? '?'] ?? 0) + value;
      if (labels.resource === 'poddisruptionbudgets' && labels.subresource === 'status' && labels.code === '409')
        out.pdbStatusConflicts += value;
    }
    if (line.startsWith('apiserver_request_duration_seconds_bucket{') && eviction) {
      if (labels.le === '+Inf') out.evictionsOver400ms += value;
      if (labels.le === '0.4') out.evictionsOver400ms -= value;
    }
  }
  return out;
}

function since(before: ServerCounts, now: ServerCounts): ServerCounts {
  const evictions: Record<string, number> = {};
  for (const [code, n] of Object.entries(now.evictions))
    if (n - (before.evictions[code] ?? 0) > 0) evictions[code] = n - (before.evictions[code] ?? 0);
  return {
    evictions,
    evictionsOver400ms: now.evictionsOver400ms - before.evictionsOver400ms,
    pdbStatusConflicts: now.pdbStatusConflicts - before.pdbStatusConflicts,
  };
}

/** The most intervals [from, to) that overlap at one moment. */
function mostAtOnce(intervals: { from: number; to: number }[]): number {
  const edges = intervals.flatMap((i) => [
    { at: i.from, d: 1 },
    { at: i.to, d: -1 },
  ]);
  edges.sort((a, b) => a.at - b.at || a.d - b.d);
  let now = 0;
  let most = 0;
  for (const e of edges) most = Math.max(most, (now += e.d));
  return most;
}

/** Evictions answered by the server, no conflict storm among them: the assertions both cases share. */
function assertNoStorm(counts: ServerCounts, sent: number): void {
  const codes = Object.keys(counts.evictions).sort();
  assert.ok(
    codes.every((c) => c === '201' || c === '429'),
    `every eviction admitted or refused by the budget, none timed out or conflicted: ${JSON.stringify(counts)}`,
  );
  assert.ok((counts.evictions['201'] ?? 0) >= 1);
  // The evictions' own conflicts: each costs the eviction a 500 ms retry in the server.
  assert.ok(
    counts.evictionsOver400ms * 3 <= sent,
    `few evictions waited for a conflict retry (${sent} evictions): ${JSON.stringify(counts)}`,
  );
  // Every PDB status write refused, the disruption controller's included (a few whatever the evictions do).
  assert.ok(
    counts.pdbStatusConflicts <= 2 * sent + 5,
    `no storm of conflicting PDB status writes (${sent} evictions): ${JSON.stringify(counts)}`,
  );
}

describe('evictions under one PDB, as parallel as its budget allows', () => {
  const tc = clusterWorld(DESCRIPTION);

  const webOn = async (node: string) =>
    (await tc.kube.core.listNamespacedPod({ namespace: 'default', labelSelector: 'app=web', fieldSelector: `spec.nodeName=${node}` })).items
      .filter((p) => !p.metadata?.deletionTimestamp)
      .map((p) => `default/${p.metadata?.name}`)
      .sort();
  const budgetRestored = () =>
    waitFor(`the PDB allows ${BUDGET} again`, async () => {
      const pdb = await tc.kube.policy.readNamespacedPodDisruptionBudget({ name: 'web', namespace: 'default' });
      return pdb.status?.currentHealthy === 24 && pdb.status?.disruptionsAllowed === BUDGET;
    });

  // One drain in this process; each answer held 500 ms on its way back, so that a gate which waited for
  // answers would have one eviction in flight at a time, and one that passes the turn on at the server's
  // admission has several. The budget is the PDB's current one: an evicted pod's replacement on worker-4 is
  // Ready within moments, the disruption controller gives its disruption back, and an answer still held
  // here no longer spends the budget. So the bound is on what the server has not answered yet, and the
  // server's own verdict: no eviction refused for the budget (429), each was sent while the budget allowed it.
  it(`keeps evictions in flight under a PDB allowing ${BUDGET}, up to its current budget and never past it`, async (t) => {
    await budgetRestored();
    const pods = await webOn('worker-1');
    assert.ok(pods.length >= 2, `web pods on worker-1: ${pods.join(', ')}`);
    await tc.kube.core.patchNode({ name: 'worker-1', body: { spec: { unschedulable: true } } }, mergePatch);
    const spans: { from: number; to: number }[] = [];
    const unanswered: { from: number; to: number }[] = [];
    const core = tc.workerKube.core;
    const holding = new Proxy(core, {
      get(target, prop, receiver) {
        if (prop !== 'createNamespacedPodEviction') return Reflect.get(target, prop, receiver);
        return async (...args: Parameters<CoreV1Api['createNamespacedPodEviction']>) => {
          const span = { from: Date.now(), to: Infinity };
          const atServer = { from: span.from, to: Infinity };
          spans.push(span);
          unanswered.push(atServer);
          try {
            return await target.createNamespacedPodEviction(...args);
          } finally {
            atServer.to = Date.now();
            await new Promise((r) => setTimeout(r, 500));
            span.to = Date.now();
          }
        };
      },
    });
    const kube: KubeApi = { ...tc.workerKube, core: holding };
    const drains = createDrainActivities({ clusters: (): ClusterAccess => ({ config: tc.config, kube, shell: noShell }) });
    const before = await serverCounts(tc);
    const result = (await new MockActivityEnvironment({ heartbeatTimeoutMs: 60_000 }).run(drains.drainNode, {
      cluster: 'budgets',
      node: 'worker-1',
      timeoutSeconds: 60,
    })) as DrainResult;
    const counts = since(before, await serverCounts(tc));

    assert.deepEqual(result.gone, pods, 'every web pod of the node evicted');
    assert.deepEqual(await webOn('worker-1'), []);
    const most = mostAtOnce(spans);
    assert.ok(most >= 2, `several evictions in flight at once under the PDB: at most ${most} of ${spans.length}`);
    const awaiting = mostAtOnce(unanswered);
    assert.ok(awaiting <= BUDGET, `never more than the budget awaiting the server: ${awaiting}`);
    t.diagnostic(`evictions ${spans.length}, at most ${most} in flight (${awaiting} unanswered), server: ${JSON.stringify(counts)}`);
    assertNoStorm(counts, spans.length);
    assert.equal(counts.evictions['429'] ?? 0, 0, `no eviction sent past the budget: ${JSON.stringify(counts)}`);
  });

  // Two real worker processes, each with its own gate, drain two nodes whose pods are under the same PDB.
  it('holds the budget across two worker processes draining under one PDB, one process in flight there at a time', async (t) => {
    await budgetRestored();
    const nodes = ['worker-2', 'worker-3'];
    const pods = await Promise.all(nodes.map(webOn));
    assert.ok(
      pods.every((p) => p.length >= 2),
      `web pods on both nodes: ${JSON.stringify(pods)}`,
    );
    for (const name of nodes) await tc.kube.core.patchNode({ name, body: { spec: { unschedulable: true } } }, mergePatch);
    const before = await serverCounts(tc);
    const outputs = await Promise.all(
      nodes.map(
        (node) =>
          new Promise<DrainProcessOutput>((resolve, reject) => {
            const child = spawn(process.execPath, [drainProcess, tc.clustersDir, 'budgets', node, '300'], {
              stdio: ['ignore', 'pipe', 'pipe'],
            });
            let out = '';
            let err = '';
            child.stdout.on('data', (d: Buffer) => (out += d.toString()));
            child.stderr.on('data', (d: Buffer) => (err += d.toString()));
            child.on('close', (code) =>
              code === 0
                ? resolve(JSON.parse(out.trim().split('\n').at(-1) ?? '{}') as DrainProcessOutput)
                : reject(new Error(`drain of ${node} exited ${code}: ${err.trim()}`)),
            );
          }),
      ),
    );
    const counts = since(before, await serverCounts(tc));

    assert.notEqual(outputs[0]?.pid, outputs[1]?.pid);
    assert.deepEqual(
      outputs.map((o) => o.result.gone),
      pods,
      'each process evicted exactly the web pods of its node',
    );
    assert.deepEqual(await Promise.all(nodes.map(webOn)), [[], []]);
    const spans = outputs.flatMap((o, i) => o.evictions.map((e) => ({ from: e.sentAt, to: e.answeredAt, process: i })));
    assert.equal(mostAtOnce(outputs.map((o) => ({ from: o.startedAt, to: o.endedAt }))), 2, 'the two processes drained at the same time');
    // The budget is the server's, as in the case above: until its answer, not the 300 ms hold after it
    // (while an answer is held, the server may have deleted the pod, the replacement turned Ready and the
    // PDB allowed another disruption, which a drain may spend: seen once under load, 5 "in flight" with the hold).
    const awaiting = mostAtOnce(outputs.flatMap((o) => o.evictions.map((e) => ({ from: e.sentAt, to: e.serverAnsweredAt }))));
    assert.ok(awaiting <= BUDGET, `never more than the budget awaiting the server across both processes: ${awaiting}`);
    const most = mostAtOnce(spans);
    assert.ok(most >= 2, `evictions overlapped: ${most}`);
    // The Lease: while one process has evictions in flight under the PDB, the other sends none there.
    const processesAtOnce = Math.max(
      ...spans.map((s) => new Set(spans.filter((o) => o.from < s.to && s.from < o.to).map((o) => o.process)).size),
    );
    assert.equal(processesAtOnce, 1, 'never evictions of both processes in flight at once');
    t.diagnostic(`evictions ${spans.length}, at most ${most} in flight (${awaiting} unanswered), server: ${JSON.stringify(counts)}`);
    assertNoStorm(counts, spans.length);
    const leases = (await tc.kube.coordination.listNamespacedLease({ namespace: 'default' })).items.map((l) => l.metadata?.name ?? '');
    assert.deepEqual(
      leases.filter((n) => n.startsWith(LEASE_PREFIX)),
      [],
      'the Lease given back',
    );
  });
});
