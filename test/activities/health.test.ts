import assert from 'node:assert/strict';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { ApplicationFailure } from '@temporalio/common';
import { MockActivityEnvironment } from '@temporalio/testing';
import type { ClusterResolver, RemoteShell } from '../../activities/cluster-access.js';
import { loadClusterConfig } from '../../activities/cluster-config.js';
import { createHealthActivities, type ReadyzResult } from '../../activities/health.js';
import { kubeApiFromFile, mergePatch, strategicMergePatch } from '../../activities/kube-api.js';
import { clusterWorld } from '../helpers/sim-world.js';
import { tempDir } from '../helpers/temp-dir.js';

const DESCRIPTION = `
name: health
version: 1.32.4
nodes:
  - {name: cp, role: control-plane, count: 1}
  - {name: worker, role: worker, count: 2}
workloads:
  - {kind: Deployment, name: web, replicas: 2}
  - {kind: StatefulSet, name: db, replicas: 1}
  - {kind: DaemonSet, name: agent}
`;

/** kwok's chaos stage: while a node carries this label, kwok reports it NotReady. */
const NOT_READY_LABEL = 'node-not-ready.stage.kwok.x-k8s.io';

const noShell: RemoteShell = {
  exec: () => Promise.reject(new Error('health checks must not use SSH')),
  download: () => Promise.reject(new Error('health checks must not use SSH')),
};

/** Fails with the ApplicationFailure type and a message matching `pattern`; returns its details. */
async function failsWith(promise: Promise<unknown>, type: string, pattern: RegExp): Promise<Record<string, unknown>> {
  let details: Record<string, unknown> = {};
  await assert.rejects(promise, (err: unknown) => {
    assert.ok(err instanceof ApplicationFailure, String(err));
    assert.equal(err.type, type);
    assert.match(err.message, pattern);
    details = (err.details?.[0] ?? {}) as Record<string, unknown>;
    return true;
  });
  return details;
}

/** A tiny local HTTP server answering from `handler`. */
async function serve(handler: Parameters<typeof createServer>[1]): Promise<{ server: Server; base: string }> {
  const server = createServer(handler);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, base: `http://127.0.0.1:${(server.address() as AddressInfo).port}` };
}

