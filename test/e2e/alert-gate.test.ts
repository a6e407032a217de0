// The alert gate on the simulated cluster (issue 21): a real Prometheus (Debian's package) scrapes a
// gauge this test sets; its alerting rule fires NodeDown (severity page) while the gauge is above 0,
// and Watchdog always (the matchers leave it out). The real CLI and worker: `plan --cluster` holds
// the hop naming the alert; the upgrade's control plane waits while it fires and starts once it
// clears; an alert that fires while the canary moves halts the run after the canary until the
// operator approves; history shows who let it go and why.
import assert from 'node:assert/strict';
import { appendFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { historyToJSON } from '@temporalio/common/lib/proto-utils.js';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import type { Worker } from '@temporalio/worker';
import { clusterUpgradeWorkflow } from '../../workflows/cluster-upgrade-workflow.js';
import { upgradeWorkflowId } from '../../contracts/workflow-ids.js';
import { statusQuery, type UpgradeStatus } from '../../workflows/rollout-messages.js';
import { startClusterWorld } from '../helpers/sim-world.js';
import { startPrometheus, type TestPrometheus } from '../helpers/prometheus.js';
import type { TestCluster } from '../helpers/sim-cluster.js';
import { cliAsync } from '../helpers/spawn-cli.js';
import { untilStatus } from '../helpers/status-polling.js';
import { temporalVars, uniqueTaskQueue } from '../helpers/temporal-env.js';
import { simWorker } from '../helpers/workers.js';

const LAB = `
name: alerting
version: 1.32.4
repository: [1.32.4, 1.32.6, 1.33.7, 1.33.9]
rebootSeconds: 1
nodes:
  - {name: cp, role: control-plane, count: 1}
  - {name: worker, role: worker, count: 2}
workloads:
  - {kind: Deployment, name: web, replicas: 2}
  - {kind: Pod, name: bare, node: worker-1}
`;
const HOP = '1.32.6';

describe('e2e: the alert gate against a real Prometheus', () => {
  let env: TestWorkflowEnvironment;
  let tc: TestCluster;
  let prom: TestPrometheus;
  let worker: Worker;
  let running: Promise<void>;
  const taskQueue = uniqueTaskQueue('alerts');
  // The operator's probe (probes[] of the cluster configuration): answers `probeStatus`, and counts its requests.
  let probeStatus = 200;
  const probeRequests: number[] = [];
  const probe = createServer((_req, res) => {
    probeRequests.push(probeStatus);
    res.writeHead(probeStatus).end();
  });
  const cli = (...args: string[]) =>
    cliAsync(args, { ...process.env, ...temporalVars(env), SKEWLESS_TASK_QUEUE: taskQueue, USER: 'alice' });
  const cordoned = async () => (await tc.kube.core.listNode()).items.filter((n) => n.spec?.unschedulable).map((n) => n.metadata?.name);

  before(async () => {
    [env, tc, prom] = await startClusterWorld(
      LAB,
      startPrometheus([
        { alert: 'NodeDown', labels: { severity: 'page' } },
        { alert: 'Watchdog', labels: { severity: 'none' } },
      ]),
    );
    await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
    const probeUrl = `http://127.0.0.1:${(probe.address() as AddressInfo).port}/healthz`;
    appendFileSync(
      join(tc.clustersDir, 'alerting.yaml'),
      `alerts:\n  prometheusUrl: ${prom.url}\n  matchers: ['severity="page"']\n  pollSeconds: 1\nprobes:\n  - {name: checkout, url: "${probeUrl}"}\n`,
    );
    worker = await simWorker(env, tc.clustersDir, taskQueue);
    running = worker.run();
    prom.setGauge('Watchdog', 1);
    prom.setGauge('NodeDown', 1);
    await prom.waitForFiring(['NodeDown', 'Watchdog']);
  });
  after(async () => {
    worker?.shutdown();
    await running?.catch(() => undefined);
    await prom?.close();
    probe.close();
    await tc?.stop();
    await env?.teardown();
  });

  it('plan --cluster holds the hop while NodeDown fires, naming it; Watchdog is not selected', async () => {
    const held = await cli('plan', '--cluster', 'alerting', '--to', HOP);
    assert.equal(held.code, 1, held.stdout + held.stderr);
    assert.match(
      held.stdout,
      /^ {2}HOLD alert before 1\.32\.6: alert NodeDown firing since \S+ \{instance="[^"]+", job="skewless-test", severity="page"\}$/m,
    );
    assert.match(held.stdout, /^ {6}acknowledge: alert:NodeDown$/m);
    assert.doesNotMatch(held.stdout, /Watchdog/);
  });

  it('the control plane waits while it fires; the canary halts the run after it when it fires again; approved, the run ends', async () => {
    const started = await cli('upgrade', '--cluster', 'alerting', '--to', HOP, '--canary', '1', '--batch-size', '1', '--detach');
    assert.equal(started.code, 0, started.stdout + started.stderr);
    const handle = env.client.workflow.getHandle<typeof clusterUpgradeWorkflow>('upgrade/alerting');
    const waiting = await untilStatus(handle, 'the control plane held', (s) =>
      s.gates.some((g) => g.name === `alerts-before-control-plane-${HOP}`),
    );
    assert.ok(
      waiting.events.some((e) => e.startsWith(`readiness: alert NodeDown firing since `)),
      waiting.events.join('\n'),
    );
    await new Promise((r) => setTimeout(r, 2_000)); // asked again at least once, still firing
    const still = await handle.query(statusQuery);
    assert.deepEqual([still.snapshots.length, await cordoned()], [0, []], 'no snapshot, nothing cordoned while it fires');

    prom.setGauge('NodeDown', 0);
    // The canary (worker-1) blocks on its bare pod: while it waits, NodeDown fires again.
    const blocked = await untilStatus(
      handle,
      'the canary blocked on its bare pod',
      (s) => s.nodes['worker-1']?.phase === 'blocked',
      120_000,
    );
    assert.ok(blocked.events.includes(`alerts cleared: control-plane of ${HOP} starts`), blocked.events.join('\n'));
    prom.setGauge('NodeDown', 1);
    await prom.waitForFiring(['NodeDown', 'Watchdog']);
    const forced = await cli('resolve', 'alerting', '--node', 'worker-1', '--action', 'force', '--pod', 'default/bare', '--by', 'alice');
    assert.equal(forced.code, 0, forced.stdout + forced.stderr);

    const gate = `alerts-after-canary-${HOP}`;
    const halted = await untilStatus(
      handle,
      'halted after the canary',
      (s) => s.gates.some((g) => g.name === gate && !g.approvedBy),
      120_000,
    );
    assert.ok(
      halted.events.some((e) => e.startsWith(`halted after canary of ${HOP}: alert:NodeDown;`)),
      halted.events.join('\n'),
    );
    await new Promise((r) => setTimeout(r, 1_500));
    assert.deepEqual(await cordoned(), [], 'worker-2 does not start while halted (the canary is back in service)');

    const approved = await cli('approve', 'alerting', '--gate', gate, '--by', 'alice', '--comment', 'NodeDown is the lab switch, known');
    assert.equal(approved.code, 0, approved.stdout + approved.stderr);
    // The batch is held before it starts while NodeDown still fires; it starts when it clears.
    await untilStatus(handle, 'the batch held', (s) => s.gates.some((g) => g.name === `alerts-before-batch-1-${HOP}`));
    prom.setGauge('NodeDown', 0);
    const ended = (await handle.result()) as UpgradeStatus;
    assert.equal(ended.phase, 'done', ended.events.join('\n'));
    assert.equal(ended.nodes['worker-2']?.version, HOP);

    // SKEWLESS_SAVE_HISTORIES=dir keeps it for the replay test (the alert-gate patch: waits, a halt, an approval).
    const dir = process.env.SKEWLESS_SAVE_HISTORIES;
    if (dir) writeFileSync(`${dir}/upgrade_alerting@alert-gate.json`, historyToJSON(await handle.fetchHistory()));
    const history = await cli('history', 'alerting');
    assert.equal(history.code, 0, history.stderr);
    assert.match(
      history.stdout,
      new RegExp(`gate ${gate.replace(/\./g, '\\.')} approved by alice \\("NodeDown is the lab switch, known"\\)`),
    );
  });

  it("the operator's probe fails after the control plane: the run halts until it passes and the operator retries", async () => {
    probeStatus = 503;
    const handle = await env.client.workflow.start(clusterUpgradeWorkflow, {
      taskQueue,
      workflowId: upgradeWorkflowId('alerting'),
      // verifySeconds: how long a check waits for health before it halts (60 s by default; no flag sets it).
      args: [{ cluster: 'alerting', to: '1.33.7', policy: { canary: 1, batchSize: 1, verifySeconds: 2 } }],
    });
    const halted = await untilStatus(handle, 'halted on the probe', (s) => s.halted !== undefined, 120_000);
    assert.deepEqual([halted.halted?.after, halted.halted?.step], ['control-plane', 'runProbes']);
    assert.match(halted.halted?.message ?? '', /^probe\(s\) failing: checkout \(/);
    assert.deepEqual(await cordoned(), [], 'no worker starts while halted');
    probeStatus = 200;
    const retried = await cli('resolve', 'alerting', '--action', 'retry', '--by', 'alice', '--comment', 'checkout redeployed');
    assert.equal(retried.code, 0, retried.stdout + retried.stderr);
    const ended = await handle.result();
    assert.equal(ended.phase, 'done', ended.events.join('\n'));
    // Asked after the control plane (failing, then passing) and after the canary and the batch.
    assert.ok(probeRequests.filter((s) => s === 200).length >= 3, probeRequests.join(','));
    assert.ok(
      ended.events.includes('workload check after control-plane resolved by alice: retry (checkout redeployed)'),
      ended.events.join('\n'),
    );
  });

  it('Prometheus stopped: plan and upgrade refuse in one line, nothing is touched', async () => {
    await prom.stop();
    const plan = await cli('plan', '--cluster', 'alerting', '--to', '1.33.9');
    assert.equal(plan.code, 1, plan.stdout + plan.stderr);
    assert.match(plan.stdout, /^ {2}alerts: Prometheus at http:\/\/127\.0\.0\.1:\d+\/ is unreachable: ECONNREFUSED$/m);
    const refused = await cli('upgrade', '--cluster', 'alerting', '--to', '1.33.9');
    assert.equal(refused.code, 1, refused.stdout + refused.stderr);
    assert.match(
      refused.stderr,
      /^skewless: upgrade of alerting failed: refusing to start: alerts: Prometheus at http:\/\/127\.0\.0\.1:\d+\/ is unreachable: ECONNREFUSED$/m,
    );
    assert.deepEqual(await cordoned(), []);
  });
});
