// deploy/rbac.yaml against a real apiserver with RBAC on: every activity runs under the worker's
// identity, and the audit log shows a missing permission (a 403) or an excess one (a rule never used).
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { before, describe, it } from 'node:test';
import { type ApplicationFailure } from '@temporalio/common';
import { createClusterResolver } from '../../activities/host-address.js';
import { createActivities, type Activities } from '../../activities/index.js';
import { mergePatch } from '../../activities/kube-api.js';
import { PdbLease } from '../../activities/pdb-lease.js';
import type { AuditEvent } from '../../sim/cluster/audit-log.js';
import { kubeClients, statusOf } from '../../sim/cluster/kube-clients.js';
import { WORKER_USER } from '../../sim/cluster/pki.js';
import { applyRbacManifest, grantsOf, readRbacManifest, type Grant, type RbacObject } from '../../sim/cluster/rbac-manifest.js';
import { waitFor } from '../../sim/cluster/wait-for.js';
import { workloadObjects } from '../../sim/cluster/workload-objects.js';
import { clusterWorld } from '../helpers/sim-world.js';
import { failsWith } from '../helpers/failures.js';
import { startNotifyReceiver } from '../helpers/notify-receiver.js';
import { NOTIFICATION_EVENT_KINDS, type NotificationEvent } from '../../contracts/notification-event.js';

const DESCRIPTION = `
name: rbac
version: 1.32.4
repository: [1.32.4, 1.33.7]
rebootSeconds: 2
nodes:
  - {name: cp, role: control-plane, count: 1}
  - {name: worker, role: worker, count: 2, labels: {skewless.io/pool: blue}}
workloads:
  - {kind: DaemonSet, name: agent}
  - {kind: Pod, name: lonely, node: worker-1}
pools:
  blue: skewless.io/pool=blue
  green: skewless.io/pool=green
`;
const cluster = 'rbac';
const OWNER = 'upgrade/rbac';
const V = '1.33.7';

/** Whether `grant` authorizes the request `e` (RBAC's matching, for the fields a rule here uses). */
function covers(grant: Grant, e: AuditEvent): boolean {
  const any = (want: string, got: string) => want === '*' || want === got;
  if (grant.nonResourceURL !== undefined) {
    const path = e.uri.split('?')[0] ?? '';
    const url = grant.nonResourceURL;
    return e.resource === '' && any(grant.verb, e.verb) && (url.endsWith('*') ? path.startsWith(url.slice(0, -1)) : path === url);
  }
  return (
    e.resource !== '' &&
    any(grant.apiGroup, e.apiGroup) &&
    any(grant.resource, e.resource) &&
    any(grant.verb, e.verb) &&
    (grant.namespace === undefined || grant.namespace === e.namespace) &&
    (grant.resourceNames === undefined || grant.resourceNames.includes(e.name ?? ''))
  );
}
const describeGrant = (g: Grant) =>
  g.nonResourceURL !== undefined
    ? `${g.verb} ${g.nonResourceURL}`
    : `${g.verb} ${g.apiGroup || 'core'}/${g.resource}${g.namespace ? ` in ${g.namespace}` : ''}${g.resourceNames ? ` ${g.resourceNames.join(',')}` : ''}`;
const describeEvent = (e: AuditEvent) =>
  `${e.verb} ${e.resource ? `${e.apiGroup || 'core'}/${e.resource}` : e.uri}${e.namespace ? ` in ${e.namespace}` : ''}${e.name ? ` ${e.name}` : ''} → ${e.code}`;
const refused = (e: AuditEvent) => e.code === 401 || e.code === 403;

