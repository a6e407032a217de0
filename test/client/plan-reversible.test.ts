import assert from 'node:assert/strict';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { repoRoot, runCli, writeFiles } from '../helpers/run-cli.js';

// `plan` says for each hop whether it can be reversible (issue 36, rules/hop-reversibility.ts), and
// `--reversible` refuses in one line a hop that cannot be, unless acknowledged by name.
const example = (name: string) => join(repoRoot, 'examples', name);
const from131 = () =>
  writeFiles({
    inv: {
      apiservers: [{ node: 'cp1', version: '1.31.9' }],
      kubelets: [
        { node: 'cp1', version: '1.31.9' },
        { node: 'w1', version: '1.31.9' },
      ],
    },
    available: ['1.31.9', '1.32.13', '1.33.13'],
  });

describe('plan: reversible hops', () => {
  it('prints per hop whether it can be reversible: 1.32 → 1.33 → 1.34 both can (1.33 and 1.34 binaries emulate the minor below)', () => {
    const r = runCli(['plan', '--inventory', example('inventory-3cp-7w.json'), '--to', '1.34', '--available', example('available.json')]);
    assert.equal(r.code, 0, r.stderr);
    assert.match(
      r.stdout,
      /\nReversible \(--reversible: a trial, then commit or rollback without an etcd restore\):\n {2}1\.33\.7: yes, the 1\.33\.7 control plane can run emulating 1\.32 and go back\n {2}1\.34\.2: yes, the 1\.34\.2 control plane can run emulating 1\.33 and go back\n$/,
    );
  });

  it('says why not: 1.32 binaries emulate nothing older; the JSON carries the verdicts', () => {
    const f = from131();
    const r = runCli(['plan', '--inventory', f.inv as string, '--to', '1.33', '--available', f.available as string, '--output', 'json']);
    assert.equal(r.code, 0, r.stderr);
    const { reversibility } = JSON.parse(r.stdout) as {
      reversibility: { hop: string; reversible: boolean; reasons: { id: string }[]; ack: string }[];
    };
    assert.deepEqual(
      reversibility.map((v) => [v.hop, v.reversible, v.reasons.map((x) => x.id), v.ack]),
      [
        ['1.32.13', false, ['cannot-emulate'], 'reversible:1.32.13'],
        ['1.33.13', true, [], 'reversible:1.33.13'],
      ],
    );
  });

  it('--reversible refuses a hop that cannot be in one line (exit 2), naming the acknowledgement; acknowledged, the plan goes on', () => {
    const f = from131();
    const args = ['plan', '--inventory', f.inv as string, '--to', '1.33', '--available', f.available as string, '--reversible'];
    const refused = runCli(args);
    assert.equal(refused.code, 2, refused.stdout);
    assert.equal(refused.stdout, '');
    assert.equal(
      refused.stderr.trim(),
      'skewless: --reversible: hop 1.32.13 cannot be reversible: the 1.32.13 binaries cannot emulate 1.31: their --emulated-version accepts 1.32..1.32 (KEP-4330); acknowledge it with --acknowledge reversible:1.32.13 to run it without a trial',
    );
    const acknowledged = runCli([...args, '--acknowledge', 'reversible:1.32.13']);
    assert.equal(acknowledged.code, 0, acknowledged.stderr);
    assert.match(acknowledged.stdout, / {2}1\.32\.13: no: the 1\.32\.13 binaries cannot emulate 1\.31/);
  });

  it('a malformed reversible acknowledgement is one line naming the flag (exit 2)', () => {
    const f = from131();
    const r = runCli([
      'plan',
      '--inventory',
      f.inv as string,
      '--to',
      '1.33',
      '--available',
      f.available as string,
      '--acknowledge',
      'reversible:soon',
    ]);
    assert.equal(r.code, 2);
    assert.equal(r.stderr.trim(), 'skewless: --acknowledge: "reversible:soon" is not reversible:<hop version>, e.g. reversible:1.33.13');
  });

  it('upgrade and schedule create: --auto-commit only with --reversible and a soak, one line, exit 2, before Temporal is asked', () => {
    const refused = (args: string[], line: string) => {
      const r = runCli(args);
      assert.equal(r.code, 2, `${args.join(' ')}: ${r.stderr}`);
      assert.equal(r.stdout, '');
      assert.equal(r.stderr.trim(), `skewless: ${line}`);
    };
    const upgrade = ['upgrade', '--cluster', 'lab', '--to', '1.33'];
    const schedule = ['schedule', 'create', '--cluster', 'lab', '--to', '1.33', '--every', '1h'];
    for (const start of [upgrade, schedule]) {
      refused([...start, '--auto-commit', '--soak-after-phase', '60'], '--auto-commit goes with --reversible');
      refused(
        [...start, '--reversible', '--auto-commit'],
        '--auto-commit needs a soak: --soak SECONDS or --soak-after-phase SECONDS (the trial soaks the longer)',
      );
      refused([...start, '--acknowledge', 'reversible:1.33.13'], '--acknowledge reversible:HOP goes with --reversible');
    }
  });
});
