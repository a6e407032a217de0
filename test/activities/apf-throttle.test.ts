// The API server's own throttling, from a real kube-apiserver running API Priority and Fairness
// (sim/description.ts priorityAndFairness): a FlowSchema puts the worker's pod lists into a priority level
// of a few seats that rejects what it cannot seat. The worker tells those 429s from a PodDisruptionBudget's
// 429 (which carries APF's headers too) and waits them out; the scripted cases are in watch-waits.test.ts.
import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import { FlowcontrolApiserverV1Api, KubeConfig } from '@kubernetes/client-node';
import { MockActivityEnvironment } from '@temporalio/testing';
import type { ClusterAccess, RemoteShell } from '../../activities/cluster-access.js';
import { evictPod } from '../../activities/drain-eviction.js';
import { createHealthActivities } from '../../activities/health.js';
import { throttledFor } from '../../activities/throttling.js';
import { WORKER_USER } from '../../sim/cluster/pki.js';
import { waitFor } from '../../sim/cluster/wait-for.js';
import { clusterWorld } from '../helpers/sim-world.js';

const DESCRIPTION = `
name: apf
version: 1.32.4
priorityAndFairness: true
nodes:
  - {name: cp, role: control-plane, count: 1}
  - {name: worker, role: worker, count: 1}
workloads:
  - {kind: Deployment, name: web, replicas: 1, pdb: {minAvailable: 1}}
`;
const noShell: RemoteShell = {
  exec: () => Promise.reject(new Error('no SSH here')),
  download: () => Promise.reject(new Error('no SSH here')),
};

describe("the API server's throttling (Priority and Fairness) against a real kube-apiserver", () => {
  const tc = clusterWorld(DESCRIPTION);
  let priorityLevelUid: string;

  before(async () => {
    const kc = new KubeConfig();
    kc.loadFromFile(tc.sim.endpoints.adminKubeconfig);
    const flow = kc.makeApiClient(FlowcontrolApiserverV1Api);
    // The smallest share a priority level can have, no borrowing, and rejection instead of queueing.
    const level = await flow.createPriorityLevelConfiguration({
      body: {
        metadata: { name: 'skewless-test-tight' },
        spec: { type: 'Limited', limited: { nominalConcurrencyShares: 1, lendablePercent: 0, limitResponse: { type: 'Reject' } } },
      },
    });
    priorityLevelUid = level.metadata?.uid as string;
    await flow.createFlowSchema({
      body: {
        metadata: { name: 'skewless-test-tight' },
        spec: {
          priorityLevelConfiguration: { name: 'skewless-test-tight' },
          matchingPrecedence: 500,
          distinguisherMethod: { type: 'ByUser' },
          rules: [
            {
              subjects: [{ kind: 'User', user: { name: WORKER_USER } }],
              resourceRules: [{ verbs: ['list'], apiGroups: [''], resources: ['pods'], namespaces: ['*'], clusterScope: true }],
            },
          ],
        },
      },
    });
    // The API server applies a new configuration within moments: wait until a flood meets it.
    await waitFor('the worker throttled', async () => (await flood(100)).throttled.length > 0, 30_000);
  });

  const throttledBeat = (b: unknown) => (b as { throttled?: unknown }).throttled !== undefined;

  /** `n` lists of every pod at once, as the worker: which the API server throttled, and what else failed. */
  async function flood(n: number) {
    const results = await Promise.allSettled(Array.from({ length: n }, () => tc.workerKube.core.listPodForAllNamespaces({})));
    const errors = results.filter((r) => r.status === 'rejected').map((r) => (r as PromiseRejectedResult).reason as unknown);
    return {
      throttled: errors.map(throttledFor).filter((t) => t !== undefined),
      other: errors.filter((e) => throttledFor(e) === undefined),
    };
  }

  it("reads a 429 of Priority and Fairness as throttling, with its Retry-After and the priority level's UID", async () => {
    const { throttled, other } = await flood(100);
    assert.ok(throttled.length > 0, 'some lists throttled');
    assert.deepEqual(other, []);
    for (const t of throttled) {
      assert.equal(t.priorityLevelUid, priorityLevelUid);
      assert.ok(t.retryAfterMs >= 1000, JSON.stringify(t));
    }
  });

  it("reads a PDB's 429 as a refusal, not throttling, though APF's headers come with it", async () => {
    const pod = (await tc.workerKube.core.listNamespacedPod({ namespace: 'default', labelSelector: 'app=web' })).items[0];
    assert.ok(pod, 'the web pod');
    const outcome = await evictPod(tc.workerKube, {
      namespace: 'default',
      name: pod.metadata?.name as string,
      uid: pod.metadata?.uid as string,
    });
    assert.equal(outcome.kind, 'blocked', JSON.stringify(outcome));
    assert.equal(outcome.kind === 'blocked' && outcome.byBudget, true);
  });

  it('a check whose list is throttled waits the Retry-After out and answers, counting nothing as a PDB refusal', async () => {
    const access = (): ClusterAccess => ({ config: tc.config, kube: tc.workerKube, shell: noShell });
    const health = createHealthActivities({ clusters: access });
    const env = new MockActivityEnvironment();
    const beats: unknown[] = [];
    env.on('heartbeat', (d: unknown) => beats.push(d));
    // The flood keeps the priority level full while the check lists the node's pods.
    let flooding = true;
    const flooder = (async () => {
      while (flooding) await flood(50);
    })();
    try {
      // Whether one check's single list meets a full priority level is chance: up to 20 checks, until one did.
      for (let i = 0; i < 20 && !beats.some(throttledBeat); i++) {
        const result: Awaited<ReturnType<typeof health.checkPodsOnNode>> = await env.run(health.checkPodsOnNode, {
          cluster: 'apf',
          node: 'worker-1',
          waitSeconds: 60,
          require: true,
        });
        assert.equal(result.healthy, true);
      }
    } finally {
      flooding = false;
      await flooder;
    }
    assert.ok(beats.some(throttledBeat), `a check heartbeated its throttling and answered: ${JSON.stringify(beats).slice(0, 300)}`);
  });
});
