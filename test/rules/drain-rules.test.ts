import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  drainRoundsOf,
  drainRuleFor,
  FieldError,
  parseDrainRules,
  planDrainPods,
  type DrainOptions,
  type DrainPodFacts,
  type DrainRule,
} from '../../rules/index.js';

function pod(name: string, extra: Partial<DrainPodFacts> = {}): DrainPodFacts {
  return {
    namespace: 'default',
    name,
    uid: `uid-${name}`,
    ownerReferences: [{ kind: 'ReplicaSet', name: 'web-5d8f', controller: true }],
    annotations: {},
    labels: {},
    phase: 'Running',
    terminating: false,
    hasEmptyDir: false,
    ...extra,
  };
}
const options = (rules: DrainRule[]): DrainOptions => ({ ignoreDaemonSets: true, deleteEmptyDirData: false, force: [], rules });

describe('drainRules: the configuration key, refused key by key', () => {
  const bad: [string, unknown, RegExp][] = [
    ['not a list', { order: 1 }, /^drainRules must be a list of rules/],
    ['no selector', [{ order: 1 }], /^drainRules\[0\] must select pods by namespace, labels or both/],
    ['empty labels only', [{ labels: {}, skip: true }], /^drainRules\[0\] must select pods/],
    [
      'two behaviours',
      [{ namespace: 'ceph', order: 1, skip: true }],
      /^drainRules\[0\] must have exactly one of order, skip or waitCompleted, got order and skip/,
    ],
    ['no behaviour', [{ namespace: 'ceph' }], /exactly one of order, skip or waitCompleted, got none/],
    [
      'order not an integer',
      [{ namespace: 'ceph', order: 1.5 }],
      /^drainRules\[0\]\.order must be an integer from -10000 to 10000, got 1\.5/,
    ],
    ['order too large', [{ namespace: 'ceph', order: 1e9 }], /^drainRules\[0\]\.order must be an integer from -10000 to 10000/],
    ['skip false', [{ namespace: 'ceph', skip: false }], /^drainRules\[0\]\.skip must be true when given/],
    ['waitCompleted a string', [{ namespace: 'ceph', waitCompleted: 'yes' }], /^drainRules\[0\]\.waitCompleted must be true or false/],
    ['bad namespace', [{ namespace: 'Ceph_1', order: 1 }], /^drainRules\[0\]\.namespace must be a DNS label/],
    ['bad label key', [{ labels: { 'a b': 'x' }, order: 1 }], /^drainRules\[0\]\.labels key "a b" is not a label key/],
    ['label value a number', [{ labels: { tier: 3 }, order: 1 }], /^drainRules\[0\]\.labels\.tier must be a label value/],
    ['misspelt key', [{ namespace: 'ceph', odrer: 1 }], /^drainRules\[0\] unknown key "odrer"/],
  ];
  for (const [name, value, message] of bad) {
    it(`refuses ${name}`, () => {
      assert.throws(
        () => parseDrainRules(value),
        (err: Error) => err instanceof FieldError && message.test(err.message),
      );
    });
  }

  it('reads each behaviour, the order defaulting to 0 for skip and waitCompleted', () => {
    assert.deepEqual(
      parseDrainRules([
        { namespace: 'rook-ceph', labels: { app: 'rook-ceph-osd' }, order: 10 },
        { labels: { app: 'node-agent' }, skip: true },
        { namespace: 'batch', waitCompleted: true },
      ]),
      [
        { namespace: 'rook-ceph', labels: { app: 'rook-ceph-osd' }, behavior: 'drain', order: 10 },
        { labels: { app: 'node-agent' }, behavior: 'skip', order: 0 },
        { namespace: 'batch', behavior: 'waitCompleted', order: 0 },
      ],
    );
    assert.deepEqual(parseDrainRules(undefined), []);
  });
});

