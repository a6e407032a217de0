import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { runInSuite } from './suite-run.js';

/**
 * The fault harness on the per-node world, short: 2 control planes and 2 workers, each control plane
 * running the real components and etcd of its manifests' release, the real kubeadm of each minor on
 * the hosts. Three worker SIGKILLs, the first inside the real `kubeadm upgrade apply` on cp-1, the
 * second inside a real `kubeadm upgrade node` (each still running on its host as the worker dies); then
 * the final checks: apply completed once per hop on cp-1, each control plane's manifests exactly what
 * the last completed kubeadm wrote there, and every history replays with the current bundle.
 */
describe('fault harness: the worker dies inside the real kubeadm on a per-node control plane', () => {
  it('upgrades through kills inside upgrade apply and upgrade node, keeping every promise', { timeout: 20 * 60_000 }, async (t) => {
    const { report, trace } = await runInSuite(
      t,
      { seed: 20261205, kills: 3, world: 'per-node', size: { controlPlanes: 2, workers: 2 }, targets: ['apply', 'upgrade-node'] },
      /\] kill \d/,
    );
    assert.deepEqual(report.problems, [], trace);
    assert.ok(report.kills.length >= 3, `${report.kills.length} kills${trace}`); // more when a missed target was tried again
    const apply = report.kills.find((k) => k.target === 'apply' && k.hit);
    const node = report.kills.find((k) => k.target === 'upgrade-node' && k.hit);
    // Hit: the real kubeadm was still running on the host as the worker died (the command log says so).
    assert.ok(
      apply?.commands.some((c) => /kubeadm upgrade apply/.test(c)),
      `a kill inside kubeadm upgrade apply${trace}`,
    );
    assert.ok(
      node?.commands.some((c) => /kubeadm upgrade node/.test(c)),
      `a kill inside kubeadm upgrade node${trace}`,
    );
    assert.ok(report.replayed >= 5, `the cluster's and the nodes' histories replayed (${report.replayed})${trace}`);
    assert.equal(report.status?.phase, 'done', trace);
  });
});
