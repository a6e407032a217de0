import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import type { ClusterResolver, RemoteShell } from '../../activities/cluster-access.js';
import { createInventoryActivities, type Inventory } from '../../activities/inventory.js';
import { mergePatch, strategicMergePatch } from '../../activities/kube-api.js';
import { checkSkew, planUpgrade, STAGE_LABEL } from '../../rules/index.js';
import { clusterWorld } from '../helpers/sim-world.js';

const DESCRIPTION = `
name: inv
version: 1.32.4
repository: [1.32.4, 1.33.7]
nodes:
  - {name: cp, role: control-plane, count: 2}
  - {name: worker, role: worker, count: 3}
workloads:
  - {kind: Deployment, name: web, replicas: 3, pdb: {minAvailable: 3}}
  - {kind: Deployment, name: api, replicas: 2, pdb: {maxUnavailable: 1}}
  - {kind: DaemonSet, name: agent}
  - {kind: Pod, name: pet, node: worker-2}
`;

const noShell: RemoteShell = {
  exec: () => Promise.reject(new Error('inventory must not use SSH')),
  download: () => Promise.reject(new Error('inventory must not use SSH')),
};

describe('takeInventory against the simulated cluster', () => {
  const tc = clusterWorld(DESCRIPTION);
  let clusters: ClusterResolver;
  before(async () => {
    clusters = (name) => {
      assert.equal(name, 'inv');
      return { config: tc.config, kube: tc.workerKube, shell: noShell };
    };
  });

  // A page size of 3 walks continue tokens through every list (about 25 pods).
  const take = (pageSize = 3): Promise<Inventory> => createInventoryActivities({ clusters, pageSize }).takeInventory({ cluster: 'inv' });

  it('reads nodes, roles, versions, component images and the kubeadm cluster version', async () => {
    const inv = await take();
    assert.deepEqual(inv.problems, []);
    assert.equal(inv.cluster, 'inv');
    assert.equal(inv.clusterVersion, '1.32.4');
    assert.deepEqual(
      inv.nodes.map((n) => `${n.name} ${n.role} ${n.kubeletVersion} ready=${n.ready} cordoned=${n.unschedulable} ${n.internalIP}`),
      [
        'cp-1 control-plane 1.32.4 ready=true cordoned=false 127.0.0.1',
        'cp-2 control-plane 1.32.4 ready=true cordoned=false 127.0.0.1',
        'worker-1 worker 1.32.4 ready=true cordoned=false 127.0.0.1',
        'worker-2 worker 1.32.4 ready=true cordoned=false 127.0.0.1',
        'worker-3 worker 1.32.4 ready=true cordoned=false 127.0.0.1',
      ],
    );
    assert.deepEqual(inv.controlPlane, [
      { node: 'cp-1', apiserver: '1.32.4', controllerManager: '1.32.4', scheduler: '1.32.4' },
      { node: 'cp-2', apiserver: '1.32.4', controllerManager: '1.32.4', scheduler: '1.32.4' },
    ]);
    assert.deepEqual(
      inv.kubeProxies.map((k) => `${k.node} ${k.version}`),
      ['cp-1', 'cp-2', 'worker-1', 'worker-2', 'worker-3'].map((n) => `${n} 1.32.4`),
    );
    // Paging changes nothing: the default page size gives the same inventory.
    assert.deepEqual(await take(500), inv);
    assert.doesNotThrow(() => JSON.parse(JSON.stringify(inv)));
  });

  it('covers each PDB with its pods and flags the one that blocks every drain', async () => {
    const inv = await take();
    const web = inv.pdbs.find((p) => p.name === 'web');
    const api = inv.pdbs.find((p) => p.name === 'api');
    assert.equal(inv.pdbs.length, 2);
    assert.equal(web?.minAvailable, 3);
    assert.equal(web?.disruptionsAllowed, 0);
    assert.equal(web?.expectedPods, 3);
    assert.equal(web?.coveredPods, 3);
    assert.equal(api?.disruptionsAllowed, 1);
    assert.equal(api?.coveredPods, 2);

    assert.deepEqual(
      inv.pdbFindings.map((f) => `${f.severity} ${f.namespace}/${f.name} ${f.ruleId}`),
      ['error default/web min-available-all'],
    );
    assert.match(inv.pdbFindings[0]?.message ?? '', /minAvailable 3 is at least the 3 pod\(s\).*scale the workload above 3/);
  });

  it('lists the bare pods, whose drains will block, by node; not the mirror, DaemonSet or controlled pods, nor a finished one', async () => {
    const inv = await take();
    assert.deepEqual([inv.barePods, inv.barePodCount], [[{ namespace: 'default', name: 'pet', node: 'worker-2' }], 1]);
    // A second bare pod, on worker-1, that has finished: nothing is lost by deleting it, so no drain blocks on it.
    const done = {
      metadata: { name: 'done', namespace: 'default' },
      spec: { nodeName: 'worker-1', containers: [{ name: 'c', image: 'busybox' }] },
    };
    await tc.kube.core.createNamespacedPod({ namespace: 'default', body: done });
    const running = await take();
    assert.deepEqual(
      running.barePods?.map((p) => `${p.node} ${p.namespace}/${p.name}`),
      ['worker-1 default/done', 'worker-2 default/pet'],
    );
    await tc.kube.core.patchNamespacedPodStatus(
      { name: 'done', namespace: 'default', body: { status: { phase: 'Succeeded' } } },
      mergePatch,
    );
    assert.deepEqual(
      (await take()).barePods?.map((p) => p.name),
      ['pet'],
    );
    await tc.kube.core.deleteNamespacedPod({ name: 'done', namespace: 'default', gracePeriodSeconds: 0 });
  });

  it('gives a skew inventory that the rules judge and plan from directly', async () => {
    const inv = await take();
    assert.deepEqual(checkSkew(inv.skew), { compliant: true, violations: [] });
    assert.equal(inv.skew.kubelets?.length, 5);
    assert.deepEqual(
      inv.skew.nodes.map((n) => `${n.name}/${n.role}`),
      ['cp-1/control-plane', 'cp-2/control-plane', 'worker-1/worker', 'worker-2/worker', 'worker-3/worker'],
    );
    const plan = planUpgrade({ inventory: inv.skew, to: '1.33', available: ['1.32.4', '1.33.7'] });
    assert.equal(plan.from, '1.32.4');
    assert.deepEqual(plan.hops, ['1.33.7']);
    assert.deepEqual(plan.rollout.controlPlanes, ['cp-1', 'cp-2']);
    assert.equal(plan.skew.compliant, true);
  });

  it('sees changes made through the API in a new inventory: kubelet version, cordon, stage label, component image, cluster version', async () => {
    await tc.kube.core.patchNodeStatus({ name: 'worker-2', body: { status: { nodeInfo: { kubeletVersion: 'v1.33.0' } } } }, mergePatch);
    await tc.kube.core.patchNode(
      { name: 'worker-1', body: { spec: { unschedulable: true }, metadata: { labels: { [STAGE_LABEL]: 'canary' } } } },
      mergePatch,
    );
    const cm = 'kube-controller-manager-cp-2';
    const containers = [{ name: 'kube-controller-manager', image: 'registry.k8s.io/kube-controller-manager:v1.33.0' }];
    await tc.kube.core.patchNamespacedPod({ name: cm, namespace: 'kube-system', body: { spec: { containers } } }, strategicMergePatch);
    const config = await tc.kube.core.readNamespacedConfigMap({ name: 'kubeadm-config', namespace: 'kube-system' });
    const text = config.data?.ClusterConfiguration?.replace(/^kubernetesVersion:.*$/m, 'kubernetesVersion: v1.32.9');
    await tc.kube.core.patchNamespacedConfigMap(
      { name: 'kubeadm-config', namespace: 'kube-system', body: { data: { ClusterConfiguration: text } } },
      mergePatch,
    );

    const inv = await take();
    assert.deepEqual(inv.problems, []);
    assert.equal(inv.clusterVersion, '1.32.9');
    const byName = Object.fromEntries(inv.nodes.map((n) => [n.name, n]));
    assert.equal(byName['worker-2']?.kubeletVersion, '1.33.0');
    assert.equal(byName['worker-1']?.unschedulable, true);
    assert.equal(byName['worker-1']?.stage, 'canary');
    assert.deepEqual(inv.skew.nodes.find((n) => n.name === 'worker-1')?.labels, { [STAGE_LABEL]: 'canary' });
    assert.equal(inv.controlPlane.find((c) => c.node === 'cp-2')?.controllerManager, '1.33.0');
    assert.deepEqual(
      checkSkew(inv.skew)
        .violations.map((v) => `${v.component}/${v.node}/${v.ruleId}`)
        .sort(),
      ['controllerManager/cp-2/control-plane-newer-than-apiserver', 'kubelet/worker-2/node-newer-than-apiserver'],
    );
  });

  it('reports what it cannot read as problems instead of failing', async () => {
    await tc.kube.core.patchNodeStatus(
      { name: 'worker-3', body: { status: { nodeInfo: { kubeletVersion: 'v1.33.0-dirty+abc' } } } },
      mergePatch,
    );
    await tc.kube.core.deleteNamespacedConfigMap({ name: 'kubeadm-config', namespace: 'kube-system' });
    const inv = await take();
    assert.equal(inv.clusterVersion, undefined);
    assert.equal(inv.nodes.find((n) => n.name === 'worker-3')?.kubeletVersion, 'v1.33.0-dirty+abc');
    assert.ok(!inv.skew.kubelets?.some((k) => k.node === 'worker-3'), 'an unreadable version is kept out of the skew inventory');
    assert.equal(inv.problems.length, 2, inv.problems.join('\n'));
    assert.match(inv.problems.join('\n'), /kubeadm-config not found/);
    assert.match(inv.problems.join('\n'), /node worker-3 reports kubelet version "v1\.33\.0-dirty\+abc"/);
  });
});
