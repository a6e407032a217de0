import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import type { V1Pod } from '@kubernetes/client-node';
import { createClusterResolver } from '../../activities/host-address.js';
import { createDrainPredictionActivities } from '../../activities/readiness/drain-predictions.js';
import { planRollout } from '../../rules/rollout-plan.js';
import { workloadObjects } from '../../sim/cluster/workload-objects.js';
import { waitFor } from '../../sim/cluster/wait-for.js';
import { clusterWorld } from '../helpers/sim-world.js';

// solo: one replica under a PDB of minAvailable 1; web: three replicas, a PDB that lets one go; lonely: a bare pod.
const DESCRIPTION = `
name: drainpredict
version: 1.32.4
nodes:
  - {name: cp, role: control-plane, count: 1}
  - {name: worker, role: worker, count: 3}
workloads:
  - {kind: Deployment, name: solo, replicas: 1, pdb: {minAvailable: 1}}
  - {kind: Deployment, name: web, replicas: 3, pdb: {maxUnavailable: 1}}
  - {kind: Pod, name: lonely, node: worker-2}
`;
const cluster = 'drainpredict';
const POLICY = { canary: 1, batchSize: 2, maxUnavailable: 1 };

describe('drains that will block, predicted on the simulated cluster (read-only, API only)', () => {
  const tc = clusterWorld(DESCRIPTION);
  let acts: ReturnType<typeof createDrainPredictionActivities>;
  /** The phase the upgrade would drain each node in, as the rollout plans it. */
  let stageOf: Record<string, string>;
  const podsOf = async (app: string): Promise<V1Pod[]> =>
    (await tc.kube.core.listNamespacedPod({ namespace: 'default', labelSelector: `app=${app}` })).items.filter(
      (p) => p.spec?.nodeName && !p.metadata?.deletionTimestamp,
    );

  before(async () => {
    acts = createDrainPredictionActivities({ clusters: createClusterResolver(tc.clustersDir) });
    const nodes = (await tc.kube.core.listNode()).items.map((n) => ({
      name: n.metadata?.name ?? '',
      role: n.metadata?.name?.startsWith('cp') ? ('control-plane' as const) : ('worker' as const),
    }));
    stageOf = planRollout(nodes, POLICY).stageLabels;
    assert.deepEqual(stageOf, { 'cp-1': 'control-plane', 'worker-1': 'canary', 'worker-2': 'batch-1', 'worker-3': 'batch-1' });
    // slow: a Deployment whose pods take ten minutes to stop; policy: the one backend of a Fail webhook.
    const slow = workloadObjects({ kind: 'Deployment', name: 'slow', namespace: 'default', replicas: 1 }, 600);
    await tc.kube.apps.createNamespacedDeployment({ namespace: 'default', body: slow.deployment! });
    const policy = workloadObjects({ kind: 'Deployment', name: 'policy', namespace: 'default', replicas: 1 }, 1);
    await tc.kube.apps.createNamespacedDeployment({ namespace: 'default', body: policy.deployment! });
    await tc.kube.core.createNamespacedService({
      namespace: 'default',
      body: { metadata: { name: 'policy' }, spec: { selector: { app: 'policy' }, ports: [{ port: 443 }] } },
    });
    // It matches a resource nobody writes, so the real apiserver never calls the backend that is not there.
    await tc.kube.admission!.createValidatingWebhookConfiguration({
      body: {
        metadata: { name: 'policy' },
        webhooks: [
          {
            name: 'validate.policy.example.com',
            failurePolicy: 'Fail',
            sideEffects: 'None',
            admissionReviewVersions: ['v1'],
            clientConfig: { service: { namespace: 'default', name: 'policy', path: '/validate' } },
            rules: [{ apiGroups: ['example.com'], apiVersions: ['v1'], operations: ['CREATE'], resources: ['widgets'] }],
          },
        ],
      },
    });
    await waitFor(
      'slow and policy scheduled',
      async () => (await podsOf('slow')).length === 1 && (await podsOf('policy')).length === 1,
      60_000,
      250,
    );
  });

  it('names the single-replica workload under a PDB: its pod, its node and the batch that drains it', async () => {
    const { findings, problems } = await acts.predictBlockingDrains({ cluster, hop: '1.33', policy: POLICY, drainTimeoutSeconds: 120 });
    assert.deepEqual(problems, []);
    const [solo] = await podsOf('solo');
    const pod = `default/${solo?.metadata?.name}`;
    const node = solo?.spec?.nodeName ?? '';
    const about = findings.filter((f) => f.pod === pod);
    assert.equal(about.length, 1, JSON.stringify(findings, null, 1));
    assert.deepEqual(
      {
        check: about[0]?.check,
        severity: about[0]?.severity,
        hop: about[0]?.hop,
        node: about[0]?.node,
        phase: about[0]?.phase,
        ack: about[0]?.ack,
      },
      { check: 'drain-block', severity: 'warn', hop: '1.33', node, phase: stageOf[node], ack: `drain-block:${pod}` },
    );
    assert.match(
      about[0]?.what ?? '',
      /only replica of Deployment solo under PodDisruptionBudget default\/solo: the budget allows no eviction/,
    );
    assert.match(about[0]?.what ?? '', new RegExp(`drain of ${node} in phase ${stageOf[node]} of the 1\\.33 hop`));
  });

  it('the bare pod, the pod slower to stop than the drain timeout and the Fail webhook’s backend; web’s budget predicts nothing', async () => {
    const { findings } = await acts.predictBlockingDrains({ cluster, hop: '1.33', policy: POLICY, drainTimeoutSeconds: 120 });
    const [slow] = await podsOf('slow');
    const [policy] = await podsOf('policy');
    const line = (podName: string) => findings.filter((f) => f.pod === podName).map((f) => `${f.node} ${f.phase}`);
    assert.deepEqual(line('default/lonely'), ['worker-2 batch-1']);
    assert.match(findings.find((f) => f.pod === 'default/lonely')?.what ?? '', /unmanaged pod default\/lonely/);
    const slowNode = slow?.spec?.nodeName ?? '';
    assert.deepEqual(line(`default/${slow?.metadata?.name}`), [`${slowNode} ${stageOf[slowNode]}`]);
    assert.match(findings.find((f) => f.pod === `default/${slow?.metadata?.name}`)?.what ?? '', /terminationGracePeriodSeconds 600 s/);
    const policyNode = policy?.spec?.nodeName ?? '';
    const webhook = findings.filter((f) => f.pod === `default/${policy?.metadata?.name}`);
    assert.deepEqual(
      webhook.map((f) => `${f.node} ${f.phase}`),
      [`${policyNode} ${stageOf[policyNode]}`],
    );
    assert.match(
      webhook[0]?.what ?? '',
      /validating webhook policy\/validate\.policy\.example\.com \(failurePolicy Fail, Service default\/policy\)/,
    );
    for (const p of await podsOf('web'))
      assert.deepEqual(line(`default/${p.metadata?.name}`), [], 'maxUnavailable 1 over 3 replicas: no block');
    // A longer drain timeout lets slow go.
    const longer = await acts.predictBlockingDrains({ cluster, hop: '1.33', policy: POLICY, drainTimeoutSeconds: 900 });
    assert.ok(!longer.findings.some((f) => f.pod === `default/${slow?.metadata?.name}`));
  });

  it('two hops: a worker that moves once is named at the hop it moves in, once; with every hop, at the first', async () => {
    const [solo] = await podsOf('solo');
    const pod = `default/${solo?.metadata?.name}`;
    const node = solo?.spec?.nodeName ?? '';
    const hops = ['1.33', '1.34'];
    const workerHops = { 'worker-1': ['1.34'], 'worker-2': ['1.34'], 'worker-3': ['1.34'] };
    const once = await acts.predictBlockingDrains({ cluster, hop: '1.33', hops, workerHops, policy: POLICY, drainTimeoutSeconds: 120 });
    const about = once.findings.filter((f) => f.pod === pod);
    assert.deepEqual(
      about.map((f) => `${f.hop} ${f.node} ${f.phase}`),
      [`1.34 ${node} ${stageOf[node]}`],
    );
    assert.match(about[0]?.what ?? '', new RegExp(`drain of ${node} in phase ${stageOf[node]} of the 1\\.34 hop`));
    assert.ok(
      once.findings.every((f) => f.hop === '1.34'),
      `nothing is drained at 1.33 but the control plane, which runs no such pod: ${JSON.stringify(once.findings.map((f) => [f.hop, f.node]))}`,
    );
    // Every worker at every hop: named at the first hop only, not again at the second.
    const every = await acts.predictBlockingDrains({ cluster, hop: '1.33', hops, policy: POLICY, drainTimeoutSeconds: 120 });
    assert.deepEqual(
      every.findings.filter((f) => f.pod === pod).map((f) => f.hop),
      ['1.33'],
    );
    assert.equal(every.findings.length, once.findings.length, 'the same drains, at another hop');
  });

  it('bad policy: a one-line Invalid failure, never retried', async () => {
    await assert.rejects(
      acts.predictBlockingDrains({ cluster, hop: '1.33', policy: { maxUnavailable: 'lots' } }),
      (err: Error & { type?: string; nonRetryable?: boolean }) => {
        assert.equal(err.type, 'Invalid');
        assert.equal(err.nonRetryable, true);
        assert.match(err.message, /maxUnavailable must be a count or a percentage/);
        return true;
      },
    );
  });
});
