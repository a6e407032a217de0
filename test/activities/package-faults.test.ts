import assert from 'node:assert/strict';
import { appendFileSync } from 'node:fs';
import { join } from 'node:path';
import { before, describe, it } from 'node:test';
import { ApplicationFailure } from '@temporalio/common';
import { createHostActivities } from '../../activities/host-activities.js';
import { createClusterResolver } from '../../activities/host-address.js';
import { waitFor } from '../../sim/cluster/wait-for.js';
import { packageInstallCounts, readDpkgLog } from '../../sim/hosts/dpkg-database.js';
import { clusterWorld } from '../helpers/sim-world.js';
import { sshExec } from '../helpers/ssh-exec.js';

const DESCRIPTION = `
name: pkgfaults
version: 1.32.4
repository: [1.32.4, 1.33.7]
# A site mirror with every minor: installPackages under faults; the per-minor switch is package-repository.test.ts's.
packageRepository: local-mirror
rebootSeconds: 1
nodes:
  - {name: cp, role: control-plane}
  - {name: worker, role: worker, count: 4}
`;
const cluster = 'pkgfaults';
const FETCH_FAILED =
  "E: Failed to fetch https://pkgs.k8s.io/core:/stable:/v1.33/deb/amd64/kubelet_1.33.7-1.1_amd64.deb  Temporary failure resolving 'pkgs.k8s.io'\nE: Unable to fetch some archives, maybe run apt-get update or try with --fix-missing?";

async function failure(p: Promise<unknown>): Promise<ApplicationFailure> {
  const err = await p.then(
    () => assert.fail('expected a failure'),
    (e: unknown) => e,
  );
  assert.ok(err instanceof ApplicationFailure, `expected an ApplicationFailure, got ${String(err)}`);
  return err;
}

/**
 * installPackages against real SSH hosts when the host misbehaves: each call here is one attempt
 * of the activity; the caller plays the retry policy (retryable failures are called again).
 */
