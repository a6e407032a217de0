import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { freePort } from '../../tooling/free-port.js';
import { mergePatch } from '../../sim/cluster/kube-clients.js';
import { waitFor } from '../../sim/cluster/wait-for.js';
import { statusQuery, type UpgradeStatus } from '../../workflows/rollout-messages.js';
import { startClusterWorld } from '../helpers/sim-world.js';
import type { TestCluster } from '../helpers/sim-cluster.js';
import { cliAsync, spawnCli, type RunningCli } from '../helpers/spawn-cli.js';
import { uniqueTaskQueue, temporalVars } from '../helpers/temporal-env.js';
import { nodeLines } from '../helpers/upgrade-evidence.js';
import { has, scrape, startOtlpReceiver, total, type OtlpReceiver, type Sample } from './observability.js';

// The demo's topology (demo/cluster.yaml): 3 control planes, 5 workers, its workloads, one hop.
// `payments` (2 replicas, minAvailable 2) refuses every eviction: the first node drained that runs one
// of its pods blocks until the operator scales it up, so PDB refusals and a blocked node are certain.
const LAB = `
name: demo
version: 1.32.4
repository: [1.32.4, 1.33.7]
rebootSeconds: 1
nodes:
  - {name: cp, role: control-plane, count: 3}
  - {name: worker, role: worker, count: 5}
workloads:
  - {kind: Deployment, name: web, replicas: 4, pdb: {minAvailable: 3}}
  - {kind: Deployment, name: api, replicas: 3, pdb: {maxUnavailable: 1}}
  - {kind: StatefulSet, name: db, replicas: 3, pdb: {maxUnavailable: 1}}
  - {kind: DaemonSet, name: node-exporter, namespace: monitoring}
  - {kind: Deployment, name: payments, replicas: 2, pdb: {minAvailable: 2}}
`;
const NODES = ['cp-1', 'cp-2', 'cp-3', 'worker-1', 'worker-2', 'worker-3', 'worker-4', 'worker-5'];
const GATE = 'canary-1.33.7';
const GATE_HELD_MS = 3_000;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * The worker's metrics and traces after a demo-sized upgrade: the real dev server, `skewless worker`
 * as its own process with --metrics-address and --otlp-endpoint, the upgrade started, its gate
 * approved and its blocked drain retried with the CLI once the PDB allows it, then /metrics scraped and parsed, and the
 * spans the worker posted to a local OTLP/HTTP endpoint read back.
 */
