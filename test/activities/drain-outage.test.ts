import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ApplicationFailure } from '@temporalio/common';
import type { ClusterAccess } from '../../activities/cluster-access.js';
import { parseClusterConfig } from '../../activities/cluster-config.js';
import { createDrainActivities } from '../../activities/drain.js';
import type { KubeApi } from '../../activities/kube-api.js';

const refused = () =>
  Object.assign(
    new Error(
      'request to https://127.0.0.1:6443/api/v1/namespaces/default/pods/web-1/eviction failed, reason: connect ECONNREFUSED 127.0.0.1:6443',
    ),
    { type: 'system', code: 'ECONNREFUSED' },
  );
const forbidden = () =>
  Object.assign(new Error('HTTP-Code: 403'), {
    code: 403,
    body: '{"message":"pods \\"web-1\\" is forbidden: User \\"skewless-worker\\" cannot create resource \\"pods/eviction\\""}',
  });

/**
 * drainNode against an API whose eviction answers follow a script: what an API server restart looks
 * like from the client (refused connections, then, while RBAC syncs, 403s), and a plain 403.
 */
function apiScript(evictions: (() => unknown)[]) {
  const pod = {
    metadata: {
      name: 'web-1',
      namespace: 'default',
      uid: 'u1',
      labels: { app: 'web' },
      ownerReferences: [{ kind: 'ReplicaSet', name: 'web-x', controller: true, apiVersion: 'apps/v1', uid: 'rs' }],
    },
    spec: { nodeName: 'w1' },
    status: { phase: 'Running' },
  };
  let gone = false;
  const calls: string[] = [];
  const kube = {
    core: {
      readNode: async () => ({ metadata: { name: 'w1' }, spec: { unschedulable: true } }),
      listPodForAllNamespaces: async () => ({ items: gone ? [] : [pod] }),
      createNamespacedPodEviction: async () => {
        const next = evictions.shift();
        calls.push(next ? 'evict → error' : 'evict → accepted');
        if (next) throw next();
        gone = true;
        return {};
      },
      readNamespacedPod: async () => {
        if (gone) throw Object.assign(new Error('not found'), { code: 404, body: '{"message":"not found"}' });
        return pod;
      },
    },
    apps: {},
    policy: { listNamespacedPodDisruptionBudget: async () => ({ items: [] }) },
  } as unknown as KubeApi;
  const config = parseClusterConfig(
    'name: t\nkubeconfig: /k\nssh: {user: u, privateKeyPath: /id, knownHostsPath: /kh}\nsnapshots: {dir: /s}\n',
    't.yaml',
  );
  const acts = createDrainActivities({ clusters: () => ({ kube, config }) as unknown as ClusterAccess });
  return { drain: () => acts.drainNode({ cluster: 't', node: 'w1', timeoutSeconds: 60 }), calls };
}

describe('drainNode through an API server restart (scripted API)', () => {
  it('waits out refused connections and the 403s of a restarted server whose RBAC has not synced yet', async () => {
    const { drain, calls } = apiScript([refused, refused, forbidden, forbidden]);
    const result = await drain();
    assert.deepEqual(result.gone, ['default/web-1']);
    assert.deepEqual(calls, ['evict → error', 'evict → error', 'evict → error', 'evict → error', 'evict → accepted']);
  });

  it('a 403 with no outage before it is a missing permission: Forbidden at once, not retried', async () => {
    const { drain, calls } = apiScript([forbidden]);
    const err = await drain().then(
      () => assert.fail('expected Forbidden'),
      (e: unknown) => e,
    );
    assert.ok(err instanceof ApplicationFailure);
    assert.equal(err.type, 'Forbidden');
    assert.equal(err.nonRetryable, true);
    assert.deepEqual(calls, ['evict → error']);
  });
});
