import assert from 'node:assert/strict';
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import type { NotificationEvent } from '../../contracts/notification-event.js';
import { notifyWorkflowId } from '../../contracts/workflow-ids.js';
import { notificationEventProblems } from '../../rules/index.js';
import { statusQuery } from '../../workflows/rollout-messages.js';
import { mergePatch } from '../../sim/cluster/kube-clients.js';
import { waitFor } from '../../sim/cluster/wait-for.js';
import { cliAsync, spawnCli, type RunningCli } from '../helpers/spawn-cli.js';
import type { TestCluster } from '../helpers/sim-cluster.js';
import { startClusterWorld } from '../helpers/sim-world.js';
import { startNotifyReceiver, type Delivery, type NotifyReceiver } from '../helpers/notify-receiver.js';
import { repoRoot } from '../helpers/run-cli.js';
import { tempDir } from '../helpers/temp-dir.js';
import { temporalVars, uniqueTaskQueue } from '../helpers/temporal-env.js';

// `solo` has one replica and a PDB that allows no disruption: the drain of the worker it runs on
// blocks until the test relaxes the budget and answers with the command the event names.
const LAB = `
name: notify
version: 1.32.4
repository: [1.32.4, 1.33.7, 1.34.2]
nodes:
  - {name: cp, role: control-plane, count: 1}
  - {name: worker, role: worker, count: 2}
workloads:
  - {kind: Deployment, name: solo, replicas: 1, pdb: {minAvailable: 1}}
`;

/** The chat sink's URL path is its secret (as a Slack webhook's): it must appear in no history, log or error. */
const CHAT_SECRET = '/services/T0E2E/B0E2E/e2eSecretPathXYZ';

/**
 * Issue 39 end to end: an upgrade with a blocked drain and a canary gate, its worker a real
 * `skewless worker` process SIGKILLed between two events, sinks of each type served by a real HTTP
 * receiver, one sink answering 500 throughout and one refusing (404). Every event is held to the
 * schema, each sent once; the operator answers each wait with the command its event names.
 */
