// Blue/green provisioning against the real simulation: planBlueGreen's facts and refusals, machines
// created through the simulation's machine API and through a command hook (a user-style script
// calling the sim CLI), joined Ready at the version with the pool's labels and reachable over SSH by
// a resolver made before they existed; idempotent retries; removal refused until cordoned and
// drained, then the Node and the host gone.
import assert from 'node:assert/strict';
import { chmodSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, before, describe, it } from 'node:test';
import { ApplicationFailure } from '@temporalio/common';
import { MockActivityEnvironment } from '@temporalio/testing';
import { parseDocument } from 'yaml';
import type { ClusterResolver } from '../../activities/cluster-access.js';
import { parseClusterConfig, type ProvisioningConfig } from '../../activities/cluster-config.js';
import { createDrainActivities } from '../../activities/drain.js';
import { createHostActivities } from '../../activities/host-activities.js';
import { createClusterResolver } from '../../activities/host-address.js';
import { createNodeActivities } from '../../activities/node-activities.js';
import { createPoolActivities } from '../../activities/pool-provisioning.js';
import { machineProvider, type MachineProvider } from '../../activities/provisioning.js';
import { statusOf } from '../../sim/cluster/kube-clients.js';
import { readVersionHistory } from '../../sim/cluster/version-recorder.js';
import { waitFor } from '../../sim/cluster/wait-for.js';
import { workloadObjects } from '../../sim/cluster/workload-objects.js';
import { clusterWorld } from '../helpers/sim-world.js';
import { tempDir } from '../helpers/temp-dir.js';

const cluster = 'pools';
// The control plane at 1.34.2; blue at 1.33.7. `teal` is the command hook's pool, `empty` has no nodes.
const DESCRIPTION = `
name: ${cluster}
version: 1.34.2
repository: [1.33.7, 1.34.2]
nodes:
  - {name: cp, role: control-plane, count: 1}
  - {name: blue, role: worker, count: 2, kubelet: 1.33.7, labels: {skewless.io/pool: blue}}
workloads:
  - {kind: DaemonSet, name: agent}
  - {kind: Deployment, name: web, replicas: 2}
pools:
  blue: skewless.io/pool=blue
  green: skewless.io/pool=green
  teal: skewless.io/pool=teal,tier=web
  empty: skewless.io/pool=none
  cps: node-role.kubernetes.io/control-plane=
`;
const V = '1.34.2';
const GREEN = { 'skewless.io/pool': 'green' };
const OWNER = 'bluegreen/pools';
const simCli = fileURLToPath(new URL('../../sim/cli.js', import.meta.url));

async function failsWith(p: Promise<unknown>, type: string, message: RegExp): Promise<ApplicationFailure> {
  const err = await p.then(
    () => assert.fail(`expected ${type}`),
    (e: unknown) => e,
  );
  assert.ok(err instanceof ApplicationFailure, `expected an ApplicationFailure, got ${String(err)}`);
  assert.equal(err.type, type, err.message);
  assert.match(err.message, message);
  assert.ok(!err.message.includes('\n'), 'one line');
  return err;
}

