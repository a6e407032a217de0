import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import type { ClusterAccess, RemoteShell } from '../../activities/cluster-access.js';
import { mergePatch } from '../../activities/kube-api.js';
import { CORDONED_BY_ANNOTATION, createNodeActivities, STAGE_LABEL, STAGE_OWNER_ANNOTATION } from '../../activities/node-activities.js';
import { waitFor } from '../../sim/cluster/wait-for.js';
import { clusterWorld } from '../helpers/sim-world.js';

const DESCRIPTION = `
name: nodes
version: 1.32.4
repository: [1.32.4]
nodes:
  - {name: cp, role: control-plane, count: 1}
  - {name: worker, role: worker, count: 3}
`;
const OWNER = 'upgrade/nodes';
const noShell: RemoteShell = {
  exec: () => Promise.reject(new Error('no SSH in node activities')),
  download: () => Promise.reject(new Error('no SSH in node activities')),
};

describe('node activities (cordon, uncordon, stage labels) against the simulated API', () => {
  const tc = clusterWorld(DESCRIPTION);
  let acts: ReturnType<typeof createNodeActivities>;
  before(async () => {
    acts = createNodeActivities({
      clusters: (name): ClusterAccess => {
        assert.equal(name, 'nodes');
        return { config: tc.config, kube: tc.workerKube, shell: noShell };
      },
    });
  });

  const read = (name: string) => tc.kube.core.readNode({ name });
  // The node-lifecycle controller follows every cordon/uncordon with its own write (the unschedulable
  // taint): a resourceVersion baseline is taken only once the node has settled.
  const rv = async (name: string) => {
    await waitFor(
      `${name} settled`,
      async () => {
        const n = await read(name);
        return Boolean(n.spec?.unschedulable) === Boolean(n.spec?.taints?.some((t) => t.key === 'node.kubernetes.io/unschedulable'));
      },
      15_000,
      100,
    );
    return (await read(name)).metadata?.resourceVersion;
  };
  const c = 'nodes';

  it('cordons a schedulable node with the owner annotation, and a second cordon writes nothing', async () => {
    assert.deepEqual(await acts.cordonNode({ cluster: c, node: 'worker-1', owner: OWNER }), {
      cordoned: true,
      ownedByUs: true,
      changed: true,
    });
    const node = await read('worker-1');
    assert.equal(node.spec?.unschedulable, true);
    assert.equal(node.metadata?.annotations?.[CORDONED_BY_ANNOTATION], OWNER);

    const before = await rv('worker-1');
    assert.deepEqual(await acts.cordonNode({ cluster: c, node: 'worker-1', owner: OWNER }), {
      cordoned: true,
      ownedByUs: true,
      changed: false,
    });
    assert.equal(await rv('worker-1'), before, 'no write on the second cordon');
  });

  it('does not uncordon a node for another owner; uncordons for its owner, once', async () => {
    const refused = await acts.uncordonNode({ cluster: c, node: 'worker-1', owner: 'upgrade/other' });
    assert.equal(refused.uncordoned, false);
    assert.match(refused.reason ?? '', /cordoned by upgrade\/nodes/);
    assert.equal((await read('worker-1')).spec?.unschedulable, true);

    assert.deepEqual(await acts.uncordonNode({ cluster: c, node: 'worker-1', owner: OWNER }), { uncordoned: true, changed: true });
    const node = await read('worker-1');
    assert.notEqual(node.spec?.unschedulable, true);
    assert.equal(node.metadata?.annotations?.[CORDONED_BY_ANNOTATION], undefined);

    const before = await rv('worker-1');
    assert.deepEqual(await acts.uncordonNode({ cluster: c, node: 'worker-1', owner: OWNER }), { uncordoned: true, changed: false });
    assert.equal(await rv('worker-1'), before, 'no write on the second uncordon');
  });

  it('never takes over a cordon made by someone else, so compensation leaves it cordoned', async () => {
    await tc.kube.core.patchNode({ name: 'worker-2', body: { spec: { unschedulable: true } } }, mergePatch); // an operator's kubectl cordon
    const before = await rv('worker-2');
    assert.deepEqual(await acts.cordonNode({ cluster: c, node: 'worker-2', owner: OWNER }), {
      cordoned: true,
      ownedByUs: false,
      changed: false,
    });
    assert.equal(await rv('worker-2'), before, 'nothing recorded on a node cordoned by someone else');
    assert.equal((await read('worker-2')).metadata?.annotations?.[CORDONED_BY_ANNOTATION], undefined);

    const comp = await acts.uncordonNode({ cluster: c, node: 'worker-2', owner: OWNER });
    assert.equal(comp.uncordoned, false);
    assert.equal((await read('worker-2')).spec?.unschedulable, true, 'still cordoned after our compensation');

    assert.deepEqual(await acts.uncordonNode({ cluster: c, node: 'worker-2', owner: OWNER, force: true }), {
      uncordoned: true,
      changed: true,
    });
    assert.notEqual((await read('worker-2')).spec?.unschedulable, true);
  });

  it('treats a missing node as nothing to uncordon, and refuses to cordon it', async () => {
    const r = await acts.uncordonNode({ cluster: c, node: 'worker-99', owner: OWNER });
    assert.deepEqual(r, { uncordoned: false, changed: false, reason: 'node worker-99 not found', notFound: true });
    await assert.rejects(
      acts.cordonNode({ cluster: c, node: 'worker-99', owner: OWNER }),
      (err: Error & { type?: string; nonRetryable?: boolean }) => {
        assert.equal(err.type, 'NotFound');
        assert.equal(err.nonRetryable, true);
        return true;
      },
    );
  });

  it('sets stage labels once, rewrites only what changed, and clears only its own', async () => {
    const first = await acts.setStageLabels({
      cluster: c,
      owner: OWNER,
      labels: { 'worker-1': 'canary', 'worker-2': 'batch-1', 'worker-3': 'batch-1' },
    });
    assert.deepEqual(first, { changed: ['worker-1', 'worker-2', 'worker-3'], unchanged: [] });
    const staged = await tc.kube.core.listNode({ labelSelector: `${STAGE_LABEL}=batch-1` });
    assert.deepEqual(staged.items.map((n) => n.metadata?.name).sort(), ['worker-2', 'worker-3']);
    assert.equal((await read('worker-1')).metadata?.annotations?.[STAGE_OWNER_ANNOTATION], OWNER);

    const versions = await Promise.all(['worker-1', 'worker-2', 'worker-3'].map(rv));
    const again = await acts.setStageLabels({
      cluster: c,
      owner: OWNER,
      labels: { 'worker-1': 'canary', 'worker-2': 'batch-1', 'worker-3': 'batch-2' },
    });
    assert.deepEqual(again, { changed: ['worker-3'], unchanged: ['worker-1', 'worker-2'] });
    assert.deepEqual(
      (await Promise.all(['worker-1', 'worker-2', 'worker-3'].map(rv))).slice(0, 2),
      versions.slice(0, 2),
      'unchanged nodes not written',
    );
    assert.equal((await read('worker-3')).metadata?.labels?.[STAGE_LABEL], 'batch-2');

    // Another run's label on the control plane is not ours to clear.
    await tc.kube.core.patchNode(
      {
        name: 'cp-1',
        body: { metadata: { labels: { [STAGE_LABEL]: 'canary' }, annotations: { [STAGE_OWNER_ANNOTATION]: 'upgrade/other' } } },
      },
      mergePatch,
    );
    assert.deepEqual(await acts.clearStageLabels({ cluster: c, owner: OWNER }), { cleared: ['worker-1', 'worker-2', 'worker-3'] });
    for (const n of ['worker-1', 'worker-2', 'worker-3']) {
      const m = (await read(n)).metadata;
      assert.equal(m?.labels?.[STAGE_LABEL], undefined, `${n} label cleared`);
      assert.equal(m?.annotations?.[STAGE_OWNER_ANNOTATION], undefined, `${n} owner cleared`);
    }
    assert.equal((await read('cp-1')).metadata?.labels?.[STAGE_LABEL], 'canary', "another owner's label stays");

    const before = await rv('worker-1');
    assert.deepEqual(await acts.clearStageLabels({ cluster: c, owner: OWNER }), { cleared: [] });
    assert.equal(await rv('worker-1'), before);
  });

  it('a change between every read and write is a retryable Conflict; a passing one is absorbed, and the retry converges', async () => {
    // Someone else writes the node right after the activity reads it (the first `racyReads` times).
    let writes = 0;
    let racyReads = Infinity;
    // The activity reads as the worker; the racing write is an admin's.
    const core = new Proxy(tc.workerKube.core, {
      get(target, prop, receiver) {
        if (prop !== 'readNode') return Reflect.get(target, prop, receiver);
        return async (args: { name: string }) => {
          const node = await target.readNode(args);
          if (writes < racyReads) {
            writes++;
            await tc.kube.core.patchNode(
              { name: args.name, body: { metadata: { labels: { 'example.com/touched': String(writes) } } } },
              mergePatch,
            );
          }
          return node;
        };
      },
    });
    const racy = createNodeActivities({ clusters: () => ({ config: tc.config, kube: { ...tc.workerKube, core }, shell: noShell }) });
    await assert.rejects(
      racy.cordonNode({ cluster: c, node: 'worker-3', owner: OWNER }),
      (err: Error & { type?: string; nonRetryable?: boolean }) => {
        assert.equal(err.type, 'Conflict');
        assert.equal(err.nonRetryable, false);
        return true;
      },
    );
    assert.notEqual((await read('worker-3')).spec?.unschedulable, true, 'the conflicting write did not land');
    assert.equal(writes, 5, 'the activity re-read and re-decided 5 times before giving up');
    // One racing write (as the node-lifecycle controller makes after a cordon) is absorbed inside the activity.
    writes = 0;
    racyReads = 1;
    assert.equal((await racy.cordonNode({ cluster: c, node: 'worker-3', owner: OWNER })).ownedByUs, true);
    assert.equal((await read('worker-3')).spec?.unschedulable, true);
    assert.equal((await acts.uncordonNode({ cluster: c, node: 'worker-3', owner: OWNER })).changed, true);
    assert.equal((await acts.cordonNode({ cluster: c, node: 'worker-3', owner: OWNER })).ownedByUs, true);
    assert.equal((await acts.uncordonNode({ cluster: c, node: 'worker-3', owner: OWNER })).changed, true);
  });

  it('refuses a stage label for a node that does not exist, naming it', async () => {
    await assert.rejects(acts.setStageLabels({ cluster: c, owner: OWNER, labels: { 'worker-42': 'canary' } }), /worker-42: node not found/);
  });
});
