import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { WorkflowNotFoundError, type WorkflowHandle } from '@temporalio/client';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import type { Worker } from '@temporalio/worker';
import { mergePatch, strategicMergePatch } from '../../sim/cluster/kube-clients.js';
import { waitFor } from '../../sim/cluster/wait-for.js';
import { clusterUpgradeWorkflow } from '../../workflows/cluster-upgrade-workflow.js';
import { nodeStatusQuery, type StepBlock } from '../../workflows/node-messages.js';
import type { UpgradeStatus } from '../../workflows/rollout-messages.js';
import type { TestCluster } from '../helpers/sim-cluster.js';
import { cliAsync, spawnCli, type RunningCli } from '../helpers/spawn-cli.js';
import { untilStatus } from '../helpers/status-polling.js';
import { uniqueTaskQueue, temporalVars } from '../helpers/temporal-env.js';
import { judgeSimulation, nodeLines } from '../helpers/upgrade-evidence.js';
import { simWorker } from '../helpers/workers.js';
import { startClusterWorld } from '../helpers/sim-world.js';
import { sshExec } from '../helpers/ssh-exec.js';

// worker-1's kubelet takes 45 s to come back after a restart, far past the upgrade's 15 s kubelet
// timeout: to the workflow it is a node that does not come back Ready (until it does). 1.34.2 is for
// the second run, aborted while worker-1's kubelet install has failed.
const LAB = `
name: hf
version: 1.32.4
repository: [1.32.4, 1.33.7, 1.34.2]
nodes:
  - {name: cp, role: control-plane, count: 1}
  - {name: worker-1, role: worker, latencies: {kubeletRestart: 45000}}
  - {name: worker-2, role: worker}
  - {name: worker-3, role: worker}
workloads:
  - {kind: Deployment, name: web, replicas: 3, pdb: {maxUnavailable: 1}}
  - {kind: DaemonSet, name: agent}
`;

/** The waits an operator would see on a real cluster, shortened so the test runs in minutes. */
const POLICY = { canary: 1, batchSize: 1, maxUnavailable: 1, kubeletTimeoutSeconds: 15, verifySeconds: 20, hostRetrySeconds: 6 };
const HOP = '1.33.7';

/**
 * Host and cluster faults during one upgrade (1.32.4 → 1.33.7) of a simulated 1+3 cluster, with the
 * real dev server, a real worker in this process and the real CLI: each fault stops the rollout on
 * its node (or after its phase) and waits for the operator; nothing moves on by itself. In order:
 * the canary does not come back Ready, a workload breaks before the canary's check, batch-1's host
 * refuses SSH past the retry budget, batch-2's host presents a new host key.
 */
