import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { historyFromJSON } from '@temporalio/common/lib/proto-utils.js';
import type { RunHistory } from '../../client/audit-trail.js';
import { timelineFromRuns } from '../../client/timeline/timeline-from-runs.js';
import { compareNodeNames, TIMELINE_COLOURS, TIMELINE_PHASES, type Timeline } from '../../client/timeline/timeline-model.js';
import { renderTimelineSvg } from '../../client/timeline/timeline-svg.js';
import { repoRoot } from '../helpers/run-cli.js';

type JsonEvent = Record<string, unknown> & { eventId: string; eventType: string; eventTime: string };
const saved = (name: string): { events: JsonEvent[] } =>
  JSON.parse(readFileSync(join(repoRoot, 'test', 'replay', 'histories', name), 'utf8'));
const run = (workflowId: string, history: { events: JsonEvent[] }): RunHistory => ({
  workflowId,
  runId: 'r',
  events: historyFromJSON(history).events ?? [],
});
const ms = (e: JsonEvent) => Math.floor(Date.parse(e.eventTime.replace(/(\.\d{3})\d*Z$/, '$1Z')));
const activityName = (e: JsonEvent) => (e.activityTaskScheduledEventAttributes as { activityType: { name: string } }).activityType.name;

const parentJson = saved('upgrade_e2e.json');
const workerJson = saved('upgrade_e2e_1.33.7_worker-3.json');
const cpJson = saved('upgrade_e2e_1.33.7_cp-1.json');
const e2eRuns = () => [
  run('upgrade/e2e', parentJson),
  run('upgrade/e2e/1.33.7/worker-3', workerJson),
  run('upgrade/e2e/1.33.7/cp-1', cpJson),
];
const scheduled = (...histories: { events: JsonEvent[] }[]) =>
  histories.flatMap((h) => h.events.filter((e) => e.eventType === 'EVENT_TYPE_ACTIVITY_TASK_SCHEDULED'));

/** Collapses repeats: [a, a, b] → [a, b]. */
const runsOf = <T>(xs: T[]) => xs.filter((x, i) => i === 0 || x !== xs[i - 1]);
const isSubsequence = <T>(needle: T[], hay: T[]) => {
  let i = 0;
  for (const x of hay) if (x === needle[i]) i++;
  return i === needle.length;
};

