import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { get } from 'node:https';
import { before, describe, it } from 'node:test';
import { createControlPlaneTrialActivities, readControlPlaneRun } from '../../activities/control-plane-trial.js';
import { checkEmulationSkew, type EmulationInventory } from '../../rules/index.js';
import { createHostActivities } from '../../activities/host-activities.js';
import { createClusterResolver } from '../../activities/host-address.js';
import { readVersionHistory } from '../../sim/cluster/version-recorder.js';
import { hostCommands } from '../helpers/sim-cluster.js';
import { clusterWorld } from '../helpers/sim-world.js';

// A reversible hop's trial and rollback on two control planes (issue 36), on the per-node world: the
// real kubeadm 1.33.13 writes the emulation through --patches, the real 1.33.13 apiserver,
// controller-manager and scheduler run emulating 1.32, and going back to kubeadm's backed-up 1.32.13
// manifests keeps every object written meanwhile, with no etcd restore.
const DESCRIPTION = `
name: trial
version: 1.32.13
repository: [1.32.13, 1.33.13]
packageRepository: local-mirror
controlPlane: per-node
nodes:
  - {name: cp, role: control-plane, count: 2}
  - {name: worker, role: worker, count: 1}
`;
const cluster = 'trial';

interface VersionInfo {
  gitVersion: string;
  emulationMinor?: string;
  minCompatibilityMinor?: string;
}

