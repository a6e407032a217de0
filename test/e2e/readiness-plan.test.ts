// `skewless plan --cluster X --to 1.33` (the real CLI, a worker, the dev server) on a per-node
// simulated cluster whose apiservers are real 1.32.13: clean, it says "readiness: nothing found"
// and exits 0; once a client of this test calls authentication.k8s.io/v1beta1 SelfSubjectReview
// (removed in 1.33), it exits 1 naming the group/version/resource and the client, in text and JSON.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { request } from 'node:https';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { historyToJSON } from '@temporalio/common/lib/proto-utils.js';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import type { Worker } from '@temporalio/worker';
import { repoRoot } from '../helpers/run-cli.js';
import type { TestCluster } from '../helpers/sim-cluster.js';
import { temporalVars, uniqueTaskQueue } from '../helpers/temporal-env.js';
import { simWorker } from '../helpers/workers.js';
import type { clusterUpgradeWorkflow } from '../../workflows/cluster-upgrade-workflow.js';
import { abortSignal, statusQuery } from '../../workflows/upgrade-messages.js';
import { startClusterWorld } from '../helpers/sim-world.js';

const DESCRIPTION = `
name: legacy
version: 1.32.13
repository: [1.32.13, 1.33.13]
controlPlane: per-node
rebootSeconds: 1
nodes:
  - {name: cp, role: control-plane, count: 1}
  - {name: worker, role: worker, count: 1}
workloads:
  - {kind: Deployment, name: web, replicas: 1}
`;
const GVR = 'authentication.k8s.io/v1beta1/selfsubjectreviews';

