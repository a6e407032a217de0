import assert from 'node:assert/strict';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { repoRoot, runCli } from '../helpers/run-cli.js';

// `plan --fix-prerequisites` shows the etcd patch step (issue 35) as rows of the runbook of the hop that
// brings etcd 3.6, in the text and the JSON alike: a snapshot, then each control plane's member.
const example = (name: string) => join(repoRoot, 'examples', name);
const plan = (...extra: string[]) =>
  runCli(['plan', '--inventory', example('inventory-3cp-7w.json'), '--to', '1.34', '--available', example('available.json'), ...extra]);

describe('plan --fix-prerequisites: the etcd patch step in the runbook', () => {
  it('text: the 1.34 hop opens with the snapshot and one numbered row per control plane, before its own backup', () => {
    const r = plan('--fix-prerequisites');
    assert.equal(r.code, 0, r.stderr);
    const hop2 = r.stdout.slice(r.stdout.indexOf('Hop 2/2: 1.33.7 → 1.34.2'));
    const rows = hop2.split('\n').filter((l) => /^ {2}\s*\d+\. /.test(l));
    assert.match(rows[0]!, /^ {4}1\. \[hop\] etcd snapshot on cp1 before the etcd patch \(--fix-prerequisites/);
    for (const [i, cp] of ['cp1', 'cp2', 'cp3'].entries())
      assert.match(rows[i + 1]!, new RegExp(`^ {4}${i + 2}\\. \\[hop\\] etcd member on ${cp} to 3\\.5\\.36-0 if below it`));
    assert.match(rows[4]!, /^ {4}5\. \[hop\] etcd snapshot on cp1, verified and copied off the node$/);
    assert.ok(!r.stdout.slice(0, r.stdout.indexOf('Hop 2/2')).includes('etcd member on'), 'no patch row in the 1.33 hop');
    assert.ok(!plan().stdout.includes('etcd member on'), 'none without the flag');
  });

  it('JSON: the same rows as steps of the 1.34.2 runbook, action etcd-patch', () => {
    const r = plan('--fix-prerequisites', '--output', 'json');
    assert.equal(r.code, 0, r.stderr);
    const { runbook } = JSON.parse(r.stdout) as { runbook: { version: string; steps: { action: string; node: string }[] }[] };
    const rows = (version: string) =>
      runbook.find((h) => h.version === version)!.steps.filter((s) => s.action === 'etcd-patch' || s.action === 'backup');
    assert.deepEqual(
      rows('1.34.2').map((s) => `${s.action} ${s.node}`),
      ['backup cp1', 'etcd-patch cp1', 'etcd-patch cp2', 'etcd-patch cp3', 'backup cp1'],
    );
    assert.deepEqual(
      rows('1.33.7').map((s) => `${s.action} ${s.node}`),
      ['backup cp1'],
    );
  });
});
