import assert from 'node:assert/strict';
import { chmodSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { before, describe, it } from 'node:test';
import { type ApplicationFailure } from '@temporalio/common';
import { createHostActivities } from '../../activities/host-activities.js';
import { createClusterResolver } from '../../activities/host-address.js';
import { asRoot, hostCommands, onHostPath } from '../helpers/sim-cluster.js';
import { clusterWorld } from '../helpers/sim-world.js';
import { failsWith as failsWithType } from '../helpers/failures.js';

// The archive has 1.32, 1.33 and 1.34; every host starts at 1.32 with the install guide's one-minor file.
const DESCRIPTION = `
name: repotest
version: 1.32.4
repository: [1.32.4, 1.32.9, 1.33.7, 1.34.2]
nodes:
  - {name: cp, role: control-plane, count: 1}
  - {name: worker, role: worker, count: 6}
`;
const cluster = 'repotest';
const LIST = '/etc/apt/sources.list.d/kubernetes.list';
const guideLine = (minor: string) =>
  `deb [signed-by=/etc/apt/keyrings/kubernetes-apt-keyring.gpg] https://pkgs.k8s.io/core:/stable:/v${minor}/deb/ /\n`;

/** The typed failure, and never retried: the operator's to fix. */
async function failsWith(p: Promise<unknown>, type: string): Promise<ApplicationFailure> {
  const err = await failsWithType(p, type);
  assert.equal(err.nonRetryable, true, "the operator's to fix: no retry");
  return err;
}

describe('the package repository of a node, as kubernetes.io sets it up (activities against the simulated hosts)', () => {
  const tc = clusterWorld(DESCRIPTION);
  let acts: ReturnType<typeof createHostActivities>;
  before(async () => {
    acts = createHostActivities({ clusters: createClusterResolver(tc.clustersDir) });
  });

  const onHost = (node: string, path: string) => onHostPath(tc, node, path);
  const list = (node: string) => readFileSync(onHost(node, LIST), 'utf8');
  const { during } = hostCommands(() => tc);

  it('availableVersions offers the next minors too, asked as the SSH user without touching the node', async () => {
    const { result, ran } = await during('cp-1', () => acts.availableVersions({ cluster, node: 'cp-1' }));
    assert.deepEqual(result, ['1.34.2', '1.33.7', '1.32.9', '1.32.4']);
    assert.deepEqual(asRoot(ran), [], 'no command as root');
    assert.equal(list('cp-1'), guideLine('1.32'));
    assert.equal(ran.filter((c) => c.includes('apt-get update')).length, 3, 'one probe each of 1.33, 1.34 and the 1.35 that is not there');
    assert.deepEqual(
      readdirSync(onHost('cp-1', '/tmp')).filter((f) => f.startsWith('skewless-')),
      [],
      'the probes leave nothing behind',
    );
    assert.deepEqual(tc.sim.hosts.state('cp-1').packages.kubeadm, '1.32.4-1.1');
  });

  it('a target past the minor the mirror lacks: MissingRelease naming node, file and minor; a target before it is planned as usual', async () => {
    assert.deepEqual(await acts.availableVersions({ cluster, node: 'cp-1', to: '1.34' }), ['1.34.2', '1.33.7', '1.32.9', '1.32.4']);
    const next = await failsWith(acts.availableVersions({ cluster, node: 'cp-1', to: '1.35' }), 'MissingRelease');
    assert.equal(
      next.message,
      `no 1.35.x release is available: the mirror of ${LIST} on cp-1 has no v1.35 repository (404); nothing was installed`,
    );
    const past = await failsWith(acts.availableVersions({ cluster, node: 'cp-1', to: '1.36.1' }), 'MissingRelease');
    assert.equal(
      past.message,
      `no 1.35.x release is available: the mirror of ${LIST} on cp-1 has no v1.35 repository (404), and minors cannot be skipped (1.32 → 1.36); nothing was installed`,
    );
    assert.deepEqual(
      await acts.availableVersions({ cluster, node: 'cp-1', to: 'next-minor' }),
      ['1.34.2', '1.33.7', '1.32.9', '1.32.4'],
      "an expression is the rules' to resolve",
    );
    assert.equal((await acts.availableVersions({ cluster, node: 'cp-1', to: '2.0' })).length, 4, "another major is the rules' to refuse");
  });

  it("pointPackageRepository switches the file to the hop's minor with sed -i, refreshes, and says what it was; again, it changes nothing", async () => {
    const first = await during('worker-1', () => acts.pointPackageRepository({ cluster, node: 'worker-1', version: '1.33.7' }));
    assert.deepEqual(first.result, { node: 'worker-1', file: LIST, minor: '1.33', changed: true, previous: guideLine('1.32').trimEnd() });
    assert.deepEqual(asRoot(first.ran), [
      `sudo -n sed -i s,/core:/stable:/v1.32/,/core:/stable:/v1.33/,g ${LIST}`,
      'sudo -n DEBIAN_FRONTEND=noninteractive apt-get update -q -o Dir::Etc::SourceList=/etc/apt/sources.list.d/kubernetes.list -o Dir::Etc::SourceParts=- -o APT::Get::List-Cleanup=0 -o DPkg::Lock::Timeout=120',
    ]);
    assert.equal(list('worker-1'), guideLine('1.33'));
    const installed = await acts.installPackages({ cluster, node: 'worker-1', version: '1.33.7', packages: ['kubeadm'] });
    assert.deepEqual(installed.packageVersions, { kubeadm: '1.33.7-1.1' });

    const again = await during('worker-1', () => acts.pointPackageRepository({ cluster, node: 'worker-1', version: '1.33.7' }));
    assert.deepEqual(again.result, { node: 'worker-1', file: LIST, minor: '1.33', changed: false });
    assert.deepEqual(asRoot(again.ran), []);
  });

  it('a minor the mirror does not have: VersionNotAvailable naming node and file, the file put back as it was', async () => {
    const { ran } = await during('worker-2', async () => {
      const err = await failsWith(acts.pointPackageRepository({ cluster, node: 'worker-2', version: '1.35.0' }), 'VersionNotAvailable');
      assert.equal(
        err.message,
        `worker-2: the mirror of ${LIST} has no v1.35 repository (404): the file was put back to v1.32, nothing installed`,
      );
    });
    assert.equal(list('worker-2'), guideLine('1.32'));
    assert.deepEqual(
      ran.filter((c) => c.includes('apt-get install')),
      [],
    );
    assert.deepEqual(tc.sim.hosts.state('worker-2').packages.kubeadm, '1.32.4-1.1');
    const madison = await acts.availableVersions({ cluster, node: 'worker-2' });
    assert.ok(madison.includes('1.32.4'), "the node's lists are the 1.32 ones again");
  });

  it('a file of another layout is never rewritten: the hop stops with its path and why; what it offers as it is still counts', async () => {
    const odd = `${guideLine('1.32')}deb [signed-by=/etc/apt/keyrings/other.gpg] https://example.invalid/debian bookworm main\n`;
    writeFileSync(onHost('worker-3', LIST), odd);
    const { ran } = await during('worker-3', async () => {
      const err = await failsWith(acts.pointPackageRepository({ cluster, node: 'worker-3', version: '1.33.7' }), 'RepositoryLayoutUnknown');
      assert.match(
        err.message,
        new RegExp(
          `^worker-3: ${LIST} offers no 1\\.33\\.x and skewless does not rewrite it: it has 2 source line\\(s\\); the install guide's has exactly one deb line; point it at v1\\.33 yourself`,
        ),
      );
      const plan = await failsWith(acts.availableVersions({ cluster, node: 'worker-3', to: '1.33' }), 'RepositoryLayoutUnknown');
      assert.equal(plan.message, err.message, 'planning says the same, before any step');
      assert.deepEqual(await acts.availableVersions({ cluster, node: 'worker-3', to: '1.32.9' }), ['1.32.9', '1.32.4']);
      assert.deepEqual(await acts.pointPackageRepository({ cluster, node: 'worker-3', version: '1.32.9' }), {
        node: 'worker-3',
        file: LIST,
        minor: '1.32',
        changed: false,
      });
    });
    assert.deepEqual(asRoot(ran), []);
    assert.equal(list('worker-3'), odd);
  });

  it('a repository file the SSH user cannot read: RepositoryUnreadable naming node and file, nothing run as root', async () => {
    chmodSync(onHost('worker-4', LIST), 0o600);
    const { ran } = await during('worker-4', async () => {
      for (const call of [
        acts.pointPackageRepository({ cluster, node: 'worker-4', version: '1.33.7' }),
        acts.availableVersions({ cluster, node: 'worker-4' }),
      ]) {
        const err = await failsWith(call, 'RepositoryUnreadable');
        assert.match(err.message, new RegExp(`^cannot read ${LIST} on worker-4 as skewless: Permission denied`));
      }
    });
    assert.deepEqual(asRoot(ran), []);
  });

  it('credentials in the repository URL: switched alike, never in the result', async () => {
    const line = (minor: string) =>
      `deb [signed-by=/etc/apt/keyrings/kubernetes-apt-keyring.gpg] https://ops:s3cret@pkgs.k8s.io/core:/stable:/v${minor}/deb/ /\n`;
    writeFileSync(onHost('worker-5', LIST), line('1.32'));
    const result = await acts.pointPackageRepository({ cluster, node: 'worker-5', version: '1.33.7' });
    assert.deepEqual(result, {
      node: 'worker-5',
      file: LIST,
      minor: '1.33',
      changed: true,
      previous: 'deb [signed-by=/etc/apt/keyrings/kubernetes-apt-keyring.gpg] https://***@pkgs.k8s.io/core:/stable:/v1.32/deb/ /',
    });
    assert.equal(readFileSync(onHost('worker-5', LIST), 'utf8'), line('1.33'));
  });
});
