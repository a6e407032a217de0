import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { appendFileSync, existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { ensureSimBinaries } from '../../sim/cluster/binaries.js';
import { repoRoot } from '../helpers/run-cli.js';
import { tempDir } from '../helpers/temp-dir.js';

const sim = (args: string[], timeout = 300_000) =>
  spawnSync(process.execPath, [join(repoRoot, 'bin', 'skewless-sim.js'), ...args], { encoding: 'utf8', timeout });

/** Processes whose command line mentions `text` (the state dir is in every component's flags). */
const processesMentioning = (text: string) =>
  execFileSync('ps', ['-eo', 'pid=,args='], { encoding: 'utf8' })
    .split('\n')
    .filter((l) => l.includes(text) && !l.includes('ps -eo'));

describe('skewless-sim up / down', () => {
  const dir = tempDir('sim-cli');
  const state = join(dir, 'state');
  after(() => {
    sim(['down', '--state', state]);
    rmSync(dir, { recursive: true, force: true });
  });

  it('refuses a bad description with one line and starts nothing', () => {
    const file = join(dir, 'bad.yaml');
    writeFileSync(file, 'name: bad\nversion: 1.32\nnodes: [{name: cp, role: control-plane}]\n');
    const r = sim(['up', file, '--state', state]);
    assert.equal(r.status, 2);
    assert.match(r.stderr, /^skewless-sim: version: invalid Kubernetes version "1\.32"/);
    assert.equal(r.stderr.trim().split('\n').length, 1);
    assert.deepEqual(processesMentioning(state), []);
  });

  it('brings a cluster up, prints its kubeconfig and SSH endpoints, and down stops every process it started', () => {
    const file = join(dir, 'tiny.yaml');
    writeFileSync(
      file,
      [
        'name: tiny',
        'version: 1.33.7',
        'repository: [1.33.7, 1.34.2]',
        'nodes:',
        '  - {name: cp, role: control-plane}',
        '  - {name: w, role: worker, count: 2}',
        'workloads:',
        '  - {kind: Deployment, name: web, replicas: 2}',
        '',
      ].join('\n'),
    );
    const up = sim(['up', file, '--state', state]);
    assert.equal(up.status, 0, up.stderr);
    const kubeconfig = /^kubeconfig: (\S+) \(admin/m.exec(up.stdout)?.[1] as string;
    assert.ok(kubeconfig, up.stdout);
    assert.match(up.stdout, /^ {2}cp +127\.0\.0\.1:\d+$/m);
    assert.match(up.stdout, /^ {2}w-2 +127\.0\.0\.1:\d+$/m);
    // Where the worker's configuration is, how to start a worker on it, and where each host logs its commands.
    const clusters = join(state, 'clusters');
    assert.match(up.stdout, new RegExp(`^cluster configuration: ${join(clusters, 'tiny.yaml')}$`, 'm'));
    assert.match(readFileSync(join(clusters, 'tiny.yaml'), 'utf8'), /^name: tiny$/m);
    assert.ok(up.stdout.includes(`\nstart a worker on it: skewless worker --clusters-dir ${clusters} (`), up.stdout);
    assert.ok(
      up.stdout.includes(`\nevery command a host runs: ${join(state, 'hosts', '<node>', 'commands.log')} (one JSON line each)\n`),
      up.stdout,
    );
    assert.ok(existsSync(join(state, 'hosts', 'w-2')), 'each host keeps its state (and its commands.log) there');

    // The real kubectl of the simulation's Kubernetes version sees the described nodes.
    const nodes = execFileSync(ensureSimBinaries().bin('kubectl'), ['--kubeconfig', kubeconfig, 'get', 'nodes', '-o', 'name'], {
      encoding: 'utf8',
    });
    assert.deepEqual(nodes.trim().split('\n').sort(), ['node/cp', 'node/w-1', 'node/w-2']);
    assert.ok(processesMentioning(state).length >= 5, 'etcd, apiserver, controller-manager, scheduler, kwok and the daemon run');

    const quiet = sim(['status', '--state', state]);
    assert.equal(quiet.status, 0);
    assert.match(quiet.stdout, /^faults in effect: none$/m);
    // A fault that can never match (no such program on the host) is refused in one line; status lists the armed ones.
    const never = sim(['fault', 'w-1', '--set', '{"kind":"fail","command":"apt update"}', '--state', state]);
    assert.equal(never.status, 2);
    assert.equal(never.stderr.trim().split('\n').length, 1, never.stderr);
    assert.match(never.stderr, /can never match: the host has no program 'apt'/);
    // A command the host has but skewless never sends is refused the same way (rules/host-command-forms.ts)...
    const dist = '{"kind":"fail","command":"apt-get -y dist-upgrade"}';
    const unsent = sim(['fault', 'w-1', '--set', dist, '--state', state]);
    assert.equal(unsent.status, 2);
    assert.equal(unsent.stderr.trim().split('\n').length, 1, unsent.stderr);
    assert.match(unsent.stderr, /can never match: skewless sends no command that starts with 'apt-get -y dist-upgrade'/);
    // ...until the cluster configuration has skewless send it (maintenance.command, as the worker reads it).
    appendFileSync(join(state, 'clusters', 'tiny.yaml'), 'maintenance:\n  command: [apt-get, -y, dist-upgrade]\n');
    const configured = sim(['fault', 'w-1', '--set', dist, '--state', state]);
    assert.equal(configured.status, 0, configured.stderr);
    assert.equal(sim(['fault', 'w-1', '--clear', '--state', state]).status, 0);
    assert.equal(sim(['fault', 'w-1', '--set', '{"kind":"fail","command":"apt-get update","times":2}', '--state', state]).status, 0);
    const armed = sim(['status', '--state', state]).stdout;
    assert.match(armed, /^faults in effect:\n {2}w-1: \{"kind":"fail","command":"apt-get update","times":2\} \(2 more runs\)$/m);
    assert.equal(sim(['fault', 'w-1', '--clear', '--state', state]).status, 0);
    assert.match(sim(['status', '--state', state]).stdout, /^faults in effect: none$/m);
    // A machine while it runs (blue/green): a host and a Ready Node, listed by status, then gone.
    const created = sim(['machine', 'create', 'g-1', '--version', '1.34.2', '--labels', 'skewless.io/pool=green', '--state', state]);
    assert.equal(created.status, 0, created.stderr);
    assert.match(created.stdout, /^machine g-1 created: ssh 127\.0\.0\.1:\d+$/m);
    assert.match(sim(['status', '--state', state]).stdout, /^ {2}g-1 +127\.0\.0\.1:\d+$/m);
    const green = execFileSync(
      ensureSimBinaries().bin('kubectl'),
      ['--kubeconfig', kubeconfig, 'get', 'nodes', '-l', 'skewless.io/pool=green', '-o', 'name'],
      { encoding: 'utf8' },
    );
    assert.equal(green.trim(), 'node/g-1');
    const deleted = sim(['machine', 'delete', 'g-1', '--state', state]);
    assert.equal(deleted.status, 0, deleted.stderr);
    assert.doesNotMatch(sim(['status', '--state', state]).stdout, /g-1/);

    const again = sim(['up', file, '--state', state]);
    assert.equal(again.status, 2, 'a second up on the same state is refused');

    const down = sim(['down', '--state', state]);
    assert.equal(down.status, 0, down.stderr);
    assert.deepEqual(processesMentioning(state), []);
    assert.equal(sim(['status', '--state', state]).status, 1);
  });
});
