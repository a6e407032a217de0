import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { historyFromJSON } from '@temporalio/common/lib/proto-utils.js';
import { median, nodeBreakdown } from '../../bench/node-breakdown.js';
import { repoRoot } from '../helpers/run-cli.js';

type JsonEvent = Record<string, unknown> & { eventId: string; eventType: string; eventTime: string };
const saved = (name: string): { events: JsonEvent[] } =>
  JSON.parse(readFileSync(join(repoRoot, 'test', 'replay', 'histories', name), 'utf8'));
const ms = (e: JsonEvent) => Math.floor(Date.parse(e.eventTime.replace(/(\.\d{3})\d*Z$/, '$1Z')));
const attrs = (e: JsonEvent, key: string) => e[key] as Record<string, string>;

describe('where a node workflow spent its time (bench/node-breakdown.ts)', () => {
  const worker = saved('upgrade_e2e_1.33.7_worker-3.json');
  const parent = saved('upgrade_e2e.json');
  const runs = [
    { workflowId: 'upgrade/e2e', runId: 'p', events: historyFromJSON(parent).events ?? [] },
    { workflowId: 'upgrade/e2e/1.33.7/worker-3', runId: 'w', events: historyFromJSON(worker).events ?? [] },
  ];

  it('splits a saved node history into queue, run and the time between steps, and leaves the parent out', () => {
    const b = nodeBreakdown(runs);
    assert.equal(b.nodeWorkflows, 1);
    // Worked out here from the JSON directly: steps run one after another in a node workflow.
    const byId = new Map(worker.events.map((e) => [e.eventId, e]));
    const scheduled = worker.events.filter((e) => e.eventType === 'EVENT_TYPE_ACTIVITY_TASK_SCHEDULED');
    const closed = worker.events.filter((e) => /^EVENT_TYPE_ACTIVITY_TASK_(COMPLETED|FAILED|TIMED_OUT|CANCELED)$/.test(e.eventType));
    const closeOf = (id: string) =>
      closed.find((e) =>
        Object.values(e).some((v) => typeof v === 'object' && v !== null && (v as Record<string, string>).scheduledEventId === id),
      )!;
    const startOf = (id: string) =>
      worker.events.find(
        (e) => e.eventType === 'EVENT_TYPE_ACTIVITY_TASK_STARTED' && attrs(e, 'activityTaskStartedEventAttributes').scheduledEventId === id,
      )!;
    let queue = 0;
    let between = ms(scheduled[0]!) - ms(worker.events[0]!);
    scheduled.forEach((s, i) => {
      queue += ms(startOf(s.eventId)) - ms(s);
      if (i > 0) between += ms(s) - ms(closeOf(scheduled[i - 1]!.eventId));
    });
    between += ms(worker.events.at(-1)!) - ms(closeOf(scheduled.at(-1)!.eventId));
    assert.ok(byId.size > 10);
    assert.equal(b.perNode.spanSeconds, Number(((ms(worker.events.at(-1)!) - ms(worker.events[0]!)) / 1000).toFixed(3)));
    assert.equal(b.perNode.queueSeconds, Number((queue / 1000).toFixed(3)));
    assert.equal(b.perNode.betweenStepsSeconds, Number((between / 1000).toFixed(3)));

    const names = scheduled.map((s) => (attrs(s, 'activityTaskScheduledEventAttributes').activityType as unknown as { name: string }).name);
    assert.deepEqual(Object.keys(b.activities), [...new Set(names)].sort());
    assert.equal(b.activities.installPackages?.count, names.filter((n) => n === 'installPackages').length);
    const drain = scheduled.find((s) => names[scheduled.indexOf(s)] === 'drainNode')!;
    assert.equal(b.activities.drainNode?.runMs, ms(closeOf(drain.eventId)) - ms(startOf(drain.eventId)));
    const sum = Object.values(b.activities).reduce((n, a) => n + (a.queueMs + a.runMs) * a.count, 0) / 1000;
    assert.ok(
      Math.abs(sum + b.perNode.betweenStepsSeconds - b.perNode.spanSeconds) < 0.01 * names.length + 0.002,
      'queue + run + between add up to the span',
    );
  });

  it('is empty without node workflows', () => {
    assert.deepEqual(nodeBreakdown(runs.slice(0, 1)), {
      nodeWorkflows: 0,
      activities: {},
      perNode: { spanSeconds: 0, queueSeconds: 0, betweenStepsSeconds: 0 },
      cordoned: { nodes: 0, medianSeconds: 0, maxSeconds: 0, open: 0, workers: 0, workerBeyondDrainAndRestartMedianSeconds: 0 },
    });
  });

  /** The activities of a saved node history with their started and closed times. */
  const steps = (h: { events: JsonEvent[] }) => {
    const started = new Map<string, number>();
    const out: { name: string; scheduledId: string; start: number; end: number }[] = [];
    const names = new Map<string, string>();
    for (const e of h.events) {
      const a = e.activityTaskScheduledEventAttributes as { activityType: { name: string } } | undefined;
      if (a) names.set(e.eventId, a.activityType.name);
      if (e.eventType === 'EVENT_TYPE_ACTIVITY_TASK_STARTED')
        started.set(attrs(e, 'activityTaskStartedEventAttributes').scheduledEventId!, ms(e));
      if (e.eventType === 'EVENT_TYPE_ACTIVITY_TASK_COMPLETED') {
        const id = attrs(e, 'activityTaskCompletedEventAttributes').scheduledEventId!;
        out.push({ name: names.get(id)!, scheduledId: id, start: started.get(id)!, end: ms(e) });
      }
    }
    return out;
  };

  it("a node's cordoned window: its cordon's start to its uncordon's end; with the work before the cordon, no kubeadm step is in it", () => {
    const current = saved('upgrade_e2e_1.33.13_worker-3@work-before-cordon.json');
    for (const [h, id, inside] of [
      [
        worker,
        'upgrade/e2e/1.33.7/worker-3',
        ['drainNode', 'installPackages', 'kubeadmUpgradeNode', 'installPackages', 'restartKubelet', 'checkNodeReady'],
      ],
      [current, 'upgrade/e2e/1.33.13/worker-3', ['drainNode', 'installPackages', 'restartKubelet', 'checkNodeReady']],
    ] as const) {
      const s = steps(h);
      const cordon = s.find((x) => x.name === 'cordonNode')!;
      const uncordon = s.find((x) => x.name === 'uncordonNode')!;
      const b = nodeBreakdown([...runs.slice(0, 1), { workflowId: id, runId: 'w', events: historyFromJSON(h).events ?? [] }]);
      const seconds = Number(((uncordon.end - cordon.start) / 1000).toFixed(3));
      // A worker's window beyond its drain and kubelet restart: the rest of what it did while out of service.
      const needed = s.filter((x) => x.name === 'drainNode' || x.name === 'restartKubelet').reduce((n, x) => n + x.end - x.start, 0);
      const beyond = Number(((uncordon.end - cordon.start - needed) / 1000).toFixed(3));
      assert.deepEqual(b.cordoned, {
        nodes: 1,
        medianSeconds: seconds,
        maxSeconds: seconds,
        open: 0,
        workers: 1,
        workerBeyondDrainAndRestartMedianSeconds: beyond,
      });
      assert.deepEqual(
        s.filter((x) => x.start > cordon.end && x.end < uncordon.start).map((x) => x.name),
        inside,
        `${id}: the steps while cordoned`,
      );
    }
    // Both node workflows in one run: the median of two is their mean, the max the longer.
    const both = nodeBreakdown([
      runs[1]!,
      { workflowId: 'upgrade/e2e/1.33.13/worker-3', runId: 'w2', events: historyFromJSON(current).events ?? [] },
    ]);
    const one = (h: { events: JsonEvent[] }) => {
      const s = steps(h);
      return s.find((x) => x.name === 'uncordonNode')!.end - s.find((x) => x.name === 'cordonNode')!.start;
    };
    const [a, c] = [one(worker), one(current)];
    assert.equal(both.cordoned.nodes, 2);
    assert.equal(both.cordoned.medianSeconds, Number(((a + c) / 2 / 1000).toFixed(3)));
    assert.equal(both.cordoned.maxSeconds, Number((Math.max(a, c) / 1000).toFixed(3)));
  });

  it('median: the middle value, the mean of the two middle ones, 0 for none', () => {
    assert.equal(median([3, 1, 2]), 2);
    assert.equal(median([4, 1, 3, 2]), 2.5);
    assert.equal(median([]), 0);
  });
});
