import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { packageInstallCounts, readDpkgLog } from '../../../sim/hosts/dpkg-database.js';
import { HostStore } from '../../../sim/hosts/host-state.js';
import { hostSpec, run, startTestSim, tcpProbe } from './ssh-client.js';

const INSTALL =
  'sudo -n DEBIAN_FRONTEND=noninteractive apt-get install -y --allow-change-held-packages kubelet=1.33.7-1.1 kubectl=1.33.7-1.1';

async function untilConnected(port: number, timeoutMs = 10_000): Promise<void> {
  const started = Date.now();
  while ((await tcpProbe(port)) !== 'connected') {
    assert.ok(Date.now() - started < timeoutMs, `host still down after ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

describe('a host rebooting in the middle of a package install (rebootDuring)', () => {
  it('drops the session mid-install, leaves the packages unpacked and dpkg interrupted until dpkg --configure -a', async (t) => {
    const { sim, stateDir } = await startTestSim(t, {
      hosts: [hostSpec('w-1', 'worker', { faults: [{ kind: 'rebootDuring', command: 'apt-get install' }] })],
    });
    const { port } = sim.hosts[0]!;
    assert.equal((await run(sim, 'w-1', 'dpkg --audit')).stdout, '', 'a healthy host: dpkg --audit prints nothing');

    const cut = await run(sim, 'w-1', INSTALL);
    assert.equal(cut.code, null, 'no exit status: the host went down');
    assert.match(cut.stdout, /Unpacking kubelet \(1\.33\.7-1\.1\) over \(1\.32\.4-1\.1\)/);
    assert.doesNotMatch(cut.stdout, /Setting up/);
    const down = sim.state('w-1');
    assert.deepEqual(
      down.packages,
      { kubeadm: '1.32.4-1.1', kubelet: '1.33.7-1.1', kubectl: '1.33.7-1.1' },
      'the status file records the unpacked versions',
    );
    assert.deepEqual(down.unconfigured, ['kubelet', 'kubectl']);
    assert.equal(sim.commandLog('w-1').at(-1)?.exitCode, null, 'logged as cut short, not as a success');

    await untilConnected(port);
    // The reboot booted the kubelet binary that is on disk now.
    assert.equal((await run(sim, 'w-1', 'kubelet --version')).stdout, 'Kubernetes v1.33.7\n');
    assert.match(
      (await run(sim, 'w-1', 'apt-cache policy kubelet')).stdout,
      /Installed: 1\.33\.7-1\.1/,
      'apt-cache shows the unpacked version as installed',
    );
    const audit = await run(sim, 'w-1', 'dpkg --audit');
    assert.equal(
      audit.stdout,
      [
        'The following packages have been unpacked but not yet configured.',
        'They must be configured using dpkg --configure or the configure',
        'menu option in dselect for them to work:',
        ' kubelet              Node agent for Kubernetes clusters',
        ' kubectl              Command-line utility for interacting with a Kubernetes cluster',
        '',
        '',
      ].join('\n'),
    );

    const refused = await run(sim, 'w-1', 'sudo -n DEBIAN_FRONTEND=noninteractive apt-get install -y kubeadm=1.33.7-1.1');
    assert.deepEqual(
      [refused.code, refused.stderr],
      [100, "E: dpkg was interrupted, you must manually run 'sudo dpkg --configure -a' to correct the problem.\n"],
    );
    assert.equal((await run(sim, 'w-1', 'dpkg --configure -a')).code, 2, 'configuring needs root');

    const repaired = await run(sim, 'w-1', 'sudo -n dpkg --configure -a');
    assert.deepEqual([repaired.code, repaired.stdout], [0, 'Setting up kubelet (1.33.7-1.1) ...\nSetting up kubectl (1.33.7-1.1) ...\n']);
    assert.equal(sim.state('w-1').unconfigured, undefined);
    assert.equal((await run(sim, 'w-1', 'dpkg --audit')).stdout, '');
    const again = await run(sim, 'w-1', INSTALL);
    assert.equal(again.code, 0, again.stderr);
    assert.match(again.stdout, /kubelet is already the newest version \(1\.33\.7-1\.1\)/);

    // dpkg.log: each new version unpacked once and configured once, across the reboot.
    const counts = packageInstallCounts(readDpkgLog(stateDir, 'w-1'));
    assert.deepEqual(counts, {
      'kubelet 1.33.7-1.1': { unpacked: 1, configured: 1 },
      'kubectl 1.33.7-1.1': { unpacked: 1, configured: 1 },
    });
  });

  it('a simulator restarted while the host is down keeps the interrupted state', async (t) => {
    const { sim, stateDir } = await startTestSim(t, {
      hosts: [hostSpec('w-1', 'worker', { faults: [{ kind: 'rebootDuring', command: 'apt-get install' }] })],
    });
    await run(sim, 'w-1', INSTALL);
    await sim.stop();
    assert.deepEqual(HostStore.open(stateDir, 'w-1')?.state.unconfigured, ['kubelet', 'kubectl']);
  });

  it('any other command is cut before it changed anything; times counts down', async (t) => {
    const { sim, stateDir } = await startTestSim(t, { hosts: [hostSpec('w-1', 'worker')] });
    const { port } = sim.hosts[0]!;
    sim.setFault('w-1', { kind: 'rebootDuring', command: 'apt-mark hold', times: 1 });
    const cut = await run(sim, 'w-1', 'sudo -n apt-mark unhold kubelet && sudo -n apt-mark hold kubelet');
    assert.equal(cut.code, null);
    await untilConnected(port);
    assert.ok(!sim.state('w-1').holds.includes('kubelet'), 'the hold never happened');
    const r = await run(sim, 'w-1', 'sudo -n apt-mark hold kubelet');
    assert.equal(r.code, 0, 'the fault was used up');
    // An ordinary install goes through unpack and configure, and logs both.
    assert.equal((await run(sim, 'w-1', 'sudo -n apt-get install -y --allow-change-held-packages kubeadm=1.33.7-1.1')).code, 0);
    assert.deepEqual(sim.state('w-1').unconfigured, undefined);
    assert.deepEqual(packageInstallCounts(readDpkgLog(stateDir, 'w-1')), { 'kubeadm 1.33.7-1.1': { unpacked: 1, configured: 1 } });
  });
});
