import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { overlappingAcrossWorkers } from '../stack/drain-attempts.js';
import { runStackUpgrade, STACK_HOPS } from '../stack/stack-upgrade.js';

/**
 * The production shape, for real: an upgrade 1.32 → 1.34 (3 control planes, 4 workers, PDBs) on the
 * stack without Docker (PostgreSQL, the Temporal server v1.29.1 built from the Go module proxy) with two
 * `skewless worker` processes on one task queue. The Temporal server is SIGKILLed and restarted,
 * PostgreSQL is shut down at once and restarted, and the worker running hop 2's first drain is SIGKILLed
 * and stays dead; the fault harness's final checks then hold: every version at the target, nothing
 * cordoned or labelled, the skew policy in every recorded state, no PDB below its floor, `kubeadm upgrade
 * apply` completed once per hop, each package installed once per host and hop, no kubelet restarted on
 * an undrained node. The test starts the stack and stops it (its programs die with this process).
 */
describe('e2e: an upgrade on PostgreSQL and the Temporal server, two workers, through their failures', () => {
  it(
    'finishes with every promise kept after a server restart, a PostgreSQL restart and a worker SIGKILL',
    { timeout: 20 * 60_000 },
    async (t) => {
      const lines: string[] = [];
      const report = await runStackUpgrade({ temporal: 'stack', faults: true, log: (l) => lines.push(l) });
      for (const f of report.faults) t.diagnostic(`${f.what} at ${(f.atMs / 1000).toFixed(1)} s, ${f.outageMs} ms, during ${f.during}`);
      const workers = [...new Set(report.drains.map((d) => d.worker))];
      t.diagnostic(
        `${report.drains.length} drains by ${workers.join(', ')}; ${overlappingAcrossWorkers(report.drains).length} pairs on different workers at once`,
      );
      t.diagnostic(
        `stack ready in ${report.temporalStartMs} ms; upgrade ${(report.upgradeMs / 1000).toFixed(0)} s; run ${(report.wallMs / 1000).toFixed(0)} s`,
      );
      const trace = `\n${lines.join('\n')}\n${JSON.stringify(report.drains)}`;
      assert.deepEqual(report.problems, [], trace);
      assert.deepEqual(
        report.faults.map((f) => f.what),
        ['server-restart', 'postgres-restart', 'worker-kill'],
        trace,
      );

      // The worker-node drain the kill met was finished by the other worker on a later attempt, unless
      // history shows it had completed before the kill landed; and nothing after the kill ran on the dead worker.
      const kill = report.faults[2]!;
      const [, node, killed] = /^drainNode (\S+) on (\S+)$/.exec(kill.during) ?? [];
      assert.ok(node && killed, `the kill met a drain: ${kill.during}`);
      const drain = report.drains.find((d) => d.workflowId.endsWith(`/${STACK_HOPS[1]}/${node}`));
      assert.ok(drain, `${node}'s drain is in history${trace}`);
      const doneBeforeKill = drain.worker === killed && drain.endMs !== undefined && drain.endMs <= kill.atEpochMs + kill.outageMs;
      t.diagnostic(
        doneBeforeKill
          ? `${node}'s drain completed before the kill landed`
          : `${node}'s drain: attempt ${drain.attempt} by ${drain.worker}`,
      );
      if (!doneBeforeKill)
        assert.ok(drain.worker !== killed && drain.attempt >= 2, `${node}'s drain finished by the surviving worker on a retry${trace}`);
      const afterKill = report.drains.filter((d) => d.startMs > kill.atEpochMs + kill.outageMs);
      assert.deepEqual(
        afterKill.filter((d) => d.worker === killed),
        [],
        `no drain ran on the killed worker after the kill${trace}`,
      );
      assert.equal(workers.length, 2, `both workers drained nodes${trace}`);
      assert.equal(report.status?.phase, 'done', trace);
    },
  );
});