describe('blue/green provisioning against the simulated cluster and hosts', () => {
  const tc = clusterWorld(DESCRIPTION);
  let resolve: ClusterResolver;
  let pools: ReturnType<typeof createPoolActivities>;
  let hosts: ReturnType<typeof createHostActivities>;
  let creates: string[];
  let scratch: string;
  /** The same cluster with another provisioning block (or none). */
  const withProvisioning =
    (p: ProvisioningConfig | undefined): ClusterResolver =>
    (name) => {
      const access = resolve(name);
      const { provisioning: _, ...config } = access.config;
      return { ...access, config: { ...config, ...(p ? { provisioning: p } : {}) } };
    };
  const configPath = () => join(tc.clustersDir, `${cluster}.yaml`);
  const nodeNames = async () => (await tc.kube.core.listNode()).items.map((n) => n.metadata?.name as string).sort();

  before(async () => {
    scratch = tempDir('pools');
    // Made before any new machine exists: it must still reach them (it re-reads the changed file).
    resolve = createClusterResolver(tc.clustersDir);
    creates = [];
    const counting = (config: ProvisioningConfig): MachineProvider => {
      const real = machineProvider(config);
      return { name: real.name, create: (r, s) => (creates.push(r.node), real.create(r, s)), delete: (r, s) => real.delete(r, s) };
    };
    pools = createPoolActivities({ clusters: resolve, provider: counting });
    hosts = createHostActivities({ clusters: resolve });
  });
  after(() => {
    if (scratch) rmSync(scratch, { recursive: true, force: true });
  });

  it('the simulation writes its provisioning block and pools, with a 0600 token file', () => {
    const config = resolve(cluster).config;
    assert.equal(config.provisioning?.provider, 'simulation');
    assert.ok(config.provisioning?.provider === 'simulation' && config.provisioning.endpoint === tc.sim.machines.endpoint);
    assert.equal(config.pools?.green?.selector, 'skewless.io/pool=green');
    assert.equal(statSync(tc.sim.machines.tokenFile).mode & 0o777, 0o600);
  });

  it("plans: the blue nodes, green names not yet used, the control plane's version, the provider", async () => {
    const plan = await pools.planBlueGreen({ cluster, from: 'blue', to: 'green', version: V });
    assert.deepEqual(
      plan.blue.map((b) => [b.name, b.kubelet, b.labels['skewless.io/pool']]),
      [
        ['blue-1', '1.33.7', 'blue'],
        ['blue-2', '1.33.7', 'blue'],
      ],
    );
    assert.deepEqual(plan.green, { pool: 'green', names: ['green-1', 'green-2'], version: V, labels: GREEN });
    assert.equal(plan.controlPlaneVersion, V);
    assert.equal(plan.provider, 'simulation');
    assert.deepEqual((await pools.planBlueGreen({ cluster, from: 'blue', to: 'teal', version: '1.33.7', count: 3 })).green, {
      pool: 'teal',
      names: ['teal-1', 'teal-2', 'teal-3'],
      version: '1.33.7',
      labels: { 'skewless.io/pool': 'teal', tier: 'web' },
    });
  });

  it('refuses an unknown pool, the same pool, an empty or control-plane blue pool, a version above the control plane, no provisioning', async () => {
    const plan = (from: string, to: string, version = V, clusters: ClusterResolver = resolve) =>
      createPoolActivities({ clusters }).planBlueGreen({ cluster, from, to, version });
    await failsWith(
      plan('purple', 'green'),
      'BlueGreenInvalid',
      /no pool purple in its configuration \(pools: blue, green, teal, empty, cps\)/,
    );
    await failsWith(plan('blue', 'blue'), 'BlueGreenInvalid', /same pool blue/);
    await failsWith(plan('empty', 'green'), 'BlueGreenInvalid', /pool empty \(skewless\.io\/pool=none\) has no nodes/);
    await failsWith(plan('cps', 'green'), 'BlueGreenInvalid', /selects control-plane node cp-1/);
    await failsWith(plan('blue', 'green', '1.35.0'), 'BlueGreenInvalid', /version 1\.35\.0 is above the control plane's 1\.34\.2/);
    await failsWith(plan('blue', 'green', '1.30.1'), 'BlueGreenInvalid', /more than three minors below/);
    await failsWith(plan('blue', 'green', V, withProvisioning(undefined)), 'BlueGreenInvalid', /has no provisioning in its configuration/);
    await failsWith(plan('blue', 'green', 'latest'), 'Invalid', /./);
  });

  it('creates two machines through the simulation: Ready at the version with the labels, reachable over SSH', async () => {
    const before = tc.sim.hosts.hosts.length;
    const { joined } = await pools.createPoolMachines({ cluster, pool: 'green', names: ['green-1', 'green-2'], version: V, labels: GREEN });
    assert.deepEqual(joined, ['green-1', 'green-2']);
    assert.deepEqual(creates, ['green-1', 'green-2']);
    for (const name of joined) {
      const node = await tc.kube.core.readNode({ name });
      assert.equal(node.status?.nodeInfo?.kubeletVersion, `v${V}`);
      assert.equal(node.metadata?.labels?.['skewless.io/pool'], 'green');
      assert.ok(node.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True'));
      // The host: kubelet and kubeadm at the version, its repository naming that minor (install guide); over SSH, host key checked.
      assert.equal(tc.sim.hosts.state(name).kubelet.version, V);
      assert.deepEqual(await hosts.availableVersions({ cluster, node: name }), ['1.34.2']);
    }
    assert.equal(tc.sim.hosts.hosts.length, before + 2);
    assert.ok(
      tc.sim.endpoints.ssh.hosts.some((h) => h.name === 'green-2'),
      'the endpoints list the new host',
    );
    // The version history (what skew checks judge every state by) has a state with each new kubelet.
    await tc.sim.versionHistorySettled();
    const created = readVersionHistory(tc.sim.stateDir).find((r) => r.cause === 'machine create green-2 1.34.2');
    assert.ok(
      created?.inventory.kubelets?.some((k) => k.node === 'green-2' && k.version === V),
      JSON.stringify(created),
    );
    const nodesMap = parseClusterConfig(readFileSync(configPath(), 'utf8'), 'x.yaml').nodes;
    assert.equal(nodesMap['green-1']?.port, tc.sim.hosts.hosts.find((h) => h.name === 'green-1')?.port);
  });

  it('is idempotent: a retry creates only what is missing, and the same machines stay', async () => {
    const key = tc.sim.hosts.hosts.find((h) => h.name === 'green-1')!.hostKeyFingerprint;
    creates.length = 0;
    assert.deepEqual(
      (await pools.createPoolMachines({ cluster, pool: 'green', names: ['green-1', 'green-2'], version: V, labels: GREEN })).joined,
      ['green-1', 'green-2'],
    );
    assert.deepEqual(creates, [], 'nothing asked for twice');
    assert.deepEqual(
      (await pools.createPoolMachines({ cluster, pool: 'green', names: ['green-1', 'green-3'], version: V, labels: GREEN })).joined,
      ['green-1', 'green-3'],
    );
    assert.deepEqual(creates, ['green-3']);
    assert.equal(tc.sim.hosts.hosts.find((h) => h.name === 'green-1')!.hostKeyFingerprint, key, 'green-1 is the same machine');
    // The machine API itself: a repeated create is the machine as it is.
    const again = await tc.sim.machines.create({ name: 'green-3', version: V, labels: GREEN });
    assert.equal(again.created, false);
    // The green pool has nodes now: planning it again is refused.
    await failsWith(
      pools.planBlueGreen({ cluster, from: 'blue', to: 'green', version: V }),
      'BlueGreenInvalid',
      /pool green \(skewless\.io\/pool=green\) already has nodes: green-1, green-2, green-3/,
    );
  });

  it('a retry after a worker crash does not ask again for a machine the crashed attempt asked for (its heartbeat details)', async () => {
    // The crashed attempt's machine: its host is up, its kubelet has not registered the Node yet.
    await tc.sim.machines.create({ name: 'green-4', version: V, labels: GREEN });
    await tc.kube.core.deleteNode({ name: 'green-4' });
    creates.length = 0;
    const env = new MockActivityEnvironment({
      attempt: 2,
      heartbeatDetails: { pool: 'green', created: ['green-4'], pending: ['green-4'] },
    });
    const beats: unknown[] = [];
    env.on('heartbeat', (d: unknown) => beats.push(d));
    const retry = env.run(() => pools.createPoolMachines({ cluster, pool: 'green', names: ['green-4'], version: V, labels: GREEN }));
    // The kubelet registers a little later (the machine API re-creates the missing Node of a running host).
    await waitFor('the retry waiting for green-4', async () => beats.length > 0, 30_000, 100);
    await tc.sim.machines.create({ name: 'green-4', version: V, labels: GREEN });
    assert.deepEqual(((await retry) as { joined: string[] }).joined, ['green-4']);
    assert.deepEqual(creates, [], 'the provider was not asked again');
    assert.deepEqual(beats.at(-1), { pool: 'green', created: ['green-4'], pending: [] }, 'heartbeats carry names only');
  });

  it("refuses labels without the pool's selector, a name taken outside the pool, and a version the repository lacks", async () => {
    await failsWith(
      pools.createPoolMachines({ cluster, pool: 'green', names: ['green-9'], version: V, labels: { 'skewless.io/pool': 'blue' } }),
      'Invalid',
      /labels must include pool green's selector skewless\.io\/pool=green/,
    );
    await failsWith(
      pools.createPoolMachines({ cluster, pool: 'green', names: ['blue-1'], version: V, labels: GREEN }),
      'BlueGreenInvalid',
      /node blue-1 already exists outside pool green/,
    );
    const err = await failsWith(
      pools.createPoolMachines({ cluster, pool: 'green', names: ['green-9'], version: '1.34.9', labels: GREEN }),
      'ProvisionFailed',
      /HTTP 400: version 1\.34\.9 is not in the simulation's package repository/,
    );
    assert.equal(err.nonRetryable, true);
    assert.ok(!(await nodeNames()).includes('green-9'));
  });

  it('never shows the token: a wrong one is a 401 whose message holds neither token', async () => {
    const wrong = join(scratch, 'wrong-token');
    writeFileSync(wrong, 'f'.repeat(64), { mode: 0o600 });
    const real = readFileSync(tc.sim.machines.tokenFile, 'utf8').trim();
    const bad = createPoolActivities({
      clusters: withProvisioning({ provider: 'simulation', endpoint: tc.sim.machines.endpoint, tokenFile: wrong, joinTimeoutSeconds: 30 }),
    });
    const err = await failsWith(
      bad.createPoolMachines({ cluster, pool: 'green', names: ['green-9'], version: V, labels: GREEN }),
      'ProvisionFailed',
      /HTTP 401/,
    );
    assert.ok(!err.message.includes(real) && !err.message.includes('f'.repeat(16)) && !JSON.stringify(err.details ?? null).includes(real));
    assert.ok(!(await nodeNames()).includes('green-9'));
  });

  it('creates and deletes through a command hook: a script calling the sim CLI', async () => {
    const script = (name: string, body: string) => {
      const path = join(scratch, name);
      writeFileSync(path, `#!/bin/sh\n${body}\n`);
      chmodSync(path, 0o755);
      return path;
    };
    const cli = `"${process.execPath}" "${simCli}"`;
    const make = script(
      'make-machine',
      `# make-machine NODE VERSION LABELS POOL\nexec ${cli} machine create "$1" --version "$2" --labels "$3" --pool "$4" --state "${tc.sim.stateDir}"`,
    );
    const remove = script('remove-machine', `exec ${cli} machine delete "$1" --state "${tc.sim.stateDir}"`);
    // As an operator would: the cluster configuration's provisioning block, edited in place.
    const doc = parseDocument(readFileSync(configPath(), 'utf8'));
    doc.set(
      'provisioning',
      doc.createNode({
        provider: 'command',
        create: [make, '{node}', '{version}', '{labels}', '{pool}'],
        delete: [remove, '{node}'],
        joinTimeoutSeconds: 60,
        commandTimeoutSeconds: 60,
      }),
    );
    writeFileSync(configPath(), doc.toString());
    const teal = { 'skewless.io/pool': 'teal', tier: 'web' };
    try {
      const plan = await pools.planBlueGreen({ cluster, from: 'blue', to: 'teal', version: '1.33.7' });
      assert.equal(plan.provider, 'command');
      assert.deepEqual(
        (await pools.createPoolMachines({ cluster, pool: 'teal', names: plan.green.names, version: '1.33.7', labels: plan.green.labels }))
          .joined,
        ['teal-1', 'teal-2'],
      );
      for (const name of ['teal-1', 'teal-2']) {
        const node = await tc.kube.core.readNode({ name });
        assert.equal(node.status?.nodeInfo?.kubeletVersion, 'v1.33.7');
        assert.deepEqual(
          { pool: node.metadata?.labels?.['skewless.io/pool'], tier: node.metadata?.labels?.tier },
          { pool: teal['skewless.io/pool'], tier: teal.tier },
        );
        assert.deepEqual(await hosts.availableVersions({ cluster, node: name }), ['1.34.2', '1.33.7']);
      }
      // Idempotent: the hook runs again for a machine that exists and says so.
      assert.deepEqual(
        (await pools.createPoolMachines({ cluster, pool: 'teal', names: ['teal-1'], version: '1.33.7', labels: teal })).joined,
        ['teal-1'],
      );

      const nodes = createNodeActivities({ clusters: resolve });
      for (const name of ['teal-1', 'teal-2']) await nodes.cordonNode({ cluster, node: name, owner: OWNER });
      await createDrainActivities({ clusters: resolve }).drainNode({ cluster, node: 'teal-1', timeoutSeconds: 120 });
      await createDrainActivities({ clusters: resolve }).drainNode({ cluster, node: 'teal-2', timeoutSeconds: 120 });
      assert.deepEqual((await pools.deletePoolMachines({ cluster, pool: 'teal', names: ['teal-1', 'teal-2'] })).deleted, [
        'teal-1',
        'teal-2',
      ]);
      assert.ok(!(await nodeNames()).some((n) => n.startsWith('teal-')));
      assert.ok(!tc.sim.hosts.hosts.some((h) => h.name.startsWith('teal-')), 'the hook tore the hosts down');
    } finally {
      const restored = parseDocument(readFileSync(configPath(), 'utf8'));
      restored.set(
        'provisioning',
        restored.createNode({
          provider: 'simulation',
          endpoint: tc.sim.machines.endpoint,
          tokenFile: tc.sim.machines.tokenFile,
          joinTimeoutSeconds: 120,
        }),
      );
      writeFileSync(configPath(), restored.toString());
    }
  });

  it('a failing or hanging hook fails the step with the tail of its output, not retried', async () => {
    const failing = join(scratch, 'no-capacity');
    writeFileSync(failing, '#!/bin/sh\necho "asking the cloud for $1"\necho "error: no capacity in zone a" >&2\nexit 3\n');
    chmodSync(failing, 0o755);
    const hook = (create: string[], commandTimeoutSeconds = 30) =>
      createPoolActivities({
        clusters: withProvisioning({
          provider: 'command',
          create,
          delete: ['/bin/true', '{node}'],
          joinTimeoutSeconds: 30,
          commandTimeoutSeconds,
        }),
      }).createPoolMachines({ cluster, pool: 'green', names: ['green-8'], version: V, labels: GREEN });
    const failed = await failsWith(
      hook([failing, '{node}']),
      'ProvisionFailed',
      /provisioning\.create for green-8 \(.*no-capacity\) exited 3: error: no capacity in zone a$/,
    );
    assert.equal(failed.nonRetryable, true);
    assert.match(JSON.stringify(failed.details), /asking the cloud for green-8/);
    const started = Date.now();
    await failsWith(
      hook(['/bin/sh', '-c', 'sleep 60', '{node}'], 1),
      'ProvisionFailed',
      /did not finish within 1 s \(provisioning\.commandTimeoutSeconds\)/,
    );
    assert.ok(Date.now() - started < 45_000, 'killed with its children, not waited for');
    await failsWith(hook([join(scratch, 'missing'), '{node}']), 'ClusterConfigInvalid', /cannot run .*missing: ENOENT/);
    assert.ok(!(await nodeNames()).includes('green-8'));
  });

  it('a node that never joins is NodeNotReady after joinTimeoutSeconds, naming why', async () => {
    const p = createPoolActivities({
      clusters: withProvisioning({
        provider: 'command',
        create: ['/bin/true', '{node}'],
        delete: ['/bin/true', '{node}'],
        joinTimeoutSeconds: 2,
        commandTimeoutSeconds: 10,
      }),
    });
    await failsWith(
      p.createPoolMachines({ cluster, pool: 'green', names: ['green-7'], version: V, labels: GREEN }),
      'NodeNotReady',
      /1 of 1 new node did not join within 2 s .*green-7 not registered/,
    );
  });

  it("removal refuses an uncordoned node, a node running a Deployment's pod, a node of another pool; then deletes a drained one", async () => {
    // A Deployment pinned to green-1, so its pod runs there.
    const pinned = workloadObjects({ kind: 'Deployment', name: 'pinned', namespace: 'default', replicas: 1 }).deployment!;
    pinned.spec!.template.spec!.nodeSelector = { 'kubernetes.io/hostname': 'green-1' };
    await tc.kube.apps.createNamespacedDeployment({ namespace: 'default', body: pinned });
    await waitFor(
      'pinned running on green-1',
      async () => (await tc.kube.apps.readNamespacedDeployment({ name: 'pinned', namespace: 'default' })).status?.availableReplicas === 1,
      120_000,
    );

    const writesBefore = tc.sim.hosts.hosts.length;
    await failsWith(
      pools.deletePoolMachines({ cluster, pool: 'green', names: ['green-2', 'green-1'] }),
      'BlueGreenInvalid',
      /green-2 is not cordoned; green-1 is not cordoned/,
    );
    await failsWith(
      pools.deletePoolMachines({ cluster, pool: 'green', names: ['blue-1'] }),
      'BlueGreenInvalid',
      /blue-1 is not in pool green/,
    );
    const nodes = createNodeActivities({ clusters: resolve });
    await nodes.cordonNode({ cluster, node: 'green-1', owner: OWNER });
    await failsWith(
      pools.deletePoolMachines({ cluster, pool: 'green', names: ['green-1'] }),
      'BlueGreenInvalid',
      /green-1 still runs default\/pinned-\S+ \(drain it first\)/,
    );
    assert.equal(tc.sim.hosts.hosts.length, writesBefore, 'nothing removed');
    assert.ok((await nodeNames()).includes('green-1'));

    const drained = await createDrainActivities({ clusters: resolve }).drainNode({ cluster, node: 'green-1', timeoutSeconds: 120 });
    assert.ok(
      drained.gone.some((p) => p.startsWith('default/pinned-')),
      JSON.stringify(drained),
    );
    const onNode = await tc.kube.core.listPodForAllNamespaces({ fieldSelector: 'spec.nodeName=green-1' });
    assert.ok(
      onNode.items.some((p) => p.metadata?.ownerReferences?.[0]?.kind === 'DaemonSet'),
      'its DaemonSet pod stays and does not block',
    );
    assert.deepEqual((await pools.deletePoolMachines({ cluster, pool: 'green', names: ['green-1'] })).deleted, ['green-1']);
    assert.equal(await tc.kube.core.readNode({ name: 'green-1' }).then(() => 200, statusOf), 404);
    assert.ok(!tc.sim.hosts.hosts.some((h) => h.name === 'green-1'), 'the host is gone');
    assert.equal(
      parseClusterConfig(readFileSync(configPath(), 'utf8'), 'x.yaml').nodes['green-1'],
      undefined,
      'its address left the configuration',
    );
    // Idempotent: a retry after the Node is gone only asks the provider again.
    assert.deepEqual((await pools.deletePoolMachines({ cluster, pool: 'green', names: ['green-1'] })).deleted, ['green-1']);
    assert.ok((await nodeNames()).includes('green-2'), 'the other machines stay');
  });

  it('the sim CLI refuses bad input with one line (exit 2) and a refused request with exit 1', async () => {
    const { spawn } = await import('node:child_process');
    const run = (args: string[]) =>
      new Promise<{ code: number | null; stdout: string; stderr: string }>((ok) => {
        const child = spawn(process.execPath, [simCli, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
        let stdout = '';
        let stderr = '';
        child.stdout.on('data', (c) => (stdout += c));
        child.stderr.on('data', (c) => (stderr += c));
        child.on('close', (code) => ok({ code, stdout, stderr }));
      });
    const state = ['--state', tc.sim.stateDir];
    for (const [args, message] of [
      [['machine', 'create', 'x-1', ...state], /needs --version/],
      [['machine', 'launch', 'x-1', ...state], /machine needs create or delete/],
      [['machine', 'create', 'x-1', '--version', V, '--labels', 'nolabel', ...state], /--labels must be K=V/],
      [['machine', 'delete', 'x-1', '--state', scratch], /no simulation running/],
    ] as const) {
      const r = await run([...args]);
      assert.equal(r.code, 2, r.stderr);
      assert.match(r.stderr, message);
      assert.equal(r.stderr.trim().split('\n').length, 1);
    }
    const refused = await run(['machine', 'delete', 'cp-1', ...state]);
    assert.equal(refused.code, 1);
    assert.match(refused.stderr, /HTTP 409: cp-1 is a control plane/);
    const gone = await run(['machine', 'delete', 'nothing-here', ...state]);
    assert.equal(gone.code, 0, gone.stderr);
    assert.match(gone.stdout, /machine nothing-here was not there/);
  });
});
