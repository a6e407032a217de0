import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { ApplicationFailure, WorkflowFailedError } from '@temporalio/client';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import type { Activities } from '../../activities/index.js';
import type { EtcdMember, RestorePlan } from '../../activities/etcd-restore.js';
import { restoreStatusQuery, type RestoreStatus } from '../../workflows/restore-messages.js';
import { restoreWorkflow } from '../../workflows/restore-workflow.js';
import { abortSignal, approveUpdate } from '../../workflows/rollout-messages.js';
import { startDevServer } from '../helpers/temporal-env.js';
import { withMockedWorker } from '../helpers/workers.js';
import type { NotificationEvent } from '../../contracts/notification-event.js';
import { notificationEventProblems } from '../../rules/index.js';

const MEMBERS: EtcdMember[] = ['cp-1', 'cp-2'].map((node, i) => ({
  node,
  name: node,
  peerUrl: `https://10.0.0.${11 + i}:2380`,
  dataDir: '/var/lib/etcd',
}));
const PLAN: RestorePlan = {
  snapshot: {
    hop: '1.33.7',
    remotePath: '/var/lib/skewless/snapshots/etcd-c-1.33.7.db',
    localPath: '/snapshots/etcd-c-1.33.7.db',
    sha256: 'a'.repeat(64),
    revision: 812,
    takenAt: '2026-11-30T03:00:00.000Z',
  },
  members: MEMBERS,
  initialCluster: 'cp-1=https://10.0.0.11:2380,cp-2=https://10.0.0.12:2380',
  bumpRevision: 1_000_000_000,
  tag: '1.33.7',
};

/** Activities that record each call as `name node`; `hooks` replace single calls. */
function mocks(calls: string[], hooks: Partial<Record<string, (node: string) => Promise<void>>> = {}): Partial<Activities> {
  const step = (name: string) => async (i: { node: string }) => {
    calls.push(`${name} ${i.node}`);
    await hooks[`${name} ${i.node}`]?.(i.node);
  };
  return {
    findRunningRollout: async () => ({ running: false }),
    planRestore: async () => {
      calls.push('planRestore');
      return PLAN;
    },
    placeSnapshot: async (i) => {
      calls.push(`place ${i.node}`);
      return { node: i.node, remotePath: PLAN.snapshot.remotePath, placed: i.node !== 'cp-1' };
    },
    checkRestoreSnapshot: async (i) => {
      await step('check')(i);
      return { node: i.node, remotePath: i.remotePath, sha256: i.sha256, revision: i.revision };
    },
    stopStaticPods: async (i) => {
      await step('stop')(i);
      return { node: i.node, moved: [], parkedIn: '/x' };
    },
    restoreEtcdMember: async (i) => {
      assert.equal(i.initialCluster, PLAN.initialCluster, 'every member restores with the whole cluster');
      await step('restore')(i);
      return {
        node: i.node,
        dataDir: i.member.dataDir,
        previousDataDir: `${i.member.dataDir}.skewless-before-${i.tag}`,
        restoredNow: true,
      };
    },
    startStaticPods: async (i) => {
      await step('start')(i);
      return { node: i.node, moved: [] };
    },
    verifyEtcdRestore: async (i) => {
      calls.push(`verify ${i.node} ${i.minRevision}`);
      return { node: i.node, revision: i.minRevision + 5 };
    },
    verifyRestoredApiserver: async () => {
      calls.push('apiserver');
      return { cluster: 'c', checked: 'GET /readyz?verbose', healthy: true, failedChecks: [] };
    },
  } as Partial<Activities>;
}

