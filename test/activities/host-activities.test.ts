import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { MockActivityEnvironment } from '@temporalio/testing';
import { createHostActivities } from '../../activities/host-activities.js';
import { createClusterResolver } from '../../activities/host-address.js';
import { existsSync } from 'node:fs';
import { hostCommands, onHostPath } from '../helpers/sim-cluster.js';
import { clusterWorld } from '../helpers/sim-world.js';
import { failsWith } from '../helpers/failures.js';

// The hosts' site mirror offers every minor (the local-mirror variant): these are the package and
// kubeadm steps; the install guide's one-minor file and its switch are package-repository.test.ts's.
const DESCRIPTION = `
name: hosttest
version: 1.32.4
repository: [1.32.4, 1.32.9, 1.33.7]
packageRepository: local-mirror
rebootSeconds: 3
latencies: {kubeletRestart: 300}
nodes:
  - {name: cp, role: control-plane, count: 2}
  - {name: worker, role: worker}
  - {name: slow, role: worker, latencies: {kubeletRestart: 4000}}
  - {name: fetch, role: worker, latencies: {packageDownload: 1500, aptInstall: 100}}
`;
const cluster = 'hosttest';

describe('host activities against the simulated cluster (real SSH hosts, real API)', () => {
  const tc = clusterWorld(DESCRIPTION);
  let acts: ReturnType<typeof createHostActivities>;
  before(async () => {
    acts = createHostActivities({ clusters: createClusterResolver(tc.clustersDir) });
  });

  const { log, during } = hostCommands(() => tc);
  const images = async (node: string) =>
    (
      await tc.kube.core.listNamespacedPod({
        namespace: 'kube-system',
        labelSelector: 'tier=control-plane',
        fieldSelector: `spec.nodeName=${node}`,
      })
    ).items
      .filter((p) => p.metadata?.labels?.component !== 'etcd')
      .map((p) => `${p.metadata?.labels?.component}=${p.spec?.containers[0]?.image?.split(':')[1]}`)
      .sort();
  const nodeInfo = async (node: string) => {
    const n = await tc.kube.core.readNode({ name: node });
    return { ready: n.status?.conditions?.find((c) => c.type === 'Ready')?.status, kubelet: n.status?.nodeInfo?.kubeletVersion };
  };
  const changing = (cmds: string[]) => cmds.filter((c) => c.startsWith('sudo '));

  it("availableVersions parses the host's apt-cache madison, newest first (a mirror file: no look ahead)", async () => {
    const { result, ran } = await during('cp-1', () => acts.availableVersions({ cluster, node: 'cp-1' }));
    assert.deepEqual(result, ['1.33.7', '1.32.9', '1.32.4']);
    assert.deepEqual(ran, ['cat /etc/apt/sources.list.d/kubernetes.list', 'apt-cache madison kubeadm']);
  });

  it('rejects invalid input before touching the host', async () => {
    const before = log('cp-1').length;
    await failsWith(acts.installPackages({ cluster, node: 'cp-1', version: '1.33.7; reboot', packages: ['kubeadm'] }), 'Invalid');
    await failsWith(acts.installPackages({ cluster, node: 'cp-1', version: '1.33.7', packages: ['bash' as 'kubeadm'] }), 'Invalid');
    await failsWith(acts.kubeadmUpgradePlan({ cluster, node: '../cp-1', version: '1.33.7' }), 'Invalid');
    assert.equal(log('cp-1').length, before);
  });

  it('installPackages unholds, installs the exact version, holds; a second run changes nothing', async () => {
    const first = await during('cp-1', () => acts.installPackages({ cluster, node: 'cp-1', version: 'v1.33.7', packages: ['kubeadm'] }));
    assert.deepEqual(first.result, {
      node: 'cp-1',
      version: '1.33.7',
      installed: ['kubeadm'],
      held: ['kubeadm'],
      configured: [],
      packageVersions: { kubeadm: '1.33.7-1.1' },
    });
    assert.deepEqual(changing(first.ran), [
      'sudo -n DEBIAN_FRONTEND=noninteractive apt-mark unhold kubeadm',
      'sudo -n DEBIAN_FRONTEND=noninteractive apt-get install -y -q -o DPkg::Lock::Timeout=120 -o Dpkg::Options::=--force-confold kubeadm=1.33.7-1.1',
      'sudo -n DEBIAN_FRONTEND=noninteractive apt-mark hold kubeadm',
    ]);
    const state = tc.sim.hosts.state('cp-1');
    assert.equal(state.packages.kubeadm, '1.33.7-1.1');
    assert.equal(state.packages.kubelet, '1.32.4-1.1', 'only the package asked for');
    assert.ok(state.holds.includes('kubeadm'));

    const second = await during('cp-1', () => acts.installPackages({ cluster, node: 'cp-1', version: '1.33.7', packages: ['kubeadm'] }));
    assert.deepEqual(second.result.installed, []);
    assert.deepEqual(second.result.held, []);
    assert.deepEqual(changing(second.ran), [], `only reads ran: ${second.ran.join(' | ')}`);
    assert.deepEqual(tc.sim.hosts.state('cp-1'), state);
  });

  it('host commands share one SSH connection per host across activity executions, until it has been idle', async () => {
    const kubelet = ['kubelet', 'kubectl'] as ('kubelet' | 'kubectl')[];
    // Earlier tests' connection to cp-2, if any, closes after its idle time (2 s outside the worker process).
    await waitUntil(() => tc.sim.hosts.connectionsOpen('cp-2') === 0);
    const opened = tc.sim.hosts.connectionsAccepted('cp-2');
    const first = await during('cp-2', () =>
      new MockActivityEnvironment().run(acts.installPackages, { cluster, node: 'cp-2', version: '1.32.9', packages: kubelet }),
    );
    assert.deepEqual((first.result as { installed: string[] }).installed, ['kubelet', 'kubectl']);
    assert.ok(first.ran.length >= 5, `an install runs several commands: ${first.ran.join(' | ')}`);
    assert.equal(tc.sim.hosts.connectionsAccepted('cp-2') - opened, 1, 'one handshake for the whole install');
    const second = await during('cp-2', () =>
      new MockActivityEnvironment().run(acts.installPackages, { cluster, node: 'cp-2', version: '1.32.9', packages: kubelet }),
    );
    assert.deepEqual((second.result as { installed: string[] }).installed, []);
    assert.ok(second.ran.length >= 2, second.ran.join(' | '));
    assert.equal(tc.sim.hosts.connectionsAccepted('cp-2') - opened, 1, 'the next activity execution reuses the connection');
    // A call from outside an activity (no cancellation signal) shares it too.
    await acts.installPackages({ cluster, node: 'cp-2', version: '1.32.9', packages: kubelet });
    assert.equal(tc.sim.hosts.connectionsAccepted('cp-2') - opened, 1);
    assert.equal(tc.sim.hosts.connectionsOpen('cp-2'), 1);
    await waitUntil(() => tc.sim.hosts.connectionsOpen('cp-2') === 0);
    await new MockActivityEnvironment().run(acts.installPackages, { cluster, node: 'cp-2', version: '1.32.9', packages: kubelet });
    assert.equal(tc.sim.hosts.connectionsAccepted('cp-2') - opened, 2, 'closed once idle: the host is met afresh');
  });

  it("downloadPackages fetches the archives into apt's cache and installs nothing; the install after it fetches nothing", async () => {
    const node = 'fetch';
    const before = tc.sim.hosts.state(node);
    const packages = ['kubelet', 'kubectl'] as ('kubelet' | 'kubectl')[];
    const download = await during(node, () => acts.downloadPackages({ cluster, node, version: '1.33.7', packages }));
    assert.deepEqual(download.result, {
      node,
      version: '1.33.7',
      downloaded: ['kubelet', 'kubectl'],
      packageVersions: { kubelet: '1.33.7-1.1', kubectl: '1.33.7-1.1' },
    });
    assert.deepEqual(changing(download.ran), [
      'sudo -n DEBIAN_FRONTEND=noninteractive apt-get install -y -q --download-only --allow-change-held-packages -o DPkg::Lock::Timeout=120 kubelet=1.33.7-1.1 kubectl=1.33.7-1.1',
    ]);
    const after = tc.sim.hosts.state(node);
    assert.deepEqual(
      [after.packages, after.holds, after.kubelet],
      [before.packages, before.holds, before.kubelet],
      'nothing installed, holds kept',
    );
    assert.ok(before.holds.includes('kubelet'), 'the held package was downloaded all the same');
    for (const p of packages) assert.ok(existsSync(onHostPath(tc, node, `/var/cache/apt/archives/${p}_1.33.7-1.1_amd64.deb`)), p);

    const took = (cmd: RegExp) => tc.sim.hosts.commandLog(node).findLast((e) => cmd.test(e.command))?.durationMs ?? NaN;
    assert.ok(took(/apt-get install .*--download-only/) >= 1500, 'the download took the host its packageDownload time');
    const install = await acts.installPackages({ cluster, node, version: '1.33.7', packages });
    assert.deepEqual(install.installed, ['kubelet', 'kubectl']);
    assert.equal(tc.sim.hosts.state(node).packages.kubelet, '1.33.7-1.1');
    const installMs = took(/apt-get install -y -q -o/);
    assert.ok(installMs < 1000, `the install took its archives from the cache: ${installMs} ms`);
    // Nothing left to fetch once installed.
    assert.deepEqual((await acts.downloadPackages({ cluster, node, version: '1.33.7', packages })).downloaded, []);
  });

  it('installPackages repairs a missing hold (a crash after install) without reinstalling', async () => {
    // Unheld, as an attempt interrupted between install and hold would leave it.
    const access = createClusterResolver(tc.clustersDir)(cluster);
    await access.shell.exec('cp-1', ['apt-mark', 'unhold', 'kubeadm'], { timeoutMs: 10_000, sudo: true });
    const { result, ran } = await during('cp-1', () =>
      acts.installPackages({ cluster, node: 'cp-1', version: '1.33.7', packages: ['kubeadm'] }),
    );
    assert.deepEqual([result.installed, result.held], [[], ['kubeadm']]);
    assert.deepEqual(changing(ran), ['sudo -n DEBIAN_FRONTEND=noninteractive apt-mark hold kubeadm']);
  });

  it('installPackages refuses a downgrade and a version the repository lacks (VersionNotAvailable)', async () => {
    const down = await during('cp-1', () =>
      failsWith(acts.installPackages({ cluster, node: 'cp-1', version: '1.32.9', packages: ['kubeadm'] }), 'Invalid'),
    );
    assert.match(down.result.message, /refusing to downgrade kubeadm on cp-1 from 1\.33\.7-1\.1/);
    assert.deepEqual(changing(down.ran), []);
    const missing = await during('worker', () =>
      failsWith(acts.installPackages({ cluster, node: 'worker', version: '1.34.2', packages: ['kubelet'] }), 'VersionNotAvailable'),
    );
    assert.equal(missing.result.nonRetryable, true);
    assert.deepEqual(
      changing(missing.ran),
      [
        'sudo -n DEBIAN_FRONTEND=noninteractive apt-get update -q -o Dir::Etc::SourceList=/etc/apt/sources.list.d/kubernetes.list -o Dir::Etc::SourceParts=- -o APT::Get::List-Cleanup=0 -o DPkg::Lock::Timeout=120',
      ],
      'the lists are refreshed once, nothing installed',
    );
    assert.equal(tc.sim.hosts.state('worker').packages.kubelet, '1.32.4-1.1');
  });

  it('downgradePackages (a reversible trial rolled back): --allow-downgrades, the hold lifted for the install only, nothing when there', async () => {
    // Back where the file's other tests expect cp-1's kubeadm, whatever this test finds.
    after(() => acts.installPackages({ cluster, node: 'cp-1', version: '1.33.7', packages: ['kubeadm'] }));
    const { result, ran } = await during('cp-1', () =>
      acts.downgradePackages({ cluster, node: 'cp-1', version: '1.32.9', packages: ['kubeadm'] }),
    );
    assert.deepEqual([result.installed, result.held, result.packageVersions.kubeadm], [['kubeadm'], ['kubeadm'], '1.32.9-1.1']);
    assert.deepEqual(changing(ran), [
      'sudo -n DEBIAN_FRONTEND=noninteractive apt-mark unhold kubeadm',
      'sudo -n DEBIAN_FRONTEND=noninteractive apt-get install -y -q -o DPkg::Lock::Timeout=120 --allow-downgrades -o Dpkg::Options::=--force-confold kubeadm=1.32.9-1.1',
      'sudo -n DEBIAN_FRONTEND=noninteractive apt-mark hold kubeadm',
    ]);
    assert.equal(tc.sim.hosts.state('cp-1').packages.kubeadm, '1.32.9-1.1');
    assert.ok((await acts.readPackageHolds({ cluster, node: 'cp-1' })).held.includes('kubeadm'), 'held again');
    const again = await during('cp-1', () => acts.downgradePackages({ cluster, node: 'cp-1', version: '1.32.9', packages: ['kubeadm'] }));
    assert.deepEqual([again.result.installed, changing(again.ran)], [[], []]);
  });

  it("kubeadmUpgradePlan returns the plan parsed from the host's real-shaped output, changing nothing", async () => {
    const before = await images('cp-1');
    const { result, ran } = await during('cp-1', () => acts.kubeadmUpgradePlan({ cluster, node: 'cp-1', version: '1.33.7' }));
    assert.deepEqual(ran, ['sudo -n kubeadm upgrade plan v1.33.7']);
    assert.equal(result.clusterVersion, 'v1.32.4');
    assert.equal(result.kubeadmVersion, 'v1.33.7');
    assert.equal(result.targetVersion, 'v1.33.7');
    assert.equal(result.upToDate, false);
    const [upgrade] = result.upgrades;
    assert.equal(upgrade?.applyCommand, 'kubeadm upgrade apply v1.33.7');
    assert.deepEqual(
      upgrade?.kubelets.map((k) => [k.node, k.current, k.target]),
      [['cp-1', 'v1.32.4', 'v1.33.7']],
    );
    assert.deepEqual(
      upgrade?.components.find((c) => c.component === 'kube-apiserver'),
      { component: 'kube-apiserver', node: 'cp-1', count: 1, current: 'v1.32.4', target: 'v1.33.7' },
    );
    assert.equal(result.componentConfigs.length, 2);
    assert.deepEqual(await images('cp-1'), before);
  });

  it("kubeadmUpgradePlan surfaces kubeadm's refusal as HostCommandFailed with exit code and stderr tail", async () => {
    const err = await failsWith(acts.kubeadmUpgradePlan({ cluster, node: 'cp-2', version: '1.33.7' }), 'HostCommandFailed');
    const [details] = err.details as [{ exitCode: number; stderrTail: string; node: string }];
    assert.equal(details.exitCode, 1);
    assert.equal(details.node, 'cp-2');
    assert.match(details.stderrTail, /higher than the kubeadm version "v1\.32\.4"/);
  });

  it('kubeadmUpgradeApply runs `kubeadm upgrade apply` exactly once across two calls', async () => {
    const first = await acts.kubeadmUpgradeApply({ cluster, node: 'cp-1', version: '1.33.7' });
    assert.equal(first.ran, true);
    assert.deepEqual(await images('cp-1'), ['kube-apiserver=v1.33.7', 'kube-controller-manager=v1.33.7', 'kube-scheduler=v1.33.7']);
    const cm = await tc.kube.core.readNamespacedConfigMap({ name: 'kubeadm-config', namespace: 'kube-system' });
    assert.match(cm.data?.ClusterConfiguration ?? '', /kubernetesVersion: v1\.33\.7/);
    const second = await during('cp-1', () => acts.kubeadmUpgradeApply({ cluster, node: 'cp-1', version: '1.33.7' }));
    assert.equal(second.result.ran, false);
    assert.deepEqual(second.ran, [], 'the check is made through the API only');
    assert.equal(log('cp-1').filter((c) => c.includes('kubeadm upgrade apply')).length, 1);
  });

  it('kubeadmUpgradeNode moves the second control plane once; refuses a version the cluster is not at', async () => {
    await acts.installPackages({ cluster, node: 'cp-2', version: '1.33.7', packages: ['kubeadm'] });
    await failsWith(acts.kubeadmUpgradeNode({ cluster, node: 'cp-2', version: '1.32.9' }), 'Invalid');
    const env = new MockActivityEnvironment();
    const beats: unknown[] = [];
    env.on('heartbeat', (d: unknown) => beats.push(d));
    const first = (await env.run(acts.kubeadmUpgradeNode, { cluster, node: 'cp-2', version: '1.33.7' })) as Awaited<
      ReturnType<typeof acts.kubeadmUpgradeNode>
    >;
    assert.equal(first.ran, true);
    // The wait for the new mirror pods heartbeats too: it may outlast the heartbeat timeout.
    assert.ok(
      beats.some((b) => JSON.stringify(b).includes('wait for control-plane pods at v1.33.7')),
      JSON.stringify(beats),
    );
    assert.deepEqual(await images('cp-2'), ['kube-apiserver=v1.33.7', 'kube-controller-manager=v1.33.7', 'kube-scheduler=v1.33.7']);
    const second = await during('cp-2', () => acts.kubeadmUpgradeNode({ cluster, node: 'cp-2', version: '1.33.7' }));
    assert.equal(second.result.ran, false);
    assert.deepEqual(second.ran, []);
    assert.equal(log('cp-2').filter((c) => c.includes('kubeadm upgrade node')).length, 1);
  });

  it('restartKubelet refuses without the package, then restarts once and waits for Ready at the version (heartbeating)', async () => {
    await failsWith(acts.restartKubelet({ cluster, node: 'cp-1', version: '1.33.7', timeoutSeconds: 30 }), 'Invalid');
    await acts.installPackages({ cluster, node: 'cp-1', version: '1.33.7', packages: ['kubelet', 'kubectl'] });
    const env = new MockActivityEnvironment();
    const beats: unknown[] = [];
    env.on('heartbeat', (d: unknown) => beats.push(d));
    const first = await during(
      'cp-1',
      () =>
        env.run(acts.restartKubelet, { cluster, node: 'cp-1', version: '1.33.7', timeoutSeconds: 30 }) as ReturnType<
          typeof acts.restartKubelet
        >,
    );
    assert.equal(first.result.restarted, true);
    assert.deepEqual(changing(first.ran), ['sudo -n systemctl daemon-reload', 'sudo -n systemctl restart kubelet']);
    assert.deepEqual(await nodeInfo('cp-1'), { ready: 'True', kubelet: 'v1.33.7' });
    assert.ok(beats.length >= 1, 'heartbeats while waiting');
    const second = await during('cp-1', () => acts.restartKubelet({ cluster, node: 'cp-1', version: '1.33.7', timeoutSeconds: 30 }));
    assert.equal(second.result.restarted, false);
    assert.deepEqual(second.ran, []);
  });

  it('restartKubelet fails NodeNotReady when the node is not back in time; a later call finds it done', async () => {
    await acts.installPackages({ cluster, node: 'slow', version: '1.33.7', packages: ['kubelet'] });
    const err = await failsWith(acts.restartKubelet({ cluster, node: 'slow', version: '1.33.7', timeoutSeconds: 1 }), 'NodeNotReady');
    assert.match(err.message, /slow was not Ready at kubelet v1\.33\.7 within 1 s/);
    await new Promise((r) => setTimeout(r, 6000));
    assert.equal((await acts.restartKubelet({ cluster, node: 'slow', version: '1.33.7', timeoutSeconds: 30 })).restarted, false);
  });

  it('refuses a control-plane downgrade and any reboot command but the reboot forms, running nothing', async () => {
    const before = log('cp-1').length;
    const err = await failsWith(acts.kubeadmUpgradeApply({ cluster, node: 'cp-1', version: '1.32.9' }), 'Invalid');
    assert.match(err.message, /never downgrades/);
    await failsWith(acts.rebootNode({ cluster, node: 'cp-1', command: ['rm', '-rf', '/'], timeoutSeconds: 10 }), 'Invalid');
    await failsWith(acts.rebootNode({ cluster, node: 'cp-1', command: ['shutdown -r', 'now'], timeoutSeconds: 10 }), 'Invalid');
    assert.equal(log('cp-1').length, before);
  });

  it('rebootNode reboots, waits for SSH and Ready; a retry after the command went out only waits', async () => {
    const first = await during('worker', () => acts.rebootNode({ cluster, node: 'worker', timeoutSeconds: 60 }));
    assert.equal(first.result.bootIdChanged, true, 'the simulated host boots with a new /proc boot_id');
    assert.equal(first.ran.filter((c) => c === 'sudo -n reboot').length, 1);
    assert.equal((await nodeInfo('worker')).ready, 'True');
    // A retry whose previous attempt heartbeated "issued" and "seen down" must not reboot again.
    const env = new MockActivityEnvironment({ heartbeatDetails: { phase: 'reboot-issued', bootId: null, seenDown: true } });
    const retry = await during(
      'worker',
      () => env.run(acts.rebootNode, { cluster, node: 'worker', timeoutSeconds: 30 }) as ReturnType<typeof acts.rebootNode>,
    );
    assert.equal(retry.ran.filter((c) => c.includes('reboot')).length, 0);
  });
});

async function waitUntil(cond: () => boolean, timeoutMs = 8000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!cond()) {
    assert.ok(Date.now() < deadline, 'condition not met in time');
    await new Promise((r) => setTimeout(r, 50));
  }
}
