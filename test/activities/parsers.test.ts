import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { parseAptPolicy } from '../../activities/parsers/apt-policy.js';
import { excludedBy } from '../../activities/parsers/dnf-exclude.js';
import { parseKubeadmUpgradePlan } from '../../activities/parsers/kubeadm-upgrade-plan.js';
import { comparePackageVersions, packageVersionFor, parseMadison, upstreamVersion } from '../../activities/parsers/madison.js';
import { parseSnapshotStatus } from '../../activities/parsers/snapshot-status.js';

/** A recorded output without its `# ` provenance header (dist/test/activities → test/fixtures). */
function fixture(name: string): string {
  const text = readFileSync(join(import.meta.dirname, '..', '..', '..', 'test', 'fixtures', 'tool-output', name), 'utf8');
  return text
    .split('\n')
    .filter((l) => !l.startsWith('# '))
    .join('\n');
}

describe('parseMadison (recorded apt-cache madison kubeadm)', () => {
  it('reads every row of a single-minor repository, newest first, with the exact Debian version', () => {
    const entries = parseMadison(fixture('apt-cache-madison-kubeadm.txt'));
    assert.deepEqual(
      entries.map((e) => e.packageVersion),
      ['1.29.4-2.1', '1.29.3-1.1', '1.29.2-1.1', '1.29.1-1.1', '1.29.0-1.1'],
    );
    assert.deepEqual(entries[0], {
      package: 'kubeadm',
      packageVersion: '1.29.4-2.1',
      version: '1.29.4',
      source: 'https://pkgs.k8s.io/core:/stable:/v1.29/deb',
    });
    assert.equal(packageVersionFor(entries, 'kubeadm', '1.29.4'), '1.29.4-2.1');
    assert.equal(packageVersionFor(entries, 'kubeadm', '1.29.5'), undefined);
    assert.equal(packageVersionFor(entries, 'kubelet', '1.29.4'), undefined);
  });

  it('orders several minors numerically (1.26.12 above 1.26.9) even when the input is shuffled', () => {
    const lines = fixture('apt-cache-madison-kubeadm.several-minors.txt').split('\n');
    const shuffled = [...lines].reverse().join('\n');
    const versions = parseMadison(shuffled).map((e) => e.version);
    assert.equal(versions[0], '1.30.2');
    assert.equal(versions.at(-1), '1.26.9');
    assert.ok(versions.indexOf('1.26.12') < versions.indexOf('1.26.9'));
    assert.equal(versions.length, 17);
  });

  it('ignores noise and picks the newest revision of one version', () => {
    const text =
      'N: some notice\n   kubeadm | 1.33.7-1.1 | http://x/deb  Packages\n   kubeadm | 1.33.7-2.1 | http://x/deb  Packages\ngarbage | | \n';
    assert.equal(packageVersionFor(parseMadison(text), 'kubeadm', '1.33.7'), '1.33.7-2.1');
    assert.equal(upstreamVersion('1:1.33.7-1.1'), '1.33.7');
    assert.ok(comparePackageVersions('1.34.0-1.1', '1.33.10-1.1') > 0);
    assert.ok(comparePackageVersions('1.34.0-rc.1-1.1', '1.34.0-1.1') < 0);
  });
});

describe('parseKubeadmUpgradePlan (recorded kubeadm upgrade plan)', () => {
  it('reads both upgrades of the NODE-column layout, with kube-proxy and CoreDNS rows that name no node', () => {
    const plan = parseKubeadmUpgradePlan(fixture('kubeadm-upgrade-plan.patch-and-minor.txt'));
    assert.equal(plan.upToDate, false);
    assert.equal(plan.upgrades.length, 2);
    const [patch, minor] = plan.upgrades;
    assert.equal(patch?.description, 'latest version in the v1.18 series');
    assert.equal(patch?.applyCommand, 'kubeadm upgrade apply v1.18.5');
    assert.equal(patch?.kubeadmUpdateRequiredTo, undefined);
    assert.equal(minor?.description, 'latest stable version');
    assert.equal(minor?.kubeadmUpdateRequiredTo, 'v1.19.0');
    assert.deepEqual(minor?.kubelets, [{ component: 'kubelet', node: 'node1', count: 1, current: 'v1.18.3', target: 'v1.19.0' }]);
    assert.deepEqual(
      minor?.components.map((c) => [c.component, c.node ?? '', c.current, c.target]),
      [
        ['kube-apiserver', 'node1', 'v1.18.3', 'v1.19.0'],
        ['kube-controller-manager', 'node1', 'v1.18.3', 'v1.19.0'],
        ['kube-scheduler', 'node1', 'v1.18.3', 'v1.19.0'],
        ['kube-proxy', '', 'v1.18.3', 'v1.19.0'],
        ['CoreDNS', '', '1.6.7', '1.7.0'],
        ['etcd', 'node1', '3.4.3-0', '3.4.7-0'],
      ],
    );
    assert.deepEqual(plan.componentConfigs, [
      { group: 'kubeproxy.config.k8s.io', currentVersion: 'v1alpha1', preferredVersion: 'v1alpha1', manualUpgradeRequired: false },
      { group: 'kubelet.config.k8s.io', currentVersion: 'v1beta1', preferredVersion: 'v1beta1', manualUpgradeRequired: false },
    ]);
  });

  it('reads the version lines and the older layout without a NODE column (`2 x v1.28.5`)', () => {
    const plan = parseKubeadmUpgradePlan(fixture('kubeadm-upgrade-plan.v1.28-cluster.txt'));
    assert.equal(plan.clusterVersion, 'v1.28.5');
    assert.equal(plan.kubeadmVersion, 'v1.30.0-alpha.3.55+466019b1b27fc0-dirty');
    assert.equal(plan.targetVersion, 'v1.29.2');
    assert.equal(plan.latestInSeries, 'v1.29.2');
    assert.deepEqual(plan.upgrades[0]?.kubelets, [{ component: 'kubelet', count: 2, current: 'v1.28.5', target: 'v1.29.2' }]);
    assert.deepEqual(
      plan.upgrades[0]?.components.map((c) => c.component),
      ['kube-apiserver', 'kube-controller-manager', 'kube-scheduler', 'kube-proxy', 'CoreDNS'],
    );
  });

  it('reads "up-to-date" with no upgrades', () => {
    const plan = parseKubeadmUpgradePlan(fixture('kubeadm-upgrade-plan.up-to-date.txt'));
    assert.equal(plan.upToDate, true);
    assert.equal(plan.clusterVersion, 'v1.13.5');
    assert.deepEqual(plan.upgrades, []);
  });

  it('reads the `kubelet (node)` layout kubeadm 1.30 printed for a while', () => {
    const text = 'COMPONENT         CURRENT   TARGET\nkubelet (node1)   v1.19.2   v1.19.3\nkubelet (node2)   v1.19.3   v1.19.3\n';
    assert.deepEqual(
      parseKubeadmUpgradePlan(text).upgrades[0]?.kubelets.map((k) => k.node),
      ['node1', 'node2'],
    );
  });
});

