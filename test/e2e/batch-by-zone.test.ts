import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { V1Deployment } from '@kubernetes/client-node';
import { formatAvailability, startAvailabilitySampler } from '../../sim/availability-sampler.js';
import { workloadObjects } from '../../sim/cluster/workload-objects.js';
import { waitFor } from '../../sim/cluster/wait-for.js';
import { abortSignal, statusQuery, type UpgradeStatus } from '../../workflows/rollout-messages.js';
import { cliAsync } from '../helpers/spawn-cli.js';
import { simWorld } from '../helpers/sim-world.js';

const ZONE = 'topology.kubernetes.io/zone';
const ZONES = ['a', 'b', 'c'];
// Nine workers, three per zone; web's budget keeps two of its three replicas up through every drain.
const LAB = `
name: zones
version: 1.32.4
repository: [1.32.4, 1.33.7, 1.34.2]
nodes:
  - {name: cp, role: control-plane, count: 1}
${ZONES.map((z) => `  - {name: z${z}, role: worker, count: 3, labels: {${ZONE}: ${z}}}`).join('\n')}
workloads:
  - {kind: Deployment, name: web, replicas: 3, pdb: {minAvailable: 2}}
`;
const zoneOf = (node: string) => /^z([abc])-\d$/.exec(node)?.[1];

/** A Deployment of the test's own: `replicas` pods of `cpu` CPU each, held to zone b when asked. */
function deployment(name: string, replicas: number, cpu: string, zone?: string): V1Deployment {
  const d = workloadObjects({ kind: 'Deployment', name, namespace: 'default', replicas }).deployment as V1Deployment;
  const spec = d.spec!.template.spec!;
  spec.containers = spec.containers.map((c) => ({ ...c, resources: { requests: { cpu } } }));
  if (zone)
    spec.affinity = {
      nodeAffinity: {
        requiredDuringSchedulingIgnoredDuringExecution: {
          nodeSelectorTerms: [{ matchExpressions: [{ key: ZONE, operator: 'In', values: [zone] }] }],
        },
      },
    };
  return d;
}

/**
 * Issue 40 through the real CLI, worker and simulated cluster: batches that never mix two zones (read
 * from the workflow's history), a Deployment left on one node named and rebalanced after the hop, and
 * a phase whose pods cannot fit halted before any eviction.
 */
