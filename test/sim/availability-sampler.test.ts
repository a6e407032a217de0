import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { formatAvailability, pdbFloor, startAvailabilitySampler } from '../../sim/availability-sampler.js';
import { mergePatch } from '../../sim/cluster/kube-clients.js';
import { waitFor } from '../../sim/cluster/wait-for.js';
import { clusterWorld } from '../helpers/sim-world.js';

const DESCRIPTION = `
name: avail
version: 1.32.4
repository: [1.32.4]
nodes:
  - {name: cp, role: control-plane, count: 1}
  - {name: worker, role: worker, count: 2}
workloads:
  - {kind: Deployment, name: web, replicas: 3, pdb: {minAvailable: 2}}
  - {kind: StatefulSet, name: db, replicas: 2, pdb: {maxUnavailable: 50%}}
`;

describe('pdbFloor: the Ready pods a budget guarantees', () => {
  const table: [string, { minAvailable?: number | string; maxUnavailable?: number | string }, number, number][] = [
    ['minAvailable count', { minAvailable: 2 }, 3, 2],
    ['minAvailable count above the replicas', { minAvailable: 2 }, 1, 2],
    ['minAvailable % rounds up', { minAvailable: '50%' }, 3, 2],
    ['maxUnavailable count', { maxUnavailable: 1 }, 3, 2],
    ['maxUnavailable % rounds up (fewer must stay)', { maxUnavailable: '34%' }, 3, 1],
    ['maxUnavailable beyond the replicas', { maxUnavailable: 5 }, 3, 0],
    ['maxUnavailable 0', { maxUnavailable: 0 }, 3, 3],
    ['neither', {}, 3, 0],
  ];
  for (const [what, spec, expected, floor] of table) it(what, () => assert.equal(pdbFloor(spec, expected), floor));
});

describe('the availability sampler on a simulated cluster', () => {
  const tc = clusterWorld(DESCRIPTION);

  const pods = async (app: string) =>
    (await tc.kube.core.listNamespacedPod({ namespace: 'default', labelSelector: `app=${app}` })).items.filter(
      (p) => !p.metadata?.deletionTimestamp,
    );
  const ready = async (app: string) =>
    (await pods(app)).filter((p) => p.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True')).length;
  const cordon = (unschedulable: boolean) =>
    Promise.all(['worker-1', 'worker-2'].map((name) => tc.kube.core.patchNode({ name, body: { spec: { unschedulable } } }, mergePatch)));
  const settled = () => waitFor('web 3 and db 2 Ready', async () => (await ready('web')) === 3 && (await ready('db')) === 2, 30_000, 100);

  it('sees every PDB and no violation while the workloads are left alone', async () => {
    await settled();
    const sampler = startAvailabilitySampler(tc.kube, { intervalMs: 100 });
    await new Promise((r) => setTimeout(r, 1500));
    const report = await sampler.stop();
    assert.equal(report.violated, false, formatAvailability(report));
    assert.ok(report.samples >= 3, `${report.samples} samples`);
    assert.equal(report.errors, 0, report.lastError);
    assert.deepEqual(
      report.pdbs.map((p) => [p.name, p.floor, p.minReady, p.samples]),
      [
        ['db', 1, 2, report.samples], // 2 − ceil(50% of 2)
        ['web', 2, 3, report.samples],
      ],
    );
    assert.match(
      formatAvailability(report),
      /^default\/db: min ready 2, floor 1, \d+ samples, ok\ndefault\/web: min ready 3, floor 2, \d+ samples, ok$/,
    );
  });

  it('records a violation when pods are deleted past the budget (no eviction) and cannot come back', async () => {
    await settled();
    const sampler = startAvailabilitySampler(tc.kube, { intervalMs: 100 });
    // With every worker cordoned the replacements stay Pending, so the dip lasts until we uncordon.
    await cordon(true);
    const victims = (await pods('web')).slice(0, 2);
    await Promise.all(
      victims.map((p) =>
        tc.kube.core.deleteNamespacedPod({ name: p.metadata?.name as string, namespace: 'default', gracePeriodSeconds: 0 }),
      ),
    );
    await waitFor('web down to 1 Ready', async () => (await ready('web')) === 1, 10_000, 100);
    await new Promise((r) => setTimeout(r, 500));
    await cordon(false);
    await settled();
    const report = await sampler.stop();
    const web = report.pdbs.find((p) => p.name === 'web');
    assert.ok(report.violated, formatAvailability(report));
    assert.equal(web?.minReady, 1);
    assert.ok((web?.violations.length ?? 0) >= 2, formatAvailability(report));
    // Judged against the Deployment's 3 replicas, not the pods that happen to exist.
    assert.deepEqual(web?.violations.map((v) => [v.ready, v.floor, v.expected])[0], [1, 2, 3]);
    assert.ok(web?.violations.every((v) => !Number.isNaN(Date.parse(v.at))));
    assert.deepEqual(report.pdbs.find((p) => p.name === 'db')?.violations, [], 'the other PDB is unaffected');
    assert.match(
      formatAvailability(report),
      /^default\/web: min ready 1, floor 2, \d+ samples, VIOLATED \d+× \(first \S+: 1 ready < 2\)$/m,
    );
  });

  it('follows the controller: scaling below minAvailable violates it; below maxUnavailable the floor scales down', async () => {
    await settled();
    const sampler = startAvailabilitySampler(tc.kube, { intervalMs: 100 });
    const scale = (kind: 'Deployment' | 'StatefulSet', name: string, replicas: number) =>
      kind === 'Deployment'
        ? tc.kube.apps.patchNamespacedDeployment({ name, namespace: 'default', body: { spec: { replicas } } }, mergePatch)
        : tc.kube.apps.patchNamespacedStatefulSet({ name, namespace: 'default', body: { spec: { replicas } } }, mergePatch);
    await Promise.all([scale('Deployment', 'web', 1), scale('StatefulSet', 'db', 1)]);
    await waitFor('web and db at 1 pod', async () => (await pods('web')).length === 1 && (await pods('db')).length === 1, 30_000, 100);
    await new Promise((r) => setTimeout(r, 500));
    const report = await sampler.stop();
    const [db, web] = report.pdbs;
    assert.equal(web?.floor, 2);
    assert.ok((web?.violations.length ?? 0) > 0, formatAvailability(report));
    assert.equal(db?.floor, 0, 'maxUnavailable 50% of 1 replica: ceil(0.5) = 1 may be down');
    assert.deepEqual(db?.violations, [], formatAvailability(report));
  });
});