describe('metrics and traces of a demo-sized upgrade (worker process, real dev server, 3+5 simulated nodes)', () => {
  let env: TestWorkflowEnvironment;
  let tc: TestCluster;
  let otlp: OtlpReceiver;
  let worker: RunningCli | undefined;
  let metrics: string;
  const taskQueue = uniqueTaskQueue('metrics');
  const cliEnv = () => ({ ...process.env, ...temporalVars(env), SKEWLESS_TASK_QUEUE: taskQueue, USER: 'dana' });
  const cli = (...args: string[]) => cliAsync(args, cliEnv());
  /** What the test saw while the upgrade ran. */
  const seen = { blocks: 0, paymentsBlocks: 0, gaugeWhileBlocked: [] as number[], gateWaitedMs: 0, beforeUpgrade: [] as Sample[] };
  let final: UpgradeStatus;
  let samples: Sample[];

  before(async () => {
    [env, tc, otlp] = await startClusterWorld(LAB, startOtlpReceiver());
    metrics = `127.0.0.1:${await freePort()}`;
    worker = spawnCli(['worker', '--clusters-dir', tc.clustersDir, '--task-queue', taskQueue, '--metrics-address', metrics], {
      ...cliEnv(),
      SKEWLESS_OTLP_ENDPOINT: otlp.url,
    });
    await waitFor('the worker polling', () => /skewless worker: task queue /.test(worker?.stderr() ?? ''), 120_000, 200).catch(
      (err: Error) => {
        throw new Error(`${err.message}\n${worker?.stderr()}`);
      },
    );
  });
  after(async () => {
    if (worker && worker.child.exitCode === null && worker.child.signalCode === null) {
      worker.child.kill('SIGTERM');
      await Promise.race([worker.exited, sleep(30_000)]);
      if (worker.child.exitCode === null && worker.child.signalCode === null) worker.child.kill('SIGKILL');
    }
    await tc?.stop();
    await env?.teardown();
    await otlp?.close();
  });

  it("serves /metrics as soon as it polls: the SDK's metrics, and none of skewless's before an upgrade", async () => {
    seen.beforeUpgrade = await scrape(metrics);
    assert.ok(
      seen.beforeUpgrade.some((s) => s.name.startsWith('temporal_')),
      seen.beforeUpgrade.map((s) => s.name).join(' '),
    );
    assert.equal(total(seen.beforeUpgrade, 'skewless_nodes_upgraded'), 0);
    assert.equal(total(seen.beforeUpgrade, 'skewless_drain_seconds_count'), 0);
  });

  it('upgrades the 8 nodes; the operator approves the canary gate after a while and unblocks the drain `payments` blocks', async () => {
    const started = await cli(
      'upgrade',
      '--cluster',
      'demo',
      '--to',
      '1.33',
      '--canary',
      '1',
      '--approve-canary',
      '--drain-timeout',
      '5',
      '--acknowledge',
      'default/payments',
      '--detach',
    );
    assert.equal(started.code, 0, started.stdout + started.stderr);
    const handle = env.client.workflow.getHandle('upgrade/demo');
    let gateSeenAt: number | undefined;
    const resolving = new Set<string>();
    await waitFor(
      'the upgrade to end',
      async () => {
        const s = await handle.query(statusQuery);
        if (['done', 'failed', 'aborted'].includes(s.phase)) {
          final = s;
          return true;
        }
        const gate = s.gates.find((g) => g.name === GATE && !g.approvedBy);
        if (gate && gateSeenAt === undefined) gateSeenAt = Date.now();
        if (gate && gateSeenAt !== undefined && Date.now() - gateSeenAt >= GATE_HELD_MS) {
          seen.gateWaitedMs = Date.now() - gateSeenAt;
          const approved = await cli('approve', 'demo', '--gate', GATE, '--comment', 'canary looks good');
          assert.equal(approved.code, 0, approved.stderr);
        }
        const blocked = Object.entries(s.nodes).filter(([, n]) => n.phase === 'blocked' && n.blocked);
        for (const [node, state] of blocked) {
          if (resolving.has(node)) continue;
          assert.equal(state.blocked?.kind, 'DrainBlocked', `${node}: ${state.blocked?.message}`);
          seen.blocks++;
          // The gauge follows the workflow: at least this node is blocked now.
          let gauge = 0;
          await waitFor(
            `skewless_blocked_nodes ≥ 1 while ${node} is blocked`,
            async () => (gauge = total(await scrape(metrics), 'skewless_blocked_nodes', { cluster: 'demo' })) >= 1,
            30_000,
            250,
          );
          seen.gaugeWhileBlocked.push(gauge);
          const pods = state.blocked?.pods ?? [];
          assert.ok(pods.length > 0, `${node}: ${state.blocked?.message}`);
          resolving.add(node);
          const pdbs = [...new Set(pods.flatMap((p) => (p.pdbs ?? []).map((pdb) => `${p.namespace}/${pdb}`)))];
          if (pdbs.includes('default/payments')) {
            seen.paymentsBlocks++;
            // As the demo's operator does: a third replica, so that the PDB allows one pod to leave, then retry.
            await tc.kube.apps.patchNamespacedDeployment(
              { namespace: 'default', name: 'payments', body: { spec: { replicas: 3 } } },
              mergePatch,
            );
          }
          // Another PDB (the StatefulSet's: Kubernetes counts a re-created pod of the same name as healthy only
          // a while after its eviction) blocks a 5 s drain on a loaded machine too: the operator waits until
          // each PDB named allows a disruption, then retries.
          for (const pdb of pdbs) {
            const [namespace, name] = pdb.split('/') as [string, string];
            await waitFor(
              `the ${pdb} PDB allowing a disruption`,
              async () =>
                ((await tc.kube.policy.readNamespacedPodDisruptionBudget({ namespace, name })).status?.disruptionsAllowed ?? 0) >= 1,
              300_000,
              250,
            );
          }
          const retried = await cli(
            'resolve',
            'demo',
            '--node',
            node,
            '--action',
            'retry',
            '--comment',
            `${pdbs.join(', ')} allow a disruption`,
          );
          assert.equal(retried.code, 0, retried.stdout + retried.stderr);
        }
        for (const node of resolving) if (s.nodes[node]?.phase !== 'blocked') resolving.delete(node);
        return false;
      },
      900_000,
      500,
    );

    assert.equal(final.phase, 'done', final.events.join('\n'));
    assert.deepEqual(
      await nodeLines(tc.kube),
      NODES.map((n) => `${n} v1.33.7 schedulable`),
    );
    assert.ok(seen.paymentsBlocks >= 1, `a node running a pod of payments was blocked (${seen.blocks} blocked drain(s) in all)`);
    assert.ok(seen.gateWaitedMs >= GATE_HELD_MS);
    // The query says done before the workflow has returned (it waits for its handlers first): the SDK
    // counts a workflow completed only then. Seen once in a loaded suite: 0 completed at the scrape.
    await handle.result();
    samples = await scrape(metrics);
  });

  it('counts every node upgraded, by role', () => {
    assert.equal(total(samples, 'skewless_nodes_upgraded', { cluster: 'demo' }), NODES.length);
    assert.equal(total(samples, 'skewless_nodes_upgraded', { cluster: 'demo', role: 'control-plane' }), 3);
    assert.equal(total(samples, 'skewless_nodes_upgraded', { cluster: 'demo', role: 'worker' }), 5);
  });

  it('records a drain per node, with seconds > 0 (the blocked drains waited the 5 s timeout at least)', () => {
    assert.equal(total(samples, 'skewless_drain_seconds_count', { cluster: 'demo' }), NODES.length);
    const seconds = total(samples, 'skewless_drain_seconds_sum', { cluster: 'demo' });
    assert.ok(seconds >= 5 * seen.blocks, `drain seconds ${seconds}, ${seen.blocks} blocked drain(s)`);
    // Histogram buckets are cumulative and end with every drain in +Inf.
    assert.equal(total(samples, 'skewless_drain_seconds_bucket', { cluster: 'demo', le: '+Inf' }), NODES.length);
  });

  it('counts the evictions PDBs refused, shows the blocked nodes while blocked and none at the end', () => {
    const refused = total(samples, 'skewless_evictions_refused', { cluster: 'demo' });
    assert.ok(refused >= seen.blocks, `${refused} refusals for ${seen.blocks} blocked drain(s)`);
    assert.ok(
      seen.gaugeWhileBlocked.every((g) => g >= 1),
      seen.gaugeWhileBlocked.join(','),
    );
    assert.ok(has(samples, 'skewless_blocked_nodes'));
    assert.equal(total(samples, 'skewless_blocked_nodes', { cluster: 'demo' }), 0);
  });

  it("records the canary gate's wait, at least as long as the operator held it", () => {
    const sum = total(samples, 'skewless_gate_wait_seconds_sum', { cluster: 'demo', gate: 'canary', by: 'approval' });
    assert.equal(total(samples, 'skewless_gate_wait_seconds_count', { cluster: 'demo', gate: 'canary', by: 'approval' }), 1);
    assert.ok(sum >= GATE_HELD_MS / 1000, `gate waited ${sum} s; the test held it ${seen.gateWaitedMs} ms`);
  });

  it("serves the Temporal SDK's runtime metrics for the same work", (t) => {
    const names = [...new Set(samples.filter((s) => s.name.startsWith('temporal_')).map((s) => s.name))].sort();
    // 1 upgrade, 3 control-plane steps and 8 node steps completed on this queue.
    assert.equal(
      total(samples, 'temporal_workflow_completed', { task_queue: taskQueue, workflow_type: 'clusterUpgradeWorkflow' }),
      1,
      names.join(' '),
    );
    assert.equal(
      total(samples, 'temporal_workflow_completed', { task_queue: taskQueue, workflow_type: 'nodeUpgradeWorkflow' }),
      11,
      names.join(' '),
    );
    assert.ok(
      total(samples, 'temporal_activity_execution_latency_count', { task_queue: taskQueue, activity_type: 'drainNode' }) >= NODES.length,
      names.join(' '),
    );
    assert.ok(total(samples, 'temporal_workflow_task_execution_latency_count', { task_queue: taskQueue }) > 0, names.join(' '));
    // What the run measured, for the record.
    const of = (name: string, where: Record<string, string> = {}) => `${name}=${Math.round(total(samples, name, where) * 100) / 100}`;
    t.diagnostic(
      [
        of('skewless_nodes_upgraded'),
        of('skewless_drain_seconds_sum'),
        of('skewless_drain_seconds_count'),
        of('skewless_evictions_refused'),
        `skewless_blocked_nodes while blocked=${seen.gaugeWhileBlocked.join(',')}`,
        of('skewless_blocked_nodes'),
        of('skewless_gate_wait_seconds_sum'),
        of('temporal_workflow_completed'),
        of('temporal_activity_execution_latency_count'),
        `${names.length} temporal_* series names`,
      ].join(' '),
    );
  });

  it('sent OpenTelemetry spans of the workflows and their activities, each with its workflow id', async (t) => {
    const want = (what: string, match: (s: (typeof otlp.spans)[number]) => boolean) =>
      waitFor(what, () => otlp.spans.some(match), 30_000, 250).catch((err: Error) => {
        throw new Error(`${err.message}; received: ${[...new Set(otlp.spans.map((s) => s.name))].join(', ')}`);
      });
    await want(
      "the upgrade workflow's span",
      (s) => s.name === 'RunWorkflow:clusterUpgradeWorkflow' && s.attributes.workflowId === 'upgrade/demo',
    );
    await want(
      "a node workflow's span",
      (s) => s.name === 'RunWorkflow:nodeUpgradeWorkflow' && s.attributes.workflowId === 'upgrade/demo/1.33.7/worker-1',
    );
    await want(
      'the upgrade scheduling its first activity',
      (s) => s.name === 'StartActivity:takeInventory' && s.attributes.workflowId === 'upgrade/demo',
    );
    await want(
      'drainNode run for worker-1',
      (s) => s.name === 'RunActivity:drainNode' && s.attributes.temporalWorkflowId === 'upgrade/demo/1.33.7/worker-1',
    );
    assert.ok(
      otlp.requests.every((r) => r.method === 'POST' && r.path === '/v1/traces' && r.contentType.startsWith('application/json')),
      JSON.stringify(otlp.requests.slice(0, 3)),
    );
    assert.ok(otlp.spans.every((s) => s.service === 'skewless-worker'));
    // An activity's span continues the trace of the workflow that scheduled it.
    const drain = otlp.spans.find(
      (s) => s.name === 'RunActivity:drainNode' && s.attributes.temporalWorkflowId === 'upgrade/demo/1.33.7/worker-1',
    );
    const scheduled = otlp.spans.find((s) => s.spanId === drain?.parentSpanId);
    assert.equal(scheduled?.name, 'StartActivity:drainNode');
    assert.equal(scheduled?.traceId, drain?.traceId);
    const kinds = [...new Set(otlp.spans.map((s) => s.name.split(':')[0]))].sort();
    t.diagnostic(`${otlp.spans.length} spans in ${otlp.requests.length} requests; kinds: ${kinds.join(', ')}`);
  });

  it('stops gracefully on SIGTERM', async () => {
    worker?.child.kill('SIGTERM');
    const exited = await worker?.exited;
    assert.equal(exited?.code, 0, exited?.stderr);
    assert.match(
      exited?.stderr ?? '',
      new RegExp(`metrics on http://${metrics.replace(/\./g, '\\.')}/metrics; traces to the OTLP endpoint`),
    );
  });
});
