import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { connect, exec, hostSpec, run, startTestSim } from './ssh-client.js';

const INSTALL = 'sudo -n DEBIAN_FRONTEND=noninteractive apt-get install -y';
// apt's own rules (holds, downgrades, the dpkg lock, globs) on hosts whose site mirror offers every
// minor at once (hostSpec's local-mirror variant). The install guide's one-minor repository, and its
// switch, are apt-repository.test.ts's.

describe('apt on a simulated host, over SSH', () => {
  it('apt-get update lists the site mirror and succeeds', async (t) => {
    const { sim } = await startTestSim(t);
    const r = await run(sim, 'w-1', 'sudo apt-get update');
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /^Hit:1 http:\/\/apt-mirror\.sim\.invalid\/kubernetes\/all\/deb {2}InRelease$/m);
    assert.match(r.stdout, /Reading package lists\.\.\.\n$/);
  });

  it('apt-cache madison lists every offered version, newest first, in apt columns', async (t) => {
    const { sim } = await startTestSim(t);
    const r = await run(sim, 'w-1', 'apt-cache madison kubeadm');
    assert.equal(r.code, 0);
    assert.deepEqual(r.stdout.trimEnd().split('\n'), [
      '   kubeadm | 1.34.2-1.1 | http://apt-mirror.sim.invalid/kubernetes/all/deb  Packages',
      '   kubeadm | 1.33.7-1.1 | http://apt-mirror.sim.invalid/kubernetes/all/deb  Packages',
      '   kubeadm | 1.33.0-1.1 | http://apt-mirror.sim.invalid/kubernetes/all/deb  Packages',
      '   kubeadm | 1.32.4-1.1 | http://apt-mirror.sim.invalid/kubernetes/all/deb  Packages',
    ]);
    const policy = await run(sim, 'w-1', 'apt-cache policy kubelet');
    assert.match(policy.stdout, /Installed: 1\.32\.4-1\.1\n {2}Candidate: 1\.34\.2-1\.1/);
    assert.match(policy.stdout, / \*\*\* 1\.32\.4-1\.1 500/);
  });

  it('holds block a change with -y; --allow-change-held-packages installs; the hold stays', async (t) => {
    const { sim } = await startTestSim(t);
    assert.deepEqual((await run(sim, 'w-1', 'apt-mark showhold')).stdout, 'kubeadm\nkubelet\nkubectl\n');

    const blocked = await run(sim, 'w-1', `${INSTALL} kubeadm=1.33.7-1.1`);
    assert.equal(blocked.code, 100);
    assert.match(blocked.stdout, /The following held packages will be changed:\n {2}kubeadm\n/);
    assert.match(blocked.stderr, /^E: Held packages were changed and -y was used without --allow-change-held-packages\.\n$/);
    assert.equal(sim.state('w-1').packages.kubeadm, '1.32.4-1.1');

    const ok = await run(sim, 'w-1', `${INSTALL} --allow-change-held-packages kubeadm=1.33.7-1.1`);
    assert.equal(ok.code, 0, ok.stderr);
    assert.match(
      ok.stdout,
      /Unpacking kubeadm \(1\.33\.7-1\.1\) over \(1\.32\.4-1\.1\) \.\.\.\nSetting up kubeadm \(1\.33\.7-1\.1\) \.\.\./,
    );
    assert.equal(sim.state('w-1').packages.kubeadm, '1.33.7-1.1');
    assert.deepEqual(sim.state('w-1').holds, ['kubeadm', 'kubelet', 'kubectl']);
    assert.equal((await run(sim, 'w-1', 'kubeadm version -o short')).stdout, 'v1.33.7\n');
  });

  it('installing the installed version again is a no-op, even when held', async (t) => {
    const { sim } = await startTestSim(t);
    const r = await run(sim, 'w-1', `${INSTALL} kubeadm=1.32.4-1.1`);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /kubeadm is already the newest version \(1\.32\.4-1\.1\)\.\n0 upgraded, 0 newly installed/);
    const log = sim.commandLog('w-1');
    assert.equal(log.at(-1)?.exitCode, 0);
  });

  it('a quoted glob picks the matching version; an unknown version is exit 100 and changes nothing', async (t) => {
    const { sim } = await startTestSim(t);
    const r = await run(sim, 'w-1', `sudo apt-mark unhold kubeadm kubelet && ${INSTALL} 'kubeadm=1.33.7-*' 'kubelet=1.33.*'`);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /Canceled hold on kubeadm\.\nCanceled hold on kubelet\.\n/);
    assert.equal(sim.state('w-1').packages.kubeadm, '1.33.7-1.1');
    assert.equal(sim.state('w-1').packages.kubelet, '1.33.7-1.1', 'the newest match of 1.33.*');

    const unknown = await run(sim, 'w-1', `${INSTALL} kubectl=1.33.9-1.1 kubeadm=1.34.2-1.1`);
    assert.equal(unknown.code, 100);
    assert.equal(unknown.stderr, "E: Version '1.33.9-1.1' for 'kubectl' was not found\n");
    assert.equal(sim.state('w-1').packages.kubeadm, '1.33.7-1.1', 'nothing installed when one version is unknown');

    const badGlob = await run(sim, 'w-1', `${INSTALL} 'kubeadm=1.35.*'`);
    assert.equal(badGlob.code, 100);
    assert.match(badGlob.stderr, /E: Version '1\.35\.\*' for 'kubeadm' was not found/);
  });

  it('refuses a downgrade with -y, unknown packages, and works only as root', async (t) => {
    const { sim } = await startTestSim(t);
    await run(sim, 'w-1', `${INSTALL} --allow-change-held-packages kubelet=1.33.0-1.1`);
    const down = await run(sim, 'w-1', `${INSTALL} --allow-change-held-packages kubelet=1.32.4-1.1`);
    assert.equal(down.code, 100);
    assert.match(down.stderr, /E: Packages were downgraded and -y was used without --allow-downgrades\./);
    assert.equal(sim.state('w-1').packages.kubelet, '1.33.0-1.1');

    const unknown = await run(sim, 'w-1', `${INSTALL} nginx`);
    assert.deepEqual([unknown.code, unknown.stderr], [100, 'E: Unable to locate package nginx\n']);

    const notRoot = await run(sim, 'w-1', 'apt-get install -y --allow-change-held-packages kubeadm=1.33.7-1.1');
    assert.equal(notRoot.code, 100);
    assert.match(notRoot.stderr, /Permission denied/);
    const holdNotRoot = await run(sim, 'w-1', 'apt-mark unhold kubeadm');
    assert.equal(holdNotRoot.code, 100);
    assert.equal(sim.state('w-1').packages.kubeadm, '1.32.4-1.1');
    assert.deepEqual(sim.state('w-1').holds, ['kubeadm', 'kubelet', 'kubectl']);
  });

  it('an install takes the aptInstall latency and holds the dpkg lock meanwhile', async (t) => {
    const { sim } = await startTestSim(t, { hosts: [hostSpec('w-1', 'worker', { latencies: { aptInstall: 500 } })] });
    const [a, b] = [await connect(sim, 'w-1'), await connect(sim, 'w-1')]; // logged in up front: only the execs race
    t.after(() => [a, b].forEach((c) => c.end()));
    const started = Date.now();
    const first = exec(a, `${INSTALL} --allow-change-held-packages kubeadm=1.33.7-1.1`);
    await new Promise((r) => setTimeout(r, 150));
    const second = await exec(b, `${INSTALL} --allow-change-held-packages kubectl=1.33.7-1.1`);
    assert.equal(second.code, 100);
    assert.match(second.stderr, /^E: Could not get lock \/var\/lib\/dpkg\/lock-frontend\./);
    assert.equal((await first).code, 0);
    assert.ok(Date.now() - started >= 500, `took ${Date.now() - started} ms`);
    assert.deepEqual([sim.state('w-1').packages.kubeadm, sim.state('w-1').packages.kubectl], ['1.33.7-1.1', '1.32.4-1.1']);
  });

  it('apt-mark hold and unhold report like apt-mark', async (t) => {
    const { sim } = await startTestSim(t);
    const r = await run(
      sim,
      'w-1',
      'sudo apt-mark unhold kubectl; sudo apt-mark unhold kubectl; sudo apt-mark hold kubectl kubeadm; apt-mark showhold',
    );
    assert.equal(r.code, 0);
    assert.equal(
      r.stdout,
      'Canceled hold on kubectl.\nkubectl was already not on hold.\nkubectl set on hold.\nkubeadm was already set on hold.\nkubeadm\nkubelet\nkubectl\n',
    );
  });
});
