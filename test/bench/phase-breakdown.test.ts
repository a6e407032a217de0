import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { historyFromJSON } from '@temporalio/common/lib/proto-utils.js';
import { phaseBreakdown } from '../../bench/phase-breakdown.js';
import { repoRoot } from '../helpers/run-cli.js';

type JsonEvent = Record<string, unknown> & { eventId: string; eventType: string; eventTime: string };
const saved = (name: string): { events: JsonEvent[] } =>
  JSON.parse(readFileSync(join(repoRoot, 'test', 'replay', 'histories', name), 'utf8'));
const ms = (e: JsonEvent) => Math.floor(Date.parse(e.eventTime.replace(/(\.\d{3})\d*Z$/, '$1Z')));
const attrs = (e: JsonEvent) => Object.entries(e).find(([k]) => k.endsWith('EventAttributes'))?.[1] as Record<string, string>;
const run = (json: { events: JsonEvent[] }, runId = 'p') => ({
  workflowId: 'upgrade/e2e',
  runId,
  events: historyFromJSON(json).events ?? [],
});

describe("where the parent's wall went between node workflows (bench/phase-breakdown.ts)", () => {
  const parent = saved('upgrade_e2e.json');

  it('groups the node workflows one workflow task started into a wave, and the parts add up to the wall', () => {
    const b = phaseBreakdown([run(parent)]);
    assert.ok(b);
    // Worked out here from the JSON directly.
    const initiated = parent.events.filter((e) => e.eventType === 'EVENT_TYPE_START_CHILD_WORKFLOW_EXECUTION_INITIATED');
    const tasks = [...new Set(initiated.map((e) => attrs(e).workflowTaskCompletedEventId))];
    const of = (type: string, id: string) => parent.events.find((e) => e.eventType === type && attrs(e).initiatedEventId === id)!;
    const waves = tasks.map((t) => {
      const kids = initiated.filter((e) => attrs(e).workflowTaskCompletedEventId === t);
      const at = ms(kids[0]!);
      const started = Math.max(...kids.map((k) => ms(of('EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_STARTED', k.eventId))));
      const closed = Math.max(...kids.map((k) => ms(of('EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_COMPLETED', k.eventId))));
      return { at, size: kids.length, starting: started - at, end: closed };
    });
    assert.ok(waves.length > 5 && waves.some((w) => w.size === 2), 'the fixture has a canary and batches of two');
    assert.equal(b.waves, waves.length);
    assert.equal(b.nodesMax, 2);
    assert.equal(b.nodesMean, Number((initiated.length / waves.length).toFixed(1)));
    assert.equal(b.startingTotalSeconds, Number((waves.reduce((n, w) => n + w.starting, 0) / 1000).toFixed(3)));
    assert.equal(b.beforeSeconds, Number(((waves[0]!.at - ms(parent.events[0]!)) / 1000).toFixed(3)));
    assert.equal(b.afterSeconds, Number(((ms(parent.events.at(-1)!) - waves.at(-1)!.end) / 1000).toFixed(3)));
    assert.equal(b.overlapping, false);
    const wall = (ms(parent.events.at(-1)!) - ms(parent.events[0]!)) / 1000;
    const parts = b.beforeSeconds + b.wavesTotalSeconds + b.betweenTotalSeconds + b.afterSeconds;
    assert.ok(Math.abs(parts - wall) < 0.002 * (waves.length + 3), `before + waves + between + after = ${parts} s, wall ${wall} s`);
    assert.ok(b.slowestNodeMeanSeconds > 0 && b.slowestNodeMeanSeconds * waves.length <= b.wavesTotalSeconds);
  });

  it('says when waves overlap (a sliding window), and is undefined for a run that started no node workflow', () => {
    // Move the second wave's start before the first one's close: the same events otherwise.
    const initiated = parent.events.filter((e) => e.eventType === 'EVENT_TYPE_START_CHILD_WORKFLOW_EXECUTION_INITIATED');
    const second = initiated[1]!;
    const early = structuredClone(parent);
    const moved = early.events.find((e) => e.eventId === second.eventId)!;
    moved.eventTime = initiated[0]!.eventTime;
    assert.equal(phaseBreakdown([run(early)])?.overlapping, true);
    const none = { events: parent.events.filter((e) => !e.eventType.includes('CHILD_WORKFLOW')) };
    assert.equal(phaseBreakdown([run(none)]), undefined);
  });
});