describe("deploy/rbac.yaml: the worker's permissions, exactly (real apiserver, RBAC on, audit log)", () => {
  const tc = clusterWorld(DESCRIPTION);
  let manifest: RbacObject[];
  /**
   * Activities that ask Temporal, not the cluster (the scheduled run's check for a running upgrade):
   * they need an activity context to run and no Kubernetes permission.
   */
  /** The alert gate's query goes to the operator's Prometheus (activities/alerts.ts): no Kubernetes request to grant. */
  const PROMETHEUS_ONLY = ['checkAlerts'];
  const TEMPORAL_ONLY: Record<string, string> = {
    findRunningUpgrade: 'find-running-rollout.ts',
    findRunningRollout: 'find-running-rollout.ts',
  };
  /**
   * The restore's steps that move files and run etcdutl as root over SSH (activities/etcd-restore.ts):
   * no Kubernetes request, and run here they would stop this cluster's control plane mid-test. Their
   * code, and the host helpers they call, must not reach the API (checked below). The restore's other
   * steps (planRestore lists nodes, verifyRestoredApiserver GETs /readyz) run in the sweep.
   */
  const HOST_ONLY = ['stopStaticPods', 'restoreEtcdMember', 'startStaticPods', 'runningStaticPods', 'test'];
  /**
   * The etcd patch step (activities/etcd-patch.ts): manifests and etcdctl over SSH only, and run here
   * they would restart this cluster's etcd. The whole file must not reach the API (checked below).
   */
  const ETCD_PATCH_HOST_ONLY = ['readEtcdMembers', 'patchEtcdMember', 'checkEtcdHealth'];
  let acts: Activities;
  const called = new Set<string>();
  /** Audit events seen by the end of the activity run: the rest of the file adds refusals on purpose. */
  let sweep: AuditEvent[] = [];

  /** The worker's audit events once the log stops growing (an event lands just after its response). */
  const settledEvents = async (): Promise<AuditEvent[]> => {
    let last = -1;
    let events: AuditEvent[] = [];
    await waitFor(
      'the audit log to settle',
      async () => {
        events = tc.sim.auditEvents();
        const settled = events.length === last;
        last = events.length;
        return settled;
      },
      30_000,
      700,
    );
    return events.filter((e) => e.user === WORKER_USER);
  };

  before(async () => {
    manifest = readRbacManifest();
    // Kubernetes' default bindings let every authenticated user GET /readyz and discovery URLs. A
    // cluster may remove them; here they go, so only the manifest stands between the worker and a 403.
    for (const name of ['system:discovery', 'system:public-info-viewer']) await tc.kube.rbac.deleteClusterRoleBinding({ name });
    // web (2 replicas, PDB minAvailable 2) on worker-1 only, so its drain meets the PDB.
    await tc.kube.core.patchNode({ name: 'worker-2', body: { spec: { unschedulable: true } } }, mergePatch);
    const web = workloadObjects({ kind: 'Deployment', name: 'web', namespace: 'default', replicas: 2, pdb: { minAvailable: 2 } });
    await tc.kube.apps.createNamespacedDeployment({ namespace: 'default', body: web.deployment! });
    await tc.kube.policy.createNamespacedPodDisruptionBudget({ namespace: 'default', body: web.pdb! });
    await waitFor(
      'web available and its PDB observed',
      async () => {
        const pdb = (await tc.kube.policy.readNamespacedPodDisruptionBudget({ name: 'web', namespace: 'default' })).status;
        return pdb?.currentHealthy === 2 && pdb.observedGeneration !== undefined;
      },
      120_000,
    );
    await tc.kube.core.patchNode({ name: 'worker-2', body: { spec: { unschedulable: false } } }, mergePatch);

    // The worker's own wiring: clusters directory → worker.kubeconfig (CN=skewless-worker) and SSH.
    const all = createActivities({ clusters: createClusterResolver(tc.clustersDir) });
    acts = Object.fromEntries(
      Object.entries(all).map(([name, fn]) => [
        name,
        (...args: unknown[]) => {
          called.add(name);
          return (fn as (...a: unknown[]) => unknown)(...args);
        },
      ]),
    ) as Activities;
  });

  it('runs every activity the worker has, through an upgrade of one control plane and one worker', async () => {
    try {
      await upgradeOneOfEach();
    } finally {
      sweep = await settledEvents(); // also when an activity failed: the next test names the refusal
    }
    const missing = Object.keys(createActivities()).filter(
      (name) =>
        !called.has(name) &&
        !(name in TEMPORAL_ONLY) &&
        !HOST_ONLY.includes(name) &&
        !ETCD_PATCH_HOST_ONLY.includes(name) &&
        !PROMETHEUS_ONLY.includes(name),
    );
    assert.deepEqual(missing, [], 'an activity this test does not run may need a permission nobody checked');
  });

  it('exempts only activities that cannot reach a cluster: their modules import no cluster access', () => {
    for (const [name, file] of Object.entries(TEMPORAL_ONLY)) {
      assert.ok(name in createActivities(), `${name} is no activity any more`);
      const source = readFileSync(new URL(`../../../activities/${file}`, import.meta.url), 'utf8');
      const imports = [...source.matchAll(/^import[^;]*?from\s*'([^']+)'/gm)].map((m) => m[1]);
      // Temporal's SDK, and the pure list of rollout ids (contracts/: it imports nothing, lint-enforced).
      assert.deepEqual(
        imports.filter((i) => !i!.startsWith('@temporalio/') && i !== '../contracts/workflow-ids.js'),
        [],
        `${file} imports more than Temporal's SDK`,
      );
    }
  });

  it("exempts only the alert gate's query, which asks Prometheus and never the Kubernetes API", () => {
    const source = readFileSync(new URL('../../../activities/alerts.ts', import.meta.url), 'utf8');
    for (const name of PROMETHEUS_ONLY) assert.ok(name in createActivities(), `${name} is no activity any more`);
    assert.doesNotMatch(source, /\.kube\b|kubeCall|kube-api/, 'activities/alerts.ts reaches the API');
  });

  it('exempts only restore steps that stay on the host: their code asks no Kubernetes API', () => {
    const source = readFileSync(new URL('../../../activities/etcd-restore.ts', import.meta.url), 'utf8');
    for (const name of HOST_ONLY) {
      const start = source.search(new RegExp(`^(export )?(async )?(function ${name}\\(|const ${name} = )`, 'm'));
      assert.ok(start >= 0, `${name} is not in etcd-restore.ts any more`);
      const body = source.slice(start, source.indexOf('\n}', start));
      assert.doesNotMatch(body, /\.kube\b|kubeCall|readyz|fetch\(/, `${name} reaches the API`);
    }
  });

  it('exempts the etcd patch step, whose code stays on the host: activities/etcd-patch.ts asks no Kubernetes API', () => {
    const source = readFileSync(new URL('../../../activities/etcd-patch.ts', import.meta.url), 'utf8');
    for (const name of ETCD_PATCH_HOST_ONLY) assert.ok(name in createActivities(), `${name} is no activity any more`);
    assert.doesNotMatch(source, /\.kube\b|kubeCall|kube-api|readyz|fetch\(/, 'activities/etcd-patch.ts reaches the API');
  });

  /**
   * Notifications and change hooks (issue 39), run as the worker runs them, a sink and a webhook hook
   * served by a real receiver and a hook command: they reach the operator's sinks and commands and
   * read only the cluster's configuration, so the audit log shows no request of the worker's while they run.
   */
  async function sinksAndHooks(): Promise<void> {
    const rx = await startNotifyReceiver();
    const file = join(tc.clustersDir, `${cluster}.yaml`);
    const config = readFileSync(file, 'utf8');
    try {
      writeFileSync(
        file,
        `${config}notify:\n  - {name: hook, type: webhook, url: "${rx.url('/sink')}"}\n` +
          `hooks:\n  - {name: gate, at: [beforeNode], url: "${rx.url('/gate')}"}\n  - {name: ok, at: [beforeRun], command: [${process.execPath}, -e, "0"]}\n`,
      );
      const before = (await settledEvents()).length;
      const event: NotificationEvent = {
        schemaVersion: 1,
        kind: 'test',
        id: 'rbac/test/1',
        at: new Date().toISOString(),
        cluster,
        workflowId: OWNER,
        summary: 'rbac sweep',
        details: {},
      };
      assert.deepEqual(await acts.notifySinks({ cluster }), [
        { name: 'hook', events: NOTIFICATION_EVENT_KINDS.filter((k) => k !== 'hook' && k !== 'test') },
      ]);
      assert.equal((await acts.deliverNotification({ cluster, sink: 'hook', event })).status, 200);
      const hookEvent = { ...event, kind: 'hook' as const, details: { point: 'beforeNode' } };
      await acts.runChangeHook({ cluster, hook: 'gate', point: 'beforeNode', event: hookEvent });
      await acts.runChangeHook({ cluster, hook: 'ok', point: 'beforeRun', event: { ...hookEvent, details: { point: 'beforeRun' } } });
      assert.deepEqual(
        rx.deliveries.map((d) => d.path),
        ['/sink', '/gate'],
      );
      assert.deepEqual((await settledEvents()).slice(before).map(describeEvent), [], 'no Kubernetes request of the worker while they ran');
    } finally {
      writeFileSync(file, config);
      await rx.stop();
    }
  }

  /** A Deployment and a StatefulSet that cannot roll out: a waiting checkWorkloads watches them (watch). */
  async function waitingChecksWatch(): Promise<void> {
    const nowhere = { 'skewless.test/nowhere': 'true' };
    const d = workloadObjects({ kind: 'Deployment', name: 'stuck-d', namespace: 'default', replicas: 1 }).deployment!;
    const st = workloadObjects({ kind: 'StatefulSet', name: 'stuck-s', namespace: 'default', replicas: 1 }).statefulSet!;
    d.spec!.template.spec!.nodeSelector = nowhere;
    st.spec!.template.spec!.nodeSelector = nowhere;
    await tc.kube.apps.createNamespacedDeployment({ namespace: 'default', body: d });
    await tc.kube.apps.createNamespacedStatefulSet({ namespace: 'default', body: st });
    const waited = await acts.checkWorkloads({ cluster, waitSeconds: 1.5 });
    assert.deepEqual(waited.unhealthy.map((w) => `${w.kind} ${w.name}`).sort(), ['Deployment stuck-d', 'StatefulSet stuck-s']);
    assert.equal(waited.calls.lists, 3, JSON.stringify(waited.calls));
    // A node that does not reach a version it never will: checkNodeReady watches it while it waits.
    await assert.rejects(acts.checkNodeReady({ cluster, node: 'worker-2', version: '1.99.0', waitSeconds: 1.5 }), /expected v1\.99\.0/);
    await tc.kube.apps.deleteNamespacedDeployment({ name: 'stuck-d', namespace: 'default' });
    await tc.kube.apps.deleteNamespacedStatefulSet({ name: 'stuck-s', namespace: 'default' });
  }

  /** Every activity at least once, in an upgrade's order, as the worker (cp-1 and worker-1 to 1.33.7). */
  async function upgradeOneOfEach(): Promise<void> {
    await acts.describeWorker();
    await sinksAndHooks();
    const inventory = await acts.takeInventory({ cluster });
    assert.equal(inventory.clusterVersion, '1.32.4', JSON.stringify(inventory.problems));
    assert.deepEqual(inventory.problems, []);
    await acts.checkApiserver({ cluster });
    await acts.checkWorkloads({ cluster, require: true, waitSeconds: 60 });
    await acts.checkWorkloads({ cluster, namespaces: ['default', 'kube-system'], require: true });
    await waitingChecksWatch();
    await acts.runProbes({ cluster, require: true });
    // Readiness before the hop (issue 21): /metrics and the CRDs, read-only.
    const readiness = await acts.readinessReport({ cluster, from: '1.32.4', hops: [V] });
    assert.deepEqual(readiness.problems, []);
    assert.ok(readiness.looked.removedApis.metricsScrapes >= 1);
    // skewless rehearse: the read-only description of the cluster a twin is built from.
    const facts = await acts.describeClusterForRehearsal({ cluster });
    assert.deepEqual(
      facts.barePods.map((p) => p.name),
      ['lonely'],
    );
    // Readiness before a hop (issue 21): the prerequisites of a run to 1.36 read every fact (etcd pods,
    // kubeadm-config, Nodes; SSH for the rest), and the drains predicted read Services and webhooks.
    const prerequisites = await acts.probeHopPrerequisites({ cluster, hops: ['1.33', '1.34', '1.35', '1.36'], runSeconds: 3600 });
    assert.ok(
      prerequisites.findings.some((f) => f.ack === 'containerd-1:worker-1'),
      JSON.stringify(prerequisites.findings),
    );
    const drains = await acts.predictBlockingDrains({ cluster, hop: '1.33' });
    assert.deepEqual(drains.problems, []);
    assert.ok(
      drains.findings.some((f) => f.ack === 'drain-block:default/lonely'),
      JSON.stringify(drains.findings),
    );
    await acts.setStageLabels({ cluster, owner: OWNER, labels: { 'worker-1': 'canary', 'worker-2': 'batch-1' } });

    // OS maintenance: which nodes a selector takes and the bare pods on them (read-only). The
    // maintenance command needs no API permission, only SSH; this configuration names none.
    const maintenance = await acts.planMaintenance({ cluster, selector: 'node-role.kubernetes.io/control-plane' });
    assert.deepEqual(
      maintenance.nodes.map((n) => n.name),
      ['cp-1'],
    );
    await assert.rejects(acts.runMaintenanceCommand({ cluster, node: 'worker-1' }), /no maintenance\.command/);

    // Control plane: packages, etcd snapshot, kubeadm upgrade apply, kubelet.
    assert.deepEqual((await acts.availableVersions({ cluster, node: 'cp-1' }))[0], V);
    await acts.pointPackageRepository({ cluster, node: 'cp-1', version: V });
    await acts.installPackages({ cluster, node: 'cp-1', version: V, packages: ['kubeadm'] });
    await acts.kubeadmUpgradePlan({ cluster, node: 'cp-1', version: V });
    await acts.snapshotEtcd({ cluster, node: 'cp-1', hop: V });
    assert.equal((await acts.kubeadmUpgradeApply({ cluster, node: 'cp-1', version: V })).ran, true);
    await acts.checkControlPlane({ cluster, node: 'cp-1', version: V, waitSeconds: 60 });
    await acts.installPackages({ cluster, node: 'cp-1', version: V, packages: ['kubelet', 'kubectl'] });
    assert.equal((await acts.restartKubelet({ cluster, node: 'cp-1', version: V, timeoutSeconds: 60 })).restarted, true);
    // A reversible hop's steps (issue 36) read the mirror pods and kubeadm-config as the worker; here each
    // finds its work done or not its node (their runs are control-plane-trial.test.ts's, on the per-node world).
    assert.equal((await acts.commitControlPlane({ cluster, node: 'cp-1', version: V, first: true })).ran, false);
    assert.equal((await acts.rollbackControlPlane({ cluster, node: 'cp-1', version: V })).ran, false);
    await assert.rejects(
      acts.trialControlPlane({ cluster, node: 'worker-2', version: V, emulates: '1.32' }),
      /runs no control-plane mirror pods/,
    );
    assert.deepEqual((await acts.downgradePackages({ cluster, node: 'cp-1', version: V, packages: ['kubeadm'] })).installed, []);

    // Worker: cordon, a drain the PDB blocks, then one that evicts (a forced bare pod too), kubeadm, kubelet.
    assert.equal((await acts.cordonNode({ cluster, node: 'worker-1', owner: OWNER })).changed, true);
    const plan = await acts.planDrain({ cluster, node: 'worker-1', force: ['lonely'] });
    assert.deepEqual(plan.blockers, []);
    assert.ok(plan.evict.some((p) => p.name === 'lonely') && plan.skipped.some((s) => s.filter === 'daemonSet'), JSON.stringify(plan));
    const blocked = await failsWith(acts.drainNode({ cluster, node: 'worker-1', force: ['lonely'], timeoutSeconds: 3 }), 'DrainBlocked');
    assert.match(blocked.message, /PDB web/);
    // --on-drain-timeout quarantine: the label (a node patch) and a Warning Event on the Node.
    assert.deepEqual(await acts.quarantineNode({ cluster, node: 'worker-1', owner: OWNER, hop: V, message: blocked.message }), {
      labelled: true,
      recorded: true,
    });
    await tc.kube.policy.patchNamespacedPodDisruptionBudget(
      { name: 'web', namespace: 'default', body: { spec: { minAvailable: 1 } } },
      mergePatch,
    );
    // web's pods on worker-1: both, unless the scheduler put one on the control plane.
    const webOnNode = (
      await tc.kube.core.listNamespacedPod({ namespace: 'default', labelSelector: 'app=web', fieldSelector: 'spec.nodeName=worker-1' })
    ).items.length;
    assert.ok(webOnNode >= 1, 'the drain has a web pod to evict');
    const drained = await acts.drainNode({ cluster, node: 'worker-1', force: ['lonely'], timeoutSeconds: 120 });
    assert.equal(drained.gone.filter((p) => p.startsWith('default/web-')).length, webOnNode, JSON.stringify(drained));
    // The drain's gate across workers took and gave back web's Lease (get, create, delete); a worker that
    // finds another's Lease expired takes it over at its resourceVersion (update): both as the worker.
    const dead = new PdbLease(tc.workerKube.coordination, 'default', ['web'], 'rbac/dead', 1);
    await dead.acquire();
    const next = new PdbLease(tc.workerKube.coordination, 'default', ['web'], 'rbac/next', 1);
    await next.acquire();
    await next.release();
    // The forced bare pod went in the first attempt (no PDB covers it), for good.
    assert.equal(await tc.kube.core.readNamespacedPod({ name: 'lonely', namespace: 'default' }).then(() => 200, statusOf), 404);
    await acts.checkPodsOnNode({ cluster, node: 'worker-1', require: true });
    await acts.pointPackageRepository({ cluster, node: 'worker-1', version: V });
    // As the node workflow does: the holds read before its first install, put back where one is missing.
    const holds = await acts.readPackageHolds({ cluster, node: 'worker-1' });
    await acts.restorePackageHolds({ cluster, node: 'worker-1', held: holds.held });
    await acts.installPackages({ cluster, node: 'worker-1', version: V, packages: ['kubeadm'] });
    assert.equal((await acts.kubeadmUpgradeNode({ cluster, node: 'worker-1', version: V })).ran, true);
    // Before its cordon (work-before-cordon): the kubelet and kubectl archives, fetched, not installed.
    await acts.downloadPackages({ cluster, node: 'worker-1', version: V, packages: ['kubelet', 'kubectl'] });
    await acts.installPackages({ cluster, node: 'worker-1', version: V, packages: ['kubelet', 'kubectl'] });
    await acts.restartKubelet({ cluster, node: 'worker-1', version: V, timeoutSeconds: 60 });
    await acts.checkNodeReady({ cluster, node: 'worker-1', version: V, waitSeconds: 30 });
    assert.equal((await acts.uncordonNode({ cluster, node: 'worker-1', owner: OWNER })).changed, true);
    await acts.rebootNode({ cluster, node: 'worker-2', timeoutSeconds: 60 });
    assert.deepEqual((await acts.clearStageLabels({ cluster, owner: OWNER })).cleared, ['worker-1', 'worker-2']);
    await acts.checkWorkloads({ cluster, require: true, waitSeconds: 60 });
    // Capacity before a batch (issue 40): nodes and pods listed, read-only.
    const capacity = await acts.checkBatchCapacity({ cluster, batches: [['worker-1'], ['worker-1', 'worker-2']] });
    assert.equal(capacity.batches.length, 2);
    // After the hop: web's two pods both on worker-2 (worker-1 drained), named, then restarted through its own rollout.
    const { concentrated } = await acts.findConcentratedWorkloads({ cluster });
    assert.deepEqual(
      concentrated.map((w) => `${w.name} ${w.node}`),
      ['web worker-2'],
    );
    const rebalanced = await acts.rebalanceWorkload({
      cluster,
      namespace: 'default',
      name: 'web',
      restartKey: 'rbac/1.33.7',
      waitSeconds: 60,
    });
    assert.equal(rebalanced.restarted, true, JSON.stringify(rebalanced));

    // The restore from the hop's snapshot, the steps that leave the control plane running: the plan
    // (lists the control planes), the file placed and checked, etcd's revision, the apiserver's /readyz.
    const restore = await acts.planRestore({ cluster, hop: V });
    assert.deepEqual(
      restore.members.map((m) => m.node),
      ['cp-1'],
    );
    await acts.placeSnapshot({ cluster, node: 'cp-1', hop: V });
    const { remotePath, sha256, revision } = restore.snapshot;
    await acts.checkRestoreSnapshot({ cluster, node: 'cp-1', remotePath, sha256, revision });
    await acts.verifyEtcdRestore({ cluster, node: 'cp-1', minRevision: revision, timeoutSeconds: 30 });
    await acts.verifyRestoredApiserver({ cluster, timeoutSeconds: 30 });

    // Blue/green (activities/pool-provisioning.ts): the plan, one green machine through the
    // simulation's machine API, then removed once cordoned and drained (its Node deleted).
    const bg = await acts.planBlueGreen({ cluster, from: 'blue', to: 'green', version: V, count: 1 });
    assert.deepEqual(bg.green.names, ['green-1']);
    assert.deepEqual(
      (await acts.createPoolMachines({ cluster, pool: 'green', names: bg.green.names, version: V, labels: bg.green.labels })).joined,
      ['green-1'],
    );
    await acts.cordonNode({ cluster, node: 'green-1', owner: OWNER });
    await acts.drainNode({ cluster, node: 'green-1', timeoutSeconds: 60 });
    assert.deepEqual((await acts.deletePoolMachines({ cluster, pool: 'green', names: ['green-1'] })).deleted, ['green-1']);
    assert.equal(await tc.kube.core.readNode({ name: 'green-1' }).then(() => 200, statusOf), 404);
  }

  it('no request was refused, each was one the manifest grants, and each grant was used', () => {
    assert.ok(sweep.length > 0, "the audit log holds the worker's requests");
    assert.deepEqual(sweep.filter(refused).map(describeEvent), [], 'a missing permission');
    const grants = grantsOf(manifest);
    assert.deepEqual(
      sweep.filter((e) => !grants.some((g) => covers(g, e))).map(describeEvent),
      [],
      'allowed by something other than the manifest',
    );
    assert.deepEqual(
      grants.filter((g) => !sweep.some((e) => !refused(e) && covers(g, e))).map(describeGrant),
      [],
      'an excess permission: granted, never used',
    );
  });

  it('refuses the worker what it must never do (403 from the apiserver, in the audit log)', async () => {
    const worker = kubeClients(tc.sim.endpoints.kubeconfig);
    const never: { what: string; verb: string; resource: string; call: () => Promise<unknown> }[] = [
      {
        what: 'read Secrets',
        verb: 'list',
        resource: 'secrets',
        call: () => worker.core.listNamespacedSecret({ namespace: 'kube-system' }),
      },
      { what: 'read Secrets anywhere', verb: 'list', resource: 'secrets', call: () => worker.core.listSecretForAllNamespaces() },
      {
        what: 'read a Secret by name',
        verb: 'get',
        resource: 'secrets',
        call: () => worker.core.readNamespacedSecret({ name: 'any', namespace: 'default' }),
      },
      {
        what: "write a Node's status",
        verb: 'patch',
        resource: 'nodes/status',
        call: () => worker.core.patchNodeStatus({ name: 'worker-2', body: { status: {} } }, mergePatch),
      },
      {
        what: 'delete a Pod (bypassing PDBs)',
        verb: 'delete',
        resource: 'pods',
        call: () => worker.core.deleteNamespacedPod({ name: 'web', namespace: 'default' }),
      },
      {
        what: 'create a Pod',
        verb: 'create',
        resource: 'pods',
        call: () =>
          worker.core.createNamespacedPod({
            namespace: 'default',
            body: { metadata: { name: 'x' }, spec: { containers: [{ name: 'x', image: 'x' }] } },
          }),
      },
      {
        what: 'create a Deployment',
        verb: 'create',
        resource: 'deployments',
        call: () =>
          worker.apps.createNamespacedDeployment({
            namespace: 'default',
            body: workloadObjects({ kind: 'Deployment', name: 'intruder', namespace: 'default', replicas: 1 }).deployment!,
          }),
      },
      {
        what: 'patch kubeadm-config',
        verb: 'patch',
        resource: 'configmaps',
        call: () =>
          worker.core.patchNamespacedConfigMap(
            { name: 'kubeadm-config', namespace: 'kube-system', body: { data: { x: 'y' } } },
            mergePatch,
          ),
      },
      {
        what: 'read another ConfigMap in kube-system',
        verb: 'get',
        resource: 'configmaps',
        call: () => worker.core.readNamespacedConfigMap({ name: 'kube-root-ca.crt', namespace: 'kube-system' }),
      },
      {
        what: 'list ConfigMaps in kube-system',
        verb: 'list',
        resource: 'configmaps',
        call: () => worker.core.listNamespacedConfigMap({ namespace: 'kube-system' }),
      },
      {
        what: 'relax a PDB',
        verb: 'patch',
        resource: 'poddisruptionbudgets',
        call: () =>
          worker.policy.patchNamespacedPodDisruptionBudget(
            { name: 'web', namespace: 'default', body: { spec: { minAvailable: 0 } } },
            mergePatch,
          ),
      },
      {
        what: 'scale a Deployment',
        verb: 'patch',
        resource: 'deployments/scale',
        call: () =>
          worker.apps.patchNamespacedDeploymentScale({ name: 'web', namespace: 'default', body: { spec: { replicas: 0 } } }, mergePatch),
      },
      {
        what: 'grant itself more',
        verb: 'create',
        resource: 'clusterrolebindings',
        call: () =>
          worker.rbac.createClusterRoleBinding({
            body: {
              metadata: { name: 'skewless-escalation' },
              roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'cluster-admin' },
              subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: WORKER_USER }],
            },
          }),
      },
    ];
    const start = (await settledEvents()).length;
    for (const n of never) {
      const err = await n.call().then(
        () => assert.fail(`the worker could ${n.what}`),
        (e: unknown) => e,
      );
      assert.equal(statusOf(err), 403, `${n.what}: ${String(err).split('\n')[0]}`);
    }
    const logged = (await settledEvents()).slice(start);
    for (const n of never) {
      assert.ok(
        logged.some((e) => e.code === 403 && e.verb === n.verb && e.resource === n.resource),
        `${n.what}: no 403 for ${n.verb} ${n.resource} in ${logged.map(describeEvent).join('; ')}`,
      );
    }
    assert.equal((await tc.kube.core.readNode({ name: 'worker-2' })).metadata?.name, 'worker-2', 'nothing refused took effect');
  });

  it('an activity that meets a 403 fails Forbidden, not retryable, naming the verb and resource', async () => {
    // The manifest less five grants, each behind a different code path (kubeCall, a paged list, the
    // eviction's own error handling, an apps list, the raw /readyz request).
    const role = manifest.find((o) => o.kind === 'ClusterRole');
    assert.ok(role?.kind === 'ClusterRole' && role.rules);
    const without = (drop: Record<string, string[]>) =>
      role.rules!.flatMap((r) => {
        const keep = (name: string) => !(drop[name] ?? []).some((v) => r.verbs.includes(v));
        const resources = r.resources?.filter(keep);
        const urls = r.nonResourceURLs?.filter(keep);
        if ((r.resources && resources?.length === 0) || (r.nonResourceURLs && urls?.length === 0)) return [];
        return [{ ...r, ...(resources ? { resources } : {}), ...(urls ? { nonResourceURLs: urls } : {}) }];
      });
    const rules = without({
      nodes: ['patch'],
      'pods/eviction': ['create'],
      poddisruptionbudgets: ['list'],
      deployments: ['list'],
      '/readyz': ['get'],
    });
    assert.ok(rules.length < role.rules.length, 'some rules were dropped');
    await tc.kube.rbac.replaceClusterRole({ name: role.metadata?.name as string, body: { ...role, rules } });
    try {
      // The drain needs a cordoned node with something to evict: web's pods went to worker-2.
      await tc.kube.core.patchNode({ name: 'worker-2', body: { spec: { unschedulable: true } } }, mergePatch);
      assert.ok((await acts.planDrain({ cluster, node: 'worker-2' })).evict.length > 0, 'worker-2 runs something to evict');
      let cordon: ApplicationFailure | undefined;
      await waitFor(
        'the reduced role to take effect',
        async () => {
          cordon = await acts.cordonNode({ cluster, node: 'worker-1', owner: OWNER }).then(
            () => undefined,
            (e: unknown) => e as ApplicationFailure,
          );
          if (cordon === undefined)
            await tc.kube.core.patchNode(
              {
                name: 'worker-1',
                body: { spec: { unschedulable: false }, metadata: { annotations: { 'skewless.io/cordoned-by': null } } },
              },
              mergePatch,
            );
          return cordon !== undefined;
        },
        30_000,
        250,
      );
      const cases: [string, () => Promise<unknown>, RegExp][] = [
        [
          'cordonNode',
          () => Promise.reject(cordon),
          /^cordon worker-1: HTTP 403: .*User "skewless-worker" cannot patch resource "nodes" in API group ""/,
        ],
        // The drain reads the PDBs of the pods it evicts first (one eviction at a time per PDB).
        [
          'drainNode',
          () => acts.drainNode({ cluster, node: 'worker-2', timeoutSeconds: 30 }),
          /^list PodDisruptionBudgets in default: HTTP 403: .*cannot list resource "poddisruptionbudgets" in API group "policy" in the namespace "default"/,
        ],
        [
          'takeInventory',
          () => acts.takeInventory({ cluster }),
          /^list PodDisruptionBudgets: HTTP 403: .*cannot list resource "poddisruptionbudgets" in API group "policy" at the cluster scope/,
        ],
        [
          'checkWorkloads',
          () => acts.checkWorkloads({ cluster, waitSeconds: 30 }),
          /^list Deployments in all namespaces: HTTP 403: .*cannot list resource "deployments" in API group "apps"/,
        ],
        [
          'checkApiserver',
          () => acts.checkApiserver({ cluster, waitSeconds: 30 }),
          /^GET \/readyz\?verbose: HTTP 403: .*cannot get path "\/readyz"/,
        ],
      ];
      for (const [name, call, message] of cases) {
        const err = await failsWith(call(), 'Forbidden');
        assert.equal(err.nonRetryable, true, name);
        assert.match(err.message, message, name);
      }
      // The eviction's own 403 handling: the PDBs readable again, evictions still refused.
      await tc.kube.rbac.replaceClusterRole({
        name: role.metadata?.name as string,
        body: { ...role, rules: without({ 'pods/eviction': ['create'] }) },
      });
      let evict: ApplicationFailure | undefined;
      await waitFor(
        'PodDisruptionBudgets readable again',
        async () => {
          evict = await failsWith(acts.drainNode({ cluster, node: 'worker-2', timeoutSeconds: 30 }), 'Forbidden');
          return !/PodDisruptionBudgets/.test(evict.message);
        },
        30_000,
        250,
      );
      assert.equal(evict?.nonRetryable, true);
      assert.match(
        evict?.message ?? '',
        /^evict pod default\/web-\S+: HTTP 403: .*cannot create resource "pods\/eviction" in API group "" in the namespace "default"/,
      );
    } finally {
      await applyRbacManifest(tc.kube, manifest);
      await tc.kube.core.patchNode({ name: 'worker-2', body: { spec: { unschedulable: false } } }, mergePatch);
    }
  });
});