describe('e2e: notifications of an upgrade with a blocked drain and a gate, through a worker crash', () => {
  let env: TestWorkflowEnvironment;
  let tc: TestCluster;
  let rx: NotifyReceiver;
  let worker: RunningCli | undefined;
  /** Every CLI a test started to follow a run, killed at the end whatever happened. */
  const runs: RunningCli[] = [];
  const following = (run: RunningCli): RunningCli => (runs.push(run), run);
  const taskQueue = uniqueTaskQueue('notify');
  const cliEnv = (): NodeJS.ProcessEnv => ({
    ...process.env,
    ...temporalVars(env),
    SKEWLESS_TASK_QUEUE: taskQueue,
    USER: 'dana',
    SKEWLESS_E2E_CHAT_URL: rx.url(CHAT_SECRET),
  });
  const startWorker = async () => {
    worker = spawnCli(['worker', '--clusters-dir', tc.clustersDir, '--task-queue', taskQueue], cliEnv());
    await waitFor(
      'the worker polls',
      () => worker?.stderr().includes('skewless worker: task queue') === true || worker?.child.exitCode !== null,
      120_000,
      100,
    );
    assert.equal(worker.child.exitCode, null, worker.stderr());
  };
  /** The events a path took with 2xx, in the order they happened (workflow time). */
  const taken = (path: string): NotificationEvent[] =>
    rx.deliveries
      .filter((d) => d.path === path && d.status < 300)
      .map((d) => d.body as NotificationEvent)
      .sort((a, b) => a.at.localeCompare(b.at));
  const eventsAt = (path: string): Delivery[] => rx.deliveries.filter((d) => d.path === path);

  before(async () => {
    [env, tc] = await startClusterWorld(LAB);
    rx = await startNotifyReceiver();
    rx.answer('/down', 500);
    rx.answer('/gone', 404);
    const dir = tempDir('notify-e2e');
    writeFileSync(join(dir, 'bus-url'), `${rx.url('/bus')}\n`);
    const file = join(tc.clustersDir, 'notify.yaml');
    writeFileSync(
      file,
      `${readFileSync(file, 'utf8')}notify:
  - {name: hook, type: webhook, url: "${rx.url('/hook')}"}
  - {name: chat, type: slack, urlEnv: SKEWLESS_E2E_CHAT_URL, events: [run.waiting]}
  - {name: bus, type: cloudevents, urlFile: ${join(dir, 'bus-url')}, events: [run.started, run.finished]}
  - {name: down, type: webhook, url: "${rx.url('/down')}"}
  - {name: gone, type: webhook, url: "${rx.url('/gone')}", events: [run.started]}
`,
    );
    await startWorker();
  });
  after(async () => {
    // The receiver's log, for the closing note: one line per delivery.
    const out = join(repoRoot, 'test-output', 'notifications');
    mkdirSync(out, { recursive: true });
    writeFileSync(
      join(out, 'receiver-log.jsonl'),
      (rx?.deliveries ?? [])
        .map((d) => {
          const b = d.body as Partial<NotificationEvent> & { type?: string; text?: string };
          const path = d.path === CHAT_SECRET ? '/chat' : d.path; // the secret path is never written down
          return JSON.stringify({ at: new Date(d.at).toISOString(), path, status: d.status, kind: b.kind ?? b.type ?? b.text, id: b.id });
        })
        .join('\n') + '\n',
    );
    worker?.child.kill('SIGKILL');
    // A test that failed half-way leaves its `upgrade` or `restore` following a run: it would hold the file open.
    for (const run of runs) run.child.kill('SIGKILL');
    await rx?.stop();
    await tc?.stop();
    await env?.teardown();
  });

  it('sends each transition once to the sinks that want it, the waits answered by the commands their events name, a SIGKILLed worker in between', async () => {
    const run = following(
      spawnCli(
        ['upgrade', '--cluster', 'notify', '--to', '1.33', '--approve-canary', '--drain-timeout', '5', '--acknowledge', 'default/solo'],
        cliEnv(),
      ),
    );
    let killed = false;
    const answered = new Set<string>();
    // The operator reads the hook's events and answers each wait with its command.
    await waitFor(
      'the run to finish',
      async () => {
        for (const e of taken('/hook')) {
          if (e.kind !== 'run.waiting' || answered.has(e.id)) continue;
          answered.add(e.id);
          if (e.details.waitingFor === 'node')
            await tc.kube.policy.patchNamespacedPodDisruptionBudget(
              { name: 'solo', namespace: 'default', body: { spec: { minAvailable: 0 } } },
              mergePatch,
            );
          if (e.details.waitingFor === 'gate' && !killed) {
            // Between this event and the next: the worker dies without a goodbye, another takes over.
            worker?.child.kill('SIGKILL');
            assert.equal((await worker?.exited)?.code, null, 'killed, not exited');
            killed = true;
            await startWorker();
          }
          const [cmd, ...args] = (e.command as string).split(' ');
          assert.equal(cmd, 'skewless');
          const r = await cliAsync(args, cliEnv());
          assert.equal(r.code, 0, `${e.command}: ${r.stdout}${r.stderr}`);
        }
        return run.child.exitCode !== null;
      },
      600_000,
      250,
    );
    const ended = await run.exited;
    assert.equal(ended.code, 0, ended.stdout + ended.stderr);
    assert.ok(killed, 'the worker was killed at the gate');
    // The finished event was started before the run returned; its delivery may land a moment later.
    await waitFor('run.finished at the hook', () => taken('/hook').some((e) => e.kind === 'run.finished'), 30_000, 100);

    const hook = taken('/hook');
    const solo = hook.find((e) => e.details.waitingFor === 'node')?.details.node;
    const nodeWait = ['run.waiting node', 'run.resumed node'];
    const gateWait = ['run.waiting gate', 'run.resumed gate'];
    // The canary is worker-1: solo's node blocks before the gate when it is the canary, after it otherwise.
    const expected = [
      'run.started',
      ...(solo === 'worker-1' ? [...nodeWait, ...gateWait] : [...gateWait, ...nodeWait]),
      'hop.done',
      'run.finished',
    ];
    assert.deepEqual(
      hook.map((e) => (e.details.waitingFor ? `${e.kind} ${String(e.details.waitingFor)}` : e.kind)),
      expected,
    );
    // Each once: no id twice among every delivery the hook took, across the crash.
    assert.equal(new Set(hook.map((e) => e.id)).size, hook.length);
    assert.equal(eventsAt('/hook').length, hook.length, 'no retried delivery to the healthy hook');
    for (const d of rx.deliveries.filter((x) => x.path === '/hook' || x.path === '/down' || x.path === '/gone'))
      assert.deepEqual(notificationEventProblems(d.body), [], JSON.stringify(d.body));

    const byKind = Object.fromEntries(hook.map((e) => [`${e.kind} ${String(e.details.waitingFor ?? '')}`.trim(), e]));
    assert.equal(byKind['run.waiting gate']?.command, 'skewless approve notify --gate canary-1.33.7');
    assert.equal(byKind['run.waiting node']?.command, `skewless resolve notify --node ${String(solo)} --action retry`);
    assert.deepEqual(byKind['run.waiting node']?.details.pdbs, ['solo']);
    assert.deepEqual(byKind['run.started']?.details, {
      from: '1.32.4',
      to: '1.33.7',
      hops: ['1.33.7'],
      nodes: 3,
      controlPlanes: 1,
      phases: byKind['run.started']?.details.phases,
      acknowledgedBy: byKind['run.started']?.details.acknowledgedBy,
    });
    assert.match(String(byKind['run.started']?.details.acknowledgedBy), /^dana/);
    assert.equal(byKind['run.finished']?.details.exit, 0);
    assert.match(String(byKind['run.finished']?.details.outcome), /^upgraded to 1\.33\.7/);

    // Each sink its own kinds and body: Slack text + blocks for the waits, CloudEvents for start and end.
    const chat = eventsAt(CHAT_SECRET).map((d) => d.body as { text: string; blocks: unknown[] });
    assert.equal(chat.length, 2);
    assert.ok(chat.every((b) => b.text.startsWith('[notify] ') && b.blocks.length === 3));
    const bus = eventsAt('/bus').map((d) => d.body as { type: string; data: NotificationEvent });
    assert.deepEqual(bus.map((b) => b.type).sort(), ['io.skewless.run.finished', 'io.skewless.run.started']);
  });

  it('a sink answering 500 throughout delays nothing: the run ended while its deliveries still retry', async () => {
    const finished = taken('/hook').find((e) => e.kind === 'run.finished') as NotificationEvent;
    const upgrade = await env.client.workflow.getHandle('upgrade/notify').describe();
    assert.equal(upgrade.status.name, 'COMPLETED');
    const delivery = await env.client.workflow.getHandle(notifyWorkflowId(finished.id)).describe();
    assert.equal(delivery.status.name, 'RUNNING', 'the down sink is still being retried');
    assert.ok(eventsAt('/down').some((d) => (d.body as NotificationEvent).kind === 'run.started' && d.status === 500));
  });

  it('history shows the deliveries with the run, a refused one as failed; no URL secret anywhere', async () => {
    const r = await cliAsync(['history', 'notify'], cliEnv());
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /notify hook: run\.started \(started\) .* completed/);
    assert.match(r.stdout, /notify gone: run\.started .*failed.*HTTP 404/);
    const ids = taken('/hook').map((e) => notifyWorkflowId(e.id));
    for (const id of ['upgrade/notify', ...ids]) {
      const h = await env.client.workflow.getHandle(id).fetchHistory();
      assert.doesNotMatch(JSON.stringify(h), /e2eSecretPathXYZ/, id);
    }
    assert.doesNotMatch(worker?.stdout() ?? '', /e2eSecretPathXYZ/);
    assert.doesNotMatch(worker?.stderr() ?? '', /e2eSecretPathXYZ/);
  });

  it('notify test sends a test event to every sink and prints each answer, exit 1 when one does not take it', async () => {
    const r = await cliAsync(['notify', 'test', '--cluster', 'notify'], cliEnv());
    assert.equal(r.code, 1, r.stdout + r.stderr);
    const lines = r.stdout.trim().split('\n').sort();
    assert.deepEqual(lines, [
      'bus: HTTP 200 ok',
      'chat: HTTP 200 ok',
      'down: not delivered: notify down: test answered HTTP 500: status 500',
      'gone: not delivered: notify gone: test answered HTTP 404: status 404',
      'hook: HTTP 200 ok',
    ]);
    assert.ok(taken('/hook').length >= 0 && rx.deliveries.some((d) => d.path === '/hook' && (d.body as NotificationEvent).kind === 'test'));
  });
  it('change hooks: a beforeRun hook that says no refuses the start in one line; a beforeNode hook that fails halts naming the hook and the node, and resolve --action retry runs it again', async () => {
    const dir = tempDir('notify-hooks');
    const calls = join(dir, 'calls.log');
    // Each hook a program run without a shell, the event in SKEWLESS_EVENT; each call logged.
    const script = (name: string, body: string) => {
      const file = join(dir, name);
      writeFileSync(
        file,
        `#!${process.execPath}\nconst fs = require('node:fs');\nconst e = JSON.parse(process.env.SKEWLESS_EVENT);\nfs.appendFileSync(${JSON.stringify(calls)}, process.env.SKEWLESS_HOOK_POINT + ' ' + (e.details.node ?? '-') + ' ' + e.kind + '\\n');\n${body}\n`,
      );
      chmodSync(file, 0o755);
      return file;
    };
    const ticket = script(
      'ticket.cjs',
      `if (!fs.existsSync(${JSON.stringify(join(dir, 'approved'))})) { console.log('CHG-42 is not approved'); process.exit(3); }`,
    );
    const nodeCheck = script(
      'node-check.cjs',
      `if (e.details.node === 'worker-2' && !fs.existsSync(${JSON.stringify(join(dir, 'ok'))})) { console.error(e.details.node + ' is not released by the change board'); process.exit(1); }`,
    );
    const file = join(tc.clustersDir, 'notify.yaml');
    writeFileSync(
      file,
      `${readFileSync(file, 'utf8')}hooks:\n  - {name: ticket, at: [beforeRun, afterRun], command: [${ticket}]}\n  - {name: node-check, at: [beforeNode], command: [${nodeCheck}], timeoutSeconds: 20}\n`,
    );
    const refused = await cliAsync(['upgrade', '--cluster', 'notify', '--to', '1.34'], cliEnv());
    assert.equal(refused.code, 1, refused.stdout + refused.stderr);
    assert.equal(
      refused.stderr.trim().split('\n').at(-1),
      'skewless: upgrade of notify failed: refusing to start: hook ticket at beforeRun said no: exit 3: CHG-42 is not approved',
    );

    writeFileSync(join(dir, 'approved'), 'CHG-42\n');
    // solo's budget allows no disruption again: its node's drain times out and is quarantined.
    await tc.kube.policy.patchNamespacedPodDisruptionBudget(
      { name: 'solo', namespace: 'default', body: { spec: { minAvailable: 1 } } },
      mergePatch,
    );
    const run = following(
      spawnCli(
        [
          'upgrade',
          '--cluster',
          'notify',
          '--to',
          '1.34',
          '--drain-timeout',
          '5',
          '--on-drain-timeout',
          'quarantine',
          '--acknowledge',
          'default/solo',
        ],
        cliEnv(),
      ),
    );
    const status = () => env.client.workflow.getHandle('upgrade/notify').query(statusQuery);
    await waitFor(
      'the beforeNode hook halts the run',
      async () => (await status().catch(() => undefined))?.halted?.step === 'hook',
      300_000,
      250,
    );
    const halted = (await status()).halted;
    assert.equal(halted?.after, 'worker-2 (beforeNode)');
    assert.equal(halted?.message, 'hook node-check at beforeNode said no: exit 1: worker-2 is not released by the change board');
    // The halt's event is sent after the state the query shows: it may reach the receiver a moment later.
    const haltWaits = () => taken('/hook').filter((e) => e.kind === 'run.waiting' && e.details.waitingFor === 'halt');
    await waitFor('run.waiting for the halt', () => haltWaits().length > 0, 30_000, 100);
    const [wait] = haltWaits();
    assert.equal(wait?.command, 'skewless resolve notify --action retry');

    writeFileSync(join(dir, 'ok'), 'released\n');
    const [cmd, ...args] = (wait?.command ?? '').split(' ');
    assert.equal(cmd, 'skewless');
    const retried = await cliAsync(args, cliEnv());
    assert.equal(retried.code, 0, retried.stdout + retried.stderr);
    const ended = await run.exited;
    assert.equal(ended.code, 4, `done with a node left behind: ${ended.stdout}${ended.stderr}`);
    await waitFor(
      'run.finished of the second upgrade',
      () => taken('/hook').filter((e) => e.kind === 'run.finished').length === 2,
      30_000,
      100,
    );
    const [quarantined] = taken('/hook').filter((e) => e.kind === 'node.quarantined');
    assert.equal(quarantined?.details.hop, '1.34.2');
    assert.match(String(quarantined?.details.node), /^worker-[12]$/);
    assert.equal(
      taken('/hook')
        .filter((e) => e.kind === 'run.finished')
        .at(-1)?.details.exit,
      4,
    );
    const log = readFileSync(calls, 'utf8').trim().split('\n');
    assert.deepEqual(
      log.filter((l) => l.startsWith('beforeNode worker-2')),
      ['beforeNode worker-2 hook', 'beforeNode worker-2 hook'],
      'the retry ran the hook again',
    );
    assert.deepEqual(log.filter((l) => l.startsWith('beforeRun')).length, 2, 'refused once, then yes');
    assert.equal(log.at(-1), 'afterRun - hook');
    assert.ok(existsSync(calls));
  });

  it('a restore sends its events too: one that fails names what finishes it, one aborted at its gate says so', async () => {
    const restores = () => taken('/hook').filter((e) => e.workflowId === 'restore/notify');
    // The recorded snapshot of hop 1.33.7, looked for where it is not: the check fails before anything is stopped.
    const missing = '/var/lib/skewless/snapshots/not-there.db';
    const failed = await cliAsync(['restore', '--cluster', 'notify', '--hop', '1.33.7', '--snapshot', missing], cliEnv());
    assert.equal(failed.code, 1, failed.stdout + failed.stderr);
    await waitFor('run.failed of the restore', () => restores().some((e) => e.kind === 'run.failed'), 30_000, 100);
    const fail = restores().find((e) => e.kind === 'run.failed') as NotificationEvent;
    assert.match(String(fail.details.reason), /not-there\.db is not on cp/);
    assert.equal(fail.command, `skewless restore --cluster notify --hop 1.33.7 --snapshot ${missing}`);

    const run = following(spawnCli(['restore', '--cluster', 'notify', '--hop', '1.34.2'], cliEnv()));
    await waitFor('the restore waits at its gate', () => restores().some((e) => e.kind === 'run.waiting'), 120_000, 100);
    const wait = restores().find((e) => e.kind === 'run.waiting') as NotificationEvent;
    assert.equal(wait.command, 'skewless approve notify --workflow restore --gate restore-1.34.2');
    const aborted = await cliAsync(['abort', 'notify', '--workflow', 'restore', '--comment', 'not tonight'], cliEnv());
    assert.equal(aborted.code, 0, aborted.stdout + aborted.stderr);
    await run.exited;
    await waitFor('run.aborted of the restore', () => restores().some((e) => e.kind === 'run.aborted'), 30_000, 100);
    assert.deepEqual(
      restores().map((e) => e.kind),
      ['run.started', 'run.failed', 'run.started', 'run.waiting', 'run.aborted'],
    );
    assert.match(String(restores().at(-1)?.details.reason), /not tonight/);
    for (const e of restores()) assert.deepEqual(notificationEventProblems(e), [], JSON.stringify(e));
  });

  it('the receiver took every kind of event the issue lists, each held to the schema', () => {
    const kinds = new Set(taken('/hook').map((e) => e.kind));
    for (const kind of [
      'run.started',
      'run.waiting',
      'run.resumed',
      'hop.done',
      'node.quarantined',
      'run.finished',
      'run.failed',
      'run.aborted',
      'test',
    ])
      assert.ok(kinds.has(kind as NotificationEvent['kind']), `${kind} never reached the receiver: ${[...kinds].join(', ')}`);
    for (const d of rx.deliveries.filter((x) => x.path === '/hook'))
      assert.deepEqual(notificationEventProblems(d.body), [], JSON.stringify(d.body));
    // The CloudEvents sink carries the same document as its data.
    for (const d of rx.deliveries.filter((x) => x.path === '/bus'))
      assert.deepEqual(notificationEventProblems((d.body as { data: unknown }).data), [], JSON.stringify(d.body));
  });

  it("no URL secret in any workflow of the file (upgrades, restores, deliveries) or in the worker's output", async () => {
    let checked = 0;
    for await (const w of env.client.workflow.list()) {
      const h = await env.client.workflow.getHandle(w.workflowId, w.runId).fetchHistory();
      assert.doesNotMatch(JSON.stringify(h), /e2eSecretPathXYZ/, w.workflowId);
      checked++;
    }
    assert.ok(checked >= 20, `only ${checked} workflows listed`);
    assert.doesNotMatch(worker?.stdout() ?? '', /e2eSecretPathXYZ/);
    assert.doesNotMatch(worker?.stderr() ?? '', /e2eSecretPathXYZ/);
  });
});
