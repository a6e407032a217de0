import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { WorkflowNotFoundError, type WorkflowHandleWithFirstExecutionRunId } from '@temporalio/client';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import type { Worker } from '@temporalio/worker';
import { formatAvailability, startAvailabilitySampler, type AvailabilitySampler } from '../../sim/availability-sampler.js';
import { mergePatch } from '../../sim/cluster/kube-clients.js';
import { waitFor } from '../../sim/cluster/wait-for.js';
import { untilStatus } from '../helpers/status-polling.js';
import { simWorker } from '../helpers/workers.js';
import { clusterUpgradeWorkflow } from '../../workflows/cluster-upgrade-workflow.js';
import { nodeStatusQuery } from '../../workflows/node-messages.js';
import { statusQuery, type UpgradeStatus } from '../../workflows/rollout-messages.js';
import type { TestCluster } from '../helpers/sim-cluster.js';
import { cliAsync, spawnCli, type RunningCli } from '../helpers/spawn-cli.js';
import { uniqueTaskQueue, temporalVars } from '../helpers/temporal-env.js';
import { judgeSimulation, nodeLines } from '../helpers/upgrade-evidence.js';
import { startClusterWorld } from '../helpers/sim-world.js';

const LAB = `
name: op
version: 1.32.4
repository: [1.32.4, 1.33.7]
rebootSeconds: 1
nodes:
  - {name: cp, role: control-plane, count: 3}
  - {name: worker, role: worker, count: 3}
workloads:
  - {kind: Deployment, name: web, replicas: 3, pdb: {maxUnavailable: 1}}
  - {kind: Deployment, name: stuck, replicas: 2, pdb: {minAvailable: 2}}
  - {kind: DaemonSet, name: agent}
`;

const NODES = ['cp-1', 'cp-2', 'cp-3', 'worker-1', 'worker-2', 'worker-3'];
const IN_FLIGHT = ['preparing', 'cordoned', 'draining', 'blocked', 'upgrading', 'verifying'];

/**
 * An operator's day on one upgrade (1.32.4 → 1.33.7) of a simulated 3+3 cluster, through the real
 * CLI against the real dev server and a real worker in this process: a drain blocked by a PDB and
 * resolved, a pause and resume, a second upgrade refused, and a watch killed and re-attached.
 * The steps build on each other, in order.
 */
