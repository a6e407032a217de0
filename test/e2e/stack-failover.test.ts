import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { runStackUpgrade } from '../stack/stack-upgrade.js';

/**
 * The production shape, for real: an upgrade 1.32 → 1.34 (3 control planes, 4 workers, PDBs) on the
 * stack without Docker (PostgreSQL, the Temporal server v1.29.1 built from the Go module proxy) with two
 * `skewless worker` processes on one task queue. The worker running hop 1's `kubeadm upgrade apply` is
 * SIGKILLed and stays dead, the Temporal server is SIGKILLed and restarted, PostgreSQL is shut down at
 * once and restarted; the fault harness's final checks then hold: every version at the target, nothing
 * cordoned or labelled, the skew policy in every recorded state, no PDB below its floor, `kubeadm upgrade
 * apply` completed once per hop, each package installed once per host and hop, no kubelet restarted
 * on an undrained node. The test starts the stack and stops it (its programs die with this process).
 */
describe('e2e: an upgrade on PostgreSQL and the Temporal server, two workers, through their failures', () => {
  it('finishes with every promise kept after a worker SIGKILL, a server restart and a PostgreSQL restart', { timeout: 20 * 60_000 }, async (t) => {
    const lines: string[] = [];
    const report = await runStackUpgrade({ temporal: 'stack', faults: true, log: (l) => lines.push(l) });
    for (const f of report.faults) t.diagnostic(`${f.what} at ${(f.atMs / 1000).toFixed(1)} s, ${f.outageMs} ms, during ${f.during}`);
    t.diagnostic(`stack ready in ${report.temporalStartMs} ms; upgrade ${(report.upgradeMs / 1000).toFixed(0)} s; run ${(report.wallMs / 1000).toFixed(0)} s`);
    const trace = `\n${lines.join('\n')}`;
    assert.deepEqual(report.problems, [], trace);
    assert.deepEqual(report.faults.map((f) => f.what), ['worker-kill', 'server-restart', 'postgres-restart'], trace);
    assert.match(report.faults[0]!.during, /activity kubeadmUpgradeApply on \d+@/, `the kill met the apply's worker${trace}`);
    assert.equal(report.status?.phase, 'done', trace);
  });
});
