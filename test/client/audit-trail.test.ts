import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import type { Client } from '@temporalio/client';
import { historyFromJSON } from '@temporalio/common/lib/proto-utils.js';
import { auditTrail, runTrail, trailToText, type RunHistory, type TrailEntry } from '../../client/audit-trail.js';
import { fetchUpgradeRuns } from '../../client/commands/history.js';
import { repoRoot } from '../helpers/run-cli.js';

/** Histories saved from a real e2e run (test/replay/histories), in the JSON form the temporal CLI writes. */
type JsonEvent = Record<string, unknown> & { eventId: string; eventType: string };
const saved = (name: string): { events: JsonEvent[] } =>
  JSON.parse(readFileSync(join(repoRoot, 'test', 'replay', 'histories', name), 'utf8'));
const run = (workflowId: string, history: { events: JsonEvent[] }): RunHistory => ({
  workflowId,
  runId: 'r',
  events: historyFromJSON(history).events ?? [],
});
const b64 = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64');
const payload = (value: unknown) => ({ metadata: { encoding: Buffer.from('json/plain').toString('base64') }, data: b64(value) });
const decoded = (p: { data: string }) => JSON.parse(Buffer.from(p.data, 'base64').toString());
const attrs = (e: JsonEvent, key: string) => e[key] as Record<string, unknown>;

const parentJson = saved('upgrade_e2e.json');
const workerJson = saved('upgrade_e2e_1.33.7_worker-3.json');
const cpJson = saved('upgrade_e2e_1.33.7_cp-1.json');
const e2eRuns = () => [
  run('upgrade/e2e', parentJson),
  run('upgrade/e2e/1.33.7/worker-3', workerJson),
  run('upgrade/e2e/1.33.7/cp-1', cpJson),
];
const steps = (entries: TrailEntry[]) => entries.filter((e): e is Extract<TrailEntry, { kind: 'step' }> => e.kind === 'step');

describe('audit trail of saved e2e histories', () => {
  const entries = auditTrail(e2eRuns());

  it('has one step per scheduled activity, each closed with its node and a duration, in time order', () => {
    const scheduled = [parentJson, workerJson, cpJson].flatMap((h) =>
      h.events.filter((e) => e.eventType === 'EVENT_TYPE_ACTIVITY_TASK_SCHEDULED'),
    );
    assert.equal(steps(entries).length, scheduled.length);
    assert.deepEqual(
      steps(entries)
        .map((s) => s.activity)
        .sort(),
      scheduled.map((e) => (attrs(e, 'activityTaskScheduledEventAttributes').activityType as { name: string }).name).sort(),
    );
    for (const s of steps(entries)) {
      assert.equal(s.outcome, 'completed');
      assert.equal(s.retries, 0);
      assert.ok(s.durationMs !== undefined && s.durationMs >= 0 && s.durationMs < 120_000, `${s.activity} ${s.durationMs}`);
    }
    assert.deepEqual(
      entries.map((e) => e.time),
      entries.map((e) => e.time).sort(),
    );
    assert.deepEqual(
      steps(entries)
        .filter((s) => s.activity === 'drainNode')
        .map((s) => s.node)
        .sort(),
      ['cp-1', 'worker-3'],
    );
    // Node and version come from the activity's input when no summary was recorded.
    assert.ok(steps(entries).some((s) => s.activity === 'kubeadmUpgradeNode' && s.node === 'worker-3' && s.version === '1.33.7'));
  });

  it("reports the etcd snapshots as the workflow's own status did, and how each workflow ended", () => {
    const completed = parentJson.events.find((e) => e.eventType === 'EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED') as JsonEvent;
    const status = decoded(
      (attrs(completed, 'workflowExecutionCompletedEventAttributes').result as { payloads: { data: string }[] }).payloads[0] as {
        data: string;
      },
    );
    const snapshots = entries.filter((e) => e.kind === 'snapshot');
    assert.deepEqual(
      snapshots.map((s) => [s.path, s.sha256, s.revision]),
      status.snapshots.map((s: Record<string, unknown>) => [s.localPath, s.sha256, s.revision]),
    );
    assert.equal(snapshots.length, 2);
    assert.deepEqual(
      entries.filter((e) => e.kind === 'node').map((e) => [e.node, e.outcome]),
      [
        ['cp-1', 'done'],
        ['worker-3', 'done'],
      ],
    );
    assert.deepEqual(entries.at(-1), {
      time: entries.at(-1)?.time,
      kind: 'closed',
      workflowId: 'upgrade/e2e',
      status: 'completed',
      outcome: 'upgraded to 1.34.2',
    });
    assert.deepEqual(entries[0], { time: entries[0]?.time, kind: 'started', workflowId: 'upgrade/e2e', to: '1.34', continued: false });
  });

  it('prints named fields only, never whole payloads', () => {
    const json = JSON.stringify(entries);
    // setStageLabels' input (the labels map), the inventory (InternalIPs, PDBs), the policy: none of it.
    for (const leak of ['"labels"', 'internalIP', '127.0.0.1', 'maxUnavailable', 'cordonedByUs', 'kubeletTimeoutSeconds'])
      assert.ok(!json.includes(leak), leak);
    const text = trailToText(entries);
    for (const line of text.split('\n')) assert.match(line, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z {2}\S+ +\S/);
    assert.match(text, /worker-3 +drainNode: drain worker-3 +\d+\.\d s {2}completed/);
    assert.match(text, /cp-1 +etcd snapshot \S+etcd-e2e-1\.33\.7\.db sha256 [0-9a-f]{64} revision \d+/);
  });
});

