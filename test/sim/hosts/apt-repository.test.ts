import assert from 'node:assert/strict';
import { chmodSync, existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import type { TestContext } from 'node:test';
import { hostSpec, run, startTestSim as startMirrored } from './ssh-client.js';

/** A control plane and a worker at 1.32.4, each with the install guide's one-minor repository (the default). */
const startTestSim = (t: TestContext, options: Parameters<typeof startMirrored>[1] = {}) =>
  startMirrored(t, {
    hosts: [
      hostSpec('cp-1', 'control-plane', { packageRepository: 'per-minor' }),
      hostSpec('w-1', 'worker', { packageRepository: 'per-minor' }),
    ],
    ...options,
  });

const LIST = '/etc/apt/sources.list.d/kubernetes.list';
const LINE_132 = 'deb [signed-by=/etc/apt/keyrings/kubernetes-apt-keyring.gpg] https://pkgs.k8s.io/core:/stable:/v1.32/deb/ /';
const madison = (stdout: string): string[] =>
  stdout
    .trimEnd()
    .split('\n')
    .filter(Boolean)
    .map((l) =>
      l
        .split('|')
        .map((c) => c.trim())
        .slice(1)
        .join(' '),
    );
const onHost = (stateDir: string, host: string, path: string): string => join(stateDir, 'hosts', host, 'root', path);

/** The Kubernetes repository of a host set up by kubernetes.io's "Installing kubeadm": one minor at a time. */
describe('a per-minor package repository on a simulated host, over SSH', () => {
  it("holds the install guide's one line for the minor of its packages, and offers only that minor", async (t) => {
    const { sim } = await startTestSim(t);
    assert.equal((await run(sim, 'w-1', `cat ${LIST}`)).stdout, `${LINE_132}\n`);
    assert.equal((await run(sim, 'w-1', 'test -f /etc/apt/keyrings/kubernetes-apt-keyring.gpg')).code, 0);
    assert.deepEqual(madison((await run(sim, 'w-1', 'apt-cache madison kubeadm')).stdout), [
      '1.32.4-1.1 https://pkgs.k8s.io/core:/stable:/v1.32/deb  Packages',
    ]);
    const policy = await run(sim, 'w-1', 'apt-cache policy kubelet');
    assert.match(policy.stdout, /Installed: 1\.32\.4-1\.1\n {2}Candidate: 1\.32\.4-1\.1\n/);
    const install = await run(sim, 'w-1', 'sudo apt-get install -y --allow-change-held-packages kubeadm=1.33.7-1.1');
    assert.equal(install.code, 100);
    assert.equal(install.stderr, "E: Version '1.33.7-1.1' for 'kubeadm' was not found\n");
  });

  it("a switched file offers nothing new until apt-get update, which then drops the old minor's lists", async (t) => {
    const { sim, stateDir } = await startTestSim(t);
    const edit = await run(sim, 'w-1', `sudo sed -i 's,/core:/stable:/v1.32/,/core:/stable:/v1.33/,g' ${LIST}`);
    assert.equal(edit.code, 0, edit.stderr);
    assert.equal((await run(sim, 'w-1', `cat ${LIST}`)).stdout, `${LINE_132.replace('v1.32', 'v1.33')}\n`);
    assert.deepEqual(madison((await run(sim, 'w-1', 'apt-cache madison kubeadm')).stdout), [], 'no lists for the new source yet');

    const update = await run(sim, 'w-1', 'sudo apt-get update');
    assert.equal(update.code, 0, update.stderr);
    assert.match(update.stdout, /^Get:1 https:\/\/pkgs\.k8s\.io\/core:\/stable:\/v1\.33\/deb {2}InRelease/m);
    assert.deepEqual(
      madison((await run(sim, 'w-1', 'apt-cache madison kubeadm')).stdout).map((l) => l.split(' ')[0]),
      ['1.33.7-1.1', '1.33.0-1.1'],
    );
    assert.equal(existsSync(onHost(stateDir, 'w-1', '/var/lib/apt/lists/pkgs.k8s.io_core:_stable:_v1.32_deb_Packages')), false);
    assert.equal(existsSync(onHost(stateDir, 'w-1', '/var/lib/apt/lists/pkgs.k8s.io_core:_stable:_v1.33_deb_Packages')), true);
    const install = await run(sim, 'w-1', 'sudo apt-get install -y --allow-change-held-packages kubeadm=1.33.7-1.1');
    assert.equal(install.code, 0, install.stderr);
    assert.equal(sim.state('w-1').packages.kubeadm, '1.33.7-1.1');
    assert.equal(
      (await run(sim, 'w-1', 'sudo apt-get update')).stdout.includes('Hit:1 https://pkgs.k8s.io/core:/stable:/v1.33/deb  InRelease'),
      true,
      'a second update finds it current',
    );
  });

  it('a minor the mirror does not have fails apt-get update as a 404 does, keeping no lists for it', async (t) => {
    const { sim } = await startTestSim(t);
    await run(sim, 'w-1', `sudo sed -i 's,/v1.32/,/v1.36/,g' ${LIST}`);
    const update = await run(sim, 'w-1', 'sudo apt-get update');
    assert.equal(update.code, 100);
    assert.match(update.stdout, /^Err:2 https:\/\/pkgs\.k8s\.io\/core:\/stable:\/v1\.36\/deb {2}Release\n {2}404 {2}Not Found/m);
    assert.match(
      update.stderr,
      /^E: The repository 'https:\/\/pkgs\.k8s\.io\/core:\/stable:\/v1\.36\/deb {2}Release' does not have a Release file\.$/m,
    );
    assert.deepEqual(madison((await run(sim, 'w-1', 'apt-cache madison kubeadm')).stdout), []);
  });

  it("the SSH user reads another minor through a source list and lists directory of its own, the node's apt state untouched", async (t) => {
    const { sim, stateDir } = await startTestSim(t);
    const dir = '/tmp/probe';
    writeFileSync(onHost(stateDir, 'w-1', '/tmp/probe.list'), `${LINE_132.replace('v1.32', 'v1.34')}\n`);
    const apt = `-o Dir::Etc::SourceList=${dir}.list -o Dir::Etc::SourceParts=- -o Dir::State::Lists=${dir}/lists -o Dir::Cache::pkgcache= -o Dir::Cache::srcpkgcache=`;
    const update = await run(sim, 'w-1', `mkdir -p ${dir}/lists && apt-get update -q ${apt}`);
    assert.equal(update.code, 0, update.stderr);
    assert.deepEqual(madison((await run(sim, 'w-1', `apt-cache ${apt} madison kubeadm`)).stdout), [
      '1.34.2-1.1 https://pkgs.k8s.io/core:/stable:/v1.34/deb  Packages',
    ]);
    assert.deepEqual(
      madison((await run(sim, 'w-1', 'apt-cache madison kubeadm')).stdout),
      ['1.32.4-1.1 https://pkgs.k8s.io/core:/stable:/v1.32/deb  Packages'],
      'the node still offers its own minor',
    );
    assert.equal((await run(sim, 'w-1', `cat ${LIST}`)).stdout, `${LINE_132}\n`);
    const intoTheNodes = await run(sim, 'w-1', 'apt-get update');
    assert.equal(intoTheNodes.code, 100, "the node's own lists need root");
    assert.match(intoTheNodes.stderr, /^E: Could not open lock file \/var\/lib\/apt\/lists\/lock - open \(13: Permission denied\)/);
  });

  it('a repository file the SSH user cannot read: apt-cache as that user says so; root still reads it', async (t) => {
    const { sim, stateDir } = await startTestSim(t);
    chmodSync(onHost(stateDir, 'w-1', LIST), 0o600);
    const r = await run(sim, 'w-1', 'apt-cache madison kubeadm');
    assert.equal(r.code, 100);
    assert.equal(r.stderr, `E: Could not open file ${LIST} - open (13: Permission denied)\nE: The list of sources could not be read.\n`);
    assert.equal((await run(sim, 'w-1', `cat ${LIST}`)).stderr, `cat: ${LIST}: Permission denied\n`);
    assert.equal((await run(sim, 'w-1', 'sudo apt-cache madison kubeadm')).code, 0);
  });

  it('the local-mirror variant: one line of a site mirror offering every minor at once', async (t) => {
    const { sim, stateDir } = await startTestSim(t, { hosts: [hostSpec('w-1', 'worker', { packageRepository: 'local-mirror' })] });
    assert.match(
      readFileSync(onHost(stateDir, 'w-1', LIST), 'utf8'),
      /^deb \[signed-by=\/etc\/apt\/keyrings\/kubernetes-apt-keyring\.gpg\] http:\/\/apt-mirror\.sim\.invalid\/kubernetes\/all\/deb\/ \/\n$/,
    );
    assert.deepEqual(
      madison((await run(sim, 'w-1', 'apt-cache madison kubeadm')).stdout).map((l) => l.split(' ')[0]),
      ['1.34.2-1.1', '1.33.7-1.1', '1.33.0-1.1', '1.32.4-1.1'],
    );
  });

  it("a malformed line is apt's error, for update and for apt-cache alike", async (t) => {
    const { sim, stateDir } = await startTestSim(t);
    writeFileSync(onHost(stateDir, 'w-1', LIST), 'deb [signed-by=/k.gpg] https://pkgs.k8s.io/core:/stable:/v1.32/deb/\n');
    for (const command of ['sudo apt-get update', 'apt-cache madison kubeadm']) {
      const r = await run(sim, 'w-1', command);
      assert.equal(r.code, 100, command);
      assert.equal(r.stderr, `E: Malformed entry 1 in list file ${LIST} (Suite)\nE: The list of sources could not be read.\n`, command);
    }
  });
});

/** An ordinary host: Docker's source (a distribution with a component), CRI-O's addon repository, a company mirror. */
describe('other sources beside Kubernetes on a simulated apt host', () => {
  const DOCKER = 'deb [arch=amd64 signed-by=/etc/apt/keyrings/docker.asc] https://download.docker.com/linux/debian bookworm stable';
  const CRIO = 'deb [signed-by=/etc/apt/keyrings/cri-o-apt-keyring.gpg] https://pkgs.k8s.io/addons:/cri-o:/stable:/v1.33/deb/ /';
  const MIRROR = 'deb http://mirror.example.invalid/debian bookworm main contrib';
  const withSources = (t: TestContext, dockerBroken: boolean) =>
    startTestSim(t, {
      hosts: [
        hostSpec('w-1', 'worker', {
          packageRepository: 'per-minor',
          sources: [
            { file: 'docker.list', text: `${DOCKER}\n`, ...(dockerBroken ? { broken: true } : {}) },
            { file: 'cri-o.list', text: `${CRIO}\n` },
            { file: 'company.list', text: `${MIRROR}\n`, broken: true },
          ],
        }),
      ],
    });
  const DOCKER_LISTS = '/var/lib/apt/lists/download.docker.com_linux_debian_dists_bookworm_stable_binary-amd64_Packages';

  it('a full update fetches the served ones, keeps going past each 404 and names every failing source as apt does, exit 100', async (t) => {
    const { sim, stateDir } = await withSources(t, true);
    assert.equal(existsSync(onHost(stateDir, 'w-1', '/etc/apt/sources.list.d/docker.list')), true);
    const update = await run(sim, 'w-1', 'sudo apt-get update');
    assert.equal(update.code, 100);
    assert.match(update.stdout, /^Err:\d+ http:\/\/mirror\.example\.invalid\/debian bookworm Release\n {2}404 {2}Not Found/m);
    assert.match(update.stdout, /^(Get|Hit):\d+ https:\/\/pkgs\.k8s\.io\/addons:\/cri-o:\/stable:\/v1\.33\/deb {2}InRelease/m);
    assert.match(update.stdout, /^(Get|Hit):\d+ https:\/\/pkgs\.k8s\.io\/core:\/stable:\/v1\.32\/deb {2}InRelease/m);
    const errors = update.stderr.split('\n').filter((l) => l.startsWith('E: '));
    assert.deepEqual(errors, [
      "E: The repository 'http://mirror.example.invalid/debian bookworm Release' does not have a Release file.",
      "E: The repository 'https://download.docker.com/linux/debian bookworm Release' does not have a Release file.",
    ]);
    assert.deepEqual(madison((await run(sim, 'w-1', 'apt-cache madison kubeadm')).stdout), [
      '1.32.4-1.1 https://pkgs.k8s.io/core:/stable:/v1.32/deb  Packages',
    ]);
  });

  it("an update reading kubernetes.list alone (Dir::Etc::sourcelist relative to /etc/apt) succeeds; List-Cleanup=0 keeps the others' lists", async (t) => {
    const { sim, stateDir } = await withSources(t, true);
    const crioLists = onHost(stateDir, 'w-1', '/var/lib/apt/lists/pkgs.k8s.io_addons:_cri-o:_stable:_v1.33_deb_Packages');
    assert.equal(existsSync(crioLists), true, 'seeded as after the last update');
    const only = '-o Dir::Etc::sourcelist=sources.list.d/kubernetes.list -o Dir::Etc::sourceparts=-';
    const kept = await run(sim, 'w-1', `sudo apt-get update ${only} -o APT::Get::List-Cleanup=0`);
    assert.equal(kept.code, 0, kept.stderr);
    assert.deepEqual(
      kept.stdout.split('\n').filter((l) => /^(Get|Hit|Err|Ign):/.test(l)),
      ['Hit:1 https://pkgs.k8s.io/core:/stable:/v1.32/deb  InRelease'],
      'only the Kubernetes source is read',
    );
    assert.equal(existsSync(crioLists), true, 'List-Cleanup=0 leaves the lists of the sources not read');
    const cleaned = await run(sim, 'w-1', `sudo apt-get update ${only}`);
    assert.equal(cleaned.code, 0, cleaned.stderr);
    assert.equal(existsSync(crioLists), false, 'without it apt erases the lists of the sources it did not read, as obsolete');
  });

  it('a served Docker source has lists for its component, offering none of the Kubernetes packages', async (t) => {
    const { sim, stateDir } = await withSources(t, false);
    assert.equal(existsSync(onHost(stateDir, 'w-1', DOCKER_LISTS)), true);
    const update = await run(sim, 'w-1', 'sudo apt-get update');
    assert.match(update.stdout, /^Hit:\d+ https:\/\/download\.docker\.com\/linux\/debian bookworm InRelease$/m);
    assert.deepEqual(
      update.stderr.split('\n').filter((l) => l.startsWith('E: ')),
      ["E: The repository 'http://mirror.example.invalid/debian bookworm Release' does not have a Release file."],
    );
  });
});