describe('e2e: operating an upgrade with the skewless CLI', () => {
  let env: TestWorkflowEnvironment;
  let tc: TestCluster;
  let worker: Worker;
  let running: Promise<void>;
  let sampler: AvailabilitySampler | undefined;
  let handle: WorkflowHandleWithFirstExecutionRunId<typeof clusterUpgradeWorkflow>;
  let firstWatch: RunningCli | undefined;
  let secondWatch: RunningCli | undefined;
  /** The first run of the upgrade: every later run (continue-as-new between worker phases) is in its chain. */
  let runId: string;
  const taskQueue = uniqueTaskQueue('operator');
  const cliEnv = () => ({ ...process.env, ...temporalVars(env), SKEWLESS_TASK_QUEUE: taskQueue, USER: 'dana' });
  const cli = (...args: string[]) => cliAsync(args, cliEnv());
  const status = () => handle.query(statusQuery);
  const chainOf = async () => (await env.client.workflow.getHandle('upgrade/op').describe()).raw.workflowExecutionInfo?.firstRunId;
  const child = (node: string) => env.client.workflow.getHandle(`upgrade/op/1.33.7/${node}`);
  const until = (what: string, check: (s: UpgradeStatus) => boolean, timeoutMs?: number) => untilStatus(handle, what, check, timeoutMs);

  before(async () => {
    [env, tc] = await startClusterWorld(LAB);
    worker = await simWorker(env, tc.clustersDir, taskQueue);
    running = worker.run();
    // The canary (worker-1) must hold a pod of `stuck`, whose PDB allows no eviction: the replacement
    // of a pod deleted while the other workers are cordoned lands there.
    const stuckOn = async () =>
      (await tc.kube.core.listNamespacedPod({ namespace: 'default', labelSelector: 'app=stuck' })).items
        .filter((p) => !p.metadata?.deletionTimestamp && p.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True'))
        .map((p) => p.spec?.nodeName);
    await waitFor('stuck running', async () => (await stuckOn()).length === 2, 30_000, 100);
    if (!(await stuckOn()).includes('worker-1')) {
      const cordon = (unschedulable: boolean) =>
        Promise.all(
          ['worker-2', 'worker-3'].map((name) => tc.kube.core.patchNode({ name, body: { spec: { unschedulable } } }, mergePatch)),
        );
      await cordon(true);
      const [victim] = (await tc.kube.core.listNamespacedPod({ namespace: 'default', labelSelector: 'app=stuck' })).items;
      await tc.kube.core.deleteNamespacedPod({ name: victim?.metadata?.name as string, namespace: 'default', gracePeriodSeconds: 0 });
      await waitFor(
        'a stuck pod Ready on worker-1',
        async () => (await stuckOn()).filter((n) => n === 'worker-1').length >= 1 && (await stuckOn()).length === 2,
        30_000,
        100,
      );
      await cordon(false);
    }
  });
  after(async () => {
    firstWatch?.child.kill('SIGKILL');
    secondWatch?.child.kill('SIGKILL');
    await sampler?.stop();
    worker?.shutdown();
    await running;
    await tc?.stop();
    await env?.teardown();
  });

  it('starts one upgrade; a second `skewless upgrade` of the same cluster is refused and leaves the first alone', async () => {
    sampler = startAvailabilitySampler(tc.kube, { intervalMs: 250 });
    // Started as the CLI starts it (same id, same conflict policy), with a short drain timeout the CLI has no flag for,
    // and continue-as-new at every safe point, so that watch, pause and resume cross runs.
    handle = await env.client.workflow.start(clusterUpgradeWorkflow, {
      taskQueue,
      workflowId: 'upgrade/op',
      workflowIdConflictPolicy: 'FAIL',
      args: [
        {
          cluster: 'op',
          to: '1.33',
          policy: {
            canary: 1,
            batchSize: 1,
            maxUnavailable: 1,
            drainTimeoutSeconds: 8,
            verifySeconds: 60,
            acknowledge: ['default/stuck'],
            continueAsNewAfterEvents: 1,
          },
        },
      ],
    });
    runId = handle.firstExecutionRunId;
    firstWatch = spawnCli(['watch', 'op'], cliEnv());

    const second = await cli('upgrade', '--cluster', 'op', '--to', '1.33', '--acknowledge', 'default/stuck');
    assert.equal(second.code, 2, second.stdout + second.stderr);
    assert.equal(second.stderr, 'skewless: an upgrade of op is already running; watch it with "skewless watch op"\n');
    assert.doesNotMatch(second.stdout, /started/);
    const described = await env.client.workflow.getHandle('upgrade/op').describe();
    assert.equal(described.runId, runId, 'the running upgrade is the first one');
    assert.equal(await chainOf(), runId);
    assert.equal(described.status.name, 'RUNNING');
  });

  it('a drain blocked by a PDB shows in status with the pod and the PDB; retry while still blocked blocks again', async () => {
    const s = await until('worker-1 blocked', (st) => st.nodes['worker-1']?.phase === 'blocked');
    assert.deepEqual(
      Object.entries(s.nodes)
        .filter(([, n]) => n.phase === 'blocked')
        .map(([name]) => name),
      ['worker-1'],
    );

    const json = await cli('status', 'op', '--output', 'json');
    assert.equal(json.code, 0, json.stderr);
    const blocked = (JSON.parse(json.stdout) as UpgradeStatus).nodes['worker-1']?.blocked;
    assert.equal(blocked?.kind, 'DrainBlocked');
    const stuckPods = blocked?.pods.filter((p) => p.name.startsWith('stuck-')) ?? [];
    assert.ok(stuckPods.length >= 1, JSON.stringify(blocked));
    assert.ok(
      stuckPods.every((p) => p.namespace === 'default' && p.pdbs?.some((n) => /(^|\/)stuck$/.test(n))),
      JSON.stringify(blocked),
    );
    const text = await cli('status', 'op');
    assert.match(text.stdout, /^op: 1\.32\.4 → 1\.33\.7, hop 1\.33\.7 \(1\.33\.7\), workers$/m);
    assert.match(
      text.stdout,
      /^ {2}worker-1 .* blocked: drain of worker-1 did not finish within 8 s; .*default\/stuck-[a-z0-9-]+ \(PDB [^)]*stuck\)/m,
    );

    await waitFor(
      'the first watch shows the block and how to resolve it',
      () => /resolve with: skewless resolve op --node worker-1/.test(firstWatch?.stdout() ?? ''),
      10_000,
      100,
    );
    assert.match(
      firstWatch?.stdout() ?? '',
      /BLOCKED worker-1: drain of worker-1 .*\n {4}resolve with: skewless resolve op --node worker-1 --action retry\|skip\|force\|abort\n/,
    );

    const retry = await cli('resolve', 'op', '--node', 'worker-1', '--action', 'retry', '--comment', 'try again');
    assert.equal(retry.code, 0, retry.stderr);
    assert.equal(retry.stdout, 'drain of worker-1: retry\n');
    // The PDB still allows nothing: the node drains again for the timeout and is blocked again.
    await waitFor(
      'worker-1 blocked again after one retry',
      async () => {
        const n = await child('worker-1').query(nodeStatusQuery);
        return n.phase === 'blocked' && n.resolutions.length === 1;
      },
      60_000,
      250,
    );
    const again = await until('the parent sees the block again', (st) => st.nodes['worker-1']?.phase === 'blocked');
    assert.ok(again.events.includes('drain of worker-1 resolved by dana: retry (try again)'), again.events.join('\n'));
    const node = await tc.kube.core.readNode({ name: 'worker-1' });
    assert.equal(node.spec?.unschedulable, true, 'still cordoned while blocked');
  });

  it('a watch killed with SIGKILL mid-run and started again re-attaches to the same run', async () => {
    firstWatch?.child.kill('SIGKILL'); // the operator's laptop closes
    const killed = await firstWatch?.exited;
    assert.equal(killed?.code, null, 'killed, not exited');
    secondWatch = spawnCli(['watch', 'op'], cliEnv());
    // It starts from the run's whole story so far: the same run, the retry made before it attached.
    // Its first poll prints the events, the progress line, then the block: wait for the last of them.
    await waitFor(
      'the second watch shows the story so far',
      () => /BLOCKED worker-1: drain of worker-1/.test(secondWatch?.stdout() ?? ''),
      15_000,
      100,
    );
    assert.match(secondWatch.stdout(), /drain of worker-1 resolved by dana: retry \(try again\)/);
    assert.equal(await chainOf(), runId);
  });

  it('relaxing the PDB and retrying lets the drain proceed', async () => {
    await tc.kube.policy.patchNamespacedPodDisruptionBudget(
      { name: 'stuck', namespace: 'default', body: { spec: { minAvailable: 1 } } },
      mergePatch,
    );
    await waitFor(
      'the PDB allows one disruption',
      async () =>
        ((await tc.kube.policy.readNamespacedPodDisruptionBudget({ name: 'stuck', namespace: 'default' })).status?.disruptionsAllowed ??
          0) >= 1,
      30_000,
      100,
    );
    const retry = await cli('resolve', 'op', '--node', 'worker-1', '--action', 'retry');
    assert.equal(retry.code, 0, retry.stderr);
    // Paused at once: worker-1 is in flight and finishes; nothing new may start.
    const pause = await cli('pause', 'op', '--comment', 'lunch');
    assert.equal(pause.code, 0, pause.stderr);
    assert.equal(pause.stdout, 'pause sent to upgrade/op\n');
    const s = await until('worker-1 drained and upgraded', (st) => st.nodes['worker-1']?.phase === 'done');
    const n = await child('worker-1').query(nodeStatusQuery);
    assert.deepEqual(
      n.resolutions.map((r) => r.action),
      ['retry', 'retry'],
    );
    assert.ok(s.events.includes('paused by dana: lunch'), s.events.join('\n'));
  });

  it('while paused no new node starts; resume goes on to the end', async () => {
    const paused = await status();
    assert.equal(paused.paused, true);
    const progress = (st: UpgradeStatus) =>
      Object.entries(st.nodes)
        .map(([name, n]) => `${name}:${n.phase}`)
        .join(' ');
    // Watched over several seconds: the batches wait, no node is in flight, no child workflow starts.
    for (let i = 0; i < 6; i++) {
      const st = await status();
      assert.equal(progress(st), progress(paused), 'nothing moved while paused');
      assert.ok(!Object.values(st.nodes).some((x) => IN_FLIGHT.includes(x.phase)), progress(st));
      await new Promise((r) => setTimeout(r, 1000));
    }
    assert.deepEqual(
      ['worker-2', 'worker-3'].map((w) => paused.nodes[w]?.phase),
      ['pending', 'pending'],
    );
    for (const w of ['worker-2', 'worker-3'])
      await assert.rejects(child(w).describe(), WorkflowNotFoundError, `no child for ${w} while paused`);
    const text = await cli('status', 'op');
    assert.match(text.stdout, /^op: .*, paused$/m);

    const resume = await cli('resume', 'op');
    assert.equal(resume.code, 0, resume.stderr);
    const result = await handle.result();
    assert.equal(result.phase, 'done', result.events.join('\n'));
    assert.ok(result.events.includes('resumed by dana'), result.events.join('\n'));
    // A new run before each worker phase (canary, worker-2, worker-3); the pause was carried into one.
    assert.equal(result.runs, 3, result.events.join('\n'));
    assert.ok(
      /paused by dana: lunch\ncontinued as new at \d+ events \(run 3\)\nresumed by dana/.test(result.events.join('\n')),
      result.events.join('\n'),
    );
  });

  it('the re-attached watch follows the run to done and exits 0', async () => {
    const watched = await secondWatch?.exited;
    assert.equal(watched?.code, 0, `${watched?.stdout}\n${watched?.stderr}`);
    assert.match(watched?.stdout ?? '', /paused by dana: lunch/);
    assert.match(watched?.stdout ?? '', /resumed by dana/);
    assert.match(watched?.stdout ?? '', /\[#{20}\] 6\/6 node upgrades, hop 1\.33\.7 of 1\.33\.7, done/);
    assert.match(watched?.stdout ?? '', /^op: upgraded to 1\.33\.7$/m);
    assert.equal(await chainOf(), runId, 'the upgrade that was started is the one that finished');
  });

  it('leaves every node at 1.33.7 and uncordoned, with no PDB violated and the skew policy held in every state', async () => {
    assert.deepEqual(
      await nodeLines(tc.kube),
      NODES.map((x) => `${x} v1.33.7 schedulable`),
    );

    const report = await (sampler as AvailabilitySampler).stop();
    sampler = undefined;
    assert.equal(report.violated, false, formatAvailability(report));
    assert.deepEqual(
      report.pdbs.map((p) => p.name),
      ['stuck', 'web'],
    );

    const verdict = await judgeSimulation(tc.sim);
    assert.deepEqual(verdict.problems, []);
    assert.ok(verdict.states - 1 >= 6 + 3, `${verdict.states} states`); // 6 kubelets + 3 control planes
    for (const x of NODES) assert.deepEqual(verdict.versionsSeen[`kubelets ${x}`], ['1.32.4', '1.33.7']);
  });
});
