import type { RunHistory } from '../client/audit-trail.js';

/**
 * What a run cost Temporal, from the histories of the upgrade's runs and its node workflows: workflow
 * tasks (each one the worker's round trip to decide the next commands), activity tasks (every attempt),
 * and actions the way Temporal Cloud bills them, from its published mapping of history events to
 * actions (docs.temporal.io/cloud/actions, "Estimate Actions from Workflow Execution Histories"):
 *
 * - a workflow started: each run's WorkflowExecutionStarted (a client's start, a continue-as-new, a child);
 * - a child started: 2 actions (the intent, StartChildWorkflowExecutionInitiated, and the start itself,
 *   the child's WorkflowExecutionStarted, counted above);
 * - an activity scheduled, and each retry (ActivityTaskStarted's attempt − 1: retries leave no event of their own);
 * - a timer started (`sleep`, a `condition` with a timeout);
 * - a signal received (WorkflowExecutionSignaled; the sender's SignalExternal… event is not counted again);
 * - an update accepted;
 * - a search attribute upsert, unless it sets only TemporalChangeVersion (patched()'s own);
 * - markers, one per workflow task that records any (Cloud counts a task's markers as one: local
 *   activities'), except patched()'s own `core_patch` markers, left out as versioning, like the
 *   TemporalChangeVersion upsert that goes with each (Cloud exempts that one by name; counted apart here).
 *
 * Not in a history, so not here: queries (a follower's status every 2 s), activity heartbeats that reach
 * the server, and an update rejected. The server's own `action` counter (bench/temporal-actions.ts) has them.
 */
export interface TemporalCost {
  /** Runs in the histories: the upgrade's (continue-as-new makes several) and its node workflows'. */
  workflowRuns: number;
  /** Workflow tasks the worker was given (WorkflowTaskStarted). */
  workflowTasks: number;
  /** Of them, failed or timed out (each given again): by cause, e.g. UnhandledCommand (new events came while the task ran). */
  workflowTaskFailures: Record<string, number>;
  /** Activity attempts (each ActivityTaskStarted's attempt: the last attempt's event records how many there were). */
  activityTasks: number;
  /** Actions by kind, and in all. */
  actions: { total: number; byKind: Record<string, number> };
  /** patched()'s markers, not among the actions (above). */
  patchMarkers: number;
  /** Per node and hop. */
  perNodeHop: { workflowTasks: number; activityTasks: number; actions: number };
}

type Event = RunHistory['events'][number];

/** The action kinds one event counts for (most events: none). */
function actionsOf(e: Event): [string, number][] {
  if (e.workflowExecutionStartedEventAttributes) return [['workflow started', 1]];
  if (e.startChildWorkflowExecutionInitiatedEventAttributes) return [['child workflow start initiated', 1]];
  if (e.activityTaskScheduledEventAttributes) return [['activity scheduled', 1]];
  const started = e.activityTaskStartedEventAttributes;
  if (started && (started.attempt ?? 1) > 1) return [['activity retried', (started.attempt ?? 1) - 1]];
  if (e.timerStartedEventAttributes) return [['timer started', 1]];
  if (e.workflowExecutionSignaledEventAttributes) return [['signal', 1]];
  if (e.workflowExecutionUpdateAcceptedEventAttributes) return [['update accepted', 1]];
  const upsert = e.upsertWorkflowSearchAttributesEventAttributes;
  if (upsert) {
    const keys = Object.keys(upsert.searchAttributes?.indexedFields ?? {});
    return keys.some((k) => k !== 'TemporalChangeVersion') ? [['search attributes upserted', 1]] : [];
  }
  if (e.workflowExecutionOptionsUpdatedEventAttributes) return [['workflow options updated', 1]];
  return [];
}

export function temporalCost(runs: readonly RunHistory[], nodeHops: number): TemporalCost {
  let workflowTasks = 0;
  let activityTasks = 0;
  let patchMarkers = 0;
  const failures = new Map<string, number>();
  const byKind = new Map<string, number>();
  const add = (kind: string, n: number) => byKind.set(kind, (byKind.get(kind) ?? 0) + n);
  for (const run of runs) {
    const markerTasks = new Set<string>();
    for (const e of run.events) {
      if (e.workflowTaskStartedEventAttributes) workflowTasks++;
      const failed = e.workflowTaskFailedEventAttributes;
      if (failed) failures.set(String(failed.cause ?? '?'), (failures.get(String(failed.cause ?? '?')) ?? 0) + 1);
      if (e.workflowTaskTimedOutEventAttributes) failures.set('timed out', (failures.get('timed out') ?? 0) + 1);
      if (e.activityTaskStartedEventAttributes) activityTasks += Math.max(1, e.activityTaskStartedEventAttributes.attempt ?? 1);
      const marker = e.markerRecordedEventAttributes;
      if (marker?.markerName === 'core_patch') patchMarkers++;
      else if (marker) markerTasks.add(String(marker.workflowTaskCompletedEventId ?? e.eventId));
      for (const [kind, n] of actionsOf(e)) add(kind, n);
    }
    if (markerTasks.size) add('markers (one per workflow task)', markerTasks.size);
  }
  const total = [...byKind.values()].reduce((a, b) => a + b, 0);
  const per = (n: number) => Math.round((n / Math.max(1, nodeHops)) * 10) / 10;
  return {
    workflowRuns: runs.length,
    workflowTasks,
    workflowTaskFailures: Object.fromEntries(failures),
    activityTasks,
    actions: { total, byKind: Object.fromEntries([...byKind].sort(([, a], [, b]) => b - a)) },
    patchMarkers,
    perNodeHop: { workflowTasks: per(workflowTasks), activityTasks: per(activityTasks), actions: per(total) },
  };
}
