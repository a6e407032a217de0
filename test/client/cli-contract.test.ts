import assert from 'node:assert/strict';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { COMMANDS } from '../../client/cli.js';
import { repoRoot, runCli, writeFiles } from '../helpers/run-cli.js';

const oneLineError = (stderr: string) => {
  assert.equal(stderr.trim().split('\n').length, 1, `one line: ${stderr}`);
  assert.match(stderr, /^skewless: /);
};

describe('skewless skew-check', () => {
  it('exits 0 and prints compliant JSON', () => {
    const f = writeFiles({ inv: { apiservers: [{ node: 'cp1', version: '1.34.1' }], kubelets: [{ node: 'w1', version: 'v1.31.2' }] } });
    const r = runCli(['skew-check', '--inventory', f.inv as string, '--output', 'json']);
    assert.equal(r.code, 0, r.stderr);
    assert.deepEqual(JSON.parse(r.stdout), { compliant: true, violations: [] });
  });

  it('exits 1 and lists each violation with component, node, version and rule', () => {
    const f = writeFiles({
      inv: {
        apiservers: [
          { node: 'cp1', version: '1.34.1' },
          { node: 'cp2', version: '1.33.0' },
        ],
        kubelets: [{ node: 'w1', version: '1.34.0' }],
        kubectl: [{ node: 'laptop', version: '1.35.0' }],
      },
    });
    const r = runCli(['skew-check', '--inventory', f.inv as string, '--output', 'json']);
    assert.equal(r.code, 1);
    const out = JSON.parse(r.stdout);
    assert.equal(out.compliant, false);
    assert.deepEqual(
      out.violations.map((v: Record<string, string>) => Object.keys(v).sort()),
      [
        ['component', 'node', 'rule', 'version'],
        ['component', 'node', 'rule', 'version'],
      ],
    );
    assert.deepEqual(
      out.violations.map((v: Record<string, string>) => [v.component, v.node, v.version]),
      [
        ['kubelet', 'w1', '1.34.0'],
        ['kubectl', 'laptop', '1.35.0'],
      ],
    );
    assert.match(out.violations[0].rule, /newer than the oldest kube-apiserver/);
  });

  it("--topology kubeadm judges controller-managers by their own node's apiserver", () => {
    const f = writeFiles({
      inv: {
        apiservers: [
          { node: 'cp1', version: '1.34.1' },
          { node: 'cp2', version: '1.33.0' },
        ],
        controllerManagers: [{ node: 'cp1', version: '1.34.1' }],
      },
    });
    assert.equal(runCli(['skew-check', '--inventory', f.inv as string, '--output', 'json']).code, 1);
    assert.equal(runCli(['skew-check', '--inventory', f.inv as string, '--topology', 'kubeadm', '--output', 'json']).code, 0);
  });

  it('prints a readable report without --output json', () => {
    const f = writeFiles({ inv: { apiservers: [{ node: 'cp1', version: '1.34.1' }], schedulers: [{ node: 'cp1', version: '1.32.0' }] } });
    const r = runCli(['skew-check', '--inventory', f.inv as string]);
    assert.equal(r.code, 1);
    assert.match(r.stdout, /not compliant: 1 violation\n {2}scheduler on cp1 at 1\.32\.0: kube-scheduler may be at most 1 minor older/);
  });

  const invalid: [string, () => string[], RegExp][] = [
    ['missing file', () => ['--inventory', '/nonexistent/inv.json'], /cannot read inventory \/nonexistent\/inv\.json: ENOENT/],
    ['not JSON', () => ['--inventory', writeFiles({ inv: '{nope' }).inv as string], /is not valid JSON/],
    ['no apiservers', () => ['--inventory', writeFiles({ inv: { kubelets: [] } }).inv as string], /at least one kube-apiserver/],
    [
      'bad version',
      () => ['--inventory', writeFiles({ inv: { apiservers: [{ node: 'cp1', version: '1.34.1; reboot' }] } }).inv as string],
      /invalid Kubernetes version/,
    ],
    [
      'unknown component key is ignored but wrong types are not',
      () => ['--inventory', writeFiles({ inv: { apiservers: [{ node: 'cp1', version: '1.34.1' }], kubelets: 'w1' } }).inv as string],
      /kubelets must be an array/,
    ],
    ['missing --inventory', () => [], /--inventory is required/],
    ['unknown flag', () => ['--inventory', 'x', '--force'], /Unknown option '--force'/],
    ['bad --output', () => ['--inventory', 'x', '--output', 'yaml'], /--output must be "json" or "text"/],
  ];
  for (const [name, args, message] of invalid) {
    it(`exits 2 with one line on ${name}`, () => {
      const r = runCli(['skew-check', ...args(), ...(args().includes('--output') ? [] : ['--output', 'json'])]);
      assert.equal(r.code, 2, r.stdout + r.stderr);
      assert.equal(r.stdout, '');
      oneLineError(r.stderr);
      assert.match(r.stderr, message);
    });
  }
});

