import assert from 'node:assert/strict';
import { chmodSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { before, describe, it } from 'node:test';
import { createHostActivities } from '../../activities/host-activities.js';
import { createClusterResolver } from '../../activities/host-address.js';
import { failsWith } from '../helpers/failures.js';
import { asRoot, hostCommands, onHostPath } from '../helpers/sim-cluster.js';
import { clusterWorld } from '../helpers/sim-world.js';

// RHEL-family hosts at 1.32 with the install guide's kubernetes.repo; the archive has 1.32, 1.33 and 1.34.
const DESCRIPTION = `
name: dnftest
version: 1.32.4
packageManager: dnf
repository: [1.32.4, 1.32.9, 1.33.7, 1.34.2]
nodes:
  - {name: cp, role: control-plane, count: 1}
  - {name: worker, role: worker, count: 6}
`;
const cluster = 'dnftest';
const REPO = '/etc/yum.repos.d/kubernetes.repo';
const guideRepo = (minor: string) =>
  [
    '[kubernetes]',
    'name=Kubernetes',
    `baseurl=https://pkgs.k8s.io/core:/stable:/v${minor}/rpm/`,
    'enabled=1',
    'gpgcheck=1',
    `gpgkey=https://pkgs.k8s.io/core:/stable:/v${minor}/rpm/repodata/repomd.xml.key`,
    'exclude=kubelet kubeadm kubectl cri-tools kubernetes-cni',
    '',
  ].join('\n');

describe('the package repository and packages of a RHEL-family node through dnf (activities against the simulated hosts)', () => {
  const tc = clusterWorld(DESCRIPTION);
  let acts: ReturnType<typeof createHostActivities>;
  before(async () => {
    acts = createHostActivities({ clusters: createClusterResolver(tc.clustersDir) });
  });

  const onHost = (node: string, path: string) => onHostPath(tc, node, path);
  const repo = (node: string) => readFileSync(onHost(node, REPO), 'utf8');
  const { during } = hostCommands(() => tc);

  it('availableVersions offers the next minors, each probed from a repository directory of its own as the SSH user', async () => {
    const { result, ran } = await during('cp-1', () => acts.availableVersions({ cluster, node: 'cp-1' }));
    assert.deepEqual(result, ['1.34.2', '1.33.7', '1.32.9', '1.32.4']);
    assert.deepEqual(asRoot(ran), [], 'no command as root');
    assert.equal(
      ran.filter((c) => /^dnf list .*--setopt=reposdir=\/tmp\/skewless-dnf-probe-/.test(c)).length,
      3,
      'one probe each of 1.33, 1.34 and the 1.35 that is not there',
    );
    assert.equal(repo('cp-1'), guideRepo('1.32'));
    assert.deepEqual(
      readdirSync(onHost('cp-1', '/tmp')).filter((f) => f.startsWith('skewless-')),
      [],
      'the probes leave nothing behind',
    );
  });

  it("pointPackageRepository seds baseurl and gpgkey to the hop's minor and refreshes; installPackages lifts the exclude for its install only", async () => {
    const point = await during('worker-1', () => acts.pointPackageRepository({ cluster, node: 'worker-1', version: '1.33.7' }));
    assert.deepEqual(point.result, {
      node: 'worker-1',
      file: REPO,
      minor: '1.33',
      changed: true,
      previous: 'baseurl=https://pkgs.k8s.io/core:/stable:/v1.32/rpm/',
    });
    assert.deepEqual(asRoot(point.ran), [
      `sudo -n sed -i s,/core:/stable:/v1.32/,/core:/stable:/v1.33/,g ${REPO}`,
      'sudo -n dnf makecache -q --repo=kubernetes',
    ]);
    assert.equal(repo('worker-1'), guideRepo('1.33'), 'the exclude= line (the hold) stays');

    const install = await during('worker-1', () =>
      acts.installPackages({ cluster, node: 'worker-1', version: '1.33.7', packages: ['kubeadm', 'kubelet', 'kubectl'] }),
    );
    assert.deepEqual(install.result, {
      node: 'worker-1',
      version: '1.33.7',
      installed: ['kubeadm', 'kubelet', 'kubectl'],
      held: [],
      configured: [],
      packageVersions: { kubeadm: '1.33.7-150500.1.1', kubelet: '1.33.7-150500.1.1', kubectl: '1.33.7-150500.1.1' },
    });
    assert.deepEqual(asRoot(install.ran), [
      "sudo -n dnf install -y -q --disableexcludes=kubernetes '--setopt=*.skip_if_unavailable=True' --setopt=kubernetes.skip_if_unavailable=False kubeadm-1.33.7-150500.1.1 kubelet-1.33.7-150500.1.1 kubectl-1.33.7-150500.1.1",
    ]);
    assert.equal(tc.sim.hosts.state('worker-1').packages.kubelet, '1.33.7-150500.1.1');

    const again = await during('worker-1', () =>
      acts.installPackages({ cluster, node: 'worker-1', version: '1.33.7', packages: ['kubeadm'] }),
    );
    assert.deepEqual(again.result.installed, []);
    assert.deepEqual(
      again.ran.filter((c) => /^(sudo -n )?dnf /.test(c)),
      [],
      'at the version already: dnf is not even asked',
    );
  });

  it('downloadPackages fetches into the system cache with dnf --downloadonly as root, installing nothing; the install empties it', async () => {
    const node = 'worker-6';
    await acts.pointPackageRepository({ cluster, node, version: '1.33.7' });
    const before = tc.sim.hosts.state(node).packages;
    const download = await during(node, () =>
      acts.downloadPackages({ cluster, node, version: '1.33.7', packages: ['kubelet', 'kubectl'] }),
    );
    assert.deepEqual(download.result.downloaded, ['kubelet', 'kubectl']);
    assert.deepEqual(asRoot(download.ran), [
      "sudo -n dnf install -y -q --disableexcludes=kubernetes '--setopt=*.skip_if_unavailable=True' --setopt=kubernetes.skip_if_unavailable=False --downloadonly kubelet-1.33.7-150500.1.1 kubectl-1.33.7-150500.1.1",
    ]);
    assert.deepEqual(tc.sim.hosts.state(node).packages, before, 'no rpm transaction');
    const cache = onHost(node, '/var/cache/dnf/kubernetes/packages');
    assert.deepEqual(readdirSync(cache).sort(), ['kubectl-1.33.7-150500.1.1.x86_64.rpm', 'kubelet-1.33.7-150500.1.1.x86_64.rpm']);
    await acts.installPackages({ cluster, node, version: '1.33.7', packages: ['kubelet', 'kubectl'] });
    assert.equal(tc.sim.hosts.state(node).packages.kubelet, '1.33.7-150500.1.1');
    assert.deepEqual(readdirSync(cache), [], 'keepcache=0: the transaction took them out of the cache');
  });

  it('never a downgrade, which dnf install would do without asking', async () => {
    await acts.pointPackageRepository({ cluster, node: 'worker-2', version: '1.32.9' });
    await acts.installPackages({ cluster, node: 'worker-2', version: '1.32.9', packages: ['kubeadm'] });
    const { ran } = await during('worker-2', async () => {
      const err = await failsWith(acts.installPackages({ cluster, node: 'worker-2', version: '1.32.4', packages: ['kubeadm'] }), 'Invalid');
      assert.match(err.message, /^refusing to downgrade kubeadm on worker-2 from 1\.32\.9-150500\.1\.1 to 1\.32\.4/);
    });
    assert.deepEqual(asRoot(ran), []);
    assert.equal(tc.sim.hosts.state('worker-2').packages.kubeadm, '1.32.9-150500.1.1');
  });

  it("downgradePackages (a reversible trial rolled back): dnf install of the exact older version, kubernetes.repo's exclude= untouched", async () => {
    const repo = () => readFileSync(onHost('worker-2', '/etc/yum.repos.d/kubernetes.repo'), 'utf8');
    const before = repo();
    const { result, ran } = await during('worker-2', () =>
      acts.downgradePackages({ cluster, node: 'worker-2', version: '1.32.4', packages: ['kubeadm'] }),
    );
    assert.deepEqual(result.installed, ['kubeadm']);
    assert.deepEqual(asRoot(ran), [
      "sudo -n dnf install -y -q --disableexcludes=kubernetes '--setopt=*.skip_if_unavailable=True' --setopt=kubernetes.skip_if_unavailable=False kubeadm-1.32.4-150500.1.1",
    ]);
    assert.equal(tc.sim.hosts.state('worker-2').packages.kubeadm, '1.32.4-150500.1.1');
    assert.equal(repo(), before, 'the hold (exclude=) is the file, left as it was');
  });

  it('a minor the mirror does not have: VersionNotAvailable, the file put back as it was, nothing installed', async () => {
    const { ran } = await during('worker-3', async () => {
      const err = await failsWith(acts.pointPackageRepository({ cluster, node: 'worker-3', version: '1.35.0' }), 'VersionNotAvailable');
      assert.equal(
        err.message,
        `worker-3: the mirror of ${REPO} has no v1.35 repository (404): the file was put back to v1.32, nothing installed`,
      );
    });
    assert.equal(repo('worker-3'), guideRepo('1.32'));
    assert.deepEqual(
      ran.filter((c) => c.includes('dnf install')),
      [],
    );
  });

  it('a kubernetes.repo of another layout or that the SSH user cannot read: stopped with node, file and why, nothing as root', async () => {
    const odd = `${guideRepo('1.32')}\n[kubernetes-extras]\nbaseurl=https://example.invalid/el9/\nenabled=0\n`;
    writeFileSync(onHost('worker-4', REPO), odd);
    chmodSync(onHost('worker-5', REPO), 0o600);
    const { ran } = await during('worker-4', async () => {
      const err = await failsWith(acts.pointPackageRepository({ cluster, node: 'worker-4', version: '1.33.7' }), 'RepositoryLayoutUnknown');
      assert.match(
        err.message,
        new RegExp(
          `^worker-4: ${REPO} offers no 1\\.33\\.x and skewless does not rewrite it: it has the section\\(s\\) \\[kubernetes\\] \\[kubernetes-extras\\]`,
        ),
      );
    });
    assert.deepEqual(asRoot(ran), []);
    assert.equal(repo('worker-4'), odd);
    const err = await failsWith(acts.availableVersions({ cluster, node: 'worker-5', to: '1.33' }), 'RepositoryUnreadable');
    assert.match(err.message, new RegExp(`^cannot read ${REPO} on worker-5 as skewless: Permission denied`));
  });
  it("the hold is kubernetes.repo's exclude=: a failed install leaves it as it was; a hold lost otherwise is reported, never written", async () => {
    const node = 'worker-3'; // its file put back to v1.32 by the test before
    assert.deepEqual(await acts.readPackageHolds({ cluster, node }), { node, held: ['kubeadm', 'kubelet', 'kubectl'], via: 'exclude' });
    await acts.pointPackageRepository({ cluster, node, version: '1.33.7' });
    tc.sim.hosts.setFault(node, { kind: 'fail', command: 'dnf install', exitCode: 1, stderr: 'Error: Transaction test error' });
    const failed = await during(node, () =>
      failsWith(acts.installPackages({ cluster, node, version: '1.33.7', packages: ['kubelet', 'kubectl'] }), 'HostCommandFailed'),
    );
    assert.deepEqual(asRoot(failed.ran), [
      "sudo -n dnf install -y -q --disableexcludes=kubernetes '--setopt=*.skip_if_unavailable=True' --setopt=kubernetes.skip_if_unavailable=False kubelet-1.33.7-150500.1.1 kubectl-1.33.7-150500.1.1",
    ]);
    assert.equal(repo(node), guideRepo('1.33'), 'exclude= as the guide wrote it: lifted for the one command only');
    const restored = await during(node, () => acts.restorePackageHolds({ cluster, node, held: ['kubeadm', 'kubelet', 'kubectl'] }));
    assert.deepEqual(restored.result, { node, held: ['kubeadm', 'kubelet', 'kubectl'], putBack: [], missing: [] });

    // Someone took kubelet out of the line: the restore says so and leaves the file to the operator.
    const edited = guideRepo('1.33').replace('exclude=kubelet kubeadm', 'exclude=kubeadm');
    writeFileSync(onHost(node, REPO), edited);
    const lost = await during(node, () => acts.restorePackageHolds({ cluster, node, held: ['kubeadm', 'kubelet', 'kubectl'] }));
    assert.deepEqual(lost.result, { node, held: ['kubeadm', 'kubectl'], putBack: [], missing: ['kubelet'] });
    assert.deepEqual(asRoot(lost.ran), []);
    assert.equal(repo(node), edited);
  });
});
