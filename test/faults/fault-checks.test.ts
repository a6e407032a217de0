import assert from 'node:assert/strict';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, it } from 'node:test';
import type { CommandObserver } from '../../sim/hosts/command-runner.js';
import { hostDir } from '../../sim/hosts/host-state.js';
import type { Simulation } from '../../sim/simulation.js';
import { tempDir } from '../helpers/temp-dir.js';
import { EXTRA_TRIES_PER_TARGET, tryAgainAfter } from './kill-schedule.js';
import { trackManifests } from './manifest-checks.js';
import { replayHistories } from './replay-check.js';

/**
 * The fault harness's two new final checks, each shown to bite: the per-node manifests (as the last
 * completed kubeadm on the host wrote them) and the replay of a run's histories with the current bundle.
 */

const manifest = (component: string, version: string) =>
  `apiVersion: v1\nkind: Pod\nspec:\n  containers:\n  - command: [${component}]\n    image: registry.k8s.io/${component}:v${version}\n`;

/** The parts of a simulation the manifest tracker reads: the hosts' files, their roles, their command events. */
function hostsWithManifests(stateDir: string) {
  const listeners: CommandObserver[] = [];
  const sim = {
    stateDir,
    description: {
      nodes: [
        { name: 'cp-1', role: 'control-plane' },
        { name: 'worker-1', role: 'worker' },
      ],
    },
    hosts: {
      onCommand: (l: CommandObserver) => {
        listeners.push(l);
        return () => undefined;
      },
    },
  } as unknown as Simulation;
  const dir = join(hostDir(stateDir, 'cp-1'), 'root', 'etc', 'kubernetes', 'manifests');
  mkdirSync(dir, { recursive: true });
  const write = (version: string, etcd = '3.6.5-0') => {
    for (const c of ['kube-apiserver', 'kube-controller-manager', 'kube-scheduler'])
      writeFileSync(join(dir, `${c}.yaml`), manifest(c, version));
    writeFileSync(join(dir, 'etcd.yaml'), `spec:\n  containers:\n  - image: registry.k8s.io/etcd:${etcd}\n`);
  };
  const kubeadmEnds = (command: string) =>
    listeners.forEach((l) =>
      l({ phase: 'end', host: 'cp-1', command, exitCode: 0, time: Date.now(), hungUp: false } as Parameters<CommandObserver>[0]),
    );
  return { sim, dir, write, kubeadmEnds };
}

describe('fault harness checks', () => {
  it('passes manifests that are what the last completed kubeadm upgrade wrote, at the target', () => {
    const h = hostsWithManifests(tempDir('manifests'));
    const tracker = trackManifests(h.sim);
    h.write('1.34.4');
    h.kubeadmEnds('sudo -n kubeadm upgrade apply v1.34.4 --yes');
    assert.deepEqual(tracker.check('1.34.4'), []);
  });

  it('flags a manifest changed after kubeadm, one at another version, an emulation left, a host kubeadm never completed on', () => {
    const h = hostsWithManifests(tempDir('manifests'));
    const tracker = trackManifests(h.sim);
    assert.deepEqual(tracker.check('1.34.4').filter((p) => p.includes('no kubeadm upgrade completed')).length, 1);
    h.write('1.33.13');
    h.kubeadmEnds('sudo -n kubeadm upgrade apply v1.33.13 --yes');
    assert.ok(
      tracker.check('1.34.4').some((p) => /kube-apiserver\.yaml runs registry\.k8s\.io\/kube-apiserver:v1\.33\.13, not v1\.34\.4/.test(p)),
    );
    h.write('1.34.4');
    h.kubeadmEnds('sudo -n kubeadm upgrade apply v1.34.4 --yes');
    const file = join(h.dir, 'kube-scheduler.yaml');
    writeFileSync(file, `${readFileSync(file, 'utf8')}    - --emulated-version=1.33\n`);
    const problems = tracker.check('1.34.4');
    assert.ok(
      problems.some((p) => p.includes("kube-scheduler changed after the last completed 'sudo -n kubeadm upgrade apply v1.34.4 --yes'")),
      problems.join('\n'),
    );
    assert.ok(
      problems.some((p) => p.includes('kube-scheduler.yaml still emulates')),
      problems.join('\n'),
    );
  });

  it('replays a saved history, and reports one whose command sequence the bundle would not make', async () => {
    const dir = fileURLToPath(new URL('../../../test/replay/histories/', import.meta.url));
    const history = JSON.parse(readFileSync(join(dir, 'upgrade_e2e_1.33.7_worker-3.json'), 'utf8'));
    const changed = structuredClone(history);
    const scheduled = changed.events.find(
      (e: { activityTaskScheduledEventAttributes?: unknown }) => e.activityTaskScheduledEventAttributes,
    );
    scheduled.activityTaskScheduledEventAttributes.activityType.name = 'somethingElse';
    const id = 'upgrade/e2e/1.33.7/worker-3';
    const result = await replayHistories([
      { workflowId: id, history },
      { workflowId: id, history: changed },
    ]);
    assert.equal(result.histories, 2);
    assert.equal(result.problems.length, 1, result.problems.join('\n'));
    assert.match(result.problems[0] ?? '', /does not replay with the current bundle/);
  });

  it('tries a missed target again right after it, a bounded number of times, and never a random kill', () => {
    const queue = [{ target: 'apply' }, { target: 'drain' }, { target: 'apt-install' }];
    const tries = new Map<string, number>();
    assert.equal(tryAgainAfter(queue, 1, tries), true);
    // The missed drain goes again before apt-install, which keeps its turn.
    assert.deepEqual(
      queue.map((q) => q.target),
      ['apply', 'drain', 'drain', 'apt-install'],
    );
    for (let i = 1; i < EXTRA_TRIES_PER_TARGET; i++) assert.equal(tryAgainAfter(queue, 2, tries), true);
    assert.equal(tryAgainAfter(queue, 2, tries), false, 'no more tries once the extra ones are used');
    assert.equal(queue.filter((q) => q.target === 'drain').length, 1 + EXTRA_TRIES_PER_TARGET);
    assert.equal(tryAgainAfter([{ target: 'random' }], 0, tries), false);
  });
});