describe('the trial of a reversible hop on a control plane, and its rollback (real kubeadm and binaries)', () => {
  const tc = clusterWorld(DESCRIPTION);
  let trial: ReturnType<typeof createControlPlaneTrialActivities>;
  let host: ReturnType<typeof createHostActivities>;
  before(async () => {
    const clusters = createClusterResolver(tc.clustersDir);
    trial = createControlPlaneTrialActivities({ clusters });
    host = createHostActivities({ clusters });
  });
  const { log, during } = hostCommands(() => tc);

  const cp = () => {
    const c = tc.sim.controlPlane;
    assert.ok(c.mode === 'per-node');
    return c;
  };
  const getJson = async <T>(path: string): Promise<T> => {
    const { pki } = cp();
    const tls = { ca: readFileSync(pki.caCert), cert: readFileSync(pki.adminCert), key: readFileSync(pki.adminKey) };
    const body = await new Promise<string>((resolve, reject) => {
      get(`${tc.sim.server}${path}`, { ...tls, agent: false }, (res) => {
        let text = '';
        res.on('data', (c: Buffer) => (text += c.toString()));
        res.on('end', () => resolve(text));
      }).on('error', reject);
    });
    return JSON.parse(body) as T;
  };
  const version = () => getJson<VersionInfo>('/version');
  const groups = async () =>
    (await getJson<{ groups: { versions: { groupVersion: string }[] }[] }>('/apis')).groups
      .flatMap((g) => g.versions.map((v) => v.groupVersion))
      .sort();
  const configMap = (name: string, data: Record<string, string>) =>
    tc.kube.core.createNamespacedConfigMap({ namespace: 'default', body: { metadata: { name }, data } });
  const etcdImage = async () =>
    (await tc.kube.core.readNamespacedPod({ name: 'etcd-cp-1', namespace: 'kube-system' })).spec?.containers[0]?.image;
  const kubeadmConfigVersion = async () =>
    /kubernetesVersion: (\S+)/.exec(
      (await tc.kube.core.readNamespacedConfigMap({ name: 'kubeadm-config', namespace: 'kube-system' })).data?.ClusterConfiguration ?? '',
    )?.[1];
  let groupsAt132: string[] = [];
  /**
   * A HostCommandTransient retried as the activity's profile would: kubeadm's health-check Job may not
   * complete while the controller-manager's and scheduler's leases pass on after cp-1's restart.
   */
  const asTheProfileRetries = async <T>(fn: () => Promise<T>): Promise<T> => {
    for (let attempt = 1; ; attempt++) {
      try {
        return await fn();
      } catch (err) {
        if (attempt >= 4 || (err as { type?: string }).type !== 'HostCommandTransient') throw err;
        await new Promise((r) => setTimeout(r, 5_000));
      }
    }
  };
  /** The control planes' and kubelets' versions now, with each component's emulation, as the skew rules read them. */
  const skewState = async (): Promise<EmulationInventory> => {
    const access = createClusterResolver(tc.clustersDir)(cluster);
    const entries = { apiservers: [], controllerManagers: [], schedulers: [] } as Required<
      Pick<EmulationInventory, 'apiservers' | 'controllerManagers' | 'schedulers'>
    >;
    const key = {
      'kube-apiserver': 'apiservers',
      'kube-controller-manager': 'controllerManagers',
      'kube-scheduler': 'schedulers',
    } as const;
    for (const node of ['cp-1', 'cp-2']) {
      const run = await readControlPlaneRun(access, node);
      for (const [c, r] of Object.entries(run)) entries[key[c as keyof typeof key]].push({ node, ...r });
    }
    const nodes = (await tc.kube.core.listNode()).items;
    const kubelets = nodes.map((n) => ({ node: n.metadata?.name ?? '', version: n.status?.nodeInfo?.kubeletVersion ?? '' }));
    return { ...entries, kubelets };
  };

  it('trialControlPlane: kubeadm 1.33.13 with --patches moves the three components to 1.33.13 emulating 1.32; etcd and the kubelet stay', async () => {
    const at132 = await version();
    assert.equal(at132.gitVersion, 'v1.32.13');
    assert.equal(at132.emulationMinor, undefined, '1.32.13 reports no emulation');
    groupsAt132 = await groups();
    const etcdBefore = await etcdImage();
    await configMap('before-trial', { written: 'at 1.32.13' });
    await host.installPackages({ cluster, node: 'cp-1', version: '1.33.13', packages: ['kubeadm'] });

    const { result, ran } = await during('cp-1', () =>
      trial.trialControlPlane({ cluster, node: 'cp-1', version: '1.33.13', emulates: '1.32' }),
    );
    assert.equal(result.ran, true);
    for (const c of ['kube-apiserver', 'kube-controller-manager', 'kube-scheduler'] as const)
      assert.deepEqual(result.components[c], { version: '1.33.13', emulated: '1.32' }, c);
    assert.ok(
      ran.includes(
        'sudo -n kubeadm upgrade apply v1.33.13 --yes --patches /etc/kubernetes/skewless/emulation-1.32 --etcd-upgrade=false --skip-phases=upload-config,kubelet-config,addon/coredns,addon/kube-proxy',
      ),
      ran.join('\n'),
    );
    // Half-way (cp-1 in trial, cp-2 at 1.32.13): the skew policy read at emulated versions holds.
    const half = await skewState();
    assert.deepEqual(checkEmulationSkew(half, { topology: 'kubeadm' }).violations, [], JSON.stringify(half));
    assert.equal(await kubeadmConfigVersion(), 'v1.32.13', "upload-config skipped: kubeadm-config keeps N's version");

    await host.installPackages({ cluster, node: 'cp-2', version: '1.33.13', packages: ['kubeadm'] });
    const second = await asTheProfileRetries(() =>
      trial.trialControlPlane({ cluster, node: 'cp-2', version: '1.33.13', emulates: '1.32' }),
    );
    assert.equal(second.ran, true, 'upgrade apply on a second control plane too: upgrade node would follow kubeadm-config to 1.32');
    assert.deepEqual(second.components['kube-apiserver'], { version: '1.33.13', emulated: '1.32' });
    assert.deepEqual(checkEmulationSkew(await skewState(), { topology: 'kubeadm' }).violations, []);
    // What the real programs report: the binary's version, and the emulation beside it (KEP-4330).
    const during132 = await version();
    assert.equal(during132.gitVersion, 'v1.33.13');
    assert.equal(during132.emulationMinor, '32');
    assert.equal(during132.minCompatibilityMinor, '31');
    assert.deepEqual(await groups(), groupsAt132, "the emulating apiserver serves 1.32's API groups");
    // The simulation runs what the manifests say: every program with the flag.
    for (const n of cp().nodes.values())
      for (const c of ['kube-apiserver', 'kube-controller-manager', 'kube-scheduler'] as const) {
        assert.equal(n.versionOf(c), '1.33.13', `${n.node} ${c}`);
        assert.equal(n.emulatedOf(c), '1.32', `${n.node} ${c}`);
      }
    assert.equal(await etcdImage(), etcdBefore, '--etcd-upgrade=false: etcd stays');
    const kubelet = (await tc.kube.core.readNode({ name: 'cp-1' })).status?.nodeInfo?.kubeletVersion;
    assert.equal(kubelet, 'v1.32.13', 'no kubelet moves in a trial');
    assert.equal(await kubeadmConfigVersion(), 'v1.32.13');

    await configMap('during-trial', { written: 'at 1.33.13 emulating 1.32' });
    const again = await during('cp-1', () => trial.trialControlPlane({ cluster, node: 'cp-1', version: '1.33.13', emulates: '1.32' }));
    assert.equal(again.result.ran, false);
    assert.ok(!again.ran.some((c) => c.includes('kubeadm')), 'nothing runs when the trial is in place');
  });

  it('refuses a trial the binaries cannot emulate, before touching the host', async () => {
    const before = log('cp-1').length;
    await assert.rejects(trial.trialControlPlane({ cluster, node: 'cp-1', version: '1.33.13', emulates: '1.30' }), /cannot emulate 1\.30/);
    assert.equal(log('cp-1').length, before);
  });

  it("rollbackControlPlane: kubeadm's backed-up 1.32.13 manifests back in place; every object written meanwhile is there, etcd untouched", async () => {
    const first = await trial.rollbackControlPlane({ cluster, node: 'cp-2', version: '1.32.13' });
    assert.equal(first.ran, true);
    assert.deepEqual(checkEmulationSkew(await skewState(), { topology: 'kubeadm' }).violations, [], 'half-way back, the policy holds');
    const { result, ran } = await during('cp-1', () => trial.rollbackControlPlane({ cluster, node: 'cp-1', version: '1.32.13' }));
    assert.equal(result.ran, true);
    assert.deepEqual(result.restored, ['kube-scheduler', 'kube-controller-manager', 'kube-apiserver']);
    assert.match(result.backup ?? '', /^\/etc\/kubernetes\/tmp\/kubeadm-backup-manifests-/);
    const back = await version();
    assert.equal(back.gitVersion, 'v1.32.13');
    assert.equal(back.emulationMinor, undefined);
    assert.deepEqual(await groups(), groupsAt132);
    for (const n of cp().nodes.values())
      for (const c of ['kube-apiserver', 'kube-controller-manager', 'kube-scheduler'] as const) {
        assert.equal(n.versionOf(c), '1.32.13', `${n.node} ${c}`);
        assert.equal(n.emulatedOf(c), undefined, `${n.node} ${c}`);
      }
    for (const name of ['before-trial', 'during-trial'])
      assert.ok((await tc.kube.core.readNamespacedConfigMap({ name, namespace: 'default' })).data?.written, name);
    for (const node of ['cp-1', 'cp-2'])
      assert.ok(!log(node).some((c) => c.includes('snapshot restore')), `no etcd restore ran on ${node}`);
    assert.ok(!ran.some((c) => /^(sudo -n )?kubeadm /.test(c)), 'kubeadm refuses a minor downgrade: the backups, not kubeadm');
    assert.equal(await kubeadmConfigVersion(), 'v1.32.13', 'nothing of the trial is left in kubeadm-config');

    const again = await trial.rollbackControlPlane({ cluster, node: 'cp-1', version: '1.32.13' });
    assert.equal(again.ran, false);
  });

  it('the recorded states show the emulation each apiserver reports, and the skew policy under emulation held in every one', async () => {
    await tc.sim.versionHistorySettled();
    const history = readVersionHistory(tc.sim.stateDir).filter((r) => !r.error);
    const inTrial = history.filter(
      (r) => r.inventory.apiservers.length === 2 && r.inventory.apiservers.every((a) => a.version === '1.33.13' && a.emulated === '1.32'),
    );
    assert.ok(inTrial.length > 0, history.map((r) => `${r.cause}: ${JSON.stringify(r.inventory.apiservers)}`).join('\n'));
    assert.ok(
      inTrial.some((r) => r.inventory.schedulers?.every((c) => c.version === '1.33.13' && c.emulated === '1.32')),
      'the schedulers too',
    );
    for (const r of history) assert.deepEqual(checkEmulationSkew(r.inventory, { topology: 'kubeadm' }).violations, [], r.cause);
  });

  it('downgradePackages puts kubeadm back at 1.32.13 after the rollback, held as before', async () => {
    for (const node of ['cp-1', 'cp-2']) {
      const heldBefore = (await host.readPackageHolds({ cluster, node })).held;
      const r = await host.downgradePackages({ cluster, node, version: '1.32.13', packages: ['kubeadm'] });
      assert.deepEqual(r.installed, ['kubeadm'], node);
      assert.match(tc.sim.hosts.state(node).packages.kubeadm ?? '', /^1\.32\.13-/, node);
      assert.deepEqual((await host.readPackageHolds({ cluster, node })).held, heldBefore, `${node}: holds as they were`);
    }
  });

  it('commitControlPlane: a second trial committed by kubeadm without the patches, apply on the first and node on the other; nothing lost', async () => {
    for (const node of ['cp-1', 'cp-2']) {
      await host.installPackages({ cluster, node, version: '1.33.13', packages: ['kubeadm'] });
      await asTheProfileRetries(() => trial.trialControlPlane({ cluster, node, version: '1.33.13', emulates: '1.32' }));
    }
    await configMap('during-second-trial', { written: 'at 1.33.13 emulating 1.32, committed' });
    await assert.rejects(
      trial.commitControlPlane({ cluster, node: 'cp-2', version: '1.33.13', first: false }),
      /commit the first control plane before cp-2/,
    );
    const first = await during('cp-1', () => trial.commitControlPlane({ cluster, node: 'cp-1', version: '1.33.13', first: true }));
    assert.equal(first.result.ran, true);
    assert.ok(first.ran.includes('sudo -n kubeadm upgrade apply v1.33.13 --yes'), first.ran.join('\n'));
    assert.equal(await kubeadmConfigVersion(), 'v1.33.13', 'the commit uploads kubeadm-config at N+1');
    assert.deepEqual(checkEmulationSkew(await skewState(), { topology: 'kubeadm' }).violations, [], 'half-way through the commit');
    const second = await asTheProfileRetries(() =>
      during('cp-2', () => trial.commitControlPlane({ cluster, node: 'cp-2', version: '1.33.13', first: false })),
    );
    assert.ok(second.ran.includes('sudo -n kubeadm upgrade node'), second.ran.join('\n'));
    for (const n of cp().nodes.values())
      for (const c of ['kube-apiserver', 'kube-controller-manager', 'kube-scheduler'] as const) {
        assert.equal(n.versionOf(c), '1.33.13', `${n.node} ${c}`);
        assert.equal(n.emulatedOf(c), undefined, `${n.node} ${c}: the emulation is gone`);
      }
    const native = await version();
    assert.equal(native.gitVersion, 'v1.33.13');
    assert.equal(native.emulationMinor ?? '33', '33', 'no longer emulating 1.32');
    for (const name of ['before-trial', 'during-trial', 'during-second-trial'])
      assert.ok((await tc.kube.core.readNamespacedConfigMap({ name, namespace: 'default' })).data?.written, name);
    const again = await trial.commitControlPlane({ cluster, node: 'cp-1', version: '1.33.13', first: true });
    assert.equal(again.ran, false);
  });
});