/** Well-formed enough for any SVG viewer: every tag closed in order, attributes quoted, no raw `<` or `&` in text. */
function assertWellFormed(svg: string) {
  const stack: string[] = [];
  const tag = /<(\/?)([a-zA-Z][\w-]*)((?:\s+[\w:-]+="[^"<&]*(?:&(?:amp|lt|gt|quot|apos);[^"<&]*)*")*)\s*(\/?)>/y;
  let i = 0;
  while (i < svg.length) {
    const lt = svg.indexOf('<', i);
    const text = svg.slice(i, lt === -1 ? svg.length : lt);
    assert.doesNotMatch(text, /&(?!(?:amp|lt|gt|quot|apos);)|>/, `raw & or > in text ${JSON.stringify(text)}`);
    if (lt === -1) break;
    tag.lastIndex = lt;
    const m = tag.exec(svg);
    assert.ok(m, `malformed tag at ${lt}: ${svg.slice(lt, lt + 80)}`);
    const [whole, closing, name, , selfClosing] = m;
    if (closing) assert.equal(stack.pop(), name, `</${name}> closes the wrong element`);
    else if (!selfClosing) stack.push(name as string);
    i = lt + whole.length;
  }
  assert.deepEqual(stack, [], 'every element closed');
  assert.match(svg, /^<svg xmlns="http:\/\/www\.w3\.org\/2000\/svg" /);
}

const count = (text: string, re: RegExp) => text.match(re)?.length ?? 0;

describe('timelineFromRuns over the saved e2e histories', () => {
  const t = timelineFromRuns(e2eRuns(), 'upgrade/e2e');

  it('has a lane per node, the cluster first, control planes before workers, and one bar per activity', () => {
    assert.deepEqual(t.lanes, ['cluster', 'cp-1', 'worker-3']);
    assert.equal(t.title, 'upgrade/e2e');
    assert.equal(t.bars.length, scheduled(parentJson, workerJson, cpJson).length);
    assert.deepEqual(t.bars.map((b) => b.label?.split(':')[0]).sort(), scheduled(parentJson, workerJson, cpJson).map(activityName).sort());
    for (const b of t.bars) {
      assert.ok(t.lanes.includes(b.lane), b.lane);
      assert.ok(TIMELINE_PHASES.includes(b.phase), b.phase);
      assert.ok(b.endMs >= b.startMs, `${b.lane} ${b.label} ends before it starts`);
    }
  });

  it('orders the bars of a lane as the steps ran, from their scheduling to their completion', () => {
    for (const lane of t.lanes) {
      const starts = t.bars.filter((b) => b.lane === lane).map((b) => b.startMs);
      assert.deepEqual(
        starts,
        [...starts].sort((a, b) => a - b),
        lane,
      );
    }
    // The worker's bars are its node workflow's activities, at the times the history records.
    const worker = t.bars.filter((b) => b.lane === 'worker-3');
    const byId = new Map(workerJson.events.map((e) => [e.eventId, e]));
    const closes = workerJson.events.filter((e) => e.eventType === 'EVENT_TYPE_ACTIVITY_TASK_COMPLETED');
    assert.deepEqual(
      worker.map((b) => [b.startMs, b.endMs]),
      closes
        .map((c) => {
          const s = byId.get((c.activityTaskCompletedEventAttributes as { scheduledEventId: string }).scheduledEventId) as JsonEvent;
          return [ms(s), ms(c)];
        })
        .sort((a, b) => (a[0] as number) - (b[0] as number)),
    );
  });

  it("gives a worker its phases in the runbook's order, and a control plane its snapshot", () => {
    const phases = (lane: string) => runsOf(t.bars.filter((b) => b.lane === lane).map((b) => b.phase));
    assert.deepEqual(phases('worker-3').slice(0, 8), [
      'cordon',
      'drain',
      'packages',
      'kubeadm',
      'packages',
      'kubelet',
      'verify',
      'uncordon',
    ]);
    assert.ok(
      isSubsequence(['snapshot', 'packages', 'cordon', 'drain', 'packages', 'kubelet', 'verify', 'uncordon'], phases('cp-1')),
      phases('cp-1').join(' '),
    );
    // Steps on no one node (inventory, stage labels, workload checks) are the cluster's.
    assert.ok(
      t.bars
        .filter((b) => b.lane === 'cluster')
        .every((b) => /^(takeInventory|setStageLabels|clearStageLabels|checkWorkloads)\b/.test(b.label ?? '')),
    );
  });

  it("draws a blocked node from the block the parent was told of to the operator's resolution", () => {
    const json = saved('upgrade_user-a.json');
    const blocked = timelineFromRuns([run('upgrade/user-a', json)], 'user-a').bars.filter((b) => b.phase === 'blocked');
    const signal = json.events.find(
      (e) => e.eventType === 'EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED' && JSON.stringify(e).includes('"nodeBlocked"'),
    ) as JsonEvent;
    const update = json.events.find(
      (e) => e.eventType === 'EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED' && JSON.stringify(e).includes('"resolveDrain"'),
    ) as JsonEvent;
    assert.deepEqual(
      blocked.map((b) => [b.lane, b.startMs, b.endMs]),
      [['worker-1', ms(signal), ms(update)]],
    );
  });

  it('works for a maintenance and a blue/green run (the same node workflow)', () => {
    const maintain = timelineFromRuns(
      [run('maintain/mnt', saved('maintain_mnt.json')), run('maintain/mnt/worker-1', saved('maintain_mnt_worker-1.json'))],
      'maintain/mnt',
    );
    assert.ok(maintain.lanes.includes('worker-1'));
    assert.ok(
      isSubsequence(
        ['cordon', 'drain', 'other', 'verify', 'uncordon'],
        runsOf(maintain.bars.filter((b) => b.lane === 'worker-1').map((b) => b.phase)),
      ),
    );
    const bluegreen = timelineFromRuns(
      [run('bluegreen/bg', saved('bluegreen_bg@replaced.json')), run('bluegreen/bg/blue-1', saved('bluegreen_bg_blue-1.json'))],
      'bluegreen/bg',
    );
    assert.ok(bluegreen.lanes.includes('blue-1'));
    assert.ok(bluegreen.bars.some((b) => b.lane === 'blue-1' && b.phase === 'drain'));
    assert.equal(bluegreen.lanes[0], 'cluster');
  });

  it("places an encrypted node workflow by its workflow id and the parent's undecodable steps on the cluster lane", () => {
    // Every payload as the codec writes it, without the key to open it.
    const encrypted = (h: { events: JsonEvent[] }) =>
      JSON.parse(
        JSON.stringify(h, (key, value) =>
          value && typeof value === 'object' && 'metadata' in value && 'data' in value
            ? { metadata: { encoding: Buffer.from('binary/encrypted').toString('base64') }, data: Buffer.from('sealed').toString('base64') }
            : value,
        ),
      ) as { events: JsonEvent[] };
    const t2 = timelineFromRuns(
      [run('upgrade/e2e', encrypted(parentJson)), run('upgrade/e2e/1.33.7/worker-3', encrypted(workerJson))],
      'sealed',
    );
    assert.deepEqual(t2.lanes, ['cluster', 'worker-3']);
    assert.equal(t2.bars.length, scheduled(parentJson, workerJson).length);
    assert.deepEqual(runsOf(t2.bars.filter((b) => b.lane === 'worker-3').map((b) => b.phase)).slice(0, 8), [
      'cordon',
      'drain',
      'packages',
      'kubeadm',
      'packages',
      'kubelet',
      'verify',
      'uncordon',
    ]);
    assert.ok(
      t2.bars.every((b) => !b.label?.includes(':')),
      'no summary could be read',
    );
  });

  it("ends a step still running at its run's last event", () => {
    const events = workerJson.events;
    const lastDrain = events.findIndex(
      (e) =>
        e.eventType === 'EVENT_TYPE_ACTIVITY_TASK_STARTED' &&
        (e.activityTaskStartedEventAttributes as { scheduledEventId: string }).scheduledEventId ===
          events.find((s) => s.eventType === 'EVENT_TYPE_ACTIVITY_TASK_SCHEDULED' && activityName(s) === 'drainNode')?.eventId,
    );
    const cut = { events: events.slice(0, lastDrain + 1) };
    const bars = timelineFromRuns([run('upgrade/e2e/1.33.7/worker-3', cut)], 'running').bars;
    assert.deepEqual(
      bars.map((b) => b.phase),
      ['cordon', 'drain'],
    );
    assert.equal(bars[1]?.endMs, ms(events[lastDrain] as JsonEvent));
    assert.match(bars[1]?.label ?? '', /\(running\)$/);
  });
});

/** A synthetic rollout of `count` workers, in the temporal CLI's JSON form: a node workflow each, its steps a second apart, nodes `gapMs` apart. */
function syntheticRollout(count: number, gapMs = 100): RunHistory[] {
  const b64 = (text: string) => Buffer.from(text).toString('base64');
  const payloads = (v: unknown) => ({ payloads: [{ metadata: { encoding: b64('json/plain') }, data: b64(JSON.stringify(v)) }] });
  const at = (t: number) => new Date(t).toISOString();
  const steps = [
    'cordonNode',
    'drainNode',
    'installPackages',
    'kubeadmUpgradeNode',
    'installPackages',
    'restartKubelet',
    'checkNodeReady',
    'uncordonNode',
  ];
  return Array.from({ length: count }, (_, i) => {
    const node = `worker-${i + 1}`;
    const t0 = 1_800_000_000_000 + i * gapMs;
    const events: JsonEvent[] = [
      {
        eventId: '1',
        eventTime: at(t0),
        eventType: 'EVENT_TYPE_WORKFLOW_EXECUTION_STARTED',
        workflowExecutionStartedEventAttributes: {
          workflowType: { name: 'nodeUpgradeWorkflow' },
          input: payloads({ node, role: 'worker', step: 'node' }),
        },
      },
    ];
    steps.forEach((name, k) => {
      const id = 2 + k * 2;
      events.push({
        eventId: String(id),
        eventTime: at(t0 + k * 1000),
        eventType: 'EVENT_TYPE_ACTIVITY_TASK_SCHEDULED',
        activityTaskScheduledEventAttributes: { activityType: { name }, input: payloads({ cluster: 'big', node }) },
      });
      events.push({
        eventId: String(id + 1),
        eventTime: at(t0 + k * 1000 + 900),
        eventType: 'EVENT_TYPE_ACTIVITY_TASK_COMPLETED',
        activityTaskCompletedEventAttributes: { scheduledEventId: String(id) },
      });
    });
    return run(`upgrade/big/1.33.7/${node}`, { events });
  });
}

describe('renderTimelineSvg', () => {
  const small = timelineFromRuns(e2eRuns(), 'upgrade/e2e');

  it('is well-formed: one rect per bar plus one per phase of the legend, every lane named, the title and the total', () => {
    const svg = renderTimelineSvg(small);
    assertWellFormed(svg);
    const phases = new Set(small.bars.map((b) => b.phase));
    assert.equal(count(svg, /<rect /g), small.bars.length + phases.size);
    assert.equal(count(svg, /<title>/g), small.bars.length);
    for (const lane of small.lanes) assert.match(svg, new RegExp(`>${lane}</text>`));
    for (const phase of phases) assert.match(svg, new RegExp(`fill="${TIMELINE_COLOURS[phase]}"/>\\n<text [^>]*>${phase}</text>`));
    assert.ok(svg.includes('>upgrade/e2e</text>'));
    const first = Math.min(...small.bars.map((b) => b.startMs));
    const last = Math.max(...small.bars.map((b) => b.endMs));
    assert.ok(svg.includes(`total ${((last - first) / 1000).toFixed(1)} s · 3 lanes · ${small.bars.length} bars`), svg.slice(0, 600));
    // Ticks: from 0, evenly spaced, at most a dozen.
    const ticks = [...svg.matchAll(/text-anchor="middle" fill="#444444">([\d.]+)</g)].map((m) => Number(m[1]));
    assert.equal(ticks[0], 0);
    assert.ok(ticks.length >= 2 && ticks.length <= 12, ticks.join(' '));
    assert.ok((ticks.at(-1) as number) <= (last - first) / 1000 + 1e-9);
  });

  it('is the same for the same timeline, and escapes every text', () => {
    const svg = renderTimelineSvg(small);
    assert.equal(renderTimelineSvg(structuredClone(small)), svg);
    const t: Timeline = {
      title: 'run <"1"> & \'2\'',
      lanes: ['cluster', 'a<b&c'],
      bars: [
        { lane: 'a<b&c', phase: 'drain', startMs: 1000, endMs: 2500, label: 'drain <x> & "y"' },
        { lane: 'cluster', phase: 'other', startMs: 0, endMs: 500, label: 'bad \u0001 byte' },
        // A lane the list left out still gets a row; a bar that ends before it starts is a point.
        { lane: 'late\uD800', phase: 'blocked', startMs: 3000, endMs: 2000 },
      ],
    };
    const out = renderTimelineSvg(t);
    assertWellFormed(out);
    assert.ok(out.includes('>a&lt;b&amp;c</text>') && !out.includes('a<b&c'));
    assert.ok(out.includes('run &lt;&quot;1&quot;&gt; &amp; &apos;2&apos;'));
    assert.ok(out.includes('drain &lt;x&gt; &amp; &quot;y&quot;'));
    assert.ok(!out.includes('\u0001') && out.includes('late\uFFFD'));
    assert.equal(count(out, /<rect /g), 3 + 3);
    assert.match(out, /total 3\.00 s · 3 lanes · 3 bars/);
  });

  it('draws an empty timeline', () => {
    const out = renderTimelineSvg({ title: 'nothing', lanes: [], bars: [] });
    assertWellFormed(out);
    assert.equal(count(out, /<rect /g), 0);
    assert.match(out, /no steps recorded/);
  });

  it('handles a 1,000-node rollout: natural lane order, thin rows, every k-th lane named', () => {
    const runs = syntheticRollout(1000);
    const t = timelineFromRuns(runs, 'upgrade/big');
    assert.equal(t.lanes.length, 1000);
    assert.deepEqual(t.lanes.slice(0, 3), ['worker-1', 'worker-2', 'worker-3']);
    assert.ok(t.lanes.indexOf('worker-2') < t.lanes.indexOf('worker-10') && t.lanes.indexOf('worker-99') < t.lanes.indexOf('worker-100'));
    assert.equal(t.bars.length, 8000);
    const svg = renderTimelineSvg(t);
    assertWellFormed(svg);
    assert.equal(count(svg, /<rect /g), 8000 + new Set(t.bars.map((b) => b.phase)).size);
    const heights = new Set(
      [...svg.matchAll(/<rect x="[\d.]+" y="[\d.]+" width="[\d.]+" height="(\d+)" fill="#\w+"><title>/g)].map((m) => Number(m[1])),
    );
    assert.equal(heights.size, 1);
    const h = [...heights][0] as number;
    assert.ok(h >= 2 && h < 18, `row height ${h}`);
    const named = t.lanes.filter((lane) => svg.includes(`>${lane}</text>`));
    assert.ok(named.length >= 50 && named.length < 1000, `${named.length} lanes named`);
    assert.ok(named.includes('worker-1'));
  });

  it('orders node names naturally and the same everywhere, as the rollout plan does', () => {
    const names = ['worker-10', 'cp-2', 'worker-2', 'worker-1', 'cp-10', 'Worker-3', 'worker-02', 'w', 'worker-1a'];
    // Equal numbers written differently (02, 2) fall back to code-point order: rules/natural-order.ts.
    assert.deepEqual([...names].sort(compareNodeNames), [
      'Worker-3',
      'cp-2',
      'cp-10',
      'w',
      'worker-1',
      'worker-1a',
      'worker-02',
      'worker-2',
      'worker-10',
    ]);
  });
});
