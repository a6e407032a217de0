import assert from 'node:assert/strict';
import { chmodSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import type { TestContext } from 'node:test';
import { hostSpec, run, startTestSim as startSim } from './ssh-client.js';

/** A control plane and a worker at 1.32.4, RHEL family: kubernetes.repo for v1.32 as the install guide writes it. */
const startTestSim = (t: TestContext) => {
  const dnfHost = (name: string, role: 'control-plane' | 'worker') =>
    hostSpec(name, role, { packageRepository: 'per-minor', packageManager: 'dnf' });
  return startSim(t, { hosts: [dnfHost('cp-1', 'control-plane'), dnfHost('w-1', 'worker')] });
};

const REPO = '/etc/yum.repos.d/kubernetes.repo';
const onHost = (stateDir: string, host: string, path: string): string => join(stateDir, 'hosts', host, 'root', path);
/** `kubeadm.x86_64   1.32.4-150500.1.1   kubernetes` rows of a section of `dnf list`. */
const section = (stdout: string, title: string): string[] => {
  const lines = stdout.split('\n');
  const start = lines.indexOf(title);
  if (start < 0) return [];
  const end = lines.findIndex((l, i) => i > start && /Packages$/.test(l));
  return lines
    .slice(start + 1, end < 0 ? undefined : end)
    .filter(Boolean)
    .map((l) => l.trim().split(/\s+/).join(' '));
};

describe('a per-minor rpm repository on a simulated RHEL-family host, over SSH', () => {
  it("holds the install guide's kubernetes.repo; its exclude= keeps the packages out until --disableexcludes=kubernetes", async (t) => {
    const { sim } = await startTestSim(t);
    const repo = (await run(sim, 'w-1', `cat ${REPO}`)).stdout;
    assert.match(repo, /^\[kubernetes\]\nname=Kubernetes\nbaseurl=https:\/\/pkgs\.k8s\.io\/core:\/stable:\/v1\.32\/rpm\/\n/);
    assert.match(repo, /^gpgkey=https:\/\/pkgs\.k8s\.io\/core:\/stable:\/v1\.32\/rpm\/repodata\/repomd\.xml\.key$/m);
    assert.match(repo, /^exclude=kubelet kubeadm kubectl cri-tools kubernetes-cni$/m);
    assert.equal((await run(sim, 'w-1', 'rpm -q --qf "%{VERSION}-%{RELEASE}\\n" kubeadm')).stdout, '1.32.4-150500.1.1\n');
    assert.equal((await run(sim, 'w-1', 'apt-get update')).code, 127, 'no apt on a RHEL-family host');

    const excluded = await run(sim, 'w-1', 'dnf list --showduplicates kubeadm');
    assert.equal(excluded.code, 0);
    assert.deepEqual(section(excluded.stdout, 'Available Packages'), [], 'excluded: only the installed one is listed');
    assert.deepEqual(section(excluded.stdout, 'Installed Packages'), ['kubeadm.x86_64 1.32.4-150500.1.1 @kubernetes']);
    const listed = await run(sim, 'w-1', 'dnf list --showduplicates --disableexcludes=kubernetes kubeadm');
    assert.deepEqual(
      section(listed.stdout, 'Available Packages'),
      ['kubeadm.x86_64 1.32.4-150500.1.1 kubernetes'],
      'the v1.32 repository offers 1.32 only',
    );

    const held = await run(sim, 'w-1', "sudo dnf install -y kubelet-'1.32.4-*'");
    assert.equal(held.code, 1);
    assert.match(
      held.stderr,
      /^All matches were filtered out by exclude filtering for argument: kubelet-1\.32\.4-\*\nError: Unable to find a match: kubelet-1\.32\.4-\*$/m,
    );
    const notOffered = await run(sim, 'w-1', "sudo dnf install -y --disableexcludes=kubernetes kubeadm-'1.33.7-*'");
    assert.equal(notOffered.code, 1);
    assert.match(notOffered.stderr, /^No match for argument: kubeadm-1\.33\.7-\*/m);
    assert.equal(sim.state('w-1').packages.kubeadm, '1.32.4-150500.1.1');
  });

  it("the guide's sed of the minor offers the next minor at once (dnf fetches metadata for a changed baseurl); installs need root", async (t) => {
    const { sim, stateDir } = await startTestSim(t);
    const edit = await run(sim, 'w-1', `sudo sed -i 's,/core:/stable:/v1.32/,/core:/stable:/v1.33/,g' ${REPO}`);
    assert.equal(edit.code, 0, edit.stderr);
    assert.match(
      readFileSync(onHost(stateDir, 'w-1', REPO), 'utf8'),
      /^gpgkey=https:\/\/pkgs\.k8s\.io\/core:\/stable:\/v1\.33\/rpm\/repodata\/repomd\.xml\.key$/m,
    );
    const listed = await run(sim, 'w-1', 'dnf list --showduplicates --disableexcludes=kubernetes kubeadm');
    assert.deepEqual(
      section(listed.stdout, 'Available Packages').map((r) => r.split(' ')[1]),
      ['1.33.0-150500.1.1', '1.33.7-150500.1.1'],
    );
    assert.equal((await run(sim, 'w-1', 'sudo dnf makecache')).code, 0);

    const asUser = await run(sim, 'w-1', "dnf install -y --disableexcludes=kubernetes kubeadm-'1.33.7-*'");
    assert.equal(asUser.code, 1);
    assert.match(asUser.stderr, /This command has to be run with superuser privileges/);
    const install = await run(sim, 'w-1', "sudo dnf install -y --disableexcludes=kubernetes kubeadm-'1.33.7-*'");
    assert.equal(install.code, 0, install.stderr);
    assert.equal(sim.state('w-1').packages.kubeadm, '1.33.7-150500.1.1');
    assert.match(
      readFileSync(onHost(stateDir, 'w-1', '/var/log/dnf.rpm.log'), 'utf8'),
      /SUBDEBUG Upgrade: kubeadm-1\.33\.7-150500\.1\.1\.x86_64\n$/,
    );
    const again = await run(sim, 'w-1', "sudo dnf install -y --disableexcludes=kubernetes kubeadm-'1.33.7-*'");
    assert.match(again.stdout, /Package kubeadm-1\.33\.7-150500\.1\.1\.x86_64 is already installed\.\n[\s\S]*Nothing to do\./);
  });

  it("a minor the mirror does not have fails every dnf command on the repository's metadata, as a 404 does", async (t) => {
    const { sim } = await startTestSim(t);
    await run(sim, 'w-1', `sudo sed -i 's,/v1.32/,/v1.36/,g' ${REPO}`);
    const r = await run(sim, 'w-1', 'sudo dnf makecache');
    assert.equal(r.code, 1);
    assert.match(r.stderr, /^ {2}- Status code: 404 for https:\/\/pkgs\.k8s\.io\/core:\/stable:\/v1\.36\/rpm\/repodata\/repomd\.xml/m);
    assert.match(r.stderr, /^Error: Failed to download metadata for repo 'kubernetes'/m);
  });

  it("the SSH user asks another minor through --repofrompath, the node's repository untouched", async (t) => {
    const { sim } = await startTestSim(t);
    const probe = await run(
      sim,
      'w-1',
      'dnf list --showduplicates -q --disableexcludes=all --repofrompath=skewless-probe,https://pkgs.k8s.io/core:/stable:/v1.34/rpm/ --repo=skewless-probe kubeadm',
    );
    assert.equal(probe.code, 0, probe.stderr);
    assert.deepEqual(section(probe.stdout, 'Available Packages'), ['kubeadm.x86_64 1.34.2-150500.1.1 skewless-probe']);
    const missing = await run(
      sim,
      'w-1',
      'dnf list --showduplicates -q --disableexcludes=all --repofrompath=skewless-probe,https://pkgs.k8s.io/core:/stable:/v1.36/rpm/ --repo=skewless-probe kubeadm',
    );
    assert.equal(missing.code, 1);
    assert.match(missing.stderr, /Failed to download metadata for repo 'skewless-probe'/);
    assert.match((await run(sim, 'w-1', `cat ${REPO}`)).stdout, /\/v1\.32\/rpm\//);
  });

  it('a kubernetes.repo the SSH user cannot read: dnf as that user says so', async (t) => {
    const { sim, stateDir } = await startTestSim(t);
    chmodSync(onHost(stateDir, 'w-1', REPO), 0o600);
    const r = await run(sim, 'w-1', 'dnf list kubeadm');
    assert.equal(r.code, 1);
    assert.match(r.stderr, /Permission denied: '\/etc\/yum\.repos\.d\/kubernetes\.repo'/);
  });
});

describe('other repositories beside Kubernetes on a simulated RHEL-family host', () => {
  const DOCKER = [
    '[docker-ce-stable]',
    'name=Docker CE Stable',
    'baseurl=https://download.docker.com/linux/rhel/9/x86_64/stable',
    'enabled=1',
    'gpgcheck=1',
    'gpgkey=https://download.docker.com/linux/rhel/gpg',
    '',
  ].join('\n');
  const CRIO = '[cri-o]\nname=CRI-O\nbaseurl=https://pkgs.k8s.io/addons:/cri-o:/stable:/v1.33/rpm/\nenabled=1\n';
  const start = (t: TestContext, dockerBroken: boolean) =>
    startSim(t, {
      hosts: [
        hostSpec('w-1', 'worker', {
          packageRepository: 'per-minor',
          packageManager: 'dnf',
          sources: [
            { file: 'docker-ce.repo', text: DOCKER, ...(dockerBroken ? { broken: true } : {}) },
            { file: 'cri-o.repo', text: CRIO },
          ],
        }),
      ],
    });

  it('a broken one fails every command that loads it, naming its id, unless --repo leaves it out or it is skipped if unavailable', async (t) => {
    const { sim, stateDir } = await start(t, true);
    assert.equal(readFileSync(onHost(stateDir, 'w-1', '/etc/yum.repos.d/docker-ce.repo'), 'utf8'), DOCKER);
    const all = await run(sim, 'w-1', 'sudo dnf makecache -q');
    assert.equal(all.code, 1);
    assert.match(all.stderr, /^Error: Failed to download metadata for repo 'docker-ce-stable': /m);
    assert.match(all.stderr, /Status code: 404 for https:\/\/download\.docker\.com\/linux\/rhel\/9\/x86_64\/stable\/repodata\/repomd\.xml/);
    const alone = await run(sim, 'w-1', 'sudo dnf makecache -q --repo=kubernetes');
    assert.equal(alone.code, 0, alone.stderr);
    const skipped = await run(sim, 'w-1', "dnf makecache -q '--setopt=*.skip_if_unavailable=True'");
    assert.equal(skipped.code, 0, skipped.stderr);
    assert.match(skipped.stderr, /^Error: Failed to download metadata for repo 'docker-ce-stable'/m);
    assert.match(skipped.stderr, /^Ignoring repositories: docker-ce-stable$/m);
    assert.match(skipped.stdout, /^cri-o\s/m);
  });

  it('served ones load, offering none of the Kubernetes packages', async (t) => {
    const { sim } = await start(t, false);
    const all = await run(sim, 'w-1', 'sudo dnf makecache -q');
    assert.equal(all.code, 0, all.stderr);
    assert.deepEqual(
      all.stdout
        .split('\n')
        .filter((l) => /kB\/s/.test(l))
        .map((l) => l.split(/\s+/)[0]),
      ['cri-o', 'docker-ce-stable', 'kubernetes'],
    );
    const list = await run(sim, 'w-1', 'dnf list --showduplicates --disableexcludes=all kubeadm');
    assert.doesNotMatch(list.stdout, /docker-ce-stable|cri-o/);
  });
});