describe('drainRuleFor: the label first, then the first rule that selects the pod', () => {
  const rules = parseDrainRules([
    { namespace: 'rook-ceph', labels: { app: 'osd' }, order: 10 },
    { namespace: 'rook-ceph', order: 5 },
    { labels: { app: 'agent' }, skip: true },
  ]);
  const cases: [string, { namespace: string; labels?: Record<string, string> }, Partial<ReturnType<typeof drainRuleFor>>][] = [
    ['no rule selects it', { namespace: 'default', labels: { app: 'web' } }, { behavior: 'drain', order: 0, source: undefined }],
    ['namespace and labels', { namespace: 'rook-ceph', labels: { app: 'osd' } }, { behavior: 'drain', order: 10, source: 'drainRules[0]' }],
    ['the first that selects wins', { namespace: 'rook-ceph', labels: { app: 'mon' } }, { order: 5, source: 'drainRules[1]' }],
    ['labels in any namespace', { namespace: 'kube-system', labels: { app: 'agent' } }, { behavior: 'skip', source: 'drainRules[2]' }],
    [
      'the label overrides every rule',
      { namespace: 'rook-ceph', labels: { app: 'osd', 'skewless.io/drain': 'wait-completed' } },
      { behavior: 'waitCompleted', source: 'label skewless.io/drain=wait-completed' },
    ],
    ['label skip', { namespace: 'default', labels: { 'skewless.io/drain': 'skip' } }, { behavior: 'skip' }],
    [
      'an unknown label value is ignored, and said',
      { namespace: 'default', labels: { 'skewless.io/drain': 'never' } },
      { behavior: 'drain', unknownLabel: 'never' },
    ],
  ];
  for (const [name, p, want] of cases) {
    it(name, () => {
      const got = drainRuleFor(p, rules);
      for (const [k, v] of Object.entries(want)) assert.equal(got[k as keyof typeof got], v, k);
    });
  }
});

describe('planDrainPods with drain rules', () => {
  const rules = parseDrainRules([
    { namespace: 'storage', order: 10 },
    { namespace: 'early', order: -1 },
    { labels: { app: 'agent' }, skip: true },
    { labels: { app: 'batch' }, waitCompleted: true },
  ]);

  it('evicts in rounds by order, skips and waits for what the rules say, and a rule outweighs a filter that would block', () => {
    const plan = planDrainPods(
      [
        pod('web'),
        pod('osd', { namespace: 'storage' }),
        pod('first', { namespace: 'early' }),
        pod('agent', { labels: { app: 'agent' }, ownerReferences: [] }), // bare: would block, but is never evicted
        pod('job-1', { labels: { app: 'batch' }, ownerReferences: [{ kind: 'Job', name: 'job', controller: true }] }),
        pod('job-0', { labels: { app: 'batch' }, phase: 'Succeeded' }),
      ],
      options(rules),
    );
    assert.deepEqual(plan.blockers, []);
    assert.deepEqual(
      plan.evict.map((p) => [p.name, p.order ?? 0]),
      [
        ['web', 0],
        ['first', -1],
        ['osd', 10],
      ],
    );
    assert.deepEqual(
      drainRoundsOf(plan.evict).map((r) => [r.order, r.pods.map((p) => p.name)]),
      [
        [-1, ['first']],
        [0, ['web']],
        [10, ['osd']],
      ],
    );
    assert.deepEqual(
      plan.waitCompleted.map((p) => p.name),
      ['job-1'],
    );
    const ruled = plan.skipped.filter((s) => s.filter === 'drainRule');
    assert.deepEqual(
      ruled.map((s) => s.pod.name),
      ['agent', 'job-0'],
    );
    assert.match(ruled[0]?.reason ?? '', /default\/agent is never evicted \(drainRules\[2\]\): the node drains around it/);
  });

  it('keeps the built-in skips first: a mirror pod under a waitCompleted rule is still a mirror pod', () => {
    const plan = planDrainPods(
      [pod('etcd-cp-1', { labels: { app: 'batch' }, annotations: { 'kubernetes.io/config.mirror': 'x' } })],
      options(rules),
    );
    assert.equal(plan.skipped[0]?.filter, 'mirror');
    assert.deepEqual(plan.waitCompleted, []);
  });

  it('without rules, one round of everything, as before', () => {
    const plan = planDrainPods([pod('a'), pod('b')], options([]));
    assert.deepEqual(
      drainRoundsOf(plan.evict).map((r) => r.pods.length),
      [2],
    );
    assert.deepEqual(plan.waitCompleted, []);
  });
});
