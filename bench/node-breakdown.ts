import { firstArg, tsToMs, type RunHistory } from '../client/audit-trail.js';

/**
 * Where a node's time went in a skewless run, from its node workflows' histories: each activity's
 * wait in the task queue (scheduled → started) and its run (started → closed), and the time between
 * activities (a step's close → the next one's scheduling: the workflow task that decides it), plus
 * the node workflow's start → first step and last step → end. The benchmark's overhead per node is
 * mostly in these numbers, not in the simulated waits. And how long each node was out of service:
 * its cordoned window, from its cordonNode activity's start to its uncordonNode activity's end (an
 * upper bound: the cordon lands inside the one and ends inside the other).
 */
export interface NodeBreakdown {
  nodeWorkflows: number;
  /** Per activity type: how many ran, mean ms in the queue, mean ms running. */
  activities: Record<string, { count: number; queueMs: number; runMs: number }>;
  /** Mean per node workflow, seconds: its whole span, in queues, between steps. */
  perNode: { spanSeconds: number; queueSeconds: number; betweenStepsSeconds: number };
  /** Node workflows that cordoned their node: its cordoned window's median and max, seconds; `open`: not uncordoned by the end (skipped). */
  cordoned: {
    nodes: number;
    medianSeconds: number;
    maxSeconds: number;
    open: number;
    /**
     * Workers only: what a window holds beyond the node's own drain and kubelet restart (their
     * activities' run times), median over the workers; issue 22's goal is 0.5 s at most.
     */
    workers: number;
    workerBeyondDrainAndRestartMedianSeconds: number;
  };
}

/** The middle value (the mean of the two middle ones for an even count); 0 for none. */
export function median(values: readonly number[]): number {
  if (values.length === 0) return 0;
  const v = [...values].sort((a, b) => a - b);
  const mid = Math.floor(v.length / 2);
  return v.length % 2 ? (v[mid] as number) : ((v[mid - 1] as number) + (v[mid] as number)) / 2;
}

const round = (n: number, digits = 1) => Number(n.toFixed(digits));

type ActivityTotals = Map<string, { count: number; queue: number; run: number }>;

/** One node workflow's times (ms), its activities added to `acc`; undefined for any other workflow. */
function nodeRunTimes(run: RunHistory, acc: ActivityTotals) {
  const started = run.events[0]?.workflowExecutionStartedEventAttributes;
  if (started?.workflowType?.name !== 'nodeUpgradeWorkflow' || run.events.length < 2) return undefined;
  const t0 = tsToMs(run.events[0]?.eventTime);
  const end = tsToMs(run.events.at(-1)?.eventTime);
  let queued = 0;
  let between = 0;
  const scheduled = new Map<string, { name: string; at: number; startedAt?: number }>();
  let free = t0; // when the workflow last had no step in flight
  let inFlight = 0;
  let cordonedAt: number | undefined;
  let uncordonedAt: number | undefined;
  let drainAndRestartMs = 0; // what a worker's window cannot do without
  const input = firstArg(started.input);
  const worker = typeof input === 'object' && input.role === 'worker';
  for (const e of run.events) {
    const at = tsToMs(e.eventTime);
    const s = e.activityTaskScheduledEventAttributes;
    if (s) {
      if (inFlight++ === 0) between += at - free;
      scheduled.set(String(e.eventId), { name: s.activityType?.name ?? '?', at });
      continue;
    }
    const st = e.activityTaskStartedEventAttributes;
    if (st) {
      const open = scheduled.get(String(st.scheduledEventId));
      if (open) {
        open.startedAt = at;
        queued += at - open.at;
        if (open.name === 'cordonNode' && cordonedAt === undefined) cordonedAt = at;
      }
      continue;
    }
    const closed =
      e.activityTaskCompletedEventAttributes ??
      e.activityTaskFailedEventAttributes ??
      e.activityTaskTimedOutEventAttributes ??
      e.activityTaskCanceledEventAttributes;
    if (!closed) continue;
    const open = scheduled.get(String(closed.scheduledEventId));
    if (!open) continue;
    scheduled.delete(String(closed.scheduledEventId));
    if (open.name === 'uncordonNode' && e.activityTaskCompletedEventAttributes) uncordonedAt = at;
    if (open.name === 'drainNode' || open.name === 'restartKubelet') drainAndRestartMs += at - (open.startedAt ?? at);
    const a = acc.get(open.name) ?? { count: 0, queue: 0, run: 0 };
    a.count++;
    a.queue += (open.startedAt ?? at) - open.at;
    a.run += at - (open.startedAt ?? at);
    acc.set(open.name, a);
    if (--inFlight === 0) free = at;
  }
  if (inFlight === 0) between += end - free;
  const cordoned = cordonedAt === undefined ? undefined : uncordonedAt === undefined ? ('open' as const) : uncordonedAt - cordonedAt;
  return { span: end - t0, queued, between, cordoned, worker, drainAndRestartMs };
}

export function nodeBreakdown(runs: RunHistory[]): NodeBreakdown {
  const acc: ActivityTotals = new Map();
  let nodeWorkflows = 0;
  let span = 0;
  let queued = 0;
  let between = 0;
  const windows: number[] = [];
  const workerExcess: number[] = [];
  let open = 0;
  for (const run of runs) {
    const t = nodeRunTimes(run, acc);
    if (!t) continue;
    nodeWorkflows++;
    span += t.span;
    queued += t.queued;
    between += t.between;
    if (t.cordoned === 'open') open++;
    else if (t.cordoned !== undefined) {
      windows.push(t.cordoned);
      if (t.worker) workerExcess.push(t.cordoned - t.drainAndRestartMs);
    }
  }
  const n = Math.max(nodeWorkflows, 1);
  return {
    nodeWorkflows,
    activities: Object.fromEntries(
      [...acc.entries()]
        .sort(([x], [y]) => x.localeCompare(y))
        .map(([name, a]) => [name, { count: a.count, queueMs: round(a.queue / a.count), runMs: round(a.run / a.count) }]),
    ),
    perNode: {
      spanSeconds: round(span / n / 1000, 3),
      queueSeconds: round(queued / n / 1000, 3),
      betweenStepsSeconds: round(between / n / 1000, 3),
    },
    cordoned: {
      nodes: windows.length + open,
      medianSeconds: round(median(windows) / 1000, 3),
      maxSeconds: round(Math.max(0, ...windows) / 1000, 3),
      open,
      workers: workerExcess.length,
      workerBeyondDrainAndRestartMedianSeconds: round(median(workerExcess) / 1000, 3),
    },
  };
}
