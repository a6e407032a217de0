import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseTimelineLog } from '../../bench/baseline-run.js';
import { LATENCIES_MS, TERMINATION_GRACE_SECONDS } from '../../bench/cases.js';
import { batchesOf, hostWaitSeconds, measuredLowerBoundSeconds, nominalLowerBoundSeconds } from '../../bench/lower-bound.js';

describe('benchmark lower bound', () => {
  it('lays workers out as a canary of one, then batches', () => {
    assert.deepEqual(batchesOf(10, 1), [1, 1, 1, 1, 1, 1, 1, 1, 1, 1]);
    assert.deepEqual(batchesOf(10, 2), [1, 2, 2, 2, 2, 1]);
    assert.deepEqual(batchesOf(100, 10).length, 11);
    assert.deepEqual(batchesOf(0, 3), []);
  });

  it('counts only the commands that wait, from the host log', () => {
    const log = [
      { command: 'pgrep -a -x apt-get|dpkg', durationMs: 1 },
      { command: 'sudo -n DEBIAN_FRONTEND=noninteractive apt-get install -y kubeadm=1.33.7-1.1', durationMs: 310 },
      { command: 'sudo kubeadm upgrade node', durationMs: 305 },
      { command: 'sudo systemctl daemon-reload && sudo systemctl restart kubelet', durationMs: 1040 },
      { command: 'apt-mark hold kubeadm', durationMs: 2 },
    ];
    assert.equal(hostWaitSeconds(log), 1.655);
  });

  it('adds control planes up and takes the slowest worker of each batch', () => {
    const waits: Record<string, number> = { 'cp-1': 3, 'worker-1': 2, 'worker-2': 2.5, 'worker-3': 1, 'worker-10': 4 };
    const start = LATENCIES_MS.kubeletRestart / 1000;
    const bound = measuredLowerBoundSeconds({
      hops: 1,
      batchSize: 2,
      controlPlanes: ['cp-1'],
      workers: ['worker-10', 'worker-2', 'worker-1', 'worker-3'],
      hostWaits: (n) => waits[n] ?? 0,
    });
    // batches in natural order: [worker-1], [worker-2, worker-3], [worker-10]
    const expected =
      3 +
      start +
      (2 + start + TERMINATION_GRACE_SECONDS) +
      (2.5 + start + TERMINATION_GRACE_SECONDS) +
      (4 + start + TERMINATION_GRACE_SECONDS);
    assert.equal(bound, Math.round(expected * 1000) / 1000);
    // node by node it is the sum
    const sequential = measuredLowerBoundSeconds({
      hops: 1,
      batchSize: 1,
      controlPlanes: ['cp-1'],
      workers: ['worker-10', 'worker-2', 'worker-1', 'worker-3'],
      hostWaits: (n) => waits[n] ?? 0,
    });
    assert.ok(sequential > bound);
  });

  it("nominal bound: batching shortens only the workers' part, hops multiply", () => {
    const one = nominalLowerBoundSeconds({ controlPlanes: 1, workers: 10, hops: 1, batchSize: 1 });
    const two = nominalLowerBoundSeconds({ controlPlanes: 1, workers: 10, hops: 2, batchSize: 1 });
    const batched = nominalLowerBoundSeconds({ controlPlanes: 1, workers: 10, hops: 1, batchSize: 5 });
    assert.equal(two, Math.round(one * 2 * 1000) / 1000);
    assert.ok(batched < one && batched > one / 10);
  });

  it('reads the baseline\'s timeline log; an unknown phase is "other"', () => {
    const bars = parseTimelineLog('cluster snapshot 1000 1300\nworker-1 drain 1300 2500\n\nworker-1 coffee 2500 2600\n');
    assert.deepEqual(bars, [
      { lane: 'cluster', phase: 'snapshot', startMs: 1000, endMs: 1300 },
      { lane: 'worker-1', phase: 'drain', startMs: 1300, endMs: 2500 },
      { lane: 'worker-1', phase: 'other', startMs: 2500, endMs: 2600 },
    ]);
  });
});
