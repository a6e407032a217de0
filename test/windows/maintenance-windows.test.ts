import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { historyToJSON } from '@temporalio/common/lib/proto-utils.js';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { WorkflowHandle } from '@temporalio/client';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import type { MaintenanceWindow } from '../../rules/index.js';
import { writesIn } from '../../sim/cluster/audit-log.js';
import { WORKER_USER } from '../../sim/cluster/pki.js';
import { clusterUpgradeWorkflow, type UpgradePolicy } from '../../workflows/cluster-upgrade-workflow.js';
import { SEARCH_ATTRIBUTES } from '../../workflows/search-attributes.js';
import { abortSignal, approveUpdate, statusQuery, type WindowWait } from '../../workflows/rollout-messages.js';
import { clusterWrites, isReadOnlyHostCommand, type ClusterWrites, type WritesMark } from '../helpers/cluster-writes.js';
import type { TestCluster } from '../helpers/sim-cluster.js';
import { cliAsync, spawnCli, type RunningCli } from '../helpers/spawn-cli.js';
import { untilStatus } from '../helpers/status-polling.js';
import { uniqueTaskQueue, temporalVars } from '../helpers/temporal-env.js';
import { failureChain } from '../helpers/upgrade-evidence.js';
import { simWorker } from '../helpers/workers.js';
import { startedAt, windowBetween, windowsYaml } from './window-clock.js';
import { startClusterWorld } from '../helpers/sim-world.js';

const LAB = `
name: win
version: 1.32.4
repository: [1.32.4, 1.32.6, 1.33.7]
rebootSeconds: 1
nodes:
  - {name: cp, role: control-plane, count: 1}
  - {name: worker, role: worker, count: 3}
workloads:
  - {kind: Deployment, name: web, replicas: 3, pdb: {maxUnavailable: 1}}
`;
// No DST, and not UTC: the workflow turns local times of day back into instants.
const ZONE = 'Asia/Kolkata';
const iso = (t: number) => new Date(t).toISOString();
const sleepUntil = (t: number) => new Promise((r) => setTimeout(r, Math.max(0, t - Date.now())));

/**
 * Maintenance windows on the real dev server, a real worker and the simulated cluster (1 control
 * plane, 3 workers). Windows are written into the worker's cluster configuration with a clock the
 * test controls (times of day to the second, in a real time zone); the evidence of when disruptive
 * work began comes from the cluster's side: the apiserver's audit log (every write of the worker's
 * user, with its time) and the hosts' command logs (each command's start).
 */
