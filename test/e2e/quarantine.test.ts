import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { historyToJSON } from '@temporalio/common/lib/proto-utils.js';
import { nodeWorkflowId } from '../../contracts/workflow-ids.js';
import { mergePatch } from '../../sim/cluster/kube-clients.js';
import { checkSkew } from '../../rules/index.js';
import { statusQuery, type UpgradeStatus } from '../../workflows/rollout-messages.js';
import { spawnCli } from '../helpers/spawn-cli.js';
import { simWorld } from '../helpers/sim-world.js';

// `solo` has one replica and a PDB that allows no disruption: the drain of the worker it runs on can
// never finish. With --on-drain-timeout quarantine the run does not wait for the operator (issue 22).
const LAB = `
name: quarantine
version: 1.32.4
repository: [1.32.4, 1.33.7, 1.34.2]
nodes:
  - {name: cp, role: control-plane, count: 1}
  - {name: worker, role: worker, count: 3}
workloads:
  - {kind: Deployment, name: web, replicas: 3, pdb: {maxUnavailable: 1}}
  - {kind: Deployment, name: solo, replicas: 1, pdb: {minAvailable: 1}}
`;

describe('e2e: a drain that cannot finish quarantines its node and the upgrade completes (--on-drain-timeout quarantine)', () => {
  const world = simWorld(LAB, 'quarantine');
  const cliEnv = () => world.cliEnv();

  it('1.32 → 1.34: the node under solo is left cordoned at 1.32.4 with its label and Event, every other node moves, exit 4 naming it', async () => {
    const soloPods = async () =>
      (await world.tc.kube.core.listNamespacedPod({ namespace: 'default', labelSelector: 'app=solo' })).items.filter(
        (p) => p.spec?.nodeName && !p.metadata?.deletionTimestamp,
      );
    const [solo] = await soloPods();
    const stuck = solo?.spec?.nodeName as string;
    assert.match(stuck ?? '', /^worker-\d$/, 'solo runs on a worker');

    const run = spawnCli(
      ['upgrade', '--cluster', 'quarantine', '--to', '1.34', '--on-drain-timeout', 'quarantine', '--drain-timeout', '5'],
      cliEnv(),
    );
    // PDB default/solo blocks every drain: the pre-flight refuses it unless acknowledged.
    const refused = await run.exited;
    assert.equal(refused.code, 1, refused.stdout + refused.stderr);
    assert.match(refused.stdout + refused.stderr, /default\/solo/);

    const acked = spawnCli(
      [
        ...['upgrade', '--cluster', 'quarantine', '--to', '1.34'],
        ...['--on-drain-timeout', 'quarantine', '--drain-timeout', '5', '--acknowledge', 'default/solo'],
      ],
      cliEnv(),
    );
    const ended = await acked.exited;
    assert.equal(ended.code, 4, ended.stdout + ended.stderr);
    const last = ended.stdout.trimEnd().split('\n').at(-1) ?? '';
    assert.match(
      last,
      new RegExp(`^quarantine: upgraded to 1\\.34\\.2 EXCEPT 1 node left behind: ${stuck} at 1\\.32\\.4 QUARANTINED, left cordoned`),
    );

    const result = (await world.env.client.workflow.getHandle('upgrade/quarantine').query(statusQuery)) as UpgradeStatus;
    assert.deepEqual(result.quarantined, [stuck]);
    assert.deepEqual(result.leftBehind, [{ node: stuck, version: '1.32.4', why: 'quarantined' }]);

    // The cluster as the apiserver has it: the node cordoned at its old version, labelled, an Event on it.
    const nodes = (await world.tc.kube.core.listNode()).items;
    const byName = Object.fromEntries(nodes.map((n) => [n.metadata?.name as string, n]));
    const node = byName[stuck];
    assert.equal(node?.spec?.unschedulable, true, 'still cordoned');
    assert.equal(node?.status?.nodeInfo?.kubeletVersion, 'v1.32.4');
    assert.ok(
      result.hops.includes(node?.metadata?.labels?.['skewless.io/quarantined'] ?? ''),
      `label ${node?.metadata?.labels?.['skewless.io/quarantined']} names a hop`,
    );
    assert.equal(node?.metadata?.annotations?.['skewless.io/quarantined-by'], 'upgrade/quarantine');
    for (const [name, n] of Object.entries(byName)) {
      if (name === stuck) continue;
      assert.equal(n.status?.nodeInfo?.kubeletVersion, 'v1.34.2', name);
      assert.notEqual(n.spec?.unschedulable, true, `${name} back in service`);
      assert.equal(n.metadata?.labels?.['skewless.io/quarantined'], undefined, name);
    }
    const events = (
      await world.tc.kube.core.listNamespacedEvent({
        namespace: 'default',
        fieldSelector: `involvedObject.kind=Node,involvedObject.name=${stuck},reason=SkewlessQuarantined`,
      })
    ).items;
    assert.equal(events.length, 1);
    assert.equal(events[0]?.type, 'Warning');
    assert.match(events[0]?.message ?? '', new RegExp(`default/${solo?.metadata?.name} \\(PDB solo\\)`));

    // solo was never evicted: the PDB held, and quarantine forced nothing.
    const after = await soloPods();
    assert.deepEqual(
      after.map((p) => [p.metadata?.uid, p.spec?.nodeName]),
      [[solo?.metadata?.uid, stuck]],
    );
    // The state the run leaves is within the skew policy: the quarantined kubelet 2 minors behind 1.34.
    const skew = checkSkew({
      apiservers: [{ node: 'cp-1', version: '1.34.2' }],
      kubelets: nodes.map((n) => ({ node: n.metadata?.name as string, version: n.status?.nodeInfo?.kubeletVersion as string })),
    });
    assert.deepEqual(skew.violations, []);
    assert.ok(result.events.some((e) => e.startsWith(`${stuck} quarantined: drain of ${stuck} did not finish within 5 s`)));

    // Quarantined at its hop, it was left out of every later one: no node workflow of it there.
    const hop = node?.metadata?.labels?.['skewless.io/quarantined'] as string;
    for (const later of result.hops.slice(result.hops.indexOf(hop) + 1))
      await assert.rejects(
        world.env.client.workflow.getHandle(nodeWorkflowId('upgrade/quarantine', stuck, later)).describe(),
        /not found/i,
        `${stuck} has no node workflow at ${later}`,
      );

    // SKEWLESS_SAVE_HISTORIES=dir keeps the run and the quarantined node's child for the replay test (test/replay/histories).
    const dir = process.env.SKEWLESS_SAVE_HISTORIES;
    if (dir) {
      const child = nodeWorkflowId('upgrade/quarantine', stuck, hop);
      for (const [id, file] of [
        ['upgrade/quarantine', 'upgrade_quarantine@quarantined.json'],
        [child, `${child.replace(/\//g, '_')}@quarantined.json`],
      ] as const)
        writeFileSync(`${dir}/${file}`, historyToJSON(await world.env.client.workflow.getHandle(id).fetchHistory()));
    }
  });
  it('once its pods can leave, the same upgrade again moves the quarantined node, puts it back in service and drops its quarantine: exit 0', async () => {
    const [stuck] =
      ((await world.env.client.workflow.getHandle('upgrade/quarantine').query(statusQuery)) as UpgradeStatus).quarantined ?? [];
    assert.ok(stuck);
    // The operator lets solo go: a PDB that allows one disruption.
    await world.tc.kube.policy.patchNamespacedPodDisruptionBudget(
      { name: 'solo', namespace: 'default', body: { spec: { minAvailable: 0 } } },
      mergePatch,
    );
    const ended = await spawnCli(['upgrade', '--cluster', 'quarantine', '--to', '1.34.2', '--on-drain-timeout', 'quarantine'], cliEnv())
      .exited;
    assert.equal(ended.code, 0, ended.stdout + ended.stderr);
    assert.match(ended.stdout.trimEnd().split('\n').at(-1) ?? '', /^quarantine: upgraded to 1\.34\.2$/);
    const node = await world.tc.kube.core.readNode({ name: stuck });
    assert.equal(node.status?.nodeInfo?.kubeletVersion, 'v1.34.2');
    assert.notEqual(node.spec?.unschedulable, true);
    assert.equal(node.metadata?.labels?.['skewless.io/quarantined'], undefined);
    assert.equal(node.metadata?.annotations?.['skewless.io/quarantined-by'], undefined);
    const result = (await world.env.client.workflow.getHandle('upgrade/quarantine').query(statusQuery)) as UpgradeStatus;
    assert.ok(result.events.includes(`${stuck}: quarantine released (back in service)`), result.events.join('\n'));
  });
});