describe('audit trail of what the e2e histories lack', () => {
  /** The worker-3 history with its events edited as a later run would have recorded them. */
  const edited = (edit: (events: JsonEvent[]) => void) => {
    const copy = structuredClone(workerJson);
    edit(copy.events);
    return runTrail(run('upgrade/e2e/1.33.7/worker-3', copy));
  };
  /** The event of `type` that belongs to the (first) `activity`: its scheduling, start or close. */
  const eventOf = (events: JsonEvent[], type: string, activity: string): JsonEvent => {
    const scheduled = events.find(
      (e) => (attrs(e, 'activityTaskScheduledEventAttributes')?.activityType as { name?: string } | undefined)?.name === activity,
    ) as JsonEvent;
    const found =
      type === 'EVENT_TYPE_ACTIVITY_TASK_SCHEDULED'
        ? scheduled
        : events.find(
            (e) =>
              e.eventType === type &&
              Object.values(e).some((v) => (v as { scheduledEventId?: string } | null)?.scheduledEventId === scheduled.eventId),
          );
    assert.ok(found, `${type} of ${activity}`);
    return found;
  };

  it("shows each activity's summary from its user metadata, as the workflow recorded it", () => {
    const entries = runTrail(run('upgrade/e2e/1.33.7/worker-3', workerJson));
    assert.ok(
      steps(entries).every((s) => s.summary),
      'every activity of the workflow has a summary',
    );
    assert.equal(steps(entries).find((s) => s.activity === 'drainNode')?.summary, 'drain worker-3');
    assert.equal(steps(entries).find((s) => s.activity === 'kubeadmUpgradeNode')?.summary, 'kubeadm upgrade node on worker-3 (v1.33.7)');
  });

  it('without a summary (older histories), names the activity and the version in its input', () => {
    const entries = edited((events) => {
      for (const e of events) delete e.userMetadata;
    });
    assert.ok(steps(entries).every((s) => s.summary === undefined));
    const text = trailToText(entries);
    assert.match(text, /worker-3 +drainNode +\d+\.\d s {2}completed$/m);
    assert.match(text, /worker-3 +kubeadmUpgradeNode 1\.33\.7 +\d+\.\d s {2}completed$/m);
  });

  it("counts retries from the attempt that closed the activity, and keeps a failure's message", () => {
    const entries = edited((events) => {
      attrs(eventOf(events, 'EVENT_TYPE_ACTIVITY_TASK_STARTED', 'restartKubelet'), 'activityTaskStartedEventAttributes').attempt = 3;
      const done = eventOf(events, 'EVENT_TYPE_ACTIVITY_TASK_COMPLETED', 'checkNodeReady');
      const a = attrs(done, 'activityTaskCompletedEventAttributes');
      delete done.activityTaskCompletedEventAttributes;
      Object.assign(done, {
        eventType: 'EVENT_TYPE_ACTIVITY_TASK_FAILED',
        activityTaskFailedEventAttributes: {
          scheduledEventId: a.scheduledEventId,
          startedEventId: a.startedEventId,
          failure: { message: 'node worker-3 not Ready at 1.33.7\nafter 60 s', applicationFailureInfo: { type: 'NodeNotReady' } },
        },
      });
    });
    const restart = steps(entries).find((s) => s.activity === 'restartKubelet');
    assert.equal(restart?.retries, 2);
    const ready = steps(entries).find((s) => s.activity === 'checkNodeReady');
    assert.deepEqual([ready?.outcome, ready?.message], ['failed', 'node worker-3 not Ready at 1.33.7 after 60 s']);
    const text = trailToText(entries);
    assert.match(text, /restartKubelet: restart kubelet on worker-3 at v1\.33\.7 +\d+\.\d s {2}completed, retried 2 times$/m);
    assert.match(
      text,
      /checkNodeReady: wait for worker-3 Ready at v1\.33\.7 +\d+\.\d s {2}failed: node worker-3 not Ready at 1\.33\.7 after 60 s$/m,
    );
  });

  it('says a cordon step left the node as someone else cordoned it, instead of "completed"', () => {
    const result = (activity: string, value: unknown) =>
      edited((events) => {
        const done = eventOf(events, 'EVENT_TYPE_ACTIVITY_TASK_COMPLETED', activity);
        attrs(done, 'activityTaskCompletedEventAttributes').result = { payloads: [payload(value)] };
      });
    const line = (entries: TrailEntry[], activity: string) =>
      trailToText(entries)
        .split('\n')
        .find((l) => l.includes(`${activity}:`)) ?? '';
    assert.match(
      line(result('cordonNode', { cordoned: true, ownedByUs: false, changed: false }), 'cordonNode'),
      /cordonNode: cordon worker-3 +\d+\.\d s {2}already cordoned by someone else: left to them$/,
    );
    assert.match(line(result('cordonNode', { cordoned: true, ownedByUs: true, changed: true }), 'cordonNode'), /\d s {2}completed$/);
    // A node this run never cordoned, as compensation finds it: uncordonNode returns uncordoned:false.
    const uncordoned = (value: unknown) => line(result('uncordonNode', value), 'uncordonNode');
    assert.match(
      uncordoned({
        uncordoned: false,
        changed: false,
        reason: 'node worker-3 was cordoned by someone else, not upgrade/e2e: left cordoned',
      }),
      /uncordonNode: uncordon worker-3 +\d+\.\d s {2}left cordoned: cordoned by someone else$/,
    );
    assert.match(
      uncordoned({ uncordoned: false, changed: false, reason: '…', cordonedBy: 'maintain/e2e' }),
      /left cordoned: cordoned by maintain\/e2e$/,
    );
    assert.match(
      uncordoned({ uncordoned: false, changed: false, reason: 'node worker-3 not found', notFound: true }),
      /nothing to uncordon: node not found$/,
    );
    assert.match(uncordoned({ uncordoned: true, changed: true }), /\d s {2}completed$/);
  });

  it('records approvals, drain resolutions and operator signals with who, from named fields only', () => {
    const copy = structuredClone(parentJson);
    const at = (copy.events[5] as JsonEvent).eventTime;
    const extra: JsonEvent[] = [
      {
        eventId: '9001',
        eventTime: at,
        eventType: 'EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED',
        workflowExecutionSignaledEventAttributes: {
          signalName: 'pause',
          input: { payloads: [payload({ by: 'erin', reason: 'lunch', token: 'SECRET' })] },
        },
      },
      {
        eventId: '9002',
        eventTime: at,
        eventType: 'EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED',
        workflowExecutionSignaledEventAttributes: { signalName: 'resume', input: { payloads: [payload({ by: 'erin' })] } },
      },
      {
        eventId: '9003',
        eventTime: at,
        eventType: 'EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED',
        workflowExecutionUpdateAcceptedEventAttributes: {
          acceptedRequest: {
            meta: { updateId: 'u1' },
            input: {
              name: 'approve',
              args: { payloads: [payload({ gate: 'workers-1.33.7', by: 'dana', comment: 'control planes look fine' })] },
            },
          },
        },
      },
      {
        eventId: '9004',
        eventTime: at,
        eventType: 'EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED',
        workflowExecutionUpdateAcceptedEventAttributes: {
          acceptedRequest: {
            meta: { updateId: 'u2' },
            input: {
              name: 'resolveDrain',
              args: { payloads: [payload({ node: 'worker-2', action: 'force', pods: ['default/solo-0'], by: 'dana' })] },
            },
          },
        },
      },
      {
        eventId: '9005',
        eventTime: at,
        eventType: 'EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED',
        workflowExecutionSignaledEventAttributes: {
          signalName: 'nodeBlocked',
          input: {
            payloads: [
              payload({
                node: 'worker-2',
                block: { kind: 'DrainBlocked', message: 'drain of worker-2 blocked by PDB default/solo', pods: [] },
              }),
            ],
          },
        },
      },
    ];
    copy.events.splice(6, 0, ...extra);
    const entries = runTrail(run('upgrade/e2e', copy));
    const text = trailToText(entries);
    assert.ok(!JSON.stringify(entries).includes('SECRET'));
    assert.match(text, /- +pause by erin \("lunch"\)/);
    assert.match(text, /- +resume by erin$/m);
    assert.match(text, /- +gate workers-1\.33\.7 approved by dana \("control planes look fine"\)/);
    assert.match(text, /worker-2 +drain of worker-2 resolved by dana: force default\/solo-0/);
    assert.match(text, /worker-2 +drain blocked: drain of worker-2 blocked by PDB default\/solo/);
  });
});

