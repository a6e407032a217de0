import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { historyFromJSON } from '@temporalio/common/lib/proto-utils.js';
import { nodeBreakdown } from '../../bench/node-breakdown.js';
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
    });
  });
});
