import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { runFaultHarness } from './harness.js';

/**
 * The fault harness in the suite: one upgrade 1.32 → 1.34 (two hops) with the worker SIGKILLed 8
 * times (each of the four targeted moments at least once) and the Temporal dev server SIGKILLed
 * and restarted on its file 5 times. Smaller than `npm run faults` (3 + 3 nodes, no StatefulSet,
 * whose 2-minute PDB hold after an eviction would dominate the time) to keep the suite's cost down;
 * the checks are the same.
 */
const LAB = `
name: crashes
version: 1.32.4
repository: [1.32.4, 1.33.0, 1.33.7, 1.34.0, 1.34.2]
rebootSeconds: 1
latencies: {aptInstall: 1500, kubeletRestart: 1500, kubeadmApply: 3000, kubeadmNode: 1000}
nodes:
  - {name: cp, role: control-plane, count: 3}
  - {name: worker, role: worker, count: 3}
workloads:
  - {kind: Deployment, name: web, replicas: 4, pdb: {minAvailable: 3}}
  - {kind: Deployment, name: api, replicas: 3, pdb: {maxUnavailable: 1}}
  - {kind: DaemonSet, name: node-exporter, namespace: monitoring}
`;

describe('fault harness: the worker and the Temporal server crash mid-upgrade', () => {
  it('upgrades through 8 worker kills and 5 server restarts, keeping every promise', { timeout: 20 * 60_000 }, async (t) => {
    const lines: string[] = [];
    const report = await runFaultHarness({
      seed: 20261130,
      kills: 8,
      serverRestarts: 5,
      description: LAB,
      schedule: { randomAfterMs: [2_000, 8_000], serverGapMs: [5_000, 20_000], serverDownMs: [500, 2_000] },
      log: (line) => lines.push(line),
    });
    const trace = `\n${lines.join('\n')}\nstate: ${report.stateDir}`;
    // What each kill met, in the test's output: evidence that the kills landed where they say.
    for (const line of lines.filter((l) => /\] (kill|server restart) \d/.test(l))) t.diagnostic(line.replace('[faults] ', ''));
    t.diagnostic(
      `${report.hangups.length} host commands lost their client; upgrade ${(report.upgradeMs / 1000).toFixed(0)} s, run ${(report.wallMs / 1000).toFixed(0)} s`,
    );
    assert.deepEqual(report.problems, [], trace);
    assert.equal(report.kills.length, 8, trace);
    assert.equal(report.serverRestarts.length, 5, trace);
    for (const [target, hits] of Object.entries(report.targetsHit)) assert.ok(hits >= 1, `no kill landed in ${target}${trace}`);
    // Every targeted hit was a kill with the worker's work really out: a command running, or activities handed out.
    for (const k of report.kills.filter((k) => k.hit))
      assert.ok(k.commands.length + k.activities.length > 0, `kill ${k.n} found nothing in flight${trace}`);
    assert.equal(report.status?.phase, 'done', trace);
  });
});
