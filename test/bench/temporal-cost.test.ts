import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { historyFromJSON } from '@temporalio/common/lib/proto-utils.js';
import { actionDelta, parseActionCounter } from '../../bench/temporal-actions.js';
import { temporalCost } from '../../bench/temporal-cost.js';
import { repoRoot } from '../helpers/run-cli.js';

type JsonEvent = Record<string, unknown> & { eventId: string; eventType: string };
const saved = (name: string): { events: JsonEvent[] } =>
  JSON.parse(readFileSync(join(repoRoot, 'test', 'replay', 'histories', name), 'utf8'));
const run = (workflowId: string, h: { events: JsonEvent[] }) => ({
  workflowId,
  runId: workflowId,
  events: historyFromJSON(h).events ?? [],
});
const count = (h: { events: JsonEvent[] }, type: string) => h.events.filter((e) => e.eventType === `EVENT_TYPE_${type}`).length;

describe('what a run cost Temporal, from its histories (bench/temporal-cost.ts)', () => {
  it('counts workflow tasks, activity attempts and the actions Temporal Cloud bills for a saved upgrade and one node', () => {
    const parent = saved('upgrade_e2e.json');
    const node = saved('upgrade_e2e_1.33.7_worker-3.json');
    const c = temporalCost([run('upgrade/e2e', parent), run('upgrade/e2e/1.33.7/worker-3', node)], 4);
    const both = (type: string) => count(parent, type) + count(node, type);
    assert.equal(c.workflowRuns, 2);
    assert.equal(c.workflowTasks, both('WORKFLOW_TASK_STARTED'));
    assert.deepEqual(c.workflowTaskFailures, {}, 'no workflow task failed in these histories');
    assert.equal(c.activityTasks, both('ACTIVITY_TASK_STARTED'), 'no retries in these histories: one task per activity');
    assert.deepEqual(c.actions.byKind, {
      'activity scheduled': both('ACTIVITY_TASK_SCHEDULED'),
      'child workflow start initiated': count(parent, 'START_CHILD_WORKFLOW_EXECUTION_INITIATED'),
      'search attributes upserted': count(parent, 'UPSERT_WORKFLOW_SEARCH_ATTRIBUTES'),
      'workflow started': 2,
    });
    // The memo's changes (WorkflowPropertiesModified) are no action in Cloud's list.
    assert.ok(count(parent, 'WORKFLOW_PROPERTIES_MODIFIED') > 0);
    assert.equal(
      c.actions.total,
      Object.values(c.actions.byKind).reduce((a, b) => a + b, 0),
    );
    assert.equal(c.perNodeHop.workflowTasks, Math.round((c.workflowTasks / 4) * 10) / 10);
    assert.equal(c.perNodeHop.actions, Math.round((c.actions.total / 4) * 10) / 10);
  });

  it("counts a retried activity's attempts and leaves patched()'s markers and version upserts out of the actions", () => {
    const h = saved('upgrade_legacy@reversible-committed.json');
    const c = temporalCost([run('upgrade/legacy', h)], 1);
    const started = h.events.filter((e) => e.eventType === 'EVENT_TYPE_ACTIVITY_TASK_STARTED');
    const attempts = started.map((e) => Number((e.activityTaskStartedEventAttributes as { attempt?: number }).attempt ?? 1));
    assert.ok(
      attempts.some((a) => a > 1),
      'the history holds a retried activity',
    );
    assert.equal(
      c.activityTasks,
      attempts.reduce((a, b) => a + b, 0),
    );
    assert.equal(
      c.actions.byKind['activity retried'],
      attempts.reduce((a, b) => a + b - 1, 0),
    );
    assert.equal(c.patchMarkers, count(h, 'MARKER_RECORDED'));
    assert.equal(c.actions.byKind['markers (one per workflow task)'], undefined);
    const upserts = h.events.filter((e) => e.eventType === 'EVENT_TYPE_UPSERT_WORKFLOW_SEARCH_ATTRIBUTES');
    const versionOnly = upserts.filter((e) => {
      const fields = (e.upsertWorkflowSearchAttributesEventAttributes as { searchAttributes: { indexedFields: object } }).searchAttributes
        .indexedFields;
      return Object.keys(fields).join() === 'TemporalChangeVersion';
    });
    assert.ok(versionOnly.length > 0);
    assert.equal(c.actions.byKind['search attributes upserted'] ?? 0, upserts.length - versionOnly.length);
    assert.equal(c.actions.byKind['update accepted'], count(h, 'WORKFLOW_EXECUTION_UPDATE_ACCEPTED'));
  });

  it('counts the markers of one workflow task as one action, and timers and signals one each', () => {
    const t = '2026-12-05T07:00:00Z';
    const ev = (eventId: number, eventType: string, attrs: Record<string, unknown> = {}) => ({
      eventId: String(eventId),
      eventTime: t,
      eventType,
      ...attrs,
    });
    const marker = (id: number, task: number) =>
      ev(id, 'EVENT_TYPE_MARKER_RECORDED', {
        markerRecordedEventAttributes: { markerName: 'core_local_activity', workflowTaskCompletedEventId: String(task) },
      });
    const h = {
      events: [
        ev(1, 'EVENT_TYPE_WORKFLOW_EXECUTION_STARTED', { workflowExecutionStartedEventAttributes: { workflowType: { name: 'x' } } }),
        marker(5, 4),
        marker(6, 4),
        marker(10, 9),
        ev(11, 'EVENT_TYPE_TIMER_STARTED', { timerStartedEventAttributes: { timerId: '1', workflowTaskCompletedEventId: '9' } }),
        ev(12, 'EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED', { workflowExecutionSignaledEventAttributes: { signalName: 's' } }),
      ],
    };
    const c = temporalCost([run('w', h as unknown as { events: JsonEvent[] })], 1);
    assert.deepEqual(c.actions.byKind, { 'markers (one per workflow task)': 2, signal: 1, 'timer started': 1, 'workflow started': 1 });
    assert.equal(c.actions.total, 5);
  });
});

describe("the Temporal server's action counter (bench/temporal-actions.ts)", () => {
  const text = (n: number) =>
    [
      '# HELP action action counter',
      '# TYPE action counter',
      `action{action_type="grpc_QueryWorkflow",namespace="default",operation="QueryWorkflow",service_name="frontend"} ${n}`,
      'action{action_type="command_ScheduleActivityTask",namespace="default",operation="RespondWorkflowTaskCompleted",service_name="frontend"} 7',
      'action{action_type="grpc_StartWorkflowExecution",namespace="temporal_system",operation="StartWorkflowExecution",service_name="frontend"} 2',
      'action_other{action_type="x",namespace="default"} 9',
    ].join('\n');

  it("reads one namespace's counter by type and takes what grew over a run", () => {
    assert.deepEqual(parseActionCounter(text(3), 'default'), { grpc_QueryWorkflow: 3, command_ScheduleActivityTask: 7 });
    const d = actionDelta(parseActionCounter(text(3), 'default'), {
      ...parseActionCounter(text(10), 'default'),
      grpc_SignalWorkflowExecution: 1,
    });
    assert.deepEqual(d, { total: 8, byType: { grpc_QueryWorkflow: 7, grpc_SignalWorkflowExecution: 1 } });
  });
});
