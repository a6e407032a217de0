import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import { createClusterResolver } from '../../activities/host-address.js';
import { mergePatch } from '../../activities/kube-api.js';
import { createRehearsalActivities, type RehearsalFacts } from '../../activities/rehearsal.js';
import { twinDescription } from '../../client/rehearse/twin-description.js';
import { waitFor } from '../../sim/cluster/wait-for.js';
import { parseDescription } from '../../sim/description.js';
import { clusterWorld } from '../helpers/sim-world.js';

const DESCRIPTION = `
name: twin
version: 1.33.7
repository: [1.33.7, 1.34.2]
nodes:
  - {name: cp, role: control-plane, count: 1, labels: {zone: a}}
  - {name: worker, role: worker, count: 2, labels: {pool: blue}}
workloads:
  - {kind: Deployment, name: web, namespace: shop, replicas: 2, pdb: {minAvailable: 2}}
  - {kind: StatefulSet, name: db, namespace: shop, replicas: 2, emptyDir: true, pdb: {maxUnavailable: 1}}
  - {kind: DaemonSet, name: agent, namespace: monitoring}
  - {kind: Pod, name: lonely, node: worker-2}
`;
const SECRET_VALUE = 'hunter2-rehearsal-9f3a7c';
const IMAGE = 'registry.example.invalid/payments:sha-1234abcd';

/**
 * describeClusterForRehearsal against the real simulated API: the facts match the description the
 * simulation was started from, and nothing but names, counts, labels and versions comes back (a
 * Secret's value, a Deployment's env var holding it, its image and an annotation do not).
 */