describe('skewless path', () => {
  const available = ['1.32.4', '1.33.0', '1.33.7', '1.34.0-rc.1', '1.34.2'];

  it('prints the hops as JSON', () => {
    const f = writeFiles({ av: available });
    const r = runCli(['path', '--from', 'v1.32.4', '--to', '1.34', '--available', f.av as string, '--output', 'json']);
    assert.equal(r.code, 0, r.stderr);
    assert.deepEqual(JSON.parse(r.stdout), { hops: ['1.33.7', '1.34.2'] });
  });

  it('prints zero hops when already there', () => {
    const f = writeFiles({ av: available });
    const r = runCli(['path', '--from', '1.34.2', '--to', '1.34', '--available', f.av as string, '--output', 'json']);
    assert.equal(r.code, 0);
    assert.deepEqual(JSON.parse(r.stdout), { hops: [] });
  });

  const impossible: [string, string[], unknown, RegExp][] = [
    ['a downgrade', ['--from', '1.34.2', '--to', '1.33'], available, /refusing to downgrade/],
    ['a skipped minor', ['--from', '1.32.4', '--to', '1.34'], ['1.32.4', '1.34.2'], /no 1\.33\.x release is available/],
    ['an invalid version', ['--from', '1.32', '--to', '1.34'], available, /invalid Kubernetes version "1\.32"/],
    ['a shell injection attempt', ['--from', '1.32.4', '--to', '1.34.2;id'], available, /invalid target/],
    ['an available file that is not a list', ['--from', '1.32.4', '--to', '1.34'], { versions: [] }, /must be a list/],
  ];
  for (const [name, args, av, message] of impossible) {
    it(`exits 2 with one line on ${name}`, () => {
      const f = writeFiles({ av });
      const r = runCli(['path', ...args, '--available', f.av as string, '--output', 'json']);
      assert.equal(r.code, 2);
      assert.equal(r.stdout, '');
      oneLineError(r.stderr);
      assert.match(r.stderr, message);
    });
  }
});

describe('skewless plan', () => {
  const example = (name: string) => join(repoRoot, 'examples', name);

  it('plans the 3+7 example from 1.32 to 1.34: two hops, backup first, uncordon last on every node that moves, workers once', () => {
    const r = runCli([
      'plan',
      '--inventory',
      example('inventory-3cp-7w.json'),
      '--to',
      '1.34',
      '--available',
      example('available.json'),
      '--canary',
      '1',
      '--batch-size',
      '3',
      '--max-unavailable',
      '2',
      '--output',
      'json',
    ]);
    assert.equal(r.code, 0, r.stderr);
    const plan = JSON.parse(r.stdout);
    assert.deepEqual(plan.hops, ['1.33.7', '1.34.2']);
    assert.equal(plan.stageLabel, 'skewless.io/stage');
    assert.deepEqual(plan.stageLabels, {
      cp1: 'control-plane',
      cp2: 'control-plane',
      cp3: 'control-plane',
      'worker-1': 'canary',
      'worker-2': 'batch-1',
      'worker-3': 'batch-1',
      'worker-4': 'batch-1',
      'worker-5': 'batch-2',
      'worker-6': 'batch-2',
      'worker-7': 'batch-2',
    });
    assert.equal(plan.runbook.length, 2);
    const workers = Object.keys(plan.stageLabels).filter((n) => n.startsWith('worker-'));
    // The control planes move at both hops; the workers once, at 1.34 (n-3 holds at 1.33 with them at 1.32).
    assert.deepEqual(plan.workerHops, Object.fromEntries(workers.map((w) => [w, ['1.34.2']])));
    assert.deepEqual(
      plan.runbook.map((h: { moves: { workers: string[] } }) => h.moves.workers),
      [[], workers],
    );
    for (const hop of plan.runbook) {
      assert.equal(hop.steps[0].action, 'backup');
      for (const node of [...hop.moves.controlPlanes, ...hop.moves.workers]) {
        const mine = hop.steps.filter((s: { node?: string }) => s.node === node);
        assert.equal(mine.at(-1).action, 'uncordon', `${hop.version} ${node}`);
      }
    }
    assert.equal(plan.skew.compliant, true);
  });

  it('prints a runbook an operator can read', () => {
    const r = runCli(['plan', '--inventory', example('inventory-3cp-7w.json'), '--to', '1.34', '--available', example('available.json')]);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /^Upgrade 1\.32\.4 → 1\.34: 2 hops \(1\.33\.7 → 1\.34\.2\)/);
    assert.match(
      r.stdout,
      /Hop 1\/2: 1\.32\.4 → 1\.33\.7\n {2}moves: control planes cp1, cp2, cp3; workers stay at 1\.32\.4\n +1\. \[hop\] etcd snapshot on cp1/,
    );
    assert.match(
      r.stdout,
      /Hop 2\/2: 1\.33\.7 → 1\.34\.2\n {2}moves: control planes cp1, cp2, cp3; workers to 1\.34\.2: worker-1, worker-2, worker-3, worker-4, worker-5, worker-6, worker-7\n/,
    );
    assert.match(
      r.stdout,
      /\$ point kubernetes\.list at v1\.34 && apt-get update -o Dir::Etc::SourceList=\/etc\/apt\/sources\.list\.d\/kubernetes\.list -o Dir::Etc::SourceParts=- && apt-get install kubeadm=1\.34\.2-\* && kubeadm upgrade apply v1\.34\.2 --yes/,
    );
  });

  it('exits 1 and names the step when the plan would break the skew policy', () => {
    const f = writeFiles({
      inv: {
        apiservers: [{ node: 'cp1', version: '1.32.4' }],
        kubelets: [
          { node: 'cp1', version: '1.32.4' },
          { node: 'leftover', version: '1.29.0' },
        ],
      },
      av: ['1.33.7'],
    });
    const r = runCli(['plan', '--inventory', f.inv as string, '--to', '1.33', '--available', f.av as string, '--output', 'json']);
    assert.equal(r.code, 1, r.stderr);
    const plan = JSON.parse(r.stdout);
    assert.equal(plan.skew.compliant, false);
    assert.match(plan.skew.failure.step, /control-plane components of cp1/);
    assert.deepEqual(
      plan.skew.failure.violations.map((v: { node: string }) => v.node),
      ['leftover'],
    );
  });

  const invalid: [string, string[], RegExp][] = [
    ['a batch size of 0', ['--batch-size', '0'], /--batch-size must be an integer ≥ 1/],
    ['a non-numeric canary', ['--canary', 'two'], /--canary must be an integer/],
    [
      'a bad max-unavailable',
      ['--max-unavailable', 'lots'],
      /--max-unavailable must be a count ≥ 1 or a percentage from 1% to 100%, got "lots"/,
    ],
    ['a downgrade', ['--to', '1.31'], /refusing to downgrade/],
  ];
  for (const [name, extra, message] of invalid) {
    it(`exits 2 with one line on ${name}`, () => {
      const args = [
        'plan',
        '--inventory',
        example('inventory-3cp-7w.json'),
        '--to',
        '1.34',
        '--available',
        example('available.json'),
        ...extra,
      ];
      const r = runCli(args);
      assert.equal(r.code, 2, r.stdout);
      oneLineError(r.stderr);
      assert.match(r.stderr, message);
    });
  }
});