describe('maintenance windows: disruptive phases start only inside a window (real dev server, simulated cluster)', () => {
  let env: TestWorkflowEnvironment;
  let tc: TestCluster;
  let pristine: string;
  let configPath: string;
  let writes: ClusterWrites;

  before(async () => {
    [env, tc] = await startClusterWorld(LAB);
    configPath = join(tc.clustersDir, 'win.yaml');
    pristine = readFileSync(configPath, 'utf8');
    writes = clusterWrites(tc.sim, tc.workerKube);
  });
  after(async () => {
    await tc?.stop();
    await env?.teardown();
  });

  const cliEnv = (): NodeJS.ProcessEnv => {
    const e: NodeJS.ProcessEnv = { ...process.env, ...temporalVars(env) };
    for (const name of Object.keys(e))
      if (name.startsWith('TEMPORAL_') && name !== 'TEMPORAL_ADDRESS' && name !== 'TEMPORAL_NAMESPACE') delete e[name];
    return e;
  };

  /** Everything the worker's user wrote and the hosts ran (but reads) since `mark`, with times. */
  const changesSince = async (mark: WritesMark) => {
    await writes.since(mark); // the fence: every write before it is in the audit log
    const apiWrites = writesIn(tc.sim.auditEvents().slice(mark.auditEvents), WORKER_USER).map((e) => ({ ...e, at: Date.parse(e.time) }));
    const hostCommands = tc.sim.endpoints.ssh.hosts.flatMap(({ name }) =>
      tc.sim.hosts
        .commandLog(name)
        .slice(mark.hostCommands[name] ?? 0)
        .filter((e) => !isReadOnlyHostCommand(e.command))
        .map((e) => ({ host: name, command: e.command, at: startedAt(e) })),
    );
    return { apiWrites, hostCommands };
  };

  /** Every distinct `waiting` the status query showed while the upgrade ran. */
  const watchWaits = (handle: WorkflowHandle) => {
    const seen: WindowWait[] = [];
    let stopped = false;
    const done = (async () => {
      while (!stopped) {
        const s = await handle.query(statusQuery).catch(() => undefined);
        if (s?.waiting && !seen.some((w) => JSON.stringify(w) === JSON.stringify(s.waiting))) seen.push(s.waiting);
        await new Promise((r) => setTimeout(r, 200));
      }
    })();
    return {
      seen,
      stop: async () => {
        stopped = true;
        await done;
      },
    };
  };

  /** SKEWLESS_SAVE_HISTORIES=dir keeps a run's history for the replay test (the patched path: test/replay/histories). */
  const saveHistory = async (handle: WorkflowHandle, label: string) => {
    const dir = process.env.SKEWLESS_SAVE_HISTORIES;
    if (dir) writeFileSync(`${dir}/upgrade_win@${label}.json`, historyToJSON(await handle.fetchHistory()));
  };

  /** Runs one upgrade with `windows` in the cluster configuration and a fresh worker (which reads it). */
  const upgrade = async (
    windows: MaintenanceWindow[],
    to: string,
    policy: UpgradePolicy,
    body: (handle: WorkflowHandle<typeof clusterUpgradeWorkflow>) => Promise<void> = async () => undefined,
  ) => {
    writeFileSync(configPath, pristine + windowsYaml(windows));
    const taskQueue = uniqueTaskQueue('windows');
    const worker = await simWorker(env, tc.clustersDir, taskQueue);
    return worker.runUntil(async () => {
      const handle = await env.client.workflow.start(clusterUpgradeWorkflow, {
        taskQueue,
        workflowId: 'upgrade/win',
        args: [{ cluster: 'win', to, policy }],
      });
      const waits = watchWaits(handle);
      try {
        await body(handle);
        const status = await handle.result().catch((err: unknown) => assert.fail(failureChain(err)));
        return { status, waits: waits.seen, handle };
      } finally {
        await waits.stop();
      }
    });
  };

  it('an abort ends the wait for a window at once, and nothing was touched; status, memo and the phase attribute say what it waits for', async () => {
    const mark = await writes.mark();
    let watching: RunningCli | undefined;
    const later = windowBetween(Date.now() + 10 * 60_000, Date.now() + 15 * 60_000, ZONE);
    const { status } = await upgrade([later.window], '1.32.6', {}, async (handle) => {
      const waiting = await untilStatus(handle, 'the control plane waiting for the window', (s) => s.waiting !== undefined, 120_000);
      assert.deepEqual(waiting.waiting, {
        for: 'maintenance-window',
        phase: 'control-plane',
        hop: '1.32.6',
        since: waiting.waiting?.since,
        opensAt: iso(later.opensAt),
      });
      assert.equal(waiting.phase, 'waiting');
      assert.ok(
        waiting.events.includes(`control-plane of 1.32.6 waits for the maintenance window: opens ${iso(later.opensAt)}`),
        waiting.events.join('\n'),
      );
      // The list view: the memo and the SkewlessPhase search attribute.
      const description = await handle.describe();
      assert.deepEqual((description.memo as Record<string, unknown>).waiting, {
        for: 'maintenance-window',
        phase: 'control-plane',
        hop: '1.32.6',
        opensAt: iso(later.opensAt),
      });
      assert.equal(description.typedSearchAttributes.get(SEARCH_ATTRIBUTES.phase), 'waiting');
      // What an operator reads.
      const text = await cliAsync(['status', 'win'], cliEnv());
      assert.equal(text.code, 0, text.stderr);
      assert.match(text.stdout, /^win: 1\.32\.4 → 1\.32\.6, hop 1\.32\.6 \(1\.32\.6\), waiting$/m);
      assert.ok(
        text.stdout.includes(`  control-plane of 1.32.6: waiting for the maintenance window: opens ${iso(later.opensAt)}\n`),
        text.stdout,
      );
      // What automation reads: the status object and the watch's progress records (NDJSON).
      const json = await cliAsync(['status', 'win', '--output', 'json'], cliEnv());
      assert.equal(json.code, 0, json.stderr);
      assert.equal((JSON.parse(json.stdout) as { waiting?: WindowWait }).waiting?.opensAt, iso(later.opensAt));
      watching = spawnCli(['watch', 'win', '--output', 'json'], cliEnv());
      // The watch's first progress record, before the run ends (a CLI starting on a loaded machine takes seconds).
      const firstPoll = Date.now() + 60_000;
      while (!/"type":"progress"/.test(watching.stdout()) && Date.now() < firstPoll) await sleepUntil(Date.now() + 200);
      await handle.signal(abortSignal, { by: 'windows test', reason: 'not tonight' });
    });
    const watched = await watching!.exited;
    const records = watched.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { type: string; window?: WindowWait | null; waitingFor?: string[] });
    const waitingProgress = records.find((r) => r.type === 'progress' && r.window);
    assert.equal(waitingProgress?.window?.opensAt, iso(later.opensAt), watched.stdout);
    assert.ok(
      waitingProgress?.waitingFor?.some((w) => w.startsWith('the maintenance window (control-plane of 1.32.6')),
      watched.stdout,
    );
    assert.equal(records.at(-1)?.type, 'result', watched.stdout);
    // The result came while the window was still minutes away: the abort ended the timer's wait.
    assert.ok(Date.now() < later.opensAt, 'ended before the window opened');
    assert.equal(status.phase, 'aborted', status.events.join('\n'));
    assert.equal(status.waiting, undefined);
    assert.ok(
      status.events.some((e) => /^control-plane of 1\.32\.6 waited \d+ s for the maintenance window \(aborted while waiting\)$/.test(e)),
      status.events.join('\n'),
    );
    assert.deepEqual(status.snapshots, []);
    await writes.assertNoneSince(mark, 'an upgrade aborted while it waited for its window');
  });

  it('a window that opens in a few seconds delays the snapshot, kubeadm and the first cordon until it opens; the upgrade then completes', async () => {
    const mark = await writes.mark();
    const soon = windowBetween(Date.now() + 15_000, Date.now() + 15 * 60_000, ZONE);
    const { status, waits, handle } = await upgrade([soon.window], '1.32.6', { canary: 1, batchSize: 2, maxUnavailable: 2 });
    assert.equal(status.phase, 'done', status.events.join('\n'));
    await saveHistory(handle, 'control-plane-waits');
    // Status showed the wait, with the time the window opens.
    assert.deepEqual(
      waits.map((w) => `${w.phase} ${w.hop} ${w.opensAt}`),
      [`control-plane 1.32.6 ${iso(soon.opensAt)}`],
    );
    const waited = status.events.map((e) => /^control-plane of 1\.32\.6 waited (\d+) s for the maintenance window$/.exec(e)).find(Boolean);
    assert.ok(waited && Number(waited[1]) >= 1 && Number(waited[1]) <= 16, status.events.join('\n'));
    assert.ok(!status.events.some((e) => /^(canary|batch-1) of .* waits/.test(e)), 'the worker phases start inside the same window');

    // The cluster's side: nothing was changed before the window opened, and then everything was.
    const { apiWrites, hostCommands } = await changesSince(mark);
    const snapshot = hostCommands.find((c) => c.host === 'cp-1' && /etcdctl .*snapshot save/.test(c.command));
    const apply = hostCommands.find((c) => c.host === 'cp-1' && /kubeadm upgrade apply v1\.32\.6/.test(c.command));
    const firstCordon = apiWrites.find((e) => e.resource === 'nodes' && e.verb === 'patch');
    for (const [what, at] of [
      ['the etcd snapshot', snapshot?.at],
      ['kubeadm upgrade apply', apply?.at],
      ['the first node patch (stage label or cordon)', firstCordon?.at],
    ] as const) {
      assert.ok(at !== undefined, `${what} happened`);
      assert.ok(at >= soon.opensAt, `${what} at ${iso(at)}, the window opened at ${iso(soon.opensAt)}`);
    }
    const early = [
      ...apiWrites.filter((e) => e.at < soon.opensAt).map((e) => `${e.verb} ${e.resource} ${e.name ?? ''}`),
      ...hostCommands.filter((c) => c.at < soon.opensAt).map((c) => `${c.host}: ${c.command}`),
    ];
    assert.deepEqual(early, [], 'no write and no changing command before the window opened');
    const nodes = (await tc.kube.core.listNode()).items;
    assert.ok(
      nodes.every((n) => n.status?.nodeInfo?.kubeletVersion === 'v1.32.6' && !n.spec?.unschedulable),
      nodes.map((n) => `${n.metadata?.name} ${n.status?.nodeInfo?.kubeletVersion}`).join(', '),
    );
  });

  it('a batch in flight when the window closes finishes its nodes; the next batch waits for the next window, then the upgrade completes', async () => {
    // Window A is open now and closes while the canary runs (the test approves the workers just
    // before it closes, and the canary's kubeadm is slowed); window B opens a little later.
    const t0 = Date.now();
    const a = windowBetween(t0 - 30_000, t0 + 75_000, ZONE); // the control plane took 7 s here
    const b = windowBetween(a.closesAt + 60_000, a.closesAt + 60_000 + 15 * 60_000, ZONE);
    tc.sim.hosts.setFault('worker-1', { kind: 'slow', command: 'kubeadm upgrade node', ms: 25_000, times: 1 });
    const mark = await writes.mark();
    const { status, waits, handle } = await upgrade(
      [a.window, b.window],
      '1.33.7',
      { canary: 1, batchSize: 1, maxUnavailable: 1, approveWorkers: true },
      async (handle) => {
        await untilStatus(handle, 'the workers gate', (s) => s.gates.some((g) => g.name === 'workers-1.33.7' && !g.approvedBy), 140_000);
        assert.ok(
          Date.now() < a.closesAt - 15_000,
          `the control plane took too long for this test's window (gate at ${iso(Date.now())}, window A closes ${iso(a.closesAt)})`,
        );
        await sleepUntil(a.closesAt - 12_000);
        await handle.executeUpdate(approveUpdate, { args: [{ gate: 'workers-1.33.7', by: 'windows test' }] });
      },
    );
    assert.equal(status.phase, 'done', status.events.join('\n'));
    await saveHistory(handle, 'batch-waits');
    assert.deepEqual(
      waits.map((w) => `${w.phase} ${w.hop} ${w.opensAt}`),
      [`batch-1 1.33.7 ${iso(b.opensAt)}`],
      'only batch-1 waited, for window B',
    );

    // The canary started inside window A and finished its node after A closed.
    const canary = status.nodes['worker-1'];
    assert.ok(canary?.startedAt && canary.finishedAt, JSON.stringify(canary));
    assert.ok(
      Date.parse(canary.startedAt) < a.closesAt && Date.parse(canary.finishedAt) > a.closesAt,
      `canary ${canary.startedAt} → ${canary.finishedAt}, window A closed ${iso(a.closesAt)}`,
    );
    assert.equal(canary.version, '1.33.7');
    const waited = status.events.map((e) => /^batch-1 of 1\.33\.7 waited (\d+) s for the maintenance window$/.exec(e)).find(Boolean);
    assert.ok(waited && Number(waited[1]) >= 1, status.events.join('\n'));

    // Nothing touched worker-2 or worker-3 before window B opened; the canary's node was worked on after A closed.
    const { apiWrites, hostCommands } = await changesSince(mark);
    const touched = (node: string) => [
      ...apiWrites.filter((e) => e.resource === 'nodes' && e.name === node && e.verb === 'patch').map((e) => e.at),
      ...hostCommands.filter((c) => c.host === node).map((c) => c.at),
    ];
    for (const node of ['worker-2', 'worker-3']) {
      const times = touched(node);
      assert.ok(times.length > 0, `${node} was upgraded`);
      // The stage labels go on every node with the control plane, inside window A: only after them does a batch begin.
      const afterLabels = times.filter((t) => t > a.closesAt);
      assert.ok(
        afterLabels.length > 0 && afterLabels.every((t) => t >= b.opensAt),
        `${node}: ${times.map(iso).join(', ')}; window B opened ${iso(b.opensAt)}`,
      );
    }
    assert.ok(
      hostCommands.some((c) => c.host === 'worker-1' && c.at > a.closesAt),
      "the canary's node went on after window A closed",
    );
    const nodes = (await tc.kube.core.listNode()).items;
    assert.ok(
      nodes.every((n) => n.status?.nodeInfo?.kubeletVersion === 'v1.33.7' && !n.spec?.unschedulable),
      nodes.map((n) => `${n.metadata?.name} ${n.status?.nodeInfo?.kubeletVersion}`).join(', '),
    );
  });
});
