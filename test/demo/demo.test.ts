import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { assertNothingLeft, exitWithin, startDemo, stopDemos } from './demo-run.js';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { repoRoot } from '../helpers/run-cli.js';

/** The README's main command, end to end (demo-interrupts.test.ts: the same demo interrupted). */
describe('npm run demo (the README main command)', () => {
  after(stopDemos);

  it('upgrades all 8 nodes to 1.34 with no PDB violated, prints the summary and leaves nothing running', { timeout: 780_000 }, async () => {
    const run = await startDemo();
    const code = await exitWithin(run, 720_000);
    const out = run.stdout();
    // Kept for the record (test-output/ is not committed): what the demo's operator read and did.
    mkdirSync(join(repoRoot, 'test-output'), { recursive: true });
    writeFileSync(join(repoRoot, 'test-output', 'demo-stdout.log'), out);
    assert.equal(code, 0, `${out}\n${run.stderr()}`);
    // The operator read plan's readiness first: the etcd version of every control plane holds the 1.34 hop.
    assert.match(out, /^\[operator\] readiness: HOLD etcd-version before 1\.34\.\d+ on cp-1: /m);

    const rows = [...out.matchAll(/^(cp-\d+|worker-\d+)\s+(control-plane|worker)\s+(v\S+)\s+(v\S+)\s+([\d.]+ s|-)/gm)];
    assert.deepEqual(
      rows.map((m) => m[1]).sort(),
      ['cp-1', 'cp-2', 'cp-3', 'worker-1', 'worker-2', 'worker-3', 'worker-4', 'worker-5'],
      out,
    );
    for (const [, node, , from, to, drain] of rows) {
      assert.match(from as string, /^v1\.32\./, `${node} started at 1.32`);
      assert.match(to as string, /^v1\.34\./, `${node} ended at 1.34`);
      assert.match(drain as string, /^[\d.]+ s$/, `${node} has a drain time`);
    }
    assert.match(out, /^workload availability \(\d+ samples.*\): OK/m);
    assert.doesNotMatch(out, /VIOLATED/);
    // The blocking PDB did block, and the operator fixed it and retried; every gate was approved.
    assert.match(out, /^\[operator\] \$ skewless resolve demo --node \S+ --action retry/m);
    // The note lists every PDB refusing at that moment (db may refuse beside payments): payments among them.
    assert.match(out, /drain blocked by PDB (default\/\S+, )*default\/payments\b/);
    assert.equal(
      [...out.matchAll(/^\[operator\] {3}gate \S+ approved by demo-operator/gm)].length,
      2,
      'the workers and canary gates of 1.34 (the workers move once, at the last hop: 1.33 has neither)',
    );
    assert.equal([...out.matchAll(/^ {2}before 1\.3\d\.\d+: .*\.db \(\d+ bytes/gm)].length, 2, 'one etcd snapshot per hop');
    assert.match(
      out,
      new RegExp(`^Temporal UI: http://localhost:${run.ports.ui}/namespaces/default/workflows/upgrade%2Fdemo/[0-9a-f-]{36}/history$`, 'm'),
    );
    assert.match(out, /^wall time: \d+/m);

    await assertNothingLeft(run, [
      'temporal-dev-server',
      'worker',
      'sim-cp-1/etcd',
      'sim-cp-1/kube-apiserver',
      'sim-cp-3/kube-scheduler',
      'sim-cp-1/kube-apiserver-at-end',
      'sim-kwok',
      'skewless-upgrade',
      'skewless-resolve',
      'skewless-approve',
    ]);
  });
});