describe('history: the runs of an upgrade', () => {
  const t = (s: number) => ({ seconds: String(1_800_000_000 + s), nanos: 0 });
  const started = (s: number, type: string, input: unknown, continuedExecutionRunId?: string) => ({
    eventId: '1',
    eventTime: t(s),
    workflowExecutionStartedEventAttributes: {
      workflowType: { name: type },
      input: { payloads: [historyPayload(input)] },
      ...(continuedExecutionRunId ? { continuedExecutionRunId } : {}),
    },
  });
  const historyPayload = (v: unknown) => ({
    metadata: { encoding: new TextEncoder().encode('json/plain') },
    data: new TextEncoder().encode(JSON.stringify(v)),
  });
  const child = (s: number, workflowId: string, runId: string) => ({
    eventId: '5',
    eventTime: t(s),
    childWorkflowExecutionStartedEventAttributes: { workflowExecution: { workflowId, runId } },
  });
  const continued = (s: number, newExecutionRunId: string) => ({
    eventId: '9',
    eventTime: t(s),
    workflowExecutionContinuedAsNewEventAttributes: { newExecutionRunId },
  });
  const completed = (s: number, result: unknown) => ({
    eventId: '9',
    eventTime: t(s),
    workflowExecutionCompletedEventAttributes: { result: { payloads: [historyPayload(result)] } },
  });
  const node = (node: string) => ({ cluster: 'lab', node, version: '1.33.7', step: 'node' });

  /** A client without payload encryption: `history` decodes nothing. */
  const NO_CODEC = { loadedDataConverter: { payloadCodecs: [] } };
  // upgrade/lab continued as new once between hops; its first node workflow continued as new too.
  const histories: Record<string, unknown[]> = {
    'upgrade/lab@A': [
      started(0, 'clusterUpgradeWorkflow', { cluster: 'lab', to: '1.34' }),
      child(1, 'upgrade/lab/1.33.7/w1', 'c1'),
      continued(10, 'B'),
    ],
    'upgrade/lab@B': [
      started(10, 'clusterUpgradeWorkflow', { cluster: 'lab', to: '1.34' }, 'A'),
      child(11, 'upgrade/lab/1.34.2/w1', 'c2'),
      completed(20, { outcome: 'upgraded to 1.34.2' }),
    ],
    'upgrade/lab/1.33.7/w1@c1': [started(1, 'nodeUpgradeWorkflow', node('w1')), continued(2, 'c1b')],
    'upgrade/lab/1.33.7/w1@c1b': [started(2, 'nodeUpgradeWorkflow', node('w1')), completed(5, { node: 'w1', outcome: 'done' })],
    'upgrade/lab/1.34.2/w1@c2': [
      started(11, 'nodeUpgradeWorkflow', { ...node('w1'), version: '1.34.2' }),
      completed(15, { node: 'w1', outcome: 'skipped' }),
    ],
  };
  const fetched: string[] = [];
  const client = {
    options: NO_CODEC,
    workflow: {
      getHandle: (workflowId: string, runId?: string) => ({
        describe: async () => ({ runId: 'B' }),
        fetchHistory: async () => {
          fetched.push(`${workflowId}@${runId}`);
          return { events: histories[`${workflowId}@${runId}`] };
        },
      }),
    },
  } as unknown as Client;

  it('walks the parent back along continue-as-new and each child forward, and reads them oldest first', async () => {
    const runs = await fetchUpgradeRuns(client, 'lab');
    assert.deepEqual(
      runs.parent.map((r) => r.runId),
      ['A', 'B'],
    );
    assert.deepEqual(
      runs.children.map((r) => `${r.workflowId}@${r.runId}`),
      ['upgrade/lab/1.33.7/w1@c1', 'upgrade/lab/1.33.7/w1@c1b', 'upgrade/lab/1.34.2/w1@c2'],
    );
    assert.equal(new Set(fetched).size, fetched.length, 'each run fetched once');
    const text = trailToText(auditTrail([...runs.parent, ...runs.children]));
    assert.deepEqual(
      text.split('\n').map((l) => l.replace(/^\S+ +/, '').replace(/ +/, ' ')),
      [
        '- started upgrade/lab to 1.34',
        'w1 node upgrade to 1.33.7: continued as new (1.0 s)',
        'w1 node upgrade to 1.33.7: done (3.0 s)',
        '- upgrade/lab continued as new',
        '- continued upgrade/lab to 1.34',
        'w1 node upgrade to 1.34.2: skipped (4.0 s)',
        '- upgrade/lab completed: upgraded to 1.34.2',
      ],
    );
  });

  it('follows a real continue-as-new chain, and stops where older runs are past retention', async () => {
    // Two runs of one upgrade saved from a real run that continued as new; the run before them is gone.
    const runsById: Record<string, { events: JsonEvent[] }> = {};
    for (const label of ['continued', 'completed']) {
      const h = saved(`upgrade_lab-can@${label}.json`);
      const ownRunId = attrs(h.events[0] as JsonEvent, 'workflowExecutionStartedEventAttributes').originalExecutionRunId as string;
      runsById[ownRunId] = h;
    }
    const newRunOf = (h: { events: JsonEvent[] }) =>
      attrs(h.events.at(-1) as JsonEvent, 'workflowExecutionContinuedAsNewEventAttributes')?.newExecutionRunId as string | undefined;
    const latest = Object.keys(runsById).find((id) => !newRunOf(runsById[id] as { events: JsonEvent[] })) as string;
    assert.ok(
      Object.values(runsById).some((h) => newRunOf(h) === latest),
      'the saved runs are linked by continue-as-new',
    );
    const real = {
      options: NO_CODEC,
      workflow: {
        getHandle: (workflowId: string, runId?: string) => ({
          describe: async () => ({ runId: latest }),
          fetchHistory: async () => {
            const h = workflowId === 'upgrade/lab-can' ? runsById[runId ?? ''] : undefined; // node workflows: not saved, as if past retention
            if (!h) throw Object.assign(new Error(`workflow run ${runId} not found`), { code: 5 });
            return historyFromJSON(h);
          },
        }),
      },
    } as unknown as Client;
    const runs = await fetchUpgradeRuns(real, 'lab-can');
    assert.equal(runs.earlierRunsMissing, true);
    assert.equal(runs.parent.length, 2);
    assert.equal(runs.parent[1]?.runId, latest);
    assert.deepEqual(runs.children, []);
    const text = trailToText(auditTrail(runs.parent)).split('\n');
    assert.match(text.find((l) => / upgrade\/lab-can continued as new$/.test(l)) ?? '', /^\S+ +- /);
    assert.equal(text.filter((l) => / continued upgrade\/lab-can to 1\.34$/.test(l)).length, 2);
    assert.match(text.at(-1) ?? '', / upgrade\/lab-can completed: upgraded to 1\.34\.2$/);
  });
});

