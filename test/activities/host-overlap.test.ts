import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import { MockActivityEnvironment } from '@temporalio/testing';
import { createHostActivities } from '../../activities/host-activities.js';
import { createClusterResolver } from '../../activities/host-address.js';
import { clusterWorld } from '../helpers/sim-world.js';

/**
 * A worker dies while a host command runs; the command outlives its SSH session (no terminal, no
 * SIGHUP: the `finishes` hangup policy) and is still running when Temporal hands the activity to a
 * restarted worker. The retry must not run the command a second time beside it.
 */
const DESCRIPTION = `
name: overlap
version: 1.32.4
repository: [1.32.4, 1.33.7]
# A site mirror with every minor: installPackages under faults; the per-minor switch is package-repository.test.ts's.
packageRepository: local-mirror
latencies: {kubeadmApply: 2500, aptInstall: 2500}
nodes:
  - {name: cp, role: control-plane}
  - {name: worker, role: worker}
`;
const cluster = 'overlap';

describe('a retry meets the command its dead worker left running', () => {
  const tc = clusterWorld(DESCRIPTION);
  let acts: ReturnType<typeof createHostActivities>;
  before(async () => {
    acts = createHostActivities({ clusters: createClusterResolver(tc.clustersDir) });
    tc.sim.hosts.setHangupPolicy(() => 'finishes');
  });

  const completed = (node: string, pattern: RegExp) =>
    tc.sim.hosts.commandLog(node).filter((e) => pattern.test(e.command) && e.exitCode === 0);

  /** Runs `attempt` as an activity, cancels it (closing its SSH channel) `afterMs` in, as a worker's death does. */
  async function abandon(attempt: () => Promise<unknown>, afterMs: number): Promise<void> {
    const env = new MockActivityEnvironment();
    const first = env.run(attempt).catch(() => undefined);
    await new Promise((r) => setTimeout(r, afterMs));
    env.cancel();
    await first;
  }

  it('apt-get install: the retry waits for the install in flight and installs nothing more', async () => {
    const input = { cluster, node: 'worker', version: '1.33.7', packages: ['kubeadm' as const] };
    await abandon(() => acts.installPackages(input), 1200);
    assert.equal(tc.sim.hosts.state('worker').packages.kubeadm, '1.32.4-1.1', 'the abandoned install is still running');
    const retry = (await new MockActivityEnvironment({ attempt: 2 }).run(() => acts.installPackages(input))) as Awaited<
      ReturnType<typeof acts.installPackages>
    >;
    assert.deepEqual(retry.installed, [], 'the retry found kubeadm installed');
    assert.equal(tc.sim.hosts.state('worker').packages.kubeadm, '1.33.7-1.1');
    assert.equal(
      completed('worker', /apt-get install .*kubeadm=1\.33\.7/).length,
      1,
      tc.sim.hosts
        .commandLog('worker')
        .map((e) => e.command)
        .join('\n'),
    );
  });

  it('kubeadm upgrade apply: the retry waits for the apply in flight and does not run a second one', async () => {
    await acts.installPackages({ cluster, node: 'cp', version: '1.33.7', packages: ['kubeadm'] });
    const input = { cluster, node: 'cp', version: '1.33.7' };
    await abandon(() => acts.kubeadmUpgradeApply(input), 800);
    const retry = (await new MockActivityEnvironment({ attempt: 2 }).run(() => acts.kubeadmUpgradeApply(input))) as Awaited<
      ReturnType<typeof acts.kubeadmUpgradeApply>
    >;
    assert.equal(retry.ran, false, 'the retry found the control plane upgraded');
    assert.equal(
      completed('cp', /kubeadm upgrade apply/).length,
      1,
      tc.sim.hosts
        .commandLog('cp')
        .map((e) => e.command)
        .join('\n'),
    );
  });
});