describe('describeClusterForRehearsal against the simulated cluster', () => {
  const tc = clusterWorld(DESCRIPTION);
  let facts: RehearsalFacts;

  before(async () => {
    // What must never leave the cluster: a Secret, a Deployment whose env carries its value, an image, an annotation.
    await tc.kube.core.createNamespacedSecret({
      namespace: 'shop',
      body: { metadata: { name: 'payments-key' }, stringData: { key: SECRET_VALUE } },
    });
    await tc.kube.apps.createNamespacedDeployment({
      namespace: 'shop',
      body: {
        metadata: { name: 'payments', annotations: { 'example.com/owner': SECRET_VALUE } },
        spec: {
          replicas: 1,
          selector: { matchLabels: { app: 'payments' } },
          template: {
            metadata: { labels: { app: 'payments' }, annotations: { 'example.com/token': SECRET_VALUE } },
            spec: {
              terminationGracePeriodSeconds: 1,
              containers: [
                { name: 'app', image: IMAGE, args: [`--key=${SECRET_VALUE}`], env: [{ name: 'PAYMENTS_KEY', value: SECRET_VALUE }] },
              ],
            },
          },
        },
      },
    });
    // A PDB whose name is not its workload's.
    await tc.kube.policy.createNamespacedPodDisruptionBudget({
      namespace: 'shop',
      body: { metadata: { name: 'payments-budget' }, spec: { minAvailable: 1, selector: { matchLabels: { app: 'payments' } } } },
    });
    await tc.kube.core.patchNode(
      { name: 'worker-1', body: { metadata: { annotations: { 'example.com/secret': SECRET_VALUE } } } },
      mergePatch,
    );
    await waitFor(
      'payments available',
      async () =>
        ((await tc.kube.apps.readNamespacedDeployment({ name: 'payments', namespace: 'shop' })).status?.availableReplicas ?? 0) >= 1,
      120_000,
    );
    facts = await createRehearsalActivities({ clusters: createClusterResolver(tc.clustersDir) }).describeClusterForRehearsal({
      cluster: 'twin',
    });
  });

  it('reads the nodes, roles, versions and labels the simulation was started from', () => {
    const d = tc.sim.description;
    assert.equal(facts.clusterVersion, d.version);
    assert.deepEqual(
      facts.nodes.map((n) => [n.name, n.role, n.kubelet]),
      d.nodes.map((n) => [n.name, n.role, n.kubelet]),
    );
    assert.deepEqual(facts.nodes[0]?.components, d.nodes[0]?.components);
    assert.equal(facts.nodes[0]?.labels.zone, 'a');
    assert.equal(facts.nodes[1]?.labels.pool, 'blue');
    assert.deepEqual(facts.problems, []);
    assert.equal(facts.packageManager, 'apt', "the configuration's package tools, for the twin's hosts");
  });

  it('reads the workloads, their PDBs (matched by selector), the bare pod; the twin built from them is the original again', async () => {
    const w = Object.fromEntries(facts.workloads.map((x) => [`${x.kind} ${x.namespace}/${x.name}`, x]));
    // Where the cluster runs each workload's pods (its selector's), as the API says: the twin's scheduler places its own.
    const nodesOf = async (app: string) =>
      [
        ...new Set(
          (await tc.kube.core.listNamespacedPod({ namespace: 'shop', labelSelector: `app=${app}` })).items.map((p) => p.spec?.nodeName),
        ),
      ].sort();
    const [webNodes, dbNodes] = [await nodesOf('web'), await nodesOf('db')];
    assert.ok(webNodes.length >= 1 && dbNodes.length >= 1, `${webNodes} ${dbNodes}`);
    assert.deepEqual(w['Deployment shop/web'], {
      kind: 'Deployment',
      namespace: 'shop',
      name: 'web',
      replicas: 2,
      emptyDir: false,
      nodes: webNodes,
    });
    assert.deepEqual(w['StatefulSet shop/db'], {
      kind: 'StatefulSet',
      namespace: 'shop',
      name: 'db',
      replicas: 2,
      emptyDir: true,
      nodes: dbNodes,
    });
    assert.equal(w['DaemonSet monitoring/agent']?.replicas, 2, 'on both workers (the control plane is tainted)');
    assert.deepEqual(
      facts.pdbs.map((p) => [p.name, p.covers, p.minAvailable ?? null, p.maxUnavailable ?? null]),
      [
        ['db', ['StatefulSet/db'], null, 1],
        ['payments-budget', ['Deployment/payments'], 1, null],
        ['web', ['Deployment/web'], 2, null],
      ],
    );
    assert.deepEqual(facts.barePods, [{ namespace: 'default', name: 'lonely', node: 'worker-2', emptyDir: false }]);

    const { description: twin, names } = twinDescription('twin', { facts }, { repository: ['1.33.7', '1.34.2'] });
    const original = tc.sim.description;
    const shape = (d: typeof twin) => ({
      version: d.version,
      nodes: d.nodes.map((n) => [n.name, n.role, n.kubelet, n.components ?? null]),
      workloads: d.workloads
        .filter((x) => x.name !== 'payments')
        .map((x) => [x.kind, x.namespace, x.name, x.replicas, x.pdb ?? null, x.node ?? null, x.emptyDir ?? false])
        .sort(),
    });
    assert.deepEqual(shape(twin), shape(original));
    assert.equal(names.pdbs['shop/payments'], 'shop/payments-budget');
    assert.deepEqual(names.clusterNodes?.['shop/web'], webNodes, "mapped back by owner: the cluster's placement of web");
    assert.equal(parseDescription(JSON.stringify(twin)).name, 'twin'); // JSON is YAML
  });

  it('carries no Secret value, env, args, image or annotation', () => {
    const text = JSON.stringify(facts);
    assert.ok(!text.includes(SECRET_VALUE), 'a secret value left the cluster');
    assert.ok(!text.includes('PAYMENTS_KEY') && !text.includes('payments-key'), 'an env var or a Secret name left the cluster');
    assert.ok(!text.includes('registry.') && !text.includes(':sha-'), 'an image left the cluster');
    assert.ok(!text.includes('example.com/'), 'an annotation left the cluster');
  });
});