describe('plan --cluster: the readiness section holds a hop that removes an API a client still calls', () => {
  let env: TestWorkflowEnvironment;
  let tc: TestCluster;
  let worker: Worker;
  let running: Promise<void>;
  const taskQueue = uniqueTaskQueue('readiness');
  before(async () => {
    [env, tc] = await startClusterWorld(DESCRIPTION);
    worker = await simWorker(env, tc.clustersDir, taskQueue);
    running = worker.run();
  });
  after(async () => {
    worker?.shutdown();
    await running;
    await tc?.stop();
    await env?.teardown();
  });

  const cleanEnv = () =>
    Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('TEMPORAL_') && !k.startsWith('SKEWLESS_')));
  // Asynchronous: the worker runs in this process, and a blocking spawn would starve it.
  const cli = (args: string[]) =>
    new Promise<{ status: number | null; stdout: string; stderr: string }>((resolve) => {
      const child = spawn(process.execPath, [join(repoRoot, 'bin', 'skewless.js'), ...args], {
        env: { ...cleanEnv(), ...temporalVars(env), SKEWLESS_TASK_QUEUE: taskQueue },
      });
      let stdout = '';
      let stderr = '';
      child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
      child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
      child.on('close', (status) => resolve({ status, stdout, stderr }));
    });

  /** Nodes the cluster has cordoned now. */
  const cordoned = async () => (await tc.sim.kube.core.listNode()).items.filter((n) => n.spec?.unschedulable).map((n) => n.metadata?.name);

  /** The test's own client of the removed API: the simulation's admin, with a user agent of its own. */
  const legacyClient = () =>
    new Promise<number>((resolve, reject) => {
      const cp = tc.sim.controlPlane;
      const req = request(
        new URL(`/apis/${GVR.replace(/\/[^/]+$/, '')}/selfsubjectreviews`, tc.sim.server),
        {
          method: 'POST',
          agent: false,
          ca: readFileSync(cp.pki.caCert),
          cert: readFileSync(cp.pki.adminCert),
          key: readFileSync(cp.pki.adminKey),
          headers: { 'User-Agent': 'nightly-report/2.1', 'Content-Type': 'application/json' },
        },
        (res) => {
          res.resume();
          res.on('end', () => resolve(res.statusCode ?? 0));
        },
      );
      req.on('error', reject);
      req.end(JSON.stringify({ apiVersion: 'authentication.k8s.io/v1beta1', kind: 'SelfSubjectReview' }));
    });

  it('a clean cluster: "readiness: nothing found", exit 0', async () => {
    const clean = await cli(['plan', '--cluster', 'legacy', '--to', '1.33']);
    assert.equal(clean.status, 0, clean.stdout + clean.stderr);
    assert.match(clean.stdout, /^readiness: nothing found$/m);
    const json = await cli(['plan', '--cluster', 'legacy', '--to', '1.33', '--output', 'json']);
    assert.equal(json.status, 0, json.stderr);
    const planned = JSON.parse(json.stdout) as { readiness: { findings: unknown[]; held: string[] } };
    assert.deepEqual([planned.readiness.findings, planned.readiness.held], [[], []]);
  });

  it('after a real call to the removed API: exit 1, naming group/version/resource, the client and the acknowledgement', async () => {
    assert.equal(await legacyClient(), 201, 'the 1.32 apiserver serves it (--runtime-config)');
    const held = await cli(['plan', '--cluster', 'legacy', '--to', '1.33']);
    assert.equal(held.status, 1, held.stdout + held.stderr);
    assert.match(held.stdout, /^readiness \(legacy\): 1 finding; the upgrade would hold until each is fixed or acknowledged/m);
    assert.match(
      held.stdout,
      /^ {2}HOLD removed-api before 1\.33: authentication\.k8s\.io\/v1beta1\/selfsubjectreviews requested( \d+ times?)?, removed in 1\.33; by skewless-sim-admin \(nightly-report\/2\.1, 1×\)$/m,
    );
    assert.match(held.stdout, new RegExp(`^ {6}acknowledge: removed-api:${GVR.replace(/\./g, '\\.')}$`, 'm'));
    assert.match(held.stdout, /^Pre-flight \(legacy\): nothing would stop the upgrade from starting\.$/m, 'held by readiness alone');

    const json = await cli(['plan', '--cluster', 'legacy', '--to', '1.33', '--output', 'json']);
    assert.equal(json.status, 1, json.stderr);
    const planned = JSON.parse(json.stdout) as { readiness: { findings: { ack: string; hop: string; what: string }[]; held: string[] } };
    assert.deepEqual(planned.readiness.held, [`removed-api:${GVR}`]);
    assert.deepEqual(
      planned.readiness.findings.map((f) => [f.hop, f.ack]),
      [['1.33', `removed-api:${GVR}`]],
    );
    assert.match(planned.readiness.findings[0]?.what ?? '', /nightly-report\/2\.1/);

    // SKEWLESS_SAVE_HISTORIES=dir keeps the held plan's history for the replay test (the patched path).
    const dir = process.env.SKEWLESS_SAVE_HISTORIES;
    if (dir) {
      const runs = [];
      for await (const w of env.client.workflow.list({ query: "WorkflowType = 'planClusterWorkflow'" })) runs.push(w);
      const last = runs.sort((a, b) => a.startTime.getTime() - b.startTime.getTime()).at(-1);
      assert.ok(last, 'a plan workflow ran');
      const history = await env.client.workflow.getHandle(last.workflowId, last.runId).fetchHistory();
      writeFileSync(`${dir}/plan_legacy@readiness-held.json`, historyToJSON(history));
    }
  });

  it('upgrade: refused by the same finding before anything is touched, then started once acknowledged; who and why in history', async () => {
    const refused = await cli(['upgrade', '--cluster', 'legacy', '--to', '1.33']);
    assert.equal(refused.status, 1, refused.stdout + refused.stderr);
    assert.match(
      refused.stdout + refused.stderr,
      new RegExp(
        `readiness holds the upgrade: ${GVR.replace(/\./g, '\\.')} requested.*acknowledge with --acknowledge removed-api:${GVR.replace(/\./g, '\\.')}`,
      ),
    );
    assert.doesNotMatch(refused.stdout, /^started /m, 'a refused upgrade never says started');
    assert.deepEqual(await cordoned(), [], 'nothing cordoned');

    const reason = 'nightly-report moves to v1 on Friday';
    const started = await cli([
      'upgrade',
      '--cluster',
      'legacy',
      '--to',
      '1.33',
      '--acknowledge-removed-api',
      GVR,
      '--by',
      'alice',
      '--reason',
      reason,
      '--detach',
    ]);
    assert.equal(started.status, 0, started.stdout + started.stderr);
    const handle = env.client.workflow.getHandle<typeof clusterUpgradeWorkflow>('upgrade/legacy');
    const acknowledged = `readiness: removed-api:${GVR} acknowledged by alice (${reason}): `;
    const deadline = Date.now() + 120_000;
    let status = await handle.query(statusQuery);
    while (!['backup', 'preflight', 'control-plane', 'workers', 'done'].includes(status.phase) && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 500));
      status = await handle.query(statusQuery);
    }
    assert.ok(
      status.events.some((e) => e.startsWith(acknowledged)),
      status.events.join('\n'),
    );
    await handle.signal(abortSignal, { by: 'readiness test', reason: 'enough: it passed the gate' });
    const ended = await handle.result();
    assert.equal(ended.phase, 'aborted', ended.events.join('\n'));
    // SKEWLESS_SAVE_HISTORIES=dir keeps it for the replay test (the readiness-gate patch, acknowledged).
    const dir = process.env.SKEWLESS_SAVE_HISTORIES;
    if (dir) writeFileSync(`${dir}/upgrade_legacy@readiness-acknowledged.json`, historyToJSON(await handle.fetchHistory()));
    const history = await cli(['history', 'legacy']);
    assert.equal(history.status, 0, history.stderr);
    assert.match(
      history.stdout,
      new RegExp(`started upgrade/legacy to 1\\.33; acknowledged removed-api:${GVR.replace(/\./g, '\\.')} by alice: ${reason}`),
    );
  });
});
