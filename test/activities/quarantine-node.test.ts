import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import type { ClusterAccess, RemoteShell } from '../../activities/cluster-access.js';
import { createNodeActivities } from '../../activities/node-activities.js';
import {
  createQuarantineActivities,
  QUARANTINED_BY_ANNOTATION,
  QUARANTINED_LABEL,
  QUARANTINED_REASON,
} from '../../activities/quarantine-node.js';
import { mergePatch } from '../../activities/kube-api.js';
import { clusterWorld } from '../helpers/sim-world.js';

const DESCRIPTION = `
name: quarantine
version: 1.32.4
repository: [1.32.4]
nodes:
  - {name: cp, role: control-plane, count: 1}
  - {name: worker, role: worker, count: 2}
`;
const OWNER = 'upgrade/quarantine';
const noShell: RemoteShell = {
  exec: () => Promise.reject(new Error('no SSH in node activities')),
  download: () => Promise.reject(new Error('no SSH in node activities')),
};

describe('quarantineNode against the simulated API (a real kube-apiserver)', () => {
  const tc = clusterWorld(DESCRIPTION);
  let acts: ReturnType<typeof createQuarantineActivities> & ReturnType<typeof createNodeActivities>;
  before(async () => {
    const clusters = (): ClusterAccess => ({ config: tc.config, kube: tc.workerKube, shell: noShell });
    acts = { ...createNodeActivities({ clusters }), ...createQuarantineActivities({ clusters }) };
  });

  const c = 'quarantine';
  const events = async (node: string) =>
    (
      await tc.kube.core.listNamespacedEvent({
        namespace: 'default',
        fieldSelector: `involvedObject.kind=Node,involvedObject.name=${node},reason=${QUARANTINED_REASON}`,
      })
    ).items;
  const input = {
    cluster: c,
    node: 'worker-1',
    owner: OWNER,
    hop: '1.33.7',
    message: 'drain of worker-1 did not finish within 5 s; 1 pod(s) remain: default/solo-0 (PDB solo)',
  };

  it('labels the cordoned node with the hop and its owner, and records one Warning Event naming the pods; the cordon stays', async () => {
    await acts.cordonNode({ cluster: c, node: 'worker-1', owner: OWNER });
    assert.deepEqual(await acts.quarantineNode(input), { labelled: true, recorded: true });
    const node = await tc.kube.core.readNode({ name: 'worker-1' });
    assert.equal(node.metadata?.labels?.[QUARANTINED_LABEL], '1.33.7');
    assert.equal(node.metadata?.annotations?.[QUARANTINED_BY_ANNOTATION], OWNER);
    assert.equal(node.spec?.unschedulable, true);
    const [event, ...more] = await events('worker-1');
    assert.equal(more.length, 0);
    assert.equal(event?.type, 'Warning');
    assert.equal(event?.involvedObject.uid, node.metadata?.uid);
    assert.match(event?.message ?? '', /default\/solo-0 \(PDB solo\).*quarantined by upgrade\/quarantine at hop 1\.33\.7/);
    // Selectable as cluster state.
    const labelled = await tc.kube.core.listNode({ labelSelector: QUARANTINED_LABEL });
    assert.deepEqual(
      labelled.items.map((n) => n.metadata?.name),
      ['worker-1'],
    );
  });

  it('a retry writes nothing and records no second Event', async () => {
    const rv = (await tc.kube.core.readNode({ name: 'worker-1' })).metadata?.resourceVersion;
    assert.deepEqual(await acts.quarantineNode(input), { labelled: false, recorded: false });
    assert.equal((await events('worker-1')).length, 1);
    const after = await tc.kube.core.readNode({ name: 'worker-1' });
    // The node-lifecycle controller may write the node meanwhile; our label is what it was.
    assert.equal(after.metadata?.labels?.[QUARANTINED_LABEL], '1.33.7');
    assert.ok(rv !== undefined);
  });

  it("a controller's write between the read and the label (a 409) is read again, not a failure", async () => {
    await acts.cordonNode({ cluster: c, node: 'worker-2', owner: OWNER });
    // The first read of worker-2 is followed by another writer's change, as the node-lifecycle controller does after a cordon.
    let interfered = 0;
    const core = new Proxy(tc.workerKube.core, {
      get(target, prop, receiver) {
        const value = Reflect.get(target, prop, receiver) as unknown;
        if (prop !== 'readNode' || typeof value !== 'function') return value;
        return async (args: { name: string }) => {
          const node = await (value as (a: { name: string }) => Promise<unknown>).call(target, args);
          if (interfered++ === 0) {
            const body = { metadata: { annotations: { 'test.skewless.io/touched': 'yes' } } };
            await tc.kube.core.patchNode({ name: args.name, body }, mergePatch);
          }
          return node;
        };
      },
    });
    const racing = createQuarantineActivities({
      clusters: () => ({ config: tc.config, kube: { ...tc.workerKube, core }, shell: noShell }),
    });
    assert.deepEqual(await racing.quarantineNode({ ...input, node: 'worker-2', hop: '1.33.8' }), { labelled: true, recorded: true });
    assert.ok(interfered >= 2, 'the label was written after a second read');
    const node = await tc.kube.core.readNode({ name: 'worker-2' });
    assert.equal(node.metadata?.labels?.[QUARANTINED_LABEL], '1.33.8');
    assert.equal(node.metadata?.annotations?.['test.skewless.io/touched'], 'yes');
    // Back to the state the next test starts from: worker-2 uncordoned, unlabelled.
    await acts.uncordonNode({ cluster: c, node: 'worker-2', owner: OWNER });
    const body = { metadata: { labels: { [QUARANTINED_LABEL]: null }, annotations: { [QUARANTINED_BY_ANNOTATION]: null } } };
    await tc.kube.core.patchNode({ name: 'worker-2', body }, mergePatch);
  });

  it("lasts as long as the cordon: clearing the stage labels releases only this owner's quarantines of nodes back in service", async () => {
    await acts.cordonNode({ cluster: c, node: 'worker-2', owner: 'upgrade/other' });
    await acts.quarantineNode({ ...input, node: 'worker-2', owner: 'upgrade/other' });
    assert.deepEqual(await acts.clearStageLabels({ cluster: c, owner: OWNER }), { cleared: [] }, 'worker-1 is still cordoned');
    assert.equal((await tc.kube.core.readNode({ name: 'worker-1' })).metadata?.labels?.[QUARANTINED_LABEL], '1.33.7');
    // A later run moved worker-1 and uncordoned it (the operator could have too); worker-2 is uncordoned by its other owner.
    await acts.uncordonNode({ cluster: c, node: 'worker-1', owner: OWNER });
    await acts.uncordonNode({ cluster: c, node: 'worker-2', owner: 'upgrade/other' });
    assert.deepEqual(await acts.clearStageLabels({ cluster: c, owner: OWNER }), { cleared: [], released: ['worker-1'] });
    const [w1, w2] = await Promise.all(['worker-1', 'worker-2'].map((name) => tc.kube.core.readNode({ name })));
    assert.equal(w1?.metadata?.labels?.[QUARANTINED_LABEL], undefined);
    assert.equal(w1?.metadata?.annotations?.[QUARANTINED_BY_ANNOTATION], undefined);
    assert.equal(w2?.metadata?.labels?.[QUARANTINED_LABEL], '1.33.7', "another owner's quarantine stays");
    assert.deepEqual(await acts.clearStageLabels({ cluster: c, owner: OWNER }), { cleared: [] }, 'nothing left to release');
  });

  it('refuses a node that does not exist (NotFound, not retried)', async () => {
    await assert.rejects(acts.quarantineNode({ ...input, node: 'worker-99' }), (err: Error & { type?: string; nonRetryable?: boolean }) => {
      assert.equal(err.type, 'NotFound');
      return true;
    });
    assert.equal((await events('worker-99')).length, 0);
  });
});