describe('parseSnapshotStatus (recorded etcdutl 3.6 snapshot status)', () => {
  const expected = { hash: '5e5900a3', revision: 8, totalKeys: 7, version: '3.6.0' };
  it('reads -w json with the exact size and the hash as etcdutl prints it in hex', () => {
    assert.deepEqual(parseSnapshotStatus(fixture('etcdutl-snapshot-status.json.txt')), { ...expected, totalSizeBytes: 24576 });
  });
  it('reads -w table and -w simple to the same values (size rounded as printed)', () => {
    assert.deepEqual(parseSnapshotStatus(fixture('etcdutl-snapshot-status.table.txt')), { ...expected, totalSizeBytes: 25000 });
    assert.deepEqual(parseSnapshotStatus(fixture('etcdutl-snapshot-status.simple.txt')), { ...expected, totalSizeBytes: 25000 });
  });
  it('rejects what is not a status: etcdctl 3.6 prints its help for `snapshot status`, with exit 0', () => {
    assert.equal(
      parseSnapshotStatus('NAME:\n  snapshot - Manages etcd node snapshots\n\nUSAGE:\n  etcdctl snapshot <subcommand> [flags]\n'),
      undefined,
    );
    assert.equal(parseSnapshotStatus('{"hash":"x"}'), undefined);
    assert.equal(parseSnapshotStatus(''), undefined);
  });
});

describe('parseAptPolicy', () => {
  it('reads installed and candidate versions, (none) as null', () => {
    const text =
      'kubeadm:\n  Installed: 1.33.7-1.1\n  Candidate: 1.34.2-1.1\n  Version table:\n *** 1.33.7-1.1 500\nkubectl:\n  Installed: (none)\n  Candidate: 1.34.2-1.1\n';
    assert.deepEqual(parseAptPolicy(text), {
      kubeadm: { installed: '1.33.7-1.1', candidate: '1.34.2-1.1' },
      kubectl: { installed: null, candidate: '1.34.2-1.1' },
    });
  });
});

describe("excludedBy (a .repo section's exclude=, the dnf hold)", () => {
  const KUBE = ['kubeadm', 'kubelet', 'kubectl'];
  const GUIDE = `[kubernetes]
name=Kubernetes
baseurl=https://pkgs.k8s.io/core:/stable:/v1.33/rpm/
enabled=1
gpgcheck=1
gpgkey=https://pkgs.k8s.io/core:/stable:/v1.33/rpm/repodata/repomd.xml.key
exclude=kubelet kubeadm kubectl cri-tools kubernetes-cni
`;
  it("reads the install guide's line: all three held, in the order asked", () => {
    assert.deepEqual(excludedBy(GUIDE, 'kubernetes', KUBE), KUBE);
  });
  it('adds up exclude= and excludepkgs= lines, commas or spaces, globs; other sections and comments do not count', () => {
    const text = `# exclude=kubeadm
[other]
exclude=kubectl
[kubernetes]
excludepkgs=kube?et,cri-tools
exclude = kubead*
`;
    assert.deepEqual(excludedBy(text, 'kubernetes', KUBE), ['kubeadm', 'kubelet']);
  });
  it('nothing held without the line, or with it emptied', () => {
    assert.deepEqual(excludedBy(GUIDE.replace(/^exclude=.*$/m, ''), 'kubernetes', KUBE), []);
    assert.deepEqual(excludedBy(GUIDE.replace(/^exclude=.*$/m, 'exclude='), 'kubernetes', KUBE), []);
    assert.deepEqual(excludedBy('', 'kubernetes', KUBE), []);
  });
});