describe('health activities against the simulated cluster', () => {
  const tc = clusterWorld(DESCRIPTION, {
    cleanup: () => {
      probes?.close();
      fakeApi?.close();
    },
  });
  let dir: string;
  let probes: Server;
  let fakeApi: Server;
  let fakeApiRequests: { url?: string; auth?: string }[] = [];
  let fakeApiAnswers: number[] = [];
  let health: ReturnType<typeof createHealthActivities>;

  /** A Running pod's Ready and ContainersReady, as a readiness probe sets them (the simulated kubelets'
   *  status sync, sim/cluster/kubelet-status-sync.ts, puts right only a pod whose containers are ready). */
  const setPodReady = (name: string, status: 'True' | 'False') =>
    tc.kube.core.patchNamespacedPodStatus(
      {
        name,
        namespace: 'default',
        body: {
          status: {
            conditions: [
              { type: 'Ready', status },
              { type: 'ContainersReady', status },
            ],
          },
        },
      },
      strategicMergePatch,
    );

  before(async () => {
    dir = tempDir('health');
    const simYaml = readFileSync(join(tc.clustersDir, 'health.yaml'), 'utf8');

    const p = await serve((req, res) => {
      if (req.url === '/slow') return; // never answers: the probe's own timeout must end it
      res.writeHead(req.url?.startsWith('/ok') ? 200 : 500).end('body');
    });
    probes = p.server;
    writeFileSync(
      join(dir, 'health.yaml'),
      [
        simYaml,
        'probes:',
        `  - {name: shop, url: "${p.base}/ok?token=s3cr3t", expectStatus: 200, timeoutSeconds: 2}`,
        `  - {name: checkout, url: "${p.base}/broken", expectStatus: 200, timeoutSeconds: 2}`,
        `  - {name: search, url: "${p.base}/slow", timeoutSeconds: 1}`,
        '',
      ].join('\n'),
    );

    // A stand-in apiserver whose /readyz answers what the test says, reached through a kubeconfig.
    const f = await serve((req, res) => {
      fakeApiRequests.push({ url: req.url, auth: req.headers.authorization });
      const status = fakeApiAnswers.shift() ?? 503;
      res
        .writeHead(status)
        .end(
          status === 200
            ? '[+]ping ok\n[+]etcd ok\nreadyz check passed\n'
            : '[+]ping ok\n[-]etcd failed: reason withheld\n[-]poststarthook/rbac/bootstrap-roles failed: reason withheld\nreadyz check failed\n',
        );
    });
    fakeApi = f.server;
    writeFileSync(
      join(dir, 'fake.kubeconfig'),
      [
        'apiVersion: v1',
        'kind: Config',
        'current-context: fake',
        'clusters: [{name: fake, cluster: {server: "' + f.base + '", insecure-skip-tls-verify: true}}]',
        'users: [{name: fake, user: {token: tok-s3cr3t}}]',
        'contexts: [{name: fake, context: {cluster: fake, user: fake}}]',
        '',
      ].join('\n'),
    );
    writeFileSync(
      join(dir, 'fakeapi.yaml'),
      simYaml.replace(/^name: .*$/m, 'name: fakeapi').replace(/^kubeconfig: .*$/m, `kubeconfig: ${join(dir, 'fake.kubeconfig')}`),
    );

    // The same cluster, its node health check waiting 2 s at the least instead of 30.
    writeFileSync(
      join(dir, 'nodecheck.yaml'),
      `${simYaml.replace(/^name: .*$/m, 'name: nodecheck')}\nnodeHealth: {waitSeconds: 2, conditions: [KernelDeadlock, ReadonlyFilesystem]}\n`,
    );

    const clusters: ClusterResolver = (name) => {
      const config = loadClusterConfig(dir, name);
      return { config, kube: kubeApiFromFile(config.kubeconfig, config.context), shell: noShell };
    };
    health = createHealthActivities({ clusters, pageSize: 2 });
  });

  after(() => {
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('checkApiserver: the real apiserver is ready; a failing /readyz is Unhealthy with the failing checks, no credentials', async () => {
    const ok = await health.checkApiserver({ cluster: 'health' });
    assert.deepEqual(ok, { cluster: 'health', checked: 'GET /readyz?verbose', healthy: true, status: 200, failedChecks: [] });

    const details = await failsWith(
      health.checkApiserver({ cluster: 'fakeapi' }),
      'Unhealthy',
      /kube-apiserver of fakeapi is not ready: readyz answered HTTP 503; failing: etcd, poststarthook\/rbac\/bootstrap-roles/,
    );
    assert.deepEqual(details.failedChecks, ['etcd', 'poststarthook/rbac/bootstrap-roles']);
    assert.deepEqual(fakeApiRequests, [{ url: '/readyz?verbose', auth: 'Bearer tok-s3cr3t' }], 'the kubeconfig credentials are used');
    assert.ok(!JSON.stringify(details).includes('s3cr3t'));
  });

  it('checkApiserver polls within waitSeconds, heartbeating, until readyz converges', async () => {
    fakeApiRequests = [];
    fakeApiAnswers = [503, 503, 200];
    const env = new MockActivityEnvironment();
    const beats: unknown[] = [];
    env.on('heartbeat', (d: unknown) => beats.push(d));
    const result: ReadyzResult = await env.run(health.checkApiserver, { cluster: 'fakeapi', waitSeconds: 10 });
    assert.equal(result.healthy, true);
    assert.equal(fakeApiRequests.length, 3);
    assert.equal(beats.length, 2);
    assert.match(JSON.stringify(beats[0]), /apiserver readyz.*etcd/);
  });

  it('checkControlPlane passes at the running version and fails, naming each component, at another', async () => {
    const ok = await health.checkControlPlane({ cluster: 'health', node: 'cp-1', version: 'v1.32.4' });
    assert.equal(ok.healthy, true);
    assert.deepEqual(
      ok.components.map((c) => `${c.component} ${c.pod} ${c.version} ${c.phase} ${c.ready}`),
      [
        'kube-apiserver kube-apiserver-cp-1 1.32.4 Running true',
        'kube-controller-manager kube-controller-manager-cp-1 1.32.4 Running true',
        'kube-scheduler kube-scheduler-cp-1 1.32.4 Running true',
      ],
    );
    const details = await failsWith(
      health.checkControlPlane({ cluster: 'health', node: 'cp-1', version: '1.33.7' }),
      'Unhealthy',
      /control plane on cp-1 is not healthy at v1\.33\.7: kube-apiserver: image registry\.k8s\.io\/kube-apiserver:v1\.32\.4 is not at v1\.33\.7; kube-controller-manager: .*; kube-scheduler: /,
    );
    assert.equal((details.failures as string[]).length, 3);
    await failsWith(
      health.checkControlPlane({ cluster: 'health', node: 'worker-1', version: '1.32.4' }),
      'Unhealthy',
      /kube-apiserver: no mirror pod/,
    );
    await failsWith(health.checkControlPlane({ cluster: 'health', node: 'cp-1,x=y', version: '1.32.4' }), 'Invalid', /invalid node name/);
    await failsWith(
      health.checkControlPlane({ cluster: 'health', node: 'cp-1', version: '1.32;id' }),
      'Invalid',
      /invalid Kubernetes version/,
    );
  });

  it('checkWorkloads reports a Deployment that cannot roll out by name, throws when required, and passes once it recovers', async () => {
    const first = await health.checkWorkloads({ cluster: 'health' });
    assert.equal(first.healthy, true, JSON.stringify(first.unhealthy));
    assert.deepEqual(first.checked, { deployments: 1, statefulSets: 1, daemonSets: 2 });

    // No node carries this label: the new ReplicaSet's pods stay Pending, so the rollout never completes.
    await tc.kube.apps.patchNamespacedDeployment(
      { name: 'web', namespace: 'default', body: { spec: { template: { spec: { nodeSelector: { 'skewless.test/nowhere': 'true' } } } } } },
      mergePatch,
    );
    const broken = await health.checkWorkloads({ cluster: 'health', waitSeconds: 2 });
    assert.equal(broken.healthy, false);
    assert.deepEqual(
      broken.unhealthy.map((w) => `${w.kind} ${w.namespace}/${w.name}`),
      ['Deployment default/web'],
    );
    assert.match(broken.unhealthy[0]?.reason ?? '', /\d\/2 replicas updated/);
    // Waiting 2 s listed each kind once and watched it: no list again while it waited.
    assert.equal(broken.calls.lists, 3, JSON.stringify(broken.calls));
    assert.equal(
      (await health.checkWorkloads({ cluster: 'health', namespaces: ['kube-system'] })).healthy,
      true,
      'scoped to kube-system it is healthy',
    );
    await failsWith(
      health.checkWorkloads({ cluster: 'health', require: true }),
      'Unhealthy',
      /1 workload\(s\) unhealthy: Deployment default\/web \(/,
    );

    await tc.kube.apps.patchNamespacedDeployment(
      { name: 'web', namespace: 'default', body: { spec: { template: { spec: { nodeSelector: null } } } } },
      mergePatch,
    );
    const healed = await health.checkWorkloads({ cluster: 'health', require: true, waitSeconds: 60 });
    assert.equal(healed.healthy, true);
    assert.deepEqual(healed.checked, { deployments: 1, statefulSets: 1, daemonSets: 2 }, 'the passing answer judges every workload');
    assert.equal(healed.calls.lists, 3, `healed by watch events, not by listing again: ${JSON.stringify(healed.calls)}`);
  });

  it('checkPodsOnNode names a pod that is not Ready on the node', async () => {
    assert.equal((await health.checkPodsOnNode({ cluster: 'health', node: 'worker-1' })).healthy, true);
    const pods = (
      await tc.kube.core.listNamespacedPod({ namespace: 'default', fieldSelector: 'spec.nodeName=worker-1', labelSelector: 'app=agent' })
    ).items;
    const name = pods[0]?.metadata?.name as string;
    const setReady = (status: 'True' | 'False') => setPodReady(name, status);
    await setReady('False');
    const report = await health.checkPodsOnNode({ cluster: 'health', node: 'worker-1' });
    assert.equal(report.healthy, false);
    assert.ok(report.checked >= 3, `kube-proxy, agent and web pods: ${report.checked}`);
    assert.deepEqual(report.notReady, [{ namespace: 'default', name, phase: 'Running', ready: false }]);
    await failsWith(
      health.checkPodsOnNode({ cluster: 'health', node: 'worker-1', require: true }),
      'Unhealthy',
      new RegExp(`1 pod\\(s\\) on worker-1 not Running and Ready: default/${name} \\(Running, not Ready\\)`),
    );
    await setReady('True');
    assert.equal((await health.checkPodsOnNode({ cluster: 'health', node: 'worker-1', require: true })).healthy, true);
  });

  it('checkPodsOnNode judges the pods on the node when it starts, not those the scheduler places meanwhile', async () => {
    const onNode = await tc.kube.core.listNamespacedPod({
      namespace: 'default',
      fieldSelector: 'spec.nodeName=worker-1',
      labelSelector: 'app=agent',
    });
    const agent = onNode.items[0]?.metadata?.name as string;
    await setPodReady(agent, 'False');
    const env = new MockActivityEnvironment();
    // The check heartbeats after each look that found the node unhealthy: after the first, the pods it judges are fixed.
    const looked = new Promise((resolve) => env.once('heartbeat', resolve));
    const waiting: ReturnType<typeof health.checkPodsOnNode> = env.run(health.checkPodsOnNode, {
      cluster: 'health',
      node: 'worker-1',
      waitSeconds: 30,
      require: true,
    });
    await looked;
    // A pod lands on the node while the check waits and never becomes Ready.
    const late = 'late-arrival';
    await tc.kube.core.createNamespacedPod({
      namespace: 'default',
      body: { metadata: { name: late }, spec: { nodeName: 'worker-1', containers: [{ name: 'app', image: 'registry.example/app:1' }] } },
    });
    try {
      for (let i = 0; ; i++) {
        const pod = await tc.kube.core.readNamespacedPod({ name: late, namespace: 'default' });
        if (pod.status?.phase === 'Running') break;
        assert.ok(i < 100, `kwok started ${late}`);
        await new Promise((r) => setTimeout(r, 100));
      }
      await setPodReady(late, 'False');
      await setPodReady(agent, 'True');
      const result = await waiting;
      assert.equal(result.healthy, true);
      assert.ok(result.arrived >= 1, `the late pod counted, not judged: ${JSON.stringify(result)}`);
      assert.equal(
        (await tc.kube.core.readNamespacedPod({ name: late, namespace: 'default' })).status?.conditions?.find((c) => c.type === 'Ready')
          ?.status,
        'False',
      );
      // A check that starts now finds the late pod on the node and judges it.
      await failsWith(
        health.checkPodsOnNode({ cluster: 'health', node: 'worker-1', require: true }),
        'Unhealthy',
        new RegExp(`default/${late} \\(Running, not Ready\\)`),
      );
    } finally {
      await waiting.catch(() => undefined);
      await tc.kube.core.deleteNamespacedPod({ name: late, namespace: 'default', gracePeriodSeconds: 0 });
    }
  });

  it('runProbes runs the configured probes with their timeouts and never reports a query string', async () => {
    const result = await health.runProbes({ cluster: 'health' });
    assert.equal(result.healthy, false);
    assert.deepEqual(result.failed, ['checkout', 'search']);
    const [shop, checkout, search] = result.probes;
    assert.equal(shop?.ok, true);
    assert.equal(shop?.status, 200);
    assert.match(shop?.target ?? '', /^http:\/\/127\.0\.0\.1:\d+\/ok$/);
    assert.equal(checkout?.status, 500);
    assert.equal(checkout?.error, 'HTTP 500, expected 200');
    assert.equal(search?.error, 'no answer within 1 s');
    assert.ok((search?.elapsedMs ?? 0) >= 900 && (search?.elapsedMs ?? 0) < 5000);
    assert.ok(!JSON.stringify(result).includes('s3cr3t'));
    await failsWith(
      health.runProbes({ cluster: 'health', require: true }),
      'Unhealthy',
      /probe\(s\) failing: checkout \(HTTP 500, expected 200\); search \(no answer within 1 s\)/,
    );
  });

  it('checkNodeReady checks Ready and the kubelet version, and waits for Ready to converge', async () => {
    const ok = await health.checkNodeReady({ cluster: 'health', node: 'worker-2', version: '1.32.4' });
    assert.deepEqual(ok, {
      cluster: 'health',
      node: 'worker-2',
      version: '1.32.4',
      healthy: true,
      ready: true,
      kubeletVersion: '1.32.4',
      failures: [],
    });
    await failsWith(
      health.checkNodeReady({ cluster: 'health', node: 'worker-2', version: '1.33.0' }),
      'NodeNotReady',
      /node worker-2: kubelet reports v1\.32\.4, expected v1\.33\.0/,
    );
    await failsWith(health.checkNodeReady({ cluster: 'health', node: 'worker-9' }), 'NotFound', /read node worker-9: HTTP 404/);

    await tc.kube.core.patchNode({ name: 'worker-2', body: { metadata: { labels: { [NOT_READY_LABEL]: 'true' } } } }, mergePatch);
    for (
      let i = 0;
      i < 100 &&
      (await health.checkNodeReady({ cluster: 'health', node: 'worker-2' }).then(
        () => true,
        () => false,
      ));
      i++
    ) {
      await new Promise((r) => setTimeout(r, 100));
    }
    await failsWith(health.checkNodeReady({ cluster: 'health', node: 'worker-2' }), 'NodeNotReady', /node worker-2: not Ready/);

    const env = new MockActivityEnvironment();
    const beats: unknown[] = [];
    env.on('heartbeat', (d: unknown) => beats.push(d));
    const waiting: ReturnType<typeof health.checkNodeReady> = env.run(health.checkNodeReady, {
      cluster: 'health',
      node: 'worker-2',
      version: '1.32.4',
      waitSeconds: 30,
    });
    await new Promise((r) => setTimeout(r, 1500));
    await tc.kube.core.patchNode({ name: 'worker-2', body: { metadata: { labels: { [NOT_READY_LABEL]: null } } } }, mergePatch);
    const result = await waiting;
    assert.equal(result.healthy, true);
    assert.ok(beats.length >= 2, `heartbeats while waiting: ${beats.length}`);
  });

  it('checkNodeReady and checkControlPlane halt on a DaemonSet pod not Ready and on a configured node condition True, naming it', async () => {
    const c = 'nodecheck';
    await health.checkNodeReady({ cluster: c, node: 'worker-1', version: '1.32.4' });
    const agent = (await tc.kube.core.listNamespacedPod({ namespace: 'default', fieldSelector: 'spec.nodeName=worker-1' })).items.find(
      (p) => p.metadata?.ownerReferences?.some((o) => o.kind === 'DaemonSet' && o.name === 'agent'),
    );
    const agentName = agent?.metadata?.name as string;
    assert.ok(agentName, 'the agent DaemonSet has a pod on worker-1');
    await setPodReady(agentName, 'False');
    try {
      await failsWith(
        health.checkNodeReady({ cluster: c, node: 'worker-1', version: '1.32.4' }),
        'NodeNotReady',
        new RegExp(`^node worker-1 is Ready but not healthy: DaemonSet default/agent's pod ${agentName} is not Ready`),
      );
      // The check waits for the pod: Ready again within its wait, it passes.
      const waiting = health.checkNodeReady({ cluster: c, node: 'worker-1', waitSeconds: 20 });
      await new Promise((r) => setTimeout(r, 2_500));
      await setPodReady(agentName, 'True');
      assert.equal((await waiting).healthy, true);
    } finally {
      await setPodReady(agentName, 'True');
    }

    const condition = (node: string, status: 'True' | 'False') =>
      tc.kube.core.patchNodeStatus(
        {
          name: node,
          body: {
            status: {
              conditions: [
                {
                  type: 'KernelDeadlock',
                  status,
                  reason: status === 'True' ? 'DockerHung' : 'KernelHasNoDeadlock',
                  message: 'task docker:7 blocked',
                },
              ],
            },
          },
        },
        strategicMergePatch,
      );
    await condition('worker-1', 'True');
    await condition('cp-1', 'True');
    try {
      await failsWith(
        health.checkNodeReady({ cluster: c, node: 'worker-1' }),
        'NodeNotReady',
        /^node worker-1 is Ready but not healthy: condition KernelDeadlock is True \(DockerHung: task docker:7 blocked\)/,
      );
      await failsWith(
        health.checkControlPlane({ cluster: c, node: 'cp-1', version: '1.32.4' }),
        'Unhealthy',
        /^control plane on cp-1 is not healthy at v1\.32\.4: condition KernelDeadlock is True/,
      );
    } finally {
      await condition('worker-1', 'False');
      await condition('cp-1', 'False');
    }
    await health.checkControlPlane({ cluster: c, node: 'cp-1', version: '1.32.4' });
    await health.checkNodeReady({ cluster: c, node: 'worker-1' });
  });
});
