import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { WorkflowHandle } from '@temporalio/client';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import type { Worker } from '@temporalio/worker';
import { waitFor } from '../../sim/cluster/wait-for.js';
import type { clusterUpgradeWorkflow } from '../../workflows/cluster-upgrade-workflow.js';
import { statusQuery, type UpgradeStatus } from '../../workflows/rollout-messages.js';
import type { TestCluster } from '../helpers/sim-cluster.js';
import { cliAsync, spawnCli, type RunningCli } from '../helpers/spawn-cli.js';
import { untilStatus } from '../helpers/status-polling.js';
import { uniqueTaskQueue, temporalVars } from '../helpers/temporal-env.js';
import { simWorker } from '../helpers/workers.js';
import { nodeLines } from '../helpers/upgrade-evidence.js';
import { startClusterWorld } from '../helpers/sim-world.js';

const LAB = `
name: lap
version: 1.32.4
repository: [1.32.4, 1.33.7]
rebootSeconds: 1
nodes:
  - {name: cp, role: control-plane}
  - {name: worker, role: worker, count: 2}
workloads:
  - {kind: Deployment, name: web, replicas: 2, pdb: {maxUnavailable: 1}}
  - {kind: DaemonSet, name: agent}
`;
const GATE = 'canary-1.33.7';

/**
 * The operator's laptop is the least reliable part of an upgrade: the terminal running `skewless
 * upgrade` dies (SIGKILL) while it follows the run, and a colleague approves the canary gate from
 * another terminal while a re-attached `skewless watch` runs. Real CLI processes, the real dev server,
 * a real worker in this process, a simulated 1+2 cluster, one hop.
 */
