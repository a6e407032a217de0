import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { HostSimulator } from '../../../sim/hosts/host-simulator.js';
import { FakeEffects } from './fake-effects.js';
import { hostSpec, run, startTestSim } from './ssh-client.js';

const installKubeadm = async (sim: HostSimulator, host: string, version: string): Promise<void> => {
  const r = await run(sim, host, `sudo -n apt-get install -y --allow-change-held-packages kubeadm=${version}-1.1`);
  assert.equal(r.code, 0, r.stderr);
};

describe('kubeadm on a simulated host, over SSH', () => {
  it('kubeadm version -o short and kubelet --version report the installed packages', async (t) => {
    const { sim } = await startTestSim(t);
    await installKubeadm(sim, 'w-1', '1.33.7');
    assert.equal((await run(sim, 'w-1', 'kubeadm version -o short')).stdout, 'v1.33.7\n');
    assert.equal((await run(sim, 'w-1', 'kubelet --version')).stdout, 'Kubernetes v1.32.4\n');
    assert.match((await run(sim, 'w-1', 'kubeadm version -o json')).stdout, /"gitVersion": "v1\.33\.7"/);
  });

  it('upgrade apply with --yes upgrades through the cluster effects and records the version', async (t) => {
    const { sim, effects } = await startTestSim(t);
    await installKubeadm(sim, 'cp-1', '1.33.7');
    const r = await run(sim, 'cp-1', 'sudo -n kubeadm upgrade apply v1.33.7 --yes');
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /\[upgrade\/successful\] SUCCESS! Your cluster was upgraded to "v1\.33\.7"\. Enjoy!/);
    assert.deepEqual(effects.callsOf('upgradeControlPlane'), [['cp-1', '1.33.7', { recordClusterVersion: true }]]);
    assert.equal(effects.cluster, '1.33.7');
    assert.equal(sim.state('cp-1').nodeConfigVersion, '1.33.7');

    // Re-applying the cluster's own version is allowed (kubeadm refuses only lower ones).
    const again = await run(sim, 'cp-1', 'sudo -n kubeadm upgrade apply 1.33.7 -y');
    assert.equal(again.code, 0, again.stderr);
    assert.equal(effects.callsOf('upgradeControlPlane').length, 2);
  });

  const refusals: [string, string, string, RegExp, (sim: HostSimulator, effects: FakeEffects) => Promise<void>][] = [
    [
      'kubeadm older than the target',
      'cp-1',
      'sudo kubeadm upgrade apply v1.33.7 --yes',
      /the --version argument is invalid due to these fatal errors:\n\n\t- Specified version to upgrade to "v1\.33\.7" is higher than the kubeadm version "v1\.32\.4"\. Upgrade kubeadm first using the tool you used to install kubeadm\n/,
      async () => undefined,
    ],
    [
      'a skipped minor',
      'cp-1',
      'sudo kubeadm upgrade apply v1.34.2 --yes',
      /- Specified version to upgrade to "v1\.34\.2" is too high; kubeadm can upgrade only 1 minor version at a time/,
      async (sim) => installKubeadm(sim, 'cp-1', '1.34.2'),
    ],
    [
      'a version older than the cluster',
      'cp-1',
      'sudo kubeadm upgrade apply v1.33.0 --yes',
      /- Specified version to upgrade to "v1\.33\.0" is equal to or lower than the cluster version "v1\.33\.7"\. Downgrades are not supported yet\n\nCan be bypassed if you pass the --force flag/,
      async (sim, effects) => {
        effects.cluster = '1.33.7';
        await installKubeadm(sim, 'cp-1', '1.33.7');
      },
    ],
    [
      'a worker (no admin.conf)',
      'w-1',
      'sudo kubeadm upgrade apply v1.33.7 --yes',
      /open \/etc\/kubernetes\/admin\.conf: no such file or directory/,
      async (sim) => installKubeadm(sim, 'w-1', '1.33.7'),
    ],
    [
      'no --yes in a non-interactive session',
      'cp-1',
      'sudo kubeadm upgrade apply v1.33.7',
      /won't proceed; the user didn't answer \(Y\|y\) in order to continue/,
      async (sim) => installKubeadm(sim, 'cp-1', '1.33.7'),
    ],
    [
      'without root',
      'cp-1',
      'kubeadm upgrade apply v1.33.7 --yes',
      /\[ERROR IsPrivilegedUser\]: user is not running as root/,
      async (sim) => installKubeadm(sim, 'cp-1', '1.33.7'),
    ],
  ];
  for (const [name, host, command, message, prepare] of refusals) {
    it(`upgrade apply refuses ${name} and changes nothing`, async (t) => {
      const { sim, effects } = await startTestSim(t);
      await prepare(sim, effects);
      const clusterBefore = effects.cluster;
      const r = await run(sim, host, command);
      assert.equal(r.code, 1, `exit code; stdout: ${r.stdout}`);
      assert.match(r.stderr, message);
      assert.deepEqual(effects.callsOf('upgradeControlPlane'), []);
      assert.equal(effects.cluster, clusterBefore);
      assert.equal(sim.state(host).nodeConfigVersion, null);
    });
  }

  it('upgrade node: a second control plane follows the cluster version; kubeadm must be upgraded first', async (t) => {
    const effects = new FakeEffects('1.32.4', ['cp-1', 'cp-2']);
    const { sim } = await startTestSim(t, { effects, hosts: [hostSpec('cp-1', 'control-plane'), hostSpec('cp-2', 'control-plane')] });
    await installKubeadm(sim, 'cp-1', '1.33.7');
    assert.equal((await run(sim, 'cp-1', 'sudo kubeadm upgrade apply v1.33.7 --yes')).code, 0);

    const early = await run(sim, 'cp-2', 'sudo kubeadm upgrade node');
    assert.equal(early.code, 1);
    assert.match(early.stderr, /the kubeadm version "v1\.32\.4" is lower than the cluster version "v1\.33\.7"\. Upgrade kubeadm first/);
    assert.equal(effects.callsOf('upgradeControlPlane').length, 1);

    await installKubeadm(sim, 'cp-2', '1.33.7');
    const r = await run(sim, 'cp-2', 'sudo kubeadm upgrade node');
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /\[upgrade\] The configuration for this node was successfully updated!/);
    assert.deepEqual(effects.callsOf('upgradeControlPlane')[1], ['cp-2', '1.33.7', { recordClusterVersion: false }]);
    assert.deepEqual(await effects.controlPlaneVersions('cp-2'), {
      'kube-apiserver': '1.33.7',
      'kube-controller-manager': '1.33.7',
      'kube-scheduler': '1.33.7',
    });
  });

  it('upgrade node on a worker records the kubelet config version and touches no static pods', async (t) => {
    const { sim, effects } = await startTestSim(t);
    effects.cluster = '1.33.7';
    await installKubeadm(sim, 'w-1', '1.33.7');
    const r = await run(sim, 'w-1', 'sudo kubeadm upgrade node');
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /Skipping phase\. Not a control plane node\.[\s\S]*successfully updated!/);
    assert.equal(sim.state('w-1').nodeConfigVersion, '1.33.7');
    assert.deepEqual(effects.callsOf('upgradeControlPlane'), []);
  });

  it('upgrade plan prints the component table for the target', async (t) => {
    const { sim, effects } = await startTestSim(t);
    await installKubeadm(sim, 'cp-1', '1.33.7');
    const r = await run(sim, 'cp-1', 'sudo kubeadm upgrade plan');
    assert.equal(r.code, 0, r.stderr);
    assert.match(
      r.stdout,
      /\[upgrade\/versions\] Cluster version: v1\.32\.4\n\[upgrade\/versions\] kubeadm version: v1\.33\.7\n\[upgrade\/versions\] Target version: v1\.33\.7/,
    );
    assert.match(r.stdout, /^kube-apiserver {12}cp-1 {3}v1\.32\.4 {3}v1\.33\.7$/m);
    assert.match(r.stdout, /^kubelet {5}cp-1 {3}v1\.32\.4 {3}v1\.33\.7$/m);
    assert.match(r.stdout, /\tkubeadm upgrade apply v1\.33\.7\n/);
    assert.deepEqual(effects.callsOf('upgradeControlPlane'), [], 'plan changes nothing');

    const tooFar = await run(sim, 'cp-1', 'sudo kubeadm upgrade plan v1.34.2');
    assert.equal(tooFar.code, 1);
    assert.match(tooFar.stderr, /too high; kubeadm can upgrade only 1 minor version at a time/);

    effects.cluster = '1.33.7';
    assert.match((await run(sim, 'cp-1', 'sudo kubeadm upgrade plan')).stdout, /Awesome, you're up-to-date! Enjoy!/);
  });

  it('certs check-expiration -o json (the model): v1alpha3 CertificateExpirationInfo, as root on a control plane only', async (t) => {
    const { sim } = await startTestSim(t, {
      hosts: [hostSpec('cp-1', 'control-plane', { certificateDays: 10 }), hostSpec('w-1', 'worker')],
    });
    const r = await run(sim, 'cp-1', 'sudo -n kubeadm certs check-expiration -o json');
    assert.equal(r.code, 0, r.stderr);
    const info = JSON.parse(r.stdout) as {
      kind: string;
      apiVersion: string;
      certificates: { name: string; expirationDate: string; residualTime: number; caName: string }[];
      certificateAuthorities: { name: string; expirationDate: string }[];
    };
    assert.deepEqual([info.kind, info.apiVersion], ['CertificateExpirationInfo', 'output.kubeadm.k8s.io/v1alpha3']);
    const apiserver = info.certificates.find((c) => c.name === 'apiserver');
    assert.equal(apiserver?.caName, 'ca');
    const days = (Date.parse(apiserver?.expirationDate ?? '') - Date.now()) / 86_400_000;
    assert.ok(days > 9.9 && days <= 10, `${days} days left, as certificateDays says`);
    assert.ok(Math.abs((apiserver?.residualTime ?? 0) - days * 86_400) < 5);
    assert.deepEqual(
      info.certificateAuthorities.map((c) => c.name),
      ['ca', 'etcd-ca', 'front-proxy-ca'],
    );
    const asUser = await run(sim, 'cp-1', 'kubeadm certs check-expiration -o json');
    assert.equal(asUser.code, 1, 'the keys are root’s');
    assert.match(asUser.stderr, /permission denied/);
    assert.equal((await run(sim, 'w-1', 'sudo -n kubeadm certs check-expiration -o json')).code, 1, 'a worker has no PKI');
  });
});
