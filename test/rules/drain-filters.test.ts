import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { judgeDrainPod, planDrainPods, type DrainOptions, type DrainPodFacts } from '../../rules/index.js';

function pod(name: string, extra: Partial<DrainPodFacts> = {}): DrainPodFacts {
  return {
    namespace: 'default',
    name,
    uid: `uid-${name}`,
    ownerReferences: [{ kind: 'ReplicaSet', name: 'web-5d8f', controller: true }],
    annotations: {},
    phase: 'Running',
    terminating: false,
    hasEmptyDir: false,
    ...extra,
  };
}
const unowned = { ownerReferences: [] };
const daemonSet = (exists: boolean) => ({
  ownerReferences: [{ kind: 'DaemonSet', name: 'agent', controller: true }],
  daemonSetExists: exists,
});
const mirror = {
  ownerReferences: [{ kind: 'Node', name: 'cp-1', controller: true }],
  annotations: { 'kubernetes.io/config.mirror': 'hash' },
};
const defaults: DrainOptions = { ignoreDaemonSets: true, deleteEmptyDirData: false, force: [] };

type Outcome = 'evict' | 'skip' | 'block';
interface Case {
  name: string;
  pod: DrainPodFacts;
  options?: Partial<DrainOptions>;
  outcome: Outcome;
  reason?: RegExp;
  override?: string;
  warning?: RegExp;
}

const cases: Case[] = [
  { name: 'a ReplicaSet pod is evicted', pod: pod('web'), outcome: 'evict' },
  {
    name: 'a StatefulSet pod is evicted',
    pod: pod('db-0', { ownerReferences: [{ kind: 'StatefulSet', name: 'db', controller: true }] }),
    outcome: 'evict',
  },
  { name: 'a mirror pod is skipped', pod: pod('kube-apiserver-cp-1', mirror), outcome: 'skip', reason: /mirror pod/ },
  {
    name: 'a mirror pod is skipped even when forced',
    pod: pod('etcd-cp-1', mirror),
    options: { force: ['etcd-cp-1'] },
    outcome: 'skip',
    reason: /mirror/,
  },
  {
    name: 'a DaemonSet pod is skipped with ignoreDaemonSets',
    pod: pod('agent-x', daemonSet(true)),
    outcome: 'skip',
    reason: /DaemonSet agent/,
  },
  {
    name: 'a DaemonSet pod blocks without ignoreDaemonSets',
    pod: pod('agent-x', daemonSet(true)),
    options: { ignoreDaemonSets: false },
    outcome: 'block',
    reason: /set ignoreDaemonSets/,
    override: 'ignoreDaemonSets',
  },
  {
    name: 'an orphan of a deleted DaemonSet is refused',
    pod: pod('agent-y', daemonSet(false)),
    outcome: 'block',
    reason: /missing DaemonSet agent.*force it by name/,
    override: 'force',
  },
  {
    name: 'an orphan of a deleted DaemonSet is evicted when forced',
    pod: pod('agent-y', daemonSet(false)),
    options: { force: ['default/agent-y'] },
    outcome: 'evict',
    warning: /forced by name/,
  },
  { name: 'a terminating pod is skipped', pod: pod('web-old', { terminating: true }), outcome: 'skip', reason: /already terminating/ },
  { name: 'a terminating unmanaged pod is skipped, not refused', pod: pod('gone', { ...unowned, terminating: true }), outcome: 'skip' },
  {
    name: 'an unmanaged pod is refused, naming the override',
    pod: pod('lonely', unowned),
    outcome: 'block',
    reason: /^unmanaged pod default\/lonely would be lost for good; force it by name to proceed$/,
    override: 'force',
  },
  {
    name: 'an owner that is not a controller does not manage',
    pod: pod('lonely', { ownerReferences: [{ kind: 'ConfigMap', name: 'x' }] }),
    outcome: 'block',
    override: 'force',
  },
  {
    name: 'an unmanaged pod forced by bare name is evicted with a warning',
    pod: pod('lonely', unowned),
    options: { force: ['lonely'] },
    outcome: 'evict',
    warning: /forced by name/,
  },
  {
    name: 'an unmanaged pod forced by namespace/name is evicted',
    pod: pod('lonely', unowned),
    options: { force: ['default/lonely'] },
    outcome: 'evict',
    warning: /will not come back/,
  },
  { name: 'forcing another namespace does not count', pod: pod('lonely', unowned), options: { force: ['other/lonely'] }, outcome: 'block' },
  { name: 'a completed unmanaged pod is evicted without fuss', pod: pod('job-x', { ...unowned, phase: 'Succeeded' }), outcome: 'evict' },
  { name: 'a failed emptyDir pod is evicted without fuss', pod: pod('job-y', { phase: 'Failed', hasEmptyDir: true }), outcome: 'evict' },
  {
    name: 'an emptyDir pod is refused, naming the override',
    pod: pod('cache', { hasEmptyDir: true }),
    outcome: 'block',
    reason: /emptyDir.*set deleteEmptyDirData or force it by name/,
    override: 'deleteEmptyDirData',
  },
  {
    name: 'an emptyDir pod is evicted with deleteEmptyDirData',
    pod: pod('cache', { hasEmptyDir: true }),
    options: { deleteEmptyDirData: true },
    outcome: 'evict',
    warning: /data is deleted/,
  },
  {
    name: 'an emptyDir pod is evicted when forced by name',
    pod: pod('cache', { hasEmptyDir: true }),
    options: { force: ['cache'] },
    outcome: 'evict',
    warning: /emptyDir/,
  },
  {
    name: 'a DaemonSet pod with emptyDir is still only skipped',
    pod: pod('agent-z', { ...daemonSet(true), hasEmptyDir: true }),
    outcome: 'skip',
  },
];