describe("e2e: the operator's laptop dies mid-upgrade and a gate is approved from another terminal", () => {
  let env: TestWorkflowEnvironment;
  let tc: TestCluster;
  let worker: Worker;
  let running: Promise<void>;
  let upgrade: RunningCli | undefined;
  let watch: RunningCli | undefined;
  let handle: WorkflowHandle<typeof clusterUpgradeWorkflow>;
  let firstRunId: string | undefined;
  const taskQueue = uniqueTaskQueue('laptop');
  const cliEnv = (user: string) => ({ ...process.env, ...temporalVars(env), SKEWLESS_TASK_QUEUE: taskQueue, USER: user });
  const chainOf = async () =>
    (await env.client.workflow.getHandle('upgrade/lap').describe()).raw.workflowExecutionInfo?.firstRunId ?? undefined;
  const until = (what: string, check: (s: UpgradeStatus) => boolean) => untilStatus(handle, what, check, 180_000);

  before(async () => {
    [env, tc] = await startClusterWorld(LAB);
    worker = await simWorker(env, tc.clustersDir, taskQueue);
    running = worker.run();
  });
  after(async () => {
    upgrade?.child.kill('SIGKILL');
    watch?.child.kill('SIGKILL');
    worker?.shutdown();
    await running;
    await tc?.stop();
    await env?.teardown();
  });

  it('`skewless upgrade` killed with SIGKILL while it follows the run: the upgrade goes on without it', async () => {
    upgrade = spawnCli(['upgrade', '--cluster', 'lap', '--to', '1.33', '--canary', '1', '--approve-canary'], cliEnv('dana'));
    // Killed once it is following: it said it started and printed the run's progress.
    await waitFor(
      'the upgrade CLI following the run',
      () => /^started upgrade\/lap to 1\.33\n[\s\S]*node upgrades/m.test(upgrade?.stdout() ?? ''),
      60_000,
      100,
    );
    handle = env.client.workflow.getHandle('upgrade/lap');
    firstRunId = await chainOf();
    const atKill = await handle.query(statusQuery);
    upgrade.child.kill('SIGKILL'); // the laptop's lid closes
    const killed = await upgrade.exited;
    assert.equal(killed.code, null, 'killed, not exited');
    assert.notEqual(atKill.nodes['worker-1']?.phase, 'done', 'killed before the canary finished');

    // Nobody is attached now; the run reaches the canary gate by itself.
    const gated = await until('the canary done and its gate waiting', (s) => s.gates.some((g) => g.name === GATE && !g.approvedBy));
    assert.equal(gated.nodes['worker-1']?.phase, 'done');
    assert.equal(gated.nodes['worker-1']?.version, '1.33.7');
    assert.equal(gated.nodes['worker-2']?.phase, 'pending', 'the batch waits for the gate');
    assert.equal(await chainOf(), firstRunId, 'the same upgrade, not a new one');
  });

  it('a second `skewless upgrade` of the same cluster is refused while it runs, and changes nothing', async () => {
    const before = await handle.query(statusQuery);
    const second = await cliAsync(['upgrade', '--cluster', 'lap', '--to', '1.33'], cliEnv('sam'));
    assert.equal(second.code, 2, second.stdout + second.stderr);
    assert.equal(second.stderr, 'skewless: an upgrade of lap is already running; watch it with "skewless watch lap"\n');
    assert.doesNotMatch(second.stdout, /started/);
    const described = await handle.describe();
    assert.equal(described.status.name, 'RUNNING');
    assert.equal(await chainOf(), firstRunId);
    const after = await handle.query(statusQuery);
    assert.deepEqual(after.gates, before.gates, 'the gate is still waiting, unapproved');
  });

  it('a re-attached `skewless watch` shows the gate, a separate `skewless approve` passes it, and the watch shows who and follows to done', async () => {
    watch = spawnCli(['watch', 'lap'], cliEnv('dana'));
    await waitFor(
      'the watch showing the waiting gate',
      () => new RegExp(`gate ${GATE} waits: skewless approve lap --gate ${GATE}`).test(watch?.stdout() ?? ''),
      30_000,
      100,
    );
    // Its first poll says where the run stands: the control plane and the canary done, at the gate.
    assert.match(watch.stdout(), /^\[#{13}\.{7}\] 2\/3 node upgrades, hop 1\.33\.7 of 1\.33\.7, gate$/m);

    // Another terminal, another operator.
    const approve = await cliAsync(['approve', 'lap', '--gate', GATE, '--comment', 'canary looks good'], cliEnv('sam'));
    assert.equal(approve.code, 0, approve.stderr);
    assert.equal(approve.stdout, `gate ${GATE} approved by sam\n`);

    const end = await until(
      'the upgrade finished, or a node waiting for the operator',
      (s) =>
        ['done', 'failed', 'aborted'].includes(s.phase) ||
        s.halted !== undefined ||
        Object.values(s.nodes).some((n) => n.blocked !== undefined),
    );
    assert.deepEqual(
      Object.entries(end.nodes)
        .filter(([, n]) => n.blocked)
        .map(([name, n]) => `${name}: ${n.blocked?.message}`),
      [],
      'no node waits for the operator',
    );
    const watched = await watch.exited;
    assert.equal(watched.code, 0, `${watched.stdout}\n${watched.stderr}`);
    assert.match(watched.stdout, new RegExp(`gate ${GATE} approved by sam: canary looks good`));
    assert.match(watched.stdout, /\[#{20}\] 3\/3 node upgrades, hop 1\.33\.7 of 1\.33\.7, done/);
    assert.match(watched.stdout, /^lap: upgraded to 1\.33\.7$/m);
    // Once approved, no more "waits" lines: the watch moved on.
    const afterApproval = watched.stdout.slice(watched.stdout.indexOf('approved by sam'));
    assert.doesNotMatch(afterApproval, new RegExp(`gate ${GATE} waits`));

    const result = await handle.result();
    assert.equal(result.phase, 'done', result.events.join('\n'));
    assert.deepEqual(
      result.gates.map((g) => [g.name, g.approvedBy]),
      [[GATE, 'sam']],
    );
    assert.equal(await chainOf(), firstRunId, 'the upgrade that was started is the one that finished');
    assert.deepEqual(await nodeLines(tc.kube), ['cp v1.33.7 schedulable', 'worker-1 v1.33.7 schedulable', 'worker-2 v1.33.7 schedulable']);
  });
});