async function until(
  handle: { query: (q: typeof restoreStatusQuery) => Promise<RestoreStatus> },
  what: string,
  check: (s: RestoreStatus) => boolean,
): Promise<RestoreStatus> {
  const deadline = Date.now() + 60_000;
  for (;;) {
    const s = await handle.query(restoreStatusQuery).catch(() => undefined);
    if (s && check(s)) return s;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}: ${JSON.stringify(s)}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

describe('restoreWorkflow (mocked activities, real dev server)', () => {
  let env: TestWorkflowEnvironment;
  before(async () => {
    env = await startDevServer();
  });
  after(async () => env?.teardown());
  let n = 0;
  const start = (taskQueue: string) =>
    env.client.workflow.start(restoreWorkflow, { taskQueue, workflowId: `restore/c-${++n}`, args: [{ cluster: 'c', hop: '1.33.7' }] });

  it('checks every member, waits at the gate saying what is lost, then stops all, restores all, starts all, verifies', async () => {
    const calls: string[] = [];
    await withMockedWorker(env, mocks(calls), 'restore-ok', async (taskQueue) => {
      const handle = await start(taskQueue);
      const waiting = await until(handle, 'the gate', (s) => s.phase === 'gate');
      assert.deepEqual(
        calls,
        ['planRestore', 'place cp-1', 'check cp-1', 'place cp-2', 'check cp-2'],
        "nothing touched before the approval but the snapshot's copy",
      );
      assert.ok(
        waiting.events.includes('cp-2: snapshot copied to /var/lib/skewless/snapshots/etcd-c-1.33.7.db'),
        waiting.events.join('\n'),
      );
      assert.deepEqual(waiting.gates, [{ name: 'restore-1.33.7' }]);
      assert.match(waiting.loses ?? '', /after the snapshot of 2026-11-30T03:00:00.000Z \(etcd revisions above 812\)/);
      await assert.rejects(handle.executeUpdate(approveUpdate, { args: [{ gate: 'workers-1.33.7', by: 'x' }] }), (e: Error) =>
        /no gate workers-1.33.7 is waiting/.test((e.cause as Error | undefined)?.message ?? ''),
      );
      await handle.executeUpdate(approveUpdate, { args: [{ gate: 'restore-1.33.7', by: 'dana', comment: 'roll back' }] });
      const result = await handle.result();
      assert.equal(result.phase, 'done', result.outcome);
      assert.deepEqual(calls.slice(5), [
        'stop cp-1',
        'stop cp-2',
        'restore cp-1',
        'restore cp-2',
        'start cp-1',
        'start cp-2',
        'verify cp-1 1000000812',
        'verify cp-2 1000000812',
        'apiserver',
      ]);
      assert.equal(result.revision, 1_000_000_817);
      assert.deepEqual(
        result.members.map((m) => [m.node, m.phase, m.previousDataDir]),
        [
          ['cp-1', 'started', '/var/lib/etcd.skewless-before-1.33.7'],
          ['cp-2', 'started', '/var/lib/etcd.skewless-before-1.33.7'],
        ],
      );
      assert.ok(
        result.events.some((e) => e === 'gate restore-1.33.7 approved by dana: roll back'),
        result.events.join('\n'),
      );
    });
  });

  it('refuses while another rollout of the cluster runs, before planning or placing anything', async () => {
    const calls: string[] = [];
    const acts = {
      ...mocks(calls),
      findRunningRollout: async (i: { ignore?: string[] }) => {
        calls.push(`findRunningRollout ignoring ${(i.ignore ?? []).join(',')}`);
        return { running: true, workflowId: 'maintain/c', startedAt: '2026-11-30T05:00:00.000Z' };
      },
    } as Partial<Activities>;
    await withMockedWorker(env, acts, 'restore-busy', async (taskQueue) => {
      const handle = await start(taskQueue);
      await assert.rejects(
        handle.result(),
        (e: unknown) =>
          e instanceof WorkflowFailedError &&
          e.cause instanceof ApplicationFailure &&
          e.cause.type === 'RolloutRunning' &&
          /refusing to restore c: maintain\/c is running \(abort it first\)/.test(e.cause.message),
      );
      assert.deepEqual(calls, [`findRunningRollout ignoring ${handle.workflowId}`]);
    });
  });

  it('abort at the gate: nothing is stopped, the outcome says so', async () => {
    const calls: string[] = [];
    await withMockedWorker(env, mocks(calls), 'restore-abort', async (taskQueue) => {
      const handle = await start(taskQueue);
      await until(handle, 'the gate', (s) => s.phase === 'gate');
      await handle.signal(abortSignal, { by: 'dana', reason: 'wrong cluster' });
      const result = await handle.result();
      assert.equal(result.phase, 'aborted');
      assert.match(result.outcome ?? '', /aborted by dana: wrong cluster; nothing was restored/);
      assert.ok(!calls.some((c) => /^(stop|restore|start)/.test(c)), calls.join(', '));
    });
  });

  it('a stop that fails before any swap: the stopped control planes start again, RestoreFailed', async () => {
    const calls: string[] = [];
    const hooks = {
      'stop cp-2': async () => {
        throw ApplicationFailure.create({ type: 'HostCommandFailed', nonRetryable: true, message: 'mv failed' });
      },
    };
    await withMockedWorker(env, mocks(calls, hooks), 'restore-stopfail', async (taskQueue) => {
      const handle = await start(taskQueue);
      await until(handle, 'the gate', (s) => s.phase === 'gate');
      await handle.executeUpdate(approveUpdate, { args: [{ gate: 'restore-1.33.7', by: 'dana' }] });
      const err = await handle.result().then(
        () => assert.fail('expected a failure'),
        (e: unknown) => e,
      );
      assert.ok(err instanceof WorkflowFailedError && err.cause instanceof ApplicationFailure, String(err));
      assert.equal(err.cause.type, 'RestoreFailed');
      assert.match(err.cause.message, /while stopping: mv failed/);
      assert.deepEqual(
        calls.slice(5),
        ['stop cp-1', 'stop cp-2', 'start cp-1'],
        'cp-1, stopped, runs again on its old data; nothing restored',
      );
    });
  });

  it('after the first swap, abort is refused and noted; the restore completes', async () => {
    const calls: string[] = [];
    let release!: () => void;
    const released = new Promise<void>((r) => {
      release = r;
    });
    await withMockedWorker(env, mocks(calls, { 'restore cp-2': () => released }), 'restore-late-abort', async (taskQueue) => {
      const handle = await start(taskQueue);
      await until(handle, 'the gate', (s) => s.phase === 'gate');
      await handle.executeUpdate(approveUpdate, { args: [{ gate: 'restore-1.33.7', by: 'dana' }] });
      await until(handle, 'cp-1 restored', (s) => s.members[0]?.phase === 'restored');
      await handle.signal(abortSignal, { by: 'dana' });
      await until(handle, 'the refusal noted', (s) => s.events.some((e) => e.startsWith('abort by dana refused')));
      release();
      const result = await handle.result();
      assert.equal(result.phase, 'done', result.outcome);
      assert.ok(calls.includes('start cp-2'));
    });
  });

  it('sends its events to the notify: sinks: started, the gate waited for and approved, failed with the command that runs it again', async () => {
    const calls: string[] = [];
    const delivered: NotificationEvent[] = [];
    const hooks = {
      'stop cp-1': async () => {
        throw ApplicationFailure.create({ type: 'HostCommandFailed', nonRetryable: true, message: 'mv failed' });
      },
    };
    const acts = {
      ...mocks(calls, hooks),
      planRestore: async () => ({
        ...PLAN,
        notify: [{ name: 'hook', events: ['run.started', 'run.waiting', 'run.resumed', 'run.failed'] }],
      }),
      deliverNotification: async (i: { sink: string; event: NotificationEvent }) => {
        delivered.push(i.event);
        return { sink: i.sink, status: 200, answer: 'ok', attempt: 1 };
      },
    } as Partial<Activities>;
    await withMockedWorker(env, acts, 'restore-notify', async (taskQueue) => {
      const handle = await start(taskQueue);
      await until(handle, 'the gate', (s) => s.phase === 'gate');
      await handle.executeUpdate(approveUpdate, { args: [{ gate: 'restore-1.33.7', by: 'dana' }] });
      await assert.rejects(handle.result(), WorkflowFailedError);
      const deadline = Date.now() + 30_000;
      while (delivered.length < 4 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
      // Each its own notifyWorkflow: delivered in any order, told apart by kind.
      const mine = delivered.filter((e) => e.workflowId === handle.workflowId);
      const of = (kind: string) => mine.find((e) => e.kind === kind);
      assert.deepEqual(mine.map((e) => e.kind).sort(), ['run.failed', 'run.resumed', 'run.started', 'run.waiting']);
      assert.equal(of('run.waiting')?.command, `skewless approve c --workflow restore --gate restore-1.33.7`);
      assert.equal(of('run.failed')?.command, 'skewless restore --cluster c --hop 1.33.7');
      assert.match(String(of('run.failed')?.details.reason), /while stopping: mv failed/);
      for (const e of mine) assert.deepEqual(notificationEventProblems(e), [], JSON.stringify(e));
    });
  });
});