describe('planDrainPods (table)', () => {
  for (const c of cases) {
    it(c.name, () => {
      const plan = planDrainPods([c.pod], { ...defaults, ...c.options });
      const ref = { namespace: c.pod.namespace, name: c.pod.name, uid: c.pod.uid };
      const outcome: Outcome = plan.evict.length ? 'evict' : plan.skipped.length ? 'skip' : 'block';
      assert.equal(outcome, c.outcome, JSON.stringify(plan));
      if (c.outcome === 'evict') assert.deepEqual(plan.evict, [ref]);
      if (c.outcome === 'skip') {
        assert.deepEqual(plan.skipped[0]?.pod, ref);
        if (c.reason) assert.match(plan.skipped[0]?.reason ?? '', c.reason);
      }
      if (c.outcome === 'block') {
        assert.equal(plan.evict.length + plan.skipped.length, 0);
        if (c.reason) assert.match(plan.blockers[0]?.reason ?? '', c.reason);
        if (c.override) assert.equal(plan.blockers[0]?.override, c.override);
      }
      if (c.warning) assert.match(plan.warnings.map((w) => w.reason).join('\n'), c.warning);
      else assert.deepEqual(plan.warnings, []);
    });
  }
});

describe('judgeDrainPod', () => {
  it('keeps every filter verdict, not just the first non-okay one', () => {
    const verdicts = judgeDrainPod(pod('lonely', { ...unowned, hasEmptyDir: true }), defaults);
    assert.deepEqual(
      verdicts.map((v) => `${v.filter}:${v.verdict.kind}`),
      ['terminating:okay', 'mirror:okay', 'daemonSet:okay', 'unmanaged:error', 'emptyDir:error'],
    );
  });
});

describe('planDrainPods (a whole node)', () => {
  const node = [
    pod('web-b'),
    pod('web-a'),
    pod('lonely', { ...unowned, hasEmptyDir: true }),
    pod('kube-proxy-x', { ...daemonSet(true), namespace: 'kube-system' }),
    pod('etcd-cp-1', { ...mirror, namespace: 'kube-system' }),
  ];

  it('sorts, skips, evicts and lists one blocker per refusal with its override', () => {
    const plan = planDrainPods(node, defaults);
    assert.deepEqual(
      plan.evict.map((p) => p.name),
      ['web-a', 'web-b'],
    );
    assert.deepEqual(
      plan.skipped.map((s) => `${s.pod.name}:${s.filter}`),
      ['etcd-cp-1:mirror', 'kube-proxy-x:daemonSet'],
    );
    assert.deepEqual(
      plan.blockers.map((b) => `${b.pod.name}:${b.override}`),
      ['lonely:force', 'lonely:deleteEmptyDirData'],
    );
  });

  it('forcing the blocker by name moves it to evict, with both warnings', () => {
    const plan = planDrainPods(node, { ...defaults, force: ['lonely'] });
    assert.deepEqual(plan.blockers, []);
    assert.deepEqual(
      plan.evict.map((p) => p.name),
      ['lonely', 'web-a', 'web-b'],
    );
    assert.equal(plan.warnings.filter((w) => w.pod.name === 'lonely').length, 2);
  });

  it('is plain JSON', () => {
    const plan = planDrainPods(node, defaults);
    assert.deepEqual(JSON.parse(JSON.stringify(plan)), plan);
  });
});
