import { tsToMs, type RunHistory } from '../client/audit-trail.js';
import { median } from './node-breakdown.js';

/**
 * Where the upgrade's wall went between its node workflows, from the parent's own history: each wave
 * of node workflows (those one workflow task started together: a batch of the plan), how long the
 * Temporal server took to start them (the wave's initiation → its last ChildWorkflowExecutionStarted),
 * how long until its slowest node workflow closed, and the parent's time between one wave's last close
 * and the next wave (the workload check, the gates, a continue-as-new). With waves that do not overlap
 * (batches in lockstep) the wall is: before the first wave + the waves + between them + after the last.
 */
export interface PhaseBreakdown {
  waves: number;
  /** Node workflows per wave: mean and max. */
  nodesMean: number;
  nodesMax: number;
  /** Seconds from a wave's initiation to its last node workflow started, per wave: mean, max, total. */
  startingMeanSeconds: number;
  startingMaxSeconds: number;
  startingTotalSeconds: number;
  /** Seconds a child start took on the server (initiated → started), median over node workflows. */
  childStartMedianSeconds: number;
  /** Seconds from a wave's initiation to its last node workflow closed: total over the waves. */
  wavesTotalSeconds: number;
  /** The slowest node workflow of each wave (its started → closed), mean over waves, seconds. */
  slowestNodeMeanSeconds: number;
  /** The parent alone: before the first wave, between waves (total), after the last one. */
  beforeSeconds: number;
  betweenTotalSeconds: number;
  afterSeconds: number;
  /** Some wave began before the one before it had closed (a sliding window): the sums then overlap. */
  overlapping: boolean;
}

interface Wave {
  initiatedAt: number;
  started: number[];
  closed: number[];
  spans: number[];
}

const CLOSED = [
  'childWorkflowExecutionCompletedEventAttributes',
  'childWorkflowExecutionFailedEventAttributes',
  'childWorkflowExecutionCanceledEventAttributes',
  'childWorkflowExecutionTerminatedEventAttributes',
  'childWorkflowExecutionTimedOutEventAttributes',
] as const;

const s3 = (ms: number) => Number((ms / 1000).toFixed(3));

/** undefined when no parent run started a node workflow. */
export function phaseBreakdown(runs: RunHistory[]): PhaseBreakdown | undefined {
  const parents = runs.filter((r) =>
    r.events.some((e) => e.startChildWorkflowExecutionInitiatedEventAttributes?.workflowType?.name === 'nodeUpgradeWorkflow'),
  );
  if (parents.length === 0) return undefined;
  const waves: Wave[] = [];
  const childStarts: number[] = [];
  let first = Infinity;
  let last = -Infinity;
  for (const run of parents) {
    first = Math.min(first, tsToMs(run.events[0]?.eventTime));
    last = Math.max(last, tsToMs(run.events.at(-1)?.eventTime));
    const byTask = new Map<string, Wave>();
    const child = new Map<string, { wave: Wave; initiatedAt: number; startedAt?: number }>();
    for (const e of run.events) {
      const at = tsToMs(e.eventTime);
      const init = e.startChildWorkflowExecutionInitiatedEventAttributes;
      if (init) {
        if (init.workflowType?.name !== 'nodeUpgradeWorkflow') continue;
        const task = String(init.workflowTaskCompletedEventId);
        let wave = byTask.get(task);
        if (!wave) byTask.set(task, (wave = { initiatedAt: at, started: [], closed: [], spans: [] }));
        child.set(String(e.eventId), { wave, initiatedAt: at });
        continue;
      }
      const started = e.childWorkflowExecutionStartedEventAttributes;
      if (started) {
        const c = child.get(String(started.initiatedEventId));
        if (!c) continue;
        c.startedAt = at;
        c.wave.started.push(at);
        childStarts.push(at - c.initiatedAt);
        continue;
      }
      for (const k of CLOSED) {
        const closed = e[k];
        if (!closed) continue;
        const c = child.get(String(closed.initiatedEventId));
        if (!c) break;
        c.wave.closed.push(at);
        c.wave.spans.push(at - (c.startedAt ?? c.initiatedAt));
        break;
      }
    }
    waves.push(...byTask.values());
  }
  const done = waves.filter((w) => w.closed.length > 0).sort((x, y) => x.initiatedAt - y.initiatedAt);
  if (done.length === 0) return undefined;
  const ends = done.map((w) => Math.max(...w.closed));
  const starting = done.map((w) => (w.started.length ? Math.max(...w.started) : w.initiatedAt) - w.initiatedAt);
  let between = 0;
  let overlapping = false;
  for (let k = 1; k < done.length; k++) {
    const gap = (done[k] as Wave).initiatedAt - (ends[k - 1] as number);
    if (gap < 0) overlapping = true;
    else between += gap;
  }
  const sum = (xs: number[]) => xs.reduce((a, b) => a + b, 0);
  const sizes = done.map((w) => w.closed.length);
  return {
    waves: done.length,
    nodesMean: Number((sum(sizes) / done.length).toFixed(1)),
    nodesMax: Math.max(...sizes),
    startingMeanSeconds: s3(sum(starting) / done.length),
    startingMaxSeconds: s3(Math.max(...starting)),
    startingTotalSeconds: s3(sum(starting)),
    childStartMedianSeconds: s3(median(childStarts)),
    wavesTotalSeconds: s3(sum(done.map((w, k) => (ends[k] as number) - w.initiatedAt))),
    slowestNodeMeanSeconds: s3(sum(done.map((w) => Math.max(...w.spans))) / done.length),
    beforeSeconds: s3((done[0] as Wave).initiatedAt - first),
    betweenTotalSeconds: s3(between),
    afterSeconds: s3(last - Math.max(...ends)),
    overlapping,
  };
}
