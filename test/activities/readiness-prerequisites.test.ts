import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { before, describe, it } from 'node:test';
import { createClusterResolver } from '../../activities/host-address.js';
import { mergePatch, strategicMergePatch } from '../../activities/kube-api.js';
import { createHopPrerequisiteActivities, parseCertificateExpiration } from '../../activities/readiness/hop-prerequisites.js';
import { readReversibilityFacts } from '../../activities/readiness/reversibility-facts.js';
import { ALPHA_FEATURE_GATES, planReversibility } from '../../rules/index.js';
import type { ReadinessFinding } from '../../rules/readiness/finding.js';
import { failsWith } from '../helpers/failures.js';
import { asRoot, hostCommands, onHostPath } from '../helpers/sim-cluster.js';
import { clusterWorld } from '../helpers/sim-world.js';

// cp-1: etcd 3.5.24 (kubeadm 1.33's), certificates with a day left. worker-1/2: containerd 2, cgroup v2.
// old: cgroup v1, containerd 1.7, and a mirror that has no 1.34 yet.
const DESCRIPTION = `
name: prereq
version: 1.33.7
repository: [1.33.7, 1.34.2]
nodes:
  - {name: cp, role: control-plane, count: 1, etcdImageTag: 3.5.24-0, certificateDays: 1, containerRuntime: 'containerd://2.1.4'}
  - {name: worker, role: worker, count: 2, containerRuntime: 'containerd://2.1.4'}
  - {name: old, role: worker, cgroup: v1, containerRuntime: 'containerd://1.7.24', repository: [1.33.7]}
`;
const cluster = 'prereq';
const HOUR = 3600;

const summary = (findings: readonly ReadinessFinding[]) => findings.map((f) => `${f.check} ${f.severity} ${f.hop} ${f.ack}`).sort();