describe('skewless help', () => {
  it('--help lists the commands and exits 0', () => {
    const r = runCli(['--help']);
    assert.equal(r.code, 0);
    for (const c of ['skew-check', 'path', 'plan', 'dev-server']) assert.match(r.stdout, new RegExp(`\\b${c}\\b`));
  });
  for (const c of ['skew-check', 'path', 'plan', 'dev-server']) {
    it(`${c} --help prints its usage and exits 0`, () => {
      const r = runCli([c, '--help']);
      assert.equal(r.code, 0);
      assert.match(r.stdout, new RegExp(`^Usage: skewless ${c}`));
    });
  }
  it('an unknown command exits 2 with one line', () => {
    const r = runCli(['upgrayed']);
    assert.equal(r.code, 2);
    oneLineError(r.stderr);
  });
});

/**
 * Every command in the CLI's table: the ones that print data take --output json|text and refuse
 * anything else with one line and exit 2 before touching anything; the services (worker,
 * dev-server) print no data and refuse --output as an unknown flag. A new command must be one or the other.
 */
describe('--output on every command', () => {
  for (const [name, command] of Object.entries(COMMANDS)) {
    if (command.service) {
      it(`${name} is a service: no --output (exit 2, one line), and its help says so`, async () => {
        const r = runCli([name, '--output', 'json']);
        assert.equal(r.code, 2, r.stdout + r.stderr);
        assert.equal(r.stdout, '');
        oneLineError(r.stderr);
        assert.match(r.stderr, /Unknown option '--output'/);
        assert.match((await command.load()).help, /no data on stdout|takes no --output/);
      });
      continue;
    }
    it(`${name} takes --output json|text and refuses --output yaml with exit 2 and one line`, async () => {
      assert.match((await command.load()).help, /--output json\|text/, `${name}'s usage names --output`);
      const help = runCli([name, '--help', '--output', 'json']);
      assert.equal(help.code, 0, `${name} knows --output: ${help.stderr}`);
      const r = runCli([name, '--output', 'yaml']);
      assert.equal(r.code, 2, r.stdout + r.stderr);
      assert.equal(r.stdout, '');
      oneLineError(r.stderr);
      assert.match(r.stderr, /--output must be "json" or "text", got "yaml"/);
    });
  }
});
