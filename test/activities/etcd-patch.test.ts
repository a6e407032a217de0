import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import { MockActivityEnvironment } from '@temporalio/testing';
import { createEtcdPatchActivities } from '../../activities/etcd-patch.js';
import { createClusterResolver } from '../../activities/host-address.js';
import { planEtcdPatch } from '../../rules/index.js';
import { failsWith } from '../helpers/failures.js';
import { hostCommands, onHostPath, startTestCluster, type TestCluster } from '../helpers/sim-cluster.js';

// Three control planes set up by the real kubeadm 1.32.13, each with its own real etcd member at the
// version its manifest names (3.5.24-0): the patch step's activities move them through etcd's own API.
const DESCRIPTION = `
name: etcdpatch
version: 1.32.13
repository: [1.32.13]
controlPlane: per-node
nodes:
  - {name: cp, role: control-plane, count: 3}
`;
const cluster = 'etcdpatch';
const CPS = ['cp-1', 'cp-2', 'cp-3'];
/** The per-node world's etcd members, one real etcd per control plane (branch wip/etcd-sim, sim/build/REAL-KUBEADM.md). */
const REAL_MEMBERS = existsSync(new URL('../../sim/cluster/etcd-members.js', import.meta.url));

describe(
  'the etcd patch activities against real etcd members (per-node world, kubeadm 1.32.13)',
  { skip: REAL_MEMBERS ? false : 'the per-node world runs no etcd member per control plane yet (wip/etcd-sim)' },
  () => {
    let tc: TestCluster;
    let acts: ReturnType<typeof createEtcdPatchActivities>;
    const run = <T>(fn: () => Promise<T>): Promise<T> => new MockActivityEnvironment().run(fn) as Promise<T>;
    before(async () => {
      tc = await startTestCluster(DESCRIPTION);
      acts = createEtcdPatchActivities({ clusters: createClusterResolver(tc.clustersDir) });
    });
    after(async () => tc?.stop());
    const { during } = hostCommands(() => tc);
    // Undefined while the mirror pod is recreated (deleted, then created with the new image).
    const mirrorImage = async (node: string) =>
      tc.kube.core.readNamespacedPod({ name: `etcd-${node}`, namespace: 'kube-system' }).then(
        (p) => p.spec?.containers[0]?.image,
        (e: { code?: number }) => {
          if (e.code === 404) return undefined;
          throw e;
        },
      );

    it('reads every member at 3.5.24-0 with one leader; patches the first follower, which comes back at 3.5.36; the others stay', async () => {
      const read = await run(() => acts.readEtcdMembers({ cluster, node: 'cp-1', controlPlanes: CPS }));
      assert.deepEqual(
        read.members.map((m) => [m.node, m.name, m.imageTag]),
        CPS.map((n) => [n, n, '3.5.24-0']),
      );
      assert.equal(read.members.filter((m) => m.leader).length, 1, JSON.stringify(read.members));
      assert.equal(read.health.healthy, true, read.health.problems.join('; '));
      assert.equal(read.target, '3.5.36-0');
      const plan = planEtcdPatch(read.members, read.target);
      const leader = read.members.find((m) => m.leader)?.node;
      assert.equal(plan.moves.at(-1)?.node, leader, 'the leader last');
      const first = plan.moves[0]!;

      const { result, ran } = await during(first.node, () => run(() => acts.patchEtcdMember({ cluster, node: first.node, tag: first.to })));
      assert.deepEqual([result.from, result.to, result.changed], ['3.5.24-0', '3.5.36-0', true]);
      assert.ok(
        ran.some((c) => c.startsWith('sudo -n sed -i')),
        ran.join('\n'),
      );
      assert.match(
        readFileSync(onHostPath(tc, first.node, '/etc/kubernetes/manifests/etcd.yaml'), 'utf8'),
        /image: registry\.k8s\.io\/etcd:3\.5\.36-0\n/,
      );

      const health = await run(() => acts.checkEtcdHealth({ cluster, node: 'cp-1', expect: { member: first.name, version: first.to } }));
      assert.equal(health.versions[first.name], '3.5.36');
      for (const other of CPS.filter((n) => n !== first.node)) assert.equal(health.versions[other], '3.5.24', other);
      // The mirror pod follows the manifest once the kubelet (the simulation's) has recreated it: shortly after the member.
      const deadline = Date.now() + 30_000;
      while ((await mirrorImage(first.node)) !== 'registry.k8s.io/etcd:3.5.36-0' && Date.now() < deadline)
        await new Promise((r) => setTimeout(r, 250));
      assert.equal(await mirrorImage(first.node), 'registry.k8s.io/etcd:3.5.36-0', 'the mirror pod follows the manifest');
    });

    it('a second patch of the same member changes nothing (a retry after the edit)', async () => {
      const again = await run(() => acts.patchEtcdMember({ cluster, node: 'cp-2', tag: '3.5.36-0' }));
      const twice = await run(() => acts.patchEtcdMember({ cluster, node: 'cp-2', tag: '3.5.36-0' }));
      assert.equal(twice.changed, false);
      assert.equal(again.to, '3.5.36-0');
    });

    it('a member not at the version asked is not whole: Unhealthy, naming it and what it runs', async () => {
      const unmoved = (await run(() => acts.readEtcdMembers({ cluster, node: 'cp-1', controlPlanes: CPS }))).members.find(
        (m) => m.imageTag === '3.5.24-0',
      )!;
      const err = await failsWith(
        run(() =>
          acts.checkEtcdHealth({ cluster, node: 'cp-1', expect: { member: unmoved.name, version: '3.5.36-0' }, timeoutSeconds: 0 }),
        ),
        'Unhealthy',
      );
      assert.match(err.message, new RegExp(`member ${unmoved.name} runs 3\\.5\\.24, not 3\\.5\\.36`));
    });

    it('refuses a tag that is not a 3.5 patch before touching the host', async () => {
      const err = await failsWith(
        run(() => acts.patchEtcdMember({ cluster, node: 'cp-3', tag: '3.6.5-0' })),
        'Invalid',
      );
      assert.match(err.message, /a 3\.5 image tag/);
    });
  },
);
