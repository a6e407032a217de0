// What `status` and `watch` count and name of an upgrade: what the plan does, not nodes × hops.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { progressLine, upgradesDone } from '../../client/commands/watch.js';
import { printUpgrade, upgradeSpan } from '../../client/status-text.js';
import type { CommandIo } from '../../client/cli-support.js';
import type { NodeState, UpgradeStatus } from '../../workflows/rollout-messages.js';

const status = (over: Partial<UpgradeStatus>): UpgradeStatus => ({
  cluster: 'lab',
  phase: 'workers',
  paused: false,
  nodes: {},
  gates: [],
  events: [],
  skipped: [],
  from: '1.32.4',
  to: '1.34',
  hops: ['1.33.7', '1.34.2'],
  snapshots: [],
  runs: 1,
  ...over,
});
const node = (from: string, version = from, phase: NodeState['phase'] = 'pending'): NodeState => ({ phase, from, version });

describe('upgrade progress counts what the plan does', () => {
  it('a workers-once run over two hops: control planes at each hop, each worker once', () => {
    // 3 control planes × 2 hops + 6 workers × 1 = 12 node upgrades (not 9 nodes × 2 hops = 18).
    const cps = ['cp-1', 'cp-2', 'cp-3'];
    const workers = ['w-1', 'w-2', 'w-3', 'w-4', 'w-5', 'w-6'];
    const s = status({
      nodes: Object.fromEntries([...cps.map((n) => [n, node('1.32.4', '1.33.7')]), ...workers.map((n) => [n, node('1.32.4')])]),
      moves: Object.fromEntries([...cps.map((n) => [n, ['1.33.7', '1.34.2']]), ...workers.map((n) => [n, ['1.34.2']])]),
      hop: '1.33.7',
    });
    assert.deepEqual(upgradesDone(s), { done: 3, total: 12 });
    s.nodes['w-1'] = node('1.32.4', '1.34.2', 'done');
    s.nodes['cp-1'] = node('1.32.4', '1.34.2', 'done');
    assert.deepEqual(upgradesDone(s), { done: 5, total: 12 });
    assert.match(progressLine(s), / 5\/12 node upgrades, hop 1\.33\.7 of 1\.33\.7 → 1\.34\.2, workers$/);
  });

  it('a finishing run counts only the nodes below the target, and its header spans the kubelets it moves', () => {
    const s = status({
      from: '1.33.7',
      to: '1.33',
      hops: ['1.33.7'],
      nodes: { 'cp-1': node('1.33.7'), 'w-1': node('1.33.7'), 'w-2': node('1.32.4') },
      moves: { 'cp-1': [], 'w-1': [], 'w-2': ['1.33.7'] },
    });
    assert.deepEqual(upgradesDone(s), { done: 0, total: 1 });
    assert.equal(upgradeSpan(s), '1.32.4 → 1.33.7');
    const lines: string[] = [];
    printUpgrade({ out: (l: string) => lines.push(l), err: () => undefined } as unknown as CommandIo, 'lab', s);
    assert.match(lines[0] ?? '', /^lab: 1\.32\.4 → 1\.33\.7, hop - \(1\.33\.7\), workers$/);
    s.nodes['w-2'] = node('1.32.4', '1.33.7', 'done');
    assert.deepEqual(upgradesDone(s), { done: 1, total: 1 });
  });

  it('a run that predates the plan in its status counts every node at every hop', () => {
    const s = status({ nodes: { a: node('1.32.4', '1.33.7'), b: node('1.32.4') } });
    assert.deepEqual(upgradesDone(s), { done: 1, total: 4 });
    assert.equal(upgradeSpan(s), '1.32.4 → 1.34.2');
  });

  it('a node draining in rounds shows its round', () => {
    const s = status({ nodes: { 'w-1': { ...node('1.32.4', '1.32.4', 'draining'), drainRound: { index: 2, of: 2, order: 10 } } } });
    const lines: string[] = [];
    printUpgrade({ out: (l: string) => lines.push(l), err: () => undefined } as unknown as CommandIo, 'lab', s);
    assert.ok(
      lines.some((l) => /^ {2}w-1 +draining \(round 2\/2, order 10\)$/.test(l)),
      lines.join('\n'),
    );
  });
});
