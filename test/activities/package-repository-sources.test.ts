import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { before, describe, it } from 'node:test';
import { createHostActivities } from '../../activities/host-activities.js';
import { createClusterResolver } from '../../activities/host-address.js';
import { findOtherSourceFailures } from '../../activities/readiness/other-sources.js';
import { failsWith as failsWithType } from '../helpers/failures.js';
import { asRoot, hostCommands, onHostPath, type TestCluster } from '../helpers/sim-cluster.js';
import { clusterWorld } from '../helpers/sim-world.js';

// An ordinary host beside the Kubernetes source: worker-1 with Docker's source gone stale (404),
// worker-2 with Docker's served and CRI-O's addon repository, as the description's `sources:` say.
const DOCKER_LINE = 'deb [arch=amd64 signed-by=/etc/apt/keyrings/docker.asc] https://download.docker.com/linux/debian bookworm stable';
const CRIO_LINE = 'deb [signed-by=/etc/apt/keyrings/cri-o-apt-keyring.gpg] https://pkgs.k8s.io/addons:/cri-o:/stable:/v1.33/deb/ /';
const APT = `
name: aptsources
version: 1.32.4
repository: [1.32.4, 1.33.7]
nodes:
  - {name: cp, role: control-plane}
  - name: worker-1
    role: worker
    sources: [{file: docker.list, text: "${DOCKER_LINE}", broken: true}]
  - name: worker-2
    role: worker
    sources: [{file: docker.list, text: "${DOCKER_LINE}"}, {file: cri-o.list, text: "${CRIO_LINE}"}]
`;

const DOCKER_REPO =
  '[docker-ce-stable]\\nname=Docker CE Stable\\nbaseurl=https://download.docker.com/linux/rhel/9/x86_64/stable\\nenabled=1\\n';
const CRIO_REPO = '[cri-o]\\nname=CRI-O\\nbaseurl=https://pkgs.k8s.io/addons:/cri-o:/stable:/v1.33/rpm/\\nenabled=1\\n';
const DNF = `
name: dnfsources
version: 1.32.4
repository: [1.32.4, 1.33.7]
packageManager: dnf
nodes:
  - {name: cp, role: control-plane}
  - name: worker-1
    role: worker
    sources: [{file: docker-ce.repo, text: "${DOCKER_REPO}", broken: true}]
  - name: worker-2
    role: worker
    sources: [{file: docker-ce.repo, text: "${DOCKER_REPO}"}, {file: cri-o.repo, text: "${CRIO_REPO}"}]
`;

const fileBytes = (tc: TestCluster, node: string, dir: string): Record<string, string> =>
  Object.fromEntries(readdirSync(onHostPath(tc, node, dir)).map((f) => [f, readFileSync(onHostPath(tc, node, `${dir}/${f}`), 'utf8')]));

describe("a node's other package sources, apt: the hop refreshes kubernetes.list alone; plan's check names the broken ones", () => {
  const tc = clusterWorld(APT, { cleanup: () => resolver?.close() });
  let acts: ReturnType<typeof createHostActivities>;
  let resolver: ReturnType<typeof createClusterResolver>;
  before(async () => {
    resolver = createClusterResolver(tc.clustersDir);
    acts = createHostActivities({ clusters: resolver });
  });
  const { during } = hostCommands(() => tc);

  it("a broken Docker source does not stop the switch: the refresh reads kubernetes.list only, and keeps the others' lists", async () => {
    const lists = readdirSync(onHostPath(tc, 'worker-2', '/var/lib/apt/lists')).filter((f) => !f.includes('core:_stable'));
    const { result, ran } = await during('worker-1', () =>
      acts.pointPackageRepository({ cluster: 'aptsources', node: 'worker-1', version: '1.33.7' }),
    );
    assert.equal(result.changed, true);
    const updates = ran.filter((c) => c.includes('apt-get update'));
    assert.equal(updates.length, 1, ran.join('\n'));
    assert.match(
      updates[0]!,
      /-o Dir::Etc::SourceList=\/etc\/apt\/sources\.list\.d\/kubernetes\.list -o Dir::Etc::SourceParts=- -o APT::Get::List-Cleanup=0/,
    );
    assert.equal(tc.sim.hosts.commandLog('worker-1').at(-1)?.exitCode, 0);

    const before2 = fileBytes(tc, 'worker-2', '/etc/apt/sources.list.d');
    await acts.pointPackageRepository({ cluster: 'aptsources', node: 'worker-2', version: '1.33.7' });
    const after2 = fileBytes(tc, 'worker-2', '/etc/apt/sources.list.d');
    assert.equal(after2['docker.list'], before2['docker.list']);
    assert.equal(after2['cri-o.list'], before2['cri-o.list']);
    assert.notEqual(after2['kubernetes.list'], before2['kubernetes.list']);
    assert.deepEqual(
      readdirSync(onHostPath(tc, 'worker-2', '/var/lib/apt/lists')).filter((f) => !f.includes('core:_stable')),
      lists,
      "Docker's and CRI-O's lists stay",
    );
  });

  it("a refresh that fails on another source says so, naming it: never the mirror's missing minor", async () => {
    const stderr = "E: The repository 'https://download.docker.com/linux/debian bookworm Release' does not have a Release file.";
    tc.sim.hosts.setFault('cp', { kind: 'fail', command: 'apt-get update', exitCode: 100, stderr });
    const err = await failsWithType(
      acts.pointPackageRepository({ cluster: 'aptsources', node: 'cp', version: '1.33.7' }),
      'HostCommandFailed',
    );
    assert.match(
      err.message,
      /^the refresh of \/etc\/apt\/sources\.list\.d\/kubernetes\.list \(it failed on another source, not \/etc\/apt\/sources\.list\.d\/kubernetes\.list: https:\/\/download\.docker\.com\/linux\/debian bookworm\) on cp exited 100/,
    );
    assert.doesNotMatch(err.message, /has no v1\.33 repository/);
  });

  it("findOtherSourceFailures warns about worker-1's docker.list by file and URL, as the SSH user, leaving nothing behind", async () => {
    const listsBefore = readdirSync(onHostPath(tc, 'worker-1', '/var/lib/apt/lists'));
    const { result, ran } = await during('worker-1', () => findOtherSourceFailures(resolver('aptsources'), '1.33'));
    assert.deepEqual(result.problems, []);
    assert.deepEqual(
      result.findings.map((f) => [f.check, f.severity, f.node, f.ack]),
      [['other-source', 'warn', 'worker-1', 'other-source:worker-1:/etc/apt/sources.list.d/docker.list']],
    );
    assert.match(
      result.findings[0]!.what,
      /^\/etc\/apt\/sources\.list\.d\/docker\.list \(https:\/\/download\.docker\.com\/linux\/debian bookworm\) fails to refresh \(404\)/,
    );
    assert.deepEqual(asRoot(ran), [], 'no command as root');
    assert.deepEqual(readdirSync(onHostPath(tc, 'worker-1', '/var/lib/apt/lists')), listsBefore, "the node's lists untouched");
    assert.deepEqual(
      readdirSync(onHostPath(tc, 'worker-1', '/tmp')).filter((f) => f.startsWith('skewless-')),
      [],
    );
  });
});