describe('e2e: host and cluster faults wait for the operator', () => {
  let env: TestWorkflowEnvironment;
  let tc: TestCluster;
  let worker: Worker;
  let running: Promise<void>;
  let watch: RunningCli | undefined;
  let handle: WorkflowHandle<typeof clusterUpgradeWorkflow>;
  const taskQueue = uniqueTaskQueue('hostfaults');
  const cliEnv = () => ({ ...process.env, ...temporalVars(env), SKEWLESS_TASK_QUEUE: taskQueue, USER: 'olga' });
  const cli = (...args: string[]) => cliAsync(args, cliEnv());
  const child = (node: string) => env.client.workflow.getHandle(`upgrade/hf/${HOP}/${node}`);
  const until = (what: string, check: (s: UpgradeStatus) => boolean) => untilStatus(handle, what, check, 240_000);
  const readyAt = async (node: string) => {
    const n = await tc.kube.core.readNode({ name: node });
    return (
      n.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') === true &&
      n.status?.nodeInfo?.kubeletVersion === `v${HOP}`
    );
  };
  /** The attempt of the last start of `activity` in a node workflow's history (the one that failed). */
  const attemptsOf = async (node: string, activity: string) => {
    const history = await child(node).fetchHistory();
    const scheduled = new Set(
      (history.events ?? [])
        .filter((e) => e.activityTaskScheduledEventAttributes?.activityType?.name === activity)
        .map((e) => String(e.eventId)),
    );
    return (history.events ?? [])
      .filter((e) => scheduled.has(String(e.activityTaskStartedEventAttributes?.scheduledEventId)))
      .map((e) => e.activityTaskStartedEventAttributes?.attempt);
  };

  before(async () => {
    [env, tc] = await startClusterWorld(LAB);
    worker = await simWorker(env, tc.clustersDir, taskQueue);
    running = worker.run();
    // Armed before the run: nothing reaches a worker's host before that worker's turn.
    tc.sim.hosts.setFault('worker-2', { kind: 'refuse', seconds: 3600 });
    tc.sim.hosts.setFault('worker-3', { kind: 'rotateHostKey' });
  });
  after(async () => {
    watch?.child.kill('SIGKILL');
    worker?.shutdown();
    await running;
    await tc?.stop();
    await env?.teardown();
  });

  it('starts the upgrade, watched from the CLI', async () => {
    handle = await env.client.workflow.start(clusterUpgradeWorkflow, {
      taskQueue,
      workflowId: 'upgrade/hf',
      workflowIdConflictPolicy: 'FAIL',
      args: [{ cluster: 'hf', to: '1.33', policy: POLICY }],
    });
    watch = spawnCli(['watch', 'hf'], cliEnv());
    await until('the control plane upgraded', (s) => s.nodes['cp-1']?.phase === 'done');
  });

  it('a node not Ready after its kubelet restart waits for the operator; the next batch does not start; retry after it recovers', async () => {
    const s = await until('worker-1 blocked', (st) => st.nodes['worker-1']?.phase === 'blocked');
    const block = s.nodes['worker-1']?.blocked as StepBlock;
    assert.deepEqual(
      [block.kind, block.step, block.failure, block.gaveUp],
      ['StepFailed', 'restartKubelet', 'NodeNotReady', 'not retryable'],
    );
    assert.match(block.message, /^worker-1 was not Ready at kubelet v1\.33\.7 within 15 s/);
    assert.deepEqual(block.actions, ['retry', 'abort'], 'the kubelet package moved: no skip');

    const text = await cli('status', 'hf');
    assert.equal(text.code, 0, text.stderr);
    assert.match(
      text.stdout,
      /^ {2}worker-1 +canary +blocked: restart kubelet on worker-1 at v1\.33\.7 failed \(NodeNotReady, not retryable\): worker-1 was not Ready/m,
    );
    assert.match(text.stdout, /^ {4}resolve with: skewless resolve hf --node worker-1 --action retry\|abort$/m);
    const force = await cli('resolve', 'hf', '--node', 'worker-1', '--action', 'force', '--pod', 'default/web-x');
    assert.equal(force.code, 2);
    assert.equal(
      force.stderr,
      'skewless: refused: force is for blocked drains; worker-1 is blocked on a failed step (restartKubelet): retry or abort\n',
    );

    // A workload breaks meanwhile (every pod replaced by one that cannot be scheduled): the canary's check will see it.
    await tc.kube.apps.patchNamespacedDeployment(
      {
        name: 'web',
        namespace: 'default',
        body: {
          spec: {
            strategy: { type: 'Recreate', rollingUpdate: null },
            template: { spec: { nodeSelector: { 'example.com/nowhere': 'true' } } },
          },
        },
      },
      strategicMergePatch,
    );

    // The node comes back on its own; the upgrade still waits for the operator, and batch-1 has not started.
    await waitFor('worker-1 Ready at the new version', () => readyAt('worker-1'), 90_000, 500);
    await new Promise((r) => setTimeout(r, 3000));
    const waiting = await until('still blocked', () => true);
    assert.equal(waiting.nodes['worker-1']?.phase, 'blocked');
    assert.equal(waiting.nodes['worker-2']?.phase, 'pending');
    await assert.rejects(child('worker-2').describe(), WorkflowNotFoundError, 'no child for batch-1 while the canary waits');
    assert.equal((await tc.kube.core.readNode({ name: 'worker-2' })).spec?.unschedulable, undefined, 'worker-2 untouched');

    const retry = await cli('resolve', 'hf', '--node', 'worker-1', '--action', 'retry', '--comment', 'kubelet is back');
    assert.equal(retry.code, 0, retry.stderr);
    assert.equal(retry.stdout, 'restartKubelet of worker-1: retry\n');
    await until('worker-1 done', (st) => st.nodes['worker-1']?.phase === 'done');
    const n = await child('worker-1').query(nodeStatusQuery);
    assert.deepEqual(n.resolutions, [{ action: 'retry', by: 'olga', comment: 'kubelet is back' }]);
  });

  it('a workload unavailable after the canary halts the rollout, naming it; retry once it is fixed goes on', async () => {
    const s = await until('halted after the canary', (st) => st.halted !== undefined);
    assert.equal(s.halted?.after, 'canary');
    assert.equal(s.halted?.failure, 'Unhealthy');
    assert.ok(
      s.halted?.workloads.some((w) => /^Deployment default\/web: .*replicas available/.test(w)),
      JSON.stringify(s.halted),
    );
    const text = await cli('status', 'hf');
    assert.match(text.stdout, /^ {2}HALTED after canary of hop 1\.33\.7: workload check failed \(Unhealthy\): .*Deployment default\/web/m);
    assert.match(text.stdout, /^ {4}resolve with: skewless resolve hf --action retry\|abort$/m);
    await assert.rejects(child('worker-2').describe(), WorkflowNotFoundError, 'batch-1 waits');
    const skip = await cli('resolve', 'hf', '--action', 'skip');
    assert.equal(skip.code, 2);
    assert.match(skip.stderr, /^skewless: --action skip needs --node/);

    await tc.kube.apps.patchNamespacedDeployment(
      { name: 'web', namespace: 'default', body: { spec: { template: { spec: { nodeSelector: null } } } } },
      mergePatch,
    );
    await waitFor(
      'web available again',
      async () => {
        const d = await tc.kube.apps.readNamespacedDeployment({ name: 'web', namespace: 'default' });
        return (
          (d.status?.availableReplicas ?? 0) === 3 &&
          (d.status?.updatedReplicas ?? 0) === 3 &&
          (d.status?.observedGeneration ?? 0) >= (d.metadata?.generation ?? 1)
        );
      },
      60_000,
      250,
    );
    const retry = await cli('resolve', 'hf', '--action', 'retry', '--comment', 'nodeSelector reverted');
    assert.equal(retry.code, 0, retry.stderr);
    assert.equal(retry.stdout, 'workload check after canary: retry\n');
    const after = await until('batch-1 started', (st) => st.halted === undefined && st.nodes['worker-2']?.phase !== 'pending');
    assert.ok(
      after.events.includes('workload check after canary resolved by olga: retry (nodeSelector reverted)'),
      after.events.join('\n'),
    );
  });

  it('a host refusing SSH past the retry budget is reported blocked; retry once it listens again', async () => {
    const s = await until('worker-2 blocked', (st) => st.nodes['worker-2']?.phase === 'blocked');
    const block = s.nodes['worker-2']?.blocked as StepBlock;
    // The node's first host step of the hop: its package repository pointed at the hop's minor.
    assert.deepEqual([block.step, block.failure, block.gaveUp], ['pointPackageRepository', 'HostUnreachable', 'retries spent']);
    assert.match(block.message, /^host worker-2 unreachable: /);
    assert.deepEqual(block.actions, ['retry', 'skip', 'abort'], 'nothing moved on the host yet: skip is offered');
    // 6 s of backoff on a host command: attempts after 0, 2 and 6 s.
    assert.deepEqual(await attemptsOf('worker-2', 'pointPackageRepository'), [3]);
    await assert.rejects(child('worker-3').describe(), WorkflowNotFoundError, 'batch-2 waits');

    tc.sim.hosts.clearFaults('worker-2'); // sshd listens again
    const retry = await cli('resolve', 'hf', '--node', 'worker-2', '--action', 'retry');
    assert.equal(retry.code, 0, retry.stderr);
    assert.equal(retry.stdout, 'pointPackageRepository of worker-2: retry\n');
    await until('worker-2 done', (st) => st.nodes['worker-2']?.phase === 'done');
  });

  it('a host key that changed is refused and reported at once, never retried; retry after it is trusted', async () => {
    const s = await until('worker-3 blocked', (st) => st.nodes['worker-3']?.phase === 'blocked');
    const block = s.nodes['worker-3']?.blocked as StepBlock;
    const seen = tc.sim.hosts.hosts.find((h) => h.name === 'worker-3')?.hostKeyFingerprint as string;
    assert.deepEqual([block.step, block.failure, block.gaveUp], ['pointPackageRepository', 'HostKeyMismatch', 'not retryable']);
    assert.ok(block.message.includes(`presented host key ${seen}`), block.message);
    await new Promise((r) => setTimeout(r, 3000));
    assert.deepEqual(await attemptsOf('worker-3', 'pointPackageRepository'), [1], 'one attempt: never retried silently');
    assert.equal((await child('worker-3').query(nodeStatusQuery)).phase, 'blocked');

    tc.sim.hosts.trustHostKey('worker-3'); // the operator checked the new key and put it in known_hosts
    const retry = await cli('resolve', 'hf', '--node', 'worker-3', '--action', 'retry', '--comment', 'host reinstalled, key verified');
    assert.equal(retry.code, 0, retry.stderr);
    const result = await handle.result();
    assert.equal(result.phase, 'done', result.events.join('\n'));
  });

  it('ends with every node at 1.33.7 and uncordoned, the skew policy held, and watch and history telling the story', async () => {
    assert.deepEqual(
      await nodeLines(tc.kube),
      ['cp-1', 'worker-1', 'worker-2', 'worker-3'].map((x) => `${x} v1.33.7 schedulable`),
    );
    assert.deepEqual((await judgeSimulation(tc.sim)).problems, []);
    const installs = (node: string) =>
      tc.sim.hosts.commandLog(node).filter((e) => /apt-get install/.test(e.command) && /kubeadm=/.test(e.command)).length;
    assert.equal(installs('worker-3'), 1, 'the kubeadm package went in once, after the key was trusted');

    const watched = await watch?.exited;
    assert.equal(watched?.code, 0, `${watched?.stdout}\n${watched?.stderr}`);
    const out = watched?.stdout ?? '';
    // Every failed step and the halt are in the run's events, with their messages: watch prints them whenever it attaches.
    assert.match(
      out,
      /^ {2}worker-1 blocked: restart kubelet on worker-1 at v1\.33\.7 failed \(NodeNotReady, not retryable\): worker-1 was not Ready/m,
    );
    assert.match(out, /^ {2}halted after canary: 1 workload\(s\) unhealthy: Deployment default\/web/m);
    assert.match(
      out,
      /^ {2}worker-2 blocked: point the package repository of worker-2 at v1\.33 failed \(HostUnreachable, retries spent\): host worker-2 unreachable/m,
    );
    assert.match(
      out,
      /^ {2}worker-3 blocked: point the package repository of worker-3 at v1\.33 failed \(HostKeyMismatch, not retryable\): .*presented host key SHA256:/m,
    );
    // While a block lasts (worker-1's and the halt's last tens of seconds), watch says how to answer it.
    assert.match(
      out,
      /^ {2}BLOCKED worker-1: restart kubelet on worker-1 at v1\.33\.7 failed \(NodeNotReady, not retryable\)\n {4}resolve with: skewless resolve hf --node worker-1 --action retry\|abort\n/m,
    );
    assert.match(
      out,
      /^ {2}HALTED after canary of hop 1\.33\.7: workload check failed \(Unhealthy\)\n {4}Deployment default\/web: .*\n {4}resolve with: skewless resolve hf --action retry\|abort\n/m,
    );
    assert.match(out, /^hf: upgraded to 1\.33\.7$/m);

    const history = await cli('history', 'hf');
    assert.equal(history.code, 0, history.stderr);
    assert.match(history.stdout, /worker-3 +blocked: pointPackageRepository failed \(HostKeyMismatch\): host worker-3/);
    assert.match(
      history.stdout,
      /worker-3 +failed step pointPackageRepository of worker-3 resolved by olga: retry \("host reinstalled, key verified"\)/,
    );
    assert.match(history.stdout, /- +halted rollout resolved by olga: retry \("nodeSelector reverted"\)/);
  });
  it("an abort while a failed kubelet install waits leaves every node's holds as before the run (apt-mark showhold through the host)", async () => {
    const nodes = ['cp-1', 'worker-1', 'worker-2', 'worker-3'];
    const holds = async () =>
      Object.fromEntries(await Promise.all(nodes.map(async (n) => [n, (await sshExec(tc.sim.endpoints, n, 'apt-mark showhold')).stdout])));
    const before = await holds();
    assert.deepEqual(new Set(Object.values(before)), new Set(['kubeadm\nkubelet\nkubectl\n']), "the install guide's holds");
    // The canary's kubelet install fails in dpkg (its kubeadm, kubeadm upgrade node and download went through).
    tc.sim.hosts.setFault('worker-1', {
      kind: 'fail',
      command: 'apt-get install -y -q -o DPkg::Lock::Timeout=120 -o Dpkg::Options::=--force-confold kubelet=1.34.2-1.1',
      exitCode: 100,
      stderr: 'E: Sub-process /usr/bin/dpkg returned an error code (1)',
    });
    handle = await env.client.workflow.start(clusterUpgradeWorkflow, {
      taskQueue,
      workflowId: 'upgrade/hf',
      workflowIdConflictPolicy: 'FAIL',
      args: [{ cluster: 'hf', to: '1.34', policy: POLICY }],
    });
    const s = await until(
      'worker-1 blocked on its kubelet install',
      (st) => st.hop === '1.34.2' && st.nodes['worker-1']?.phase === 'blocked',
    );
    const block = s.nodes['worker-1']?.blocked as StepBlock;
    assert.deepEqual([block.step, block.failure, block.actions], ['installPackages', 'HostCommandFailed', ['retry', 'abort']]);
    assert.match(block.message, /exited 100: E: Sub-process \/usr\/bin\/dpkg returned an error code \(1\); kubelet kubectl held again$/);
    assert.deepEqual(await holds(), before, 'while the node waits for the operator, its holds are in place');
    const text = await cli('status', 'hf');
    assert.match(
      text.stdout,
      /^ {2}worker-1 +canary +blocked: install kubelet, kubectl v1\.34\.2 on worker-1 failed .*; kubelet kubectl held again$/m,
    );

    const abort = await cli('abort', 'hf', '--by', 'olga', '--comment', 'dpkg broken on worker-1');
    assert.equal(abort.code, 0, abort.stderr);
    const result = await handle.result();
    assert.equal(result.phase, 'aborted', result.events.join('\n'));
    assert.deepEqual(await holds(), before, "every node's holds as before the run");
    const said =
      'holds put back on worker-1: kubelet kubectl; kubernetes.list on worker-1 points at v1.34, ahead of its kubelet 1.33.7 (held: kubeadm kubelet kubectl)';
    assert.match(
      result.outcome ?? '',
      /^aborted by olga: dpkg broken on worker-1; cp-1 at 1\.34\.2; worker-1, worker-2, worker-3 at 1\.33\.7; no node left cordoned by this run; /,
    );
    // The finish command repeats the run's queue and policy flags after this (test/client/finish-command.test.ts).
    assert.ok(
      result.outcome?.includes(`; ${said}; finish with: skewless upgrade --cluster hf --to 1.34 --task-queue ${taskQueue} `),
      result.outcome,
    );
    const status = await cli('status', 'hf');
    assert.ok(status.stdout.includes(said), status.stdout);
    assert.deepEqual(await nodeLines(tc.kube), [
      'cp-1 v1.34.2 schedulable',
      ...['worker-1', 'worker-2', 'worker-3'].map((x) => `${x} v1.33.7 schedulable`),
    ]);
    assert.equal(tc.sim.hosts.state('worker-1').packages.kubelet, '1.33.7-1.1', 'the kubelet never moved');
  });
});
