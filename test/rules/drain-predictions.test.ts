import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { planRollout } from '../../rules/rollout-plan.js';
import { acknowledgementNameProblem } from '../../rules/readiness/finding.js';
import {
  predictDrainBlocks,
  type DrainPredictionFacts,
  type PredictionPdb,
  type PredictionPod,
  type PredictionWebhook,
} from '../../rules/readiness/drain-predictions.js';

// cp-1; canary w-1; batch-1 = w-2, w-3; batch-2 = w-4, w-5.
const PLAN = planRollout(
  [{ name: 'cp-1', role: 'control-plane' }, ...[1, 2, 3, 4, 5].map((i) => ({ name: `w-${i}`, role: 'worker' as const }))],
  { canary: 1, batchSize: 2, maxUnavailable: 2 },
);

let uid = 0;
const pod = (name: string, node: string, over: Partial<PredictionPod> = {}): PredictionPod => ({
  namespace: 'shop',
  name,
  uid: `u${++uid}`,
  node,
  labels: { app: name.replace(/-[a-z0-9]+$/, '') },
  ownerReferences: [{ kind: 'ReplicaSet', name: `${name.replace(/-[a-z0-9]+$/, '')}-rs`, controller: true }],
  annotations: {},
  phase: 'Running',
  terminating: false,
  hasEmptyDir: false,
  terminationGracePeriodSeconds: 30,
  ...over,
});
const deployment = (name: string, replicas: number) => ({ workload: { kind: 'Deployment', name, replicas } });
const pdb = (name: string, app: string, over: Partial<PredictionPdb> = {}): PredictionPdb => ({
  namespace: 'shop',
  name,
  selector: { matchLabels: { app } },
  coveredPods: 1,
  expectedPods: 1,
  ...over,
});

const base = (over: Partial<DrainPredictionFacts>): DrainPredictionFacts => ({
  hop: '1.34',
  phases: PLAN.phases,
  pods: [],
  pdbs: [],
  webhooks: [],
  drain: { ignoreDaemonSets: true, deleteEmptyDirData: false, timeoutSeconds: 300 },
  ...over,
});