describe("a node's other package sources, dnf: the refresh names the kubernetes repository alone; plan's check names the broken ones", () => {
  const tc = clusterWorld(DNF, { cleanup: () => resolver?.close() });
  let acts: ReturnType<typeof createHostActivities>;
  let resolver: ReturnType<typeof createClusterResolver>;
  before(async () => {
    resolver = createClusterResolver(tc.clustersDir);
    acts = createHostActivities({ clusters: resolver });
  });
  const { during } = hostCommands(() => tc);

  it('a broken Docker repository does not stop the switch (makecache --repo=kubernetes)', async () => {
    const { result, ran } = await during('worker-1', () =>
      acts.pointPackageRepository({ cluster: 'dnfsources', node: 'worker-1', version: '1.33.7' }),
    );
    assert.equal(result.changed, true);
    assert.deepEqual(
      ran.filter((c) => c.includes('makecache')),
      ['sudo -n dnf makecache -q --repo=kubernetes'],
    );
  });

  it("a broken Docker repository does not stop dnf's listing (kubernetes repository alone) or install (others skipped if they fail)", async () => {
    const before = fileBytes(tc, 'worker-1', '/etc/yum.repos.d');
    const offered = await during('worker-1', () => acts.availableVersions({ cluster: 'dnfsources', node: 'worker-1' }));
    assert.ok(offered.result.includes('1.33.7'), offered.result.join(', '));
    const listings = offered.ran.filter((c) => /^dnf list /.test(c) && !c.includes('reposdir='));
    assert.ok(listings.length >= 1 && listings.every((c) => c.includes(' --repo=kubernetes ')), listings.join('\n'));
    const { result, ran } = await during('worker-1', () =>
      acts.installPackages({ cluster: 'dnfsources', node: 'worker-1', version: '1.33.7', packages: ['kubeadm'] }),
    );
    assert.deepEqual(result.installed, ['kubeadm']);
    assert.deepEqual(
      asRoot(ran).filter((c) => c.includes('dnf install')),
      [
        "sudo -n dnf install -y -q --disableexcludes=kubernetes '--setopt=*.skip_if_unavailable=True' --setopt=kubernetes.skip_if_unavailable=False kubeadm-1.33.7-150500.1.1",
      ],
    );
    assert.equal(tc.sim.hosts.state('worker-1').packages.kubeadm, '1.33.7-150500.1.1');
    assert.deepEqual(fileBytes(tc, 'worker-1', '/etc/yum.repos.d'), before, 'docker-ce.repo (and kubernetes.repo) as they were');
  });

  it('findOtherSourceFailures names docker-ce.repo and its repository id on worker-1 only', async () => {
    const { findings, problems } = await findOtherSourceFailures(resolver('dnfsources'), '1.33');
    assert.deepEqual(problems, []);
    assert.deepEqual(
      findings.map((f) => [f.node, f.ack]),
      [['worker-1', 'other-source:worker-1:/etc/yum.repos.d/docker-ce.repo']],
    );
    assert.match(
      findings[0]!.what,
      /repository 'docker-ce-stable' https:\/\/download\.docker\.com\/linux\/rhel\/9\/x86_64\/stable\/\) fails to refresh \(404\)/,
    );
  });
});