describe('audit trail of a run that quarantined a node (test/replay/histories, --on-drain-timeout quarantine)', () => {
  // The node the e2e quarantined is the one its scheduler put `solo` on: read it from the child's file name.
  const childFile = readdirSync(join(repoRoot, 'test', 'replay', 'histories')).find((f) =>
    /^upgrade_quarantine_.+@quarantined\.json$/.test(f),
  ) as string;
  const childId = childFile.replace(/@quarantined\.json$/, '').replace(/_/g, '/');
  const node = childId.split('/').at(-1) as string;
  const entries = auditTrail([run('upgrade/quarantine', saved('upgrade_quarantine@quarantined.json')), run(childId, saved(childFile))]);
  const text = trailToText(entries);

  it('shows the drain that timed out, the quarantine step, the node ending quarantined and the run naming it', () => {
    const drain = steps(entries).find((s) => s.activity === 'drainNode' && s.node === node);
    assert.equal(drain?.outcome, 'failed');
    assert.match(drain?.message ?? '', /did not finish within 5 s/);
    const q = steps(entries).find((s) => s.activity === 'quarantineNode');
    assert.equal(q?.outcome, 'completed');
    assert.equal(q?.node, node);
    assert.ok(entries.some((e) => e.kind === 'node' && e.node === node && e.outcome === 'quarantined'));
    assert.match(text, new RegExp(`${node} at 1\\.32\\.4 QUARANTINED, left cordoned`));
  });
});