describe('e2e: --batch-by topology.kubernetes.io/zone, capacity before each batch, --rebalance', () => {
  const world = simWorld(LAB, 'zones');
  const cli = (...args: string[]) => cliAsync(args, world.cliEnv());

  it('nine workers in three zones, batches of 3: every batch in flight is one zone, b first; PDB floors held; piled rebalanced', async () => {
    const { kube } = world.tc;
    // piled: two replicas that may run in zone b only. The canary (zb-1) goes first, then zb-2 and zb-3
    // together: both pods end on zb-1, the one node of b left schedulable, as a canary collects them.
    await kube.apps.createNamespacedDeployment({ namespace: 'default', body: deployment('piled', 2, '10m', 'b') });
    await kube.policy.createNamespacedPodDisruptionBudget({
      namespace: 'default',
      body: { metadata: { name: 'piled' }, spec: { maxUnavailable: 1, selector: { matchLabels: { app: 'piled' } } } },
    });
    await waitFor(
      'piled available',
      async () => (await kube.apps.readNamespacedDeployment({ name: 'piled', namespace: 'default' })).status?.availableReplicas === 2,
      60_000,
    );

    const plan = await cli('plan', '--cluster', 'zones', '--to', '1.33', '--batch-size', '3', '--batch-by', ZONE, '--batch-order', 'b,a,c');
    assert.equal(plan.code, 0, plan.stdout + plan.stderr);
    assert.match(plan.stdout, /^ {2}canary +zb-1 \(topology\.kubernetes\.io\/zone=b\)$/m);
    assert.match(plan.stdout, /^ {2}batch-2 +za-1 za-2 za-3 \(topology\.kubernetes\.io\/zone=a\)$/m);
    // Capacity per phase, as it is now: every phase fits, with the headroom the other workers leave.
    assert.match(plan.stdout, /^Capacity \(the cluster as it is now/m);
    assert.match(plan.stdout, /^ {2}batch-1 +fits: \d+ pods \([\d.]+ CPU, .*\), headroom [\d.]+ CPU, [\d.]+Gi memory, \d+ pods$/m);

    const sampler = startAvailabilitySampler(kube, { intervalMs: 250 });
    const args = ['--batch-size', '3', '--max-unavailable', '3', '--batch-by', ZONE, '--batch-order', 'b,a,c', '--rebalance'];
    const run = await cli('upgrade', '--cluster', 'zones', '--to', '1.33', ...args).finally(() => undefined);
    const availability = await sampler.stop();
    assert.equal(run.code, 0, run.stdout + run.stderr);
    assert.equal(availability.violated, false, formatAvailability(availability));

    // From history: the worker children in flight at each moment are all of one zone, and the zones go b, a, c.
    const handle = world.env.client.workflow.getHandle('upgrade/zones');
    const { events } = await handle.fetchHistory();
    const inFlight = new Set<string>();
    const zonesInOrder: string[] = [];
    for (const e of events ?? []) {
      const started = e.startChildWorkflowExecutionInitiatedEventAttributes?.workflowId;
      const ended =
        e.childWorkflowExecutionCompletedEventAttributes?.workflowExecution?.workflowId ??
        e.childWorkflowExecutionFailedEventAttributes?.workflowExecution?.workflowId;
      const node = (started ?? ended)?.split('/').at(-1) ?? '';
      const zone = zoneOf(node);
      if (!zone) continue;
      if (started) {
        inFlight.add(node);
        assert.deepEqual(new Set([...inFlight].map(zoneOf)).size, 1, `in flight together: ${[...inFlight].join(', ')}`);
        if (zonesInOrder.at(-1) !== zone) zonesInOrder.push(zone);
      } else inFlight.delete(node);
    }
    assert.deepEqual(zonesInOrder, ['b', 'a', 'c']);

    // After the hop: piled named (both replicas on zb-1), then restarted and spread by the scheduler.
    const status: UpgradeStatus = await handle.query(statusQuery);
    const piledNote = status.events.find((e) => /every replica on one node: .*Deployment default\/piled \(2 on zb-1\)/.test(e));
    assert.ok(piledNote, status.events.join('\n'));
    const rebalanced = status.events.find((e) => e.startsWith('rebalanced Deployment default/piled: now on '));
    assert.ok(rebalanced, status.events.join('\n'));
    const pods = await kube.core.listNamespacedPod({ namespace: 'default', labelSelector: 'app=piled' });
    const nodes = new Set(pods.items.filter((p) => !p.metadata?.deletionTimestamp).map((p) => p.spec?.nodeName));
    assert.ok(nodes.size >= 2, `piled spread again: ${[...nodes].join(', ')}`);
    assert.deepEqual(status.concentrated, []);
  });

  it('a canary whose pods fit nowhere else halts before any eviction, naming them; no pod goes Pending', async () => {
    const { kube } = world.tc;
    // One 20-CPU pod per worker (32 CPU each): none has room for another's.
    await kube.apps.createNamespacedDeployment({ namespace: 'default', body: deployment('big', 9, '20') });
    await waitFor(
      'big available',
      async () => (await kube.apps.readNamespacedDeployment({ name: 'big', namespace: 'default' })).status?.availableReplicas === 9,
      60_000,
    );
    const before = (await kube.core.listNamespacedPod({ namespace: 'default', labelSelector: 'app=big' })).items
      .map((p) => p.metadata?.uid)
      .sort();

    const started = await cli('upgrade', '--cluster', 'zones', '--to', '1.34', '--batch-by', ZONE, '--batch-order', 'b,a,c', '--detach');
    assert.equal(started.code, 0, started.stdout + started.stderr);
    const handle = world.env.client.workflow.getHandle('upgrade/zones');
    let status: UpgradeStatus = await handle.query(statusQuery);
    await waitFor('halted on capacity', async () => (status = await handle.query(statusQuery)).halted?.step === 'capacity', 300_000);
    assert.equal(status.halted?.after, 'canary');
    assert.ok(
      status.halted?.workloads.some((p) => /^default\/big-/.test(p)),
      JSON.stringify(status.halted),
    );
    assert.match(status.halted?.message ?? '', /of zb-1 would stay Pending/);
    // plan says so too, before anything starts.
    const plan = await cli('plan', '--cluster', 'zones', '--to', '1.34', '--batch-by', ZONE, '--batch-order', 'b,a,c');
    assert.match(plan.stdout, /^ {2}canary +WOULD HALT: 1 pod\(s\) of zb-1 fit nowhere else: default\/big-/m);
    const shown = await cli('status', 'zones');
    assert.match(shown.stdout, /HALTED before canary of hop 1\.34\.2, nothing evicted: its pods would not fit/);

    const nodes = (await kube.core.listNode()).items;
    assert.deepEqual(
      nodes.filter((n) => n.spec?.unschedulable).map((n) => n.metadata?.name),
      [],
      'nothing cordoned',
    );
    const after = (await kube.core.listNamespacedPod({ namespace: 'default' })).items;
    assert.deepEqual(
      after.filter((p) => p.status?.phase === 'Pending').map((p) => p.metadata?.name),
      [],
      'no pod Pending',
    );
    assert.deepEqual(
      after
        .filter((p) => p.metadata?.labels?.app === 'big')
        .map((p) => p.metadata?.uid)
        .sort(),
      before,
      'nothing evicted',
    );

    await handle.signal(abortSignal, { by: 'capacity test', reason: 'enough: it halted before the drain' });
    const ended = await handle.result();
    assert.equal(ended.phase, 'aborted', ended.events.join('\n'));
    await kube.apps.deleteNamespacedDeployment({ name: 'big', namespace: 'default' });
  });
});