describe('installPackages through host faults (simulated hosts, one call = one attempt)', () => {
  const tc = clusterWorld(DESCRIPTION);
  let acts: ReturnType<typeof createHostActivities>;
  before(async () => {
    // A short install timeout, as an operator would set one for a fast local mirror.
    appendFileSync(join(tc.clustersDir, `${cluster}.yaml`), 'timeouts: {packageInstallSeconds: 3}\n');
    acts = createHostActivities({ clusters: createClusterResolver(tc.clustersDir) });
  });

  const log = (node: string) => tc.sim.hosts.commandLog(node);
  const changing = (node: string, from: number) =>
    log(node)
      .slice(from)
      .map((e) => e.command)
      .filter((c) => c.startsWith('sudo '));
  /** `apt-mark showhold` through the host, as an operator would read it. */
  const showhold = (node: string) => sshExec(tc.sim.endpoints, node, 'apt-mark showhold');
  const counts = (node: string) => packageInstallCounts(readDpkgLog(tc.sim.stateDir, node));
  const install = (node: string) => acts.installPackages({ cluster, node, version: '1.33.7', packages: ['kubelet', 'kubectl'] });
  const INSTALLED_ONCE = { 'kubelet 1.33.7-1.1': { unpacked: 1, configured: 1 }, 'kubectl 1.33.7-1.1': { unpacked: 1, configured: 1 } };

  it('a mirror that fails to resolve is HostCommandTransient (retryable); the next attempt installs', async () => {
    tc.sim.hosts.setFault('worker-1', { kind: 'fail', command: 'apt-get install', times: 1, exitCode: 100, stderr: FETCH_FAILED });
    const err = await failure(install('worker-1'));
    assert.equal(err.type, 'HostCommandTransient');
    assert.equal(err.nonRetryable, false);
    assert.match(err.message, /exited 100: E: Unable to fetch some archives/);
    assert.equal(tc.sim.hosts.state('worker-1').packages.kubelet, '1.32.4-1.1');
    const result = await install('worker-1');
    assert.deepEqual([result.installed, result.configured], [['kubelet', 'kubectl'], []]);
    assert.deepEqual(counts('worker-1'), INSTALLED_ONCE);
  });

  it('a failure apt does not explain as passing stays HostCommandFailed (not retried: the operator decides)', async () => {
    tc.sim.hosts.setFault('worker-2', { kind: 'fail', command: 'apt-get install', times: 1 });
    const before = log('worker-2').length;
    const err = await failure(install('worker-2'));
    assert.equal(err.type, 'HostCommandFailed');
    assert.equal(err.nonRetryable, true);
    // The node now waits for the operator: with the guide's holds in place, as before the call.
    assert.match(err.message, /; kubelet kubectl held again$/);
    assert.deepEqual(err.details?.at(-1), { heldAgain: ['kubelet', 'kubectl'] });
    assert.equal((await showhold('worker-2')).stdout, 'kubeadm\nkubelet\nkubectl\n');
    assert.deepEqual(
      changing('worker-2', before).map((c) => c.replace(/^sudo -n DEBIAN_FRONTEND=noninteractive /, '').replace(/ -o .*? kube/, ' … kube')),
      ['apt-mark unhold kubelet kubectl', 'apt-get install -y -q … kubelet=1.33.7-1.1 kubectl=1.33.7-1.1', 'apt-mark hold kubelet kubectl'],
    );
    assert.equal(tc.sim.hosts.state('worker-2').packages.kubelet, '1.32.4-1.1');
  });

  it("readPackageHolds reads apt-mark's holds; restorePackageHolds puts back only the missing ones, and adds none", async () => {
    const node = 'worker-1'; // installed and held by the first test
    const unhold = await sshExec(tc.sim.endpoints, node, 'sudo apt-mark unhold kubelet kubectl');
    assert.equal(unhold.code, 0, unhold.stderr);
    assert.deepEqual(await acts.readPackageHolds({ cluster, node }), { node, held: ['kubeadm'], via: 'apt-mark' });
    const before = log(node).length;
    const restored = await acts.restorePackageHolds({ cluster, node, held: ['kubelet', 'kubectl'] });
    assert.deepEqual(restored, { node, held: ['kubeadm', 'kubelet', 'kubectl'], putBack: ['kubelet', 'kubectl'], missing: [] });
    assert.equal((await showhold(node)).stdout, 'kubeadm\nkubelet\nkubectl\n');
    assert.deepEqual(changing(node, before), ['sudo -n DEBIAN_FRONTEND=noninteractive apt-mark hold kubelet kubectl']);
    const again = await acts.restorePackageHolds({ cluster, node, held: ['kubelet', 'kubectl'] });
    assert.deepEqual(again.putBack, [], 'idempotent');
    // Held before: none. A hold the node has now (a finished step's) is not taken away.
    assert.deepEqual((await acts.restorePackageHolds({ cluster, node, held: [] })).held, ['kubeadm', 'kubelet', 'kubectl']);
    assert.deepEqual(changing(node, before).length, 1, 'nothing run as root once they are in place');
  });

  it('a hung apt-get install is abandoned at timeouts.packageInstallSeconds (HostCommandTimedOut, retryable); the next attempt installs', async () => {
    tc.sim.hosts.setFault('worker-3', { kind: 'hang', command: 'apt-get install', times: 1 });
    const started = Date.now();
    const err = await failure(install('worker-3'));
    assert.equal(err.type, 'HostCommandTimedOut');
    assert.equal(err.nonRetryable, false);
    assert.match(err.message, /'apt-get install -y' on worker-3 did not finish within 3 s; channel closed/);
    assert.ok(Date.now() - started >= 3000, 'waited the configured timeout');
    // The host logs the command once it saw the channel close, just after the client gave up.
    await waitFor('the hung install in the host log', () => log('worker-3').some((e) => e.command.includes('apt-get install')), 10_000, 50);
    assert.equal(
      log('worker-3').find((e) => e.command.includes('apt-get install'))?.exitCode,
      null,
      'the host saw the channel close before the command finished',
    );
    const result = await install('worker-3');
    assert.deepEqual(result.installed, ['kubelet', 'kubectl']);
    assert.deepEqual(counts('worker-3'), INSTALLED_ONCE);
  });

  it('a reboot in the middle of apt-get install: HostUnreachable, then the retry configures what dpkg unpacked and installs nothing twice', async () => {
    tc.sim.hosts.setFault('worker-4', { kind: 'rebootDuring', command: 'apt-get install' });
    const err = await failure(install('worker-4'));
    assert.equal(err.type, 'HostUnreachable');
    assert.match(err.message, /connection lost while running 'apt-get install -y'/);
    assert.deepEqual(tc.sim.hosts.state('worker-4').unconfigured, ['kubelet', 'kubectl'], 'unpacked, not configured');

    // The retry policy calls again; while the host boots the calls fail HostUnreachable too.
    const before = log('worker-4').length;
    let result;
    for (let attempt = 2; !result; attempt++) {
      assert.ok(attempt < 30, 'the host never came back');
      result = await install('worker-4').catch(async (e: unknown) => {
        if (!(e instanceof ApplicationFailure) || e.type !== 'HostUnreachable') throw e;
        await new Promise((r) => setTimeout(r, 500));
        return undefined;
      });
    }
    assert.deepEqual(
      { installed: result.installed, configured: result.configured, held: result.held },
      { installed: [], configured: ['kubelet', 'kubectl'], held: ['kubelet', 'kubectl'] },
    );
    assert.deepEqual(
      changing('worker-4', before),
      [
        'sudo -n DEBIAN_FRONTEND=noninteractive dpkg --configure -a',
        'sudo -n DEBIAN_FRONTEND=noninteractive apt-mark hold kubelet kubectl',
      ],
      'repaired, not installed again',
    );
    const state = tc.sim.hosts.state('worker-4');
    assert.equal(state.unconfigured, undefined);
    assert.deepEqual([state.packages.kubelet, state.packages.kubectl], ['1.33.7-1.1', '1.33.7-1.1']);
    assert.deepEqual(counts('worker-4'), INSTALLED_ONCE);
    const again = await install('worker-4');
    assert.deepEqual([again.installed, again.configured, again.held], [[], [], []], 'a later call finds it done');
  });

  it("someone else's interrupted install (not ours) is repaired only when apt-get refuses because of it", async () => {
    // kubeadm cut mid-install, as by an earlier reboot; then kubelet/kubectl are asked for.
    tc.sim.hosts.setFault('worker-2', { kind: 'rebootDuring', command: 'apt-get install' });
    await failure(acts.installPackages({ cluster, node: 'worker-2', version: '1.33.7', packages: ['kubeadm'] }));
    let result;
    for (let attempt = 1; !result; attempt++) {
      assert.ok(attempt < 30, 'the host never came back');
      const before = log('worker-2').length;
      result = await install('worker-2').catch(async (e: unknown) => {
        if (!(e instanceof ApplicationFailure) || e.type !== 'HostUnreachable') throw e;
        await new Promise((r) => setTimeout(r, 500));
        return undefined;
      });
      if (result) {
        const ran = changing('worker-2', before);
        assert.deepEqual(
          ran
            .filter((c) => /apt-get install|dpkg --configure/.test(c))
            .map((c) => c.replace(/^.* (apt-get install|dpkg --configure -a).*$/, '$1')),
          ['apt-get install', 'dpkg --configure -a', 'apt-get install'],
          ran.join('\n'),
        );
      }
    }
    assert.deepEqual([result.installed, result.configured], [['kubelet', 'kubectl'], []]);
    assert.equal(tc.sim.hosts.state('worker-2').unconfigured, undefined);
    assert.deepEqual(counts('worker-2'), { ...INSTALLED_ONCE, 'kubeadm 1.33.7-1.1': { unpacked: 1, configured: 1 } });
  });
});