describe('hop prerequisites probed on the simulated cluster (API and SSH, read-only)', () => {
  const tc = clusterWorld(DESCRIPTION);
  let acts: ReturnType<typeof createHopPrerequisiteActivities>;
  before(async () => {
    acts = createHopPrerequisiteActivities({ clusters: createClusterResolver(tc.clustersDir) });
  });
  const { during, log } = hostCommands(() => tc);

  it('before the 1.34 hop: etcd 3.5.24 on cp-1 holds, and so does the node whose repository has no 1.34; cgroups are not probed', async () => {
    const { result, ran } = await during('cp-1', () => acts.probeHopPrerequisites({ cluster, hops: ['1.34'], runSeconds: 2 * HOUR }));
    assert.deepEqual(summary(result.findings), ['etcd-version hold 1.34 etcd-version:cp-1', 'repository hold 1.34 repository:old/1.34']);
    const etcd = result.findings.find((f) => f.check === 'etcd-version');
    assert.match(etcd?.what ?? '', /etcd on cp-1 is 3\.5\.24; kubeadm 1\.34 moves it to 3\.6/);
    assert.equal(etcd?.node, 'cp-1');
    assert.deepEqual(result.probed.checks.sort(), ['cert-expiry', 'etcd-version', 'repository']);
    assert.equal(result.probed.nodes, 4);
    assert.deepEqual(asRoot(ran), ['sudo -n kubeadm certs check-expiration -o json'], 'only kubeadm certs ran as root');
    for (const node of ['cp-1', 'worker-1', 'old']) {
      assert.ok(!log(node).some((c) => c.includes('/sys/fs/cgroup')), `no cgroup probe on ${node} before a 1.34 hop`);
    }
    assert.ok(!log('worker-1').some((c) => c.includes('kubeadm certs')), 'certificates are read on control planes only');
  });

  it('etcd at 3.5.26 passes: the finding follows the etcd static pod', async () => {
    const pod = `etcd-cp-1`;
    const before = await tc.kube.core.readNamespacedPod({ name: pod, namespace: 'kube-system' });
    const image = before.spec?.containers[0]?.image ?? '';
    assert.match(image, /etcd:3\.5\.24-0$/, 'the description set the etcd tag of the mirror pod');
    // A pod's image is the one field of its containers an update may change (a strategic merge, by container name).
    await tc.kube.core.patchNamespacedPod(
      {
        name: pod,
        namespace: 'kube-system',
        body: { spec: { containers: [{ name: 'etcd', image: image.replace('3.5.24-0', '3.5.26-0') }] } },
      },
      strategicMergePatch,
    );
    try {
      const { findings } = await acts.probeHopPrerequisites({ cluster, hops: ['1.34'], runSeconds: 2 * HOUR });
      assert.deepEqual(summary(findings), ['repository hold 1.34 repository:old/1.34']);
    } finally {
      await tc.kube.core.patchNamespacedPod(
        { name: pod, namespace: 'kube-system', body: { spec: { containers: [{ name: 'etcd', image }] } } },
        strategicMergePatch,
      );
    }
  });

  it('a run longer than the certificates: each of kubeadm certs check-expiration -o json holds, named per certificate', async () => {
    const { findings } = await acts.probeHopPrerequisites({ cluster, hops: ['1.34'], runSeconds: 2 * 24 * HOUR });
    const certs = findings.filter((f) => f.check === 'cert-expiry');
    assert.deepEqual(
      certs.map((f) => f.ack),
      [
        'admin.conf',
        'apiserver',
        'apiserver-etcd-client',
        'apiserver-kubelet-client',
        'controller-manager.conf',
        'etcd-healthcheck-client',
        'etcd-peer',
        'etcd-server',
        'front-proxy-client',
        'scheduler.conf',
        'super-admin.conf',
      ].map((c) => `cert-expiry:cp-1/${c}`),
      'the leaves expire in a day; the CAs in ten years do not',
    );
    for (const f of certs) assert.equal(f.hop, '1.34');
  });

  it('before 1.35: old runs cgroup v1, found by stat -fc %T /sys/fs/cgroup/ on every node; the sim has no 1.35 repository', async () => {
    const { result, ran } = await during('old', () => acts.probeHopPrerequisites({ cluster, hops: ['1.34', '1.35'], runSeconds: HOUR }));
    const found = summary(result.findings);
    assert.ok(found.includes('cgroup-v1 hold 1.35 cgroup-v1:old'), found.join('\n'));
    assert.ok(!found.some((f) => f.startsWith('cgroup-v1') && !f.endsWith(':old')), 'the cgroup v2 nodes pass');
    assert.ok(found.includes('etcd-version hold 1.34 etcd-version:cp-1'), 'etcd is named at the hop that brings 3.6 only');
    for (const node of ['cp-1', 'worker-1', 'worker-2', 'old']) assert.ok(found.includes(`repository hold 1.35 repository:${node}/1.35`));
    assert.ok(ran.includes('stat -fc %T /sys/fs/cgroup/'), ran.join('\n'));
    const cgroup = result.findings.find((f) => f.check === 'cgroup-v1');
    assert.equal(cgroup?.node, 'old');
    assert.match(cgroup?.todo ?? '', /cgroup v2/);
  });

  it('before 1.36: containerd 1.7 on old holds; a v1beta3 kubeadm-config holds too, v1beta4 does not', async () => {
    const hops = ['1.34', '1.35', '1.36'];
    let found = summary((await acts.probeHopPrerequisites({ cluster, hops, runSeconds: HOUR })).findings);
    assert.ok(found.includes('containerd-1 hold 1.36 containerd-1:old'), found.join('\n'));
    assert.ok(!found.some((f) => f.startsWith('containerd-1') && !f.endsWith(':old')), 'containerd 2 passes');
    assert.ok(!found.some((f) => f.startsWith('kubeadm-config-api')), 'the simulated kubeadm stores v1beta4');

    const cm = await tc.kube.core.readNamespacedConfigMap({ name: 'kubeadm-config', namespace: 'kube-system' });
    const text = cm.data?.ClusterConfiguration ?? '';
    assert.match(text, /^apiVersion: kubeadm\.k8s\.io\/v1beta4$/m);
    const patch = (t: string) =>
      tc.kube.core.patchNamespacedConfigMap(
        { name: 'kubeadm-config', namespace: 'kube-system', body: { data: { ClusterConfiguration: t } } },
        mergePatch,
      );
    await patch(text.replace('kubeadm.k8s.io/v1beta4', 'kubeadm.k8s.io/v1beta3'));
    try {
      found = summary((await acts.probeHopPrerequisites({ cluster, hops, runSeconds: HOUR })).findings);
      assert.ok(found.includes('kubeadm-config-api hold 1.36 kubeadm-config-api:kube-system/kubeadm-config'), found.join('\n'));
    } finally {
      await patch(text);
    }
  });

  it('a repository file skewless does not recognise is named, with that skewless will not rewrite it (not a repository that does not answer)', async () => {
    const LIST = '/etc/apt/sources.list.d/kubernetes.list';
    const path = onHostPath(tc, 'worker-2', LIST);
    const guide = readFileSync(path, 'utf8');
    writeFileSync(path, `${guide}deb https://example.invalid/debian bookworm main\n`);
    try {
      const { findings } = await acts.probeHopPrerequisites({ cluster, hops: ['1.34'], runSeconds: HOUR });
      const found = findings.find((f) => f.ack === 'repository:worker-2/1.34');
      assert.equal(found?.severity, 'hold', JSON.stringify(findings));
      assert.equal(
        found?.what,
        `${LIST} on worker-2 offers no 1.34.x and skewless will not rewrite it: it has 2 source line(s); the install guide's has exactly one deb line`,
      );
      assert.match(found?.todo ?? '', /^point \/etc\/apt\/sources\.list\.d\/kubernetes\.list on worker-2 at v1\.34 yourself/);
      const old = findings.find((f) => f.ack === 'repository:old/1.34');
      assert.match(old?.what ?? '', /^the package repository of 1\.34 does not answer old: its repository offers no 1\.34 kubeadm$/);
    } finally {
      writeFileSync(path, guide);
    }
  });

  it('bad input: a one-line Invalid failure, never retried, and no host is asked anything', async () => {
    const { ran } = await during('cp-1', async () => {
      const err = await failsWith(acts.probeHopPrerequisites({ cluster, hops: ['next'], runSeconds: HOUR }), 'Invalid');
      assert.equal(err.nonRetryable, true);
      assert.match(err.message, /^invalid hop "next"/);
      await failsWith(acts.probeHopPrerequisites({ cluster, hops: ['1.34'], runSeconds: -5 }), 'Invalid');
    });
    assert.deepEqual(ran, []);
  });

  it('reversibility facts (issue 36): the oldest etcd from its mirror pod, the alpha gates a control-plane pod turns on', async () => {
    const resolver = createClusterResolver(tc.clustersDir);
    const access = resolver(cluster);
    try {
      assert.deepEqual(await readReversibilityFacts(access, '1.33.7'), { etcd: '3.5.24', alphaFeatureGates: [] });
      // A second apiserver pod whose manifest turns on an alpha gate (MutatingAdmissionPolicy, alpha in 1.33) and a beta one.
      const gated = {
        metadata: {
          name: 'kube-apiserver-gated',
          namespace: 'kube-system',
          labels: { component: 'kube-apiserver', tier: 'control-plane' },
        },
        spec: {
          nodeName: 'cp-1',
          containers: [
            {
              name: 'kube-apiserver',
              image: 'registry.k8s.io/kube-apiserver:v1.33.7',
              command: [
                'kube-apiserver',
                '--feature-gates=MutatingAdmissionPolicy=true,InPlacePodVerticalScaling=true,DRAAdminAccess=false',
              ],
            },
          ],
        },
      };
      await tc.kube.core.createNamespacedPod({ namespace: 'kube-system', body: gated });
      try {
        const facts = await readReversibilityFacts(access, '1.33.7');
        assert.deepEqual(facts, { etcd: '3.5.24', alphaFeatureGates: ['MutatingAdmissionPolicy'] });
        const [verdict] = planReversibility('1.33.7', ['1.34.4'], facts);
        assert.deepEqual(
          verdict?.reasons.map((r) => r.id),
          ['alpha-feature-gates'],
        );
      } finally {
        await tc.kube.core.deleteNamespacedPod({ name: 'kube-apiserver-gated', namespace: 'kube-system', gracePeriodSeconds: 0 });
      }
    } finally {
      resolver.close();
    }
  });

  it('the alpha gate table is what the real binaries say: --help of kube-apiserver, controller-manager, scheduler', (t) => {
    const cache = process.env.SKEWLESS_CACHE ?? join(homedir(), '.cache', 'skewless');
    for (const [minor, names] of Object.entries(ALPHA_FEATURE_GATES)) {
      const release = { '1.32': '1.32.13', '1.33': '1.33.13', '1.34': '1.34.4' }[minor] as string;
      const bin = join(cache, `kube-v${release}`, 'bin');
      if (!existsSync(join(bin, 'kube-apiserver'))) {
        t.diagnostic(`kube ${release} not built here (${bin}): its table is not compared`);
        continue;
      }
      const alpha = new Set<string>();
      for (const program of ['kube-apiserver', 'kube-controller-manager', 'kube-scheduler']) {
        const help = spawnSync(join(bin, program), ['--help'], { encoding: 'utf8' });
        for (const m of `${help.stdout}${help.stderr}`.matchAll(/(?:kube:)?([A-Za-z0-9]+)=true\|false \(ALPHA/g)) alpha.add(m[1] as string);
      }
      assert.deepEqual(names.split(' '), [...alpha].sort(), `kube ${release}`);
    }
  });

  it('parses kubeadm’s CertificateExpirationInfo, and refuses another kind', () => {
    const text = JSON.stringify({
      kind: 'CertificateExpirationInfo',
      apiVersion: 'output.kubeadm.k8s.io/v1alpha3',
      certificates: [
        {
          name: 'apiserver',
          expirationDate: '2027-01-01T00:00:00Z',
          residualTime: 1,
          caName: 'ca',
          externallyManaged: false,
          missing: false,
        },
      ],
      certificateAuthorities: [
        { name: 'ca', expirationDate: '2035-01-01T00:00:00Z', residualTime: 2, externallyManaged: true, missing: false },
      ],
    });
    assert.deepEqual(parseCertificateExpiration(text), [
      { name: 'apiserver', expirationDate: '2027-01-01T00:00:00Z' },
      { name: 'ca', expirationDate: '2035-01-01T00:00:00Z', externallyManaged: true, authority: true },
    ]);
    assert.throws(() => parseCertificateExpiration('{"kind":"Status"}'), /expected kind CertificateExpirationInfo/);
  });
});