/** [case, facts, expected `pod node phase` of each finding, a word each finding's text must carry] */
const CASES: [string, DrainPredictionFacts, string[], RegExp][] = [
  [
    'a single-replica Deployment under a PDB of maxUnavailable 1: evictable, but its workload goes down',
    base({
      pods: [pod('cart-a1', 'w-3', deployment('cart', 1))],
      pdbs: [pdb('cart', 'cart', { maxUnavailable: 1, disruptionsAllowed: 1 })],
    }),
    ['shop/cart-a1 w-3 batch-1'],
    /only replica of Deployment cart.*down until/,
  ],
  [
    'a single-replica Deployment under a PDB of minAvailable 1: one finding, the budget refusing folded in',
    base({ pods: [pod('cart-a1', 'w-4', deployment('cart', 1))], pdbs: [pdb('cart', 'cart', { minAvailable: 1, disruptionsAllowed: 0 })] }),
    ['shop/cart-a1 w-4 batch-2'],
    /only replica of Deployment cart.*allows no eviction/,
  ],
  [
    'a PDB allowing no disruption now names each pod it covers, on its node and phase',
    base({
      pods: [
        pod('api-a1', 'w-1', deployment('api', 3)),
        pod('api-a2', 'w-2', deployment('api', 3)),
        pod('api-a3', 'cp-1', deployment('api', 3)),
      ],
      pdbs: [pdb('api', 'api', { minAvailable: 2, coveredPods: 3, expectedPods: 3, disruptionsAllowed: 0 })],
    }),
    ['shop/api-a3 cp-1 control-plane', 'shop/api-a1 w-1 canary', 'shop/api-a2 w-2 batch-1'],
    /allows 0 disruptions/,
  ],
  [
    'a healthy PDB over three replicas predicts nothing',
    base({
      pods: [pod('api-a1', 'w-1', deployment('api', 3)), pod('api-a2', 'w-2', deployment('api', 3))],
      pdbs: [pdb('api', 'api', { maxUnavailable: 1, coveredPods: 3, expectedPods: 3, disruptionsAllowed: 1 })],
    }),
    [],
    /./,
  ],
  [
    'a grace period longer than the drain timeout',
    base({ pods: [pod('slow-a1', 'w-5', { terminationGracePeriodSeconds: 600 }), pod('quick-a1', 'w-5')] }),
    ['shop/slow-a1 w-5 batch-2'],
    /terminationGracePeriodSeconds 600 s.*drain timeout of 300 s/,
  ],
  [
    'emptyDir without deleteEmptyDirData is refused by the drain filters; with it, nothing',
    base({ pods: [pod('cache-a1', 'w-2', { hasEmptyDir: true })] }),
    ['shop/cache-a1 w-2 batch-1'],
    /emptyDir.*deleteEmptyDirData/,
  ],
  [
    'emptyDir allowed by the cluster configuration predicts nothing',
    base({
      pods: [pod('cache-a1', 'w-2', { hasEmptyDir: true })],
      drain: { ignoreDaemonSets: true, deleteEmptyDirData: true, timeoutSeconds: 300 },
    }),
    [],
    /./,
  ],
  [
    'a bare pod',
    base({ pods: [pod('debug', 'w-1', { ownerReferences: [] })] }),
    ['shop/debug w-1 canary'],
    /unmanaged pod shop\/debug.*force/,
  ],
  [
    'a StatefulSet pod under a PDB, with the same-name hold',
    base({
      pods: [
        pod('db-0', 'w-2', {
          ownerReferences: [{ kind: 'StatefulSet', name: 'db', controller: true }],
          workload: { kind: 'StatefulSet', name: 'db', replicas: 3 },
        }),
      ],
      pdbs: [pdb('db', 'db', { maxUnavailable: 1, coveredPods: 3, expectedPods: 3, disruptionsAllowed: 1 })],
    }),
    ['shop/db-0 w-2 batch-1'],
    /StatefulSet db.*same name/,
  ],
  [
    'mirror and DaemonSet pods are never evicted, so never predicted under a PDB; finished pods neither',
    base({
      pods: [
        pod('etcd-cp-1', 'cp-1', {
          annotations: { 'kubernetes.io/config.mirror': 'x' },
          ownerReferences: [{ kind: 'Node', name: 'cp-1', controller: true }],
        }),
        pod('agent-x', 'w-1', { ownerReferences: [{ kind: 'DaemonSet', name: 'agent', controller: true }], labels: { app: 'agent' } }),
        pod('job-x', 'w-1', { phase: 'Succeeded', ownerReferences: [], labels: { app: 'agent' } }),
      ],
      pdbs: [pdb('all', 'agent', { minAvailable: '100%' }), pdb('etcd', 'etcd-cp', { minAvailable: '100%' })],
    }),
    [],
    /./,
  ],
  [
    'a Fail webhook whose backends all run on batch-2 nodes: each backend named',
    base({
      pods: [pod('policy-a1', 'w-4', deployment('policy', 2)), pod('policy-a2', 'w-5', deployment('policy', 2))],
      webhooks: [
        {
          name: 'policy/validate.policy.io',
          kind: 'validating',
          failurePolicy: 'Fail',
          service: { namespace: 'shop', name: 'policy' },
          backends: [
            { namespace: 'shop', name: 'policy-a1', node: 'w-4' },
            { namespace: 'shop', name: 'policy-a2', node: 'w-5' },
          ],
        },
      ],
    }),
    ['shop/policy-a1 w-4 batch-2', 'shop/policy-a2 w-5 batch-2'],
    /validating webhook policy\/validate\.policy\.io \(failurePolicy Fail.*phase batch-2/,
  ],
  [
    'a Fail webhook spread over two phases, or one that Ignores, predicts nothing',
    base({
      webhooks: [
        {
          name: 'a/spread',
          kind: 'mutating',
          failurePolicy: 'Fail',
          backends: [
            { namespace: 'shop', name: 'p1', node: 'w-2' },
            { namespace: 'shop', name: 'p2', node: 'w-4' },
          ],
        },
        { name: 'b/ignore', kind: 'validating', failurePolicy: 'Ignore', backends: [{ namespace: 'shop', name: 'p3', node: 'w-4' }] },
      ] satisfies PredictionWebhook[],
    }),
    [],
    /./,
  ],
  ['a node the plan does not drain predicts nothing', base({ pods: [pod('debug', 'w-9', { ownerReferences: [] })] }), [], /./],
  [
    'drain rules: a bare pod a rule skips is no blocker and no PDB wait; a waitCompleted pod is said to hold its drain',
    base({
      pods: [
        pod('agent-x1', 'w-1', { ownerReferences: [], labels: { app: 'agent' } }),
        pod('cart-a1', 'w-2', { ...deployment('cart', 1), labels: { app: 'cart', 'skewless.io/drain': 'skip' } }),
        pod('report-j1', 'w-4', { ownerReferences: [{ kind: 'Job', name: 'report', controller: true }], labels: { app: 'report' } }),
      ],
      pdbs: [pdb('cart', 'cart', { minAvailable: 1, disruptionsAllowed: 0 })],
      drain: {
        ignoreDaemonSets: true,
        deleteEmptyDirData: false,
        timeoutSeconds: 300,
        rules: [
          { labels: { app: 'agent' }, behavior: 'skip', order: 0 },
          { labels: { app: 'report' }, behavior: 'waitCompleted', order: 0 },
        ],
      },
    }),
    ['shop/report-j1 w-4 batch-2'],
    /waited for until it completes \(waitCompleted\), up to the drain timeout of 300 s; it is never evicted/,
  ],
];

describe('rules: drains that will block, predicted', () => {
  for (const [name, facts, expected, text] of CASES) {
    it(name, () => {
      const found = predictDrainBlocks(facts);
      assert.deepEqual(
        found.map((f) => `${f.pod} ${f.node} ${f.phase}`),
        expected,
      );
      for (const f of found) {
        assert.equal(f.check, 'drain-block');
        assert.equal(f.severity, 'warn', 'a blocked drain waits for the operator anyway: shown, never holding');
        assert.equal(f.hop, '1.34');
        assert.equal(f.ack, `drain-block:${f.pod}`);
        assert.equal(acknowledgementNameProblem(f.ack), undefined);
        assert.match(f.what, text);
        assert.match(f.what, new RegExp(`drain of ${f.node} in phase ${f.phase} of the 1.34 hop`));
        assert.ok(f.todo.length > 0 && f.source.startsWith('https://'));
        assert.ok(!f.what.includes(f.todo), `the advice is said once, as the todo: ${f.what}`);
      }
    });
  }
});
