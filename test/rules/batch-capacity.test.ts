import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  describeResources,
  fitBatch,
  largestFittingBatch,
  parseQuantity,
  podMayRunOn,
  podRequests,
  type CapacityFacts,
  type CapacityNode,
  type CapacityPod,
} from '../../rules/index.js';

const node = (name: string, cpu: number, more: Partial<CapacityNode> = {}): CapacityNode => ({
  name,
  labels: {},
  taints: [],
  unschedulable: false,
  allocatable: { milliCpu: cpu * 1000, memoryBytes: 64 * 2 ** 30, pods: 110 },
  requested: { milliCpu: 0, memoryBytes: 0, pods: 0 },
  ...more,
});
const pod = (name: string, on: string, cpu: number, more: Partial<CapacityPod> = {}): CapacityPod => ({
  name: `default/${name}`,
  node: on,
  requests: { milliCpu: cpu * 1000, memoryBytes: 2 ** 20, pods: 1 },
  ...more,
});

describe('parseQuantity and podRequests', () => {
  const rows: [string | number | undefined, number | undefined][] = [
    ['500m', 0.5],
    ['2', 2],
    ['1.5', 1.5],
    ['256Mi', 256 * 2 ** 20],
    ['1Gi', 2 ** 30],
    ['1G', 1e9],
    ['128k', 128_000],
    ['1e3', 1000],
    [3, 3],
    ['', undefined],
    ['lots', undefined],
    [undefined, undefined],
  ];
  for (const [text, want] of rows) it(`${JSON.stringify(text)} → ${want}`, () => assert.equal(parseQuantity(text), want));
  it('requests in millicores and bytes, one pod, absent as 0', () => {
    assert.deepEqual(podRequests({ cpu: '250m', memory: '64Mi' }), { milliCpu: 250, memoryBytes: 64 * 2 ** 20, pods: 1 });
    assert.deepEqual(podRequests(undefined), { milliCpu: 0, memoryBytes: 0, pods: 1 });
  });
});

describe('podMayRunOn: the scheduler filters the API shows', () => {
  const tainted = node('cp', 8, { taints: [{ key: 'node-role.kubernetes.io/control-plane', effect: 'NoSchedule' }] });
  const rows: [string, CapacityPod, CapacityNode, boolean][] = [
    ['an untainted node', pod('p', 'x', 1), node('w', 8), true],
    ['a cordoned node', pod('p', 'x', 1), node('w', 8, { unschedulable: true }), false],
    ['a NoSchedule taint', pod('p', 'x', 1), tainted, false],
    ['a PreferNoSchedule taint', pod('p', 'x', 1), node('w', 8, { taints: [{ key: 'k', effect: 'PreferNoSchedule' }] }), true],
    [
      'the taint tolerated by key',
      pod('p', 'x', 1, { tolerations: [{ key: 'node-role.kubernetes.io/control-plane', operator: 'Exists' }] }),
      tainted,
      true,
    ],
    ['every taint tolerated', pod('p', 'x', 1, { tolerations: [{ operator: 'Exists' }] }), tainted, true],
    [
      'a toleration of another value',
      pod('p', 'x', 1, { tolerations: [{ key: 'k', value: 'a', effect: 'NoExecute' }] }),
      node('w', 8, { taints: [{ key: 'k', value: 'b', effect: 'NoExecute' }] }),
      false,
    ],
    [
      'a nodeSelector the node matches',
      pod('p', 'x', 1, { nodeSelector: { disk: 'ssd' } }),
      node('w', 8, { labels: { disk: 'ssd' } }),
      true,
    ],
    ['a nodeSelector it does not', pod('p', 'x', 1, { nodeSelector: { disk: 'ssd' } }), node('w', 8), false],
    [
      'required node affinity: one of the terms',
      pod('p', 'x', 1, {
        affinityTerms: [
          { matchExpressions: [{ key: 'zone', operator: 'In', values: ['a'] }] },
          { matchExpressions: [{ key: 'zone', operator: 'In', values: ['b'] }] },
        ],
      }),
      node('w', 8, { labels: { zone: 'b' } }),
      true,
    ],
    [
      'required node affinity: none',
      pod('p', 'x', 1, { affinityTerms: [{ matchExpressions: [{ key: 'zone', operator: 'In', values: ['a'] }] }] }),
      node('w', 8, { labels: { zone: 'c' } }),
      false,
    ],
  ];
  for (const [what, p, n, want] of rows) it(what, () => assert.equal(podMayRunOn(p, n), want));
});

describe('fitBatch and largestFittingBatch', () => {
  // Three workers of 32 CPU, each holding one 20-CPU pod: none can leave, its pod fits nowhere (12 left).
  const full: CapacityFacts = {
    nodes: ['w1', 'w2', 'w3'].map((n) => node(n, 32, { requested: { milliCpu: 20_000, memoryBytes: 2 ** 20, pods: 1 } })),
    movablePods: [pod('big-1', 'w1', 20), pod('big-2', 'w2', 20), pod('big-3', 'w3', 20)],
  };
  it('a pod that fits nowhere is named as Pending', () => {
    const fit = fitBatch(full, ['w1']);
    assert.deepEqual(fit.pending, ['default/big-1']);
    assert.equal(fit.evicted, 1);
    assert.equal(fit.requests.milliCpu, 20_000);
  });

  it('small pods fit, and the headroom is what stays free on the other schedulable nodes', () => {
    const facts: CapacityFacts = {
      nodes: [
        node('w1', 4),
        node('w2', 4, { requested: { milliCpu: 1000, memoryBytes: 0, pods: 1 } }),
        node('w3', 4, { unschedulable: true }),
      ],
      movablePods: [pod('a', 'w1', 1), pod('b', 'w1', 1)],
    };
    const fit = fitBatch(facts, ['w1']);
    assert.deepEqual(fit.pending, []);
    assert.deepEqual(fit.headroom, { milliCpu: 1000, memoryBytes: 64 * 2 ** 30 - 2 * 2 ** 20, pods: 107 });
    assert.equal(describeResources(fit.headroom), '1 CPU, 64Gi memory, 107 pods');
  });

  it('a batch too big together is shrunk to the nodes whose pods fit; at one node that does not fit, size 0', () => {
    // w1 and w2 each hold a 10-CPU pod; w3 and w4 have 12 free: one node out at a time fits, two do not (20 > 12 + ... on one node).
    const facts: CapacityFacts = {
      nodes: [
        node('w1', 16, { requested: { milliCpu: 10_000, memoryBytes: 0, pods: 1 } }),
        node('w2', 16, { requested: { milliCpu: 10_000, memoryBytes: 0, pods: 1 } }),
        node('w3', 12),
      ],
      movablePods: [pod('a', 'w1', 10), pod('b', 'w2', 10)],
    };
    assert.deepEqual(fitBatch(facts, ['w1', 'w2']).pending, ['default/b']);
    const shrunk = largestFittingBatch(facts, ['w1', 'w2']);
    assert.equal(shrunk.size, 1);
    assert.deepEqual(shrunk.fit.nodes, ['w1']);
    const none = largestFittingBatch(full, ['w1', 'w2']);
    assert.equal(none.size, 0);
    assert.deepEqual(none.fit.pending, ['default/big-1']);
  });
});
