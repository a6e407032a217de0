import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { runCli, writeFiles } from '../helpers/run-cli.js';

const inventory = {
  apiservers: [{ node: 'cp1', version: '1.33.2' }],
  kubelets: [
    { node: 'cp1', version: '1.33.2' },
    { node: 'w1', version: '1.33.2' },
    { node: 'w2', version: '1.33.2' },
  ],
};

describe('skewless plan and path with target expressions', () => {
  const f = writeFiles({ inv: inventory, avail: ['1.33.2', '1.33.5', '1.34.0', '1.34.3', '1.35.0-rc.1'], old: ['1.33.2'] });

  it('plan --to latest-patch plans the newest patch of the current minor, and names it', () => {
    const r = runCli([
      'plan',
      '--inventory',
      f.inv as string,
      '--available',
      f.avail as string,
      '--to',
      'latest-patch',
      '--output',
      'json',
    ]);
    assert.equal(r.code, 0, r.stderr);
    const plan = JSON.parse(r.stdout);
    assert.deepEqual(plan.hops, ['1.33.5']);
    assert.deepEqual(plan.target, { asked: 'latest-patch', to: '1.33.5' });
    const text = runCli(['plan', '--inventory', f.inv as string, '--available', f.avail as string, '--to', 'latest-patch']);
    assert.match(text.stdout, /^Upgrade 1\.33\.2 → latest-patch \(1\.33\.5\): 1 hop \(1\.33\.5\)$/m);
  });

  it('plan --to next-minor goes one minor up, to its newest release', () => {
    const r = runCli(['plan', '--inventory', f.inv as string, '--available', f.avail as string, '--to', 'next-minor', '--output', 'json']);
    assert.equal(r.code, 0, r.stderr);
    assert.deepEqual(JSON.parse(r.stdout).hops, ['1.34.3']);
  });

  it('nothing newer is nothing to do, with the reason, and exit 0', () => {
    const r = runCli(['plan', '--inventory', f.inv as string, '--available', f.old as string, '--to', 'next-minor']);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout, 'Nothing to do: next-minor: the repository offers no 1.34.x release.\n');
    const p = runCli(['path', '--from', '1.33.2', '--to', 'latest-patch', '--available', f.avail as string, '--output', 'json']);
    assert.equal(p.code, 0, p.stderr);
    assert.deepEqual(JSON.parse(p.stdout), { hops: ['1.33.5'] });
  });
});
