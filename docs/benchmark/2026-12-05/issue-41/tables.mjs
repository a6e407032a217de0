// Prints the tables of docs/benchmark.md "Issue 41: before and after" from bench result files:
//   node docs/benchmark/2026-12-05/issue-41/tables.mjs a=docs/benchmark/2026-12-05/issue-41/a-10x20-2hop/bench.json b=docs/benchmark/2026-12-05/issue-41/b-100x20-1hop/bench.json
import { readFileSync } from 'node:fs';
const files = process.argv.slice(2).map((a) => {
  const [label, path] = a.split('=');
  return { label, r: JSON.parse(readFileSync(path, 'utf8')) };
});
const runs = files.flatMap((f) => f.r.runs.filter((x) => x.tool === 'skewless').map((x) => ({ ...x, file: f.label })));
const r1 = (n) => Math.round(n * 10) / 10,
  r2 = (n) => Math.round(n * 100) / 100;
const nodeHops = (x) => (x.controlPlanes + x.workers) * x.hops;
const cell = (v) => (v === undefined || v === null ? '–' : String(v));
const out = [];
const table = (head, rows) => {
  out.push(
    `| ${head.join(' | ')} |`,
    `|${head.map((_, i) => (i ? '---:' : '---')).join('|')}|`,
    ...rows.map((r) => `| ${r.join(' | ')} |`),
    '',
  );
};
// 1. requests
out.push('REQUESTS');
table(
  [
    'run (file)',
    'requests',
    'evictions accepted',
    'per evicted pod',
    'per node·hop',
    'per node·hop beyond 2 per evicted pod',
    'peak in flight',
    'peak watches open',
    'longest streak under 1 s apart, by count',
    'the longest-lasting one (from 1e7df4f)',
  ],
  runs.map((x) => {
    const a = x.apiRequests,
      s = a.longestSubSecondStreak,
      l = a.longestLastingSubSecondStreak;
    return [
      `${x.id} (${x.file})`,
      a.total,
      a.evictions,
      a.perEvictedPod,
      a.perNodeHop,
      a.beyondTwoPerEvictionPerNodeHop,
      a.peakInFlight,
      a.peakWatches,
      s ? `${s.count} × \`${s.request}\`, ${s.meanGapSeconds} s apart` : '–',
      l ? `${l.count} × \`${l.request}\`, ${l.meanGapSeconds} s apart for ${l.spanSeconds} s` : '–',
    ];
  }),
);
// 2. by kind
out.push('BYKIND');
const kinds = [...new Set(runs.flatMap((x) => Object.keys(x.apiRequests.byKind)))].sort(
  (a, b) =>
    runs.reduce((n, x) => n + (x.apiRequests.byKind[b] ?? 0), 0) - runs.reduce((n, x) => n + (x.apiRequests.byKind[a] ?? 0), 0) ||
    a.localeCompare(b),
);
table(
  ['verb resource', ...runs.map((x) => x.id)],
  kinds.map((k) => [
    k,
    ...runs.map((x) => {
      const n = x.apiRequests.byKind[k];
      return n ? `${n} (${r2(n / x.apiRequests.evictions)}; ${r1(n / nodeHops(x))})` : '–';
    }),
  ]),
);
// 3. host commands
out.push('COMMANDS');
const ck = [...new Set(runs.flatMap((x) => Object.keys(x.hostCommands.byKind)))].sort(
  (a, b) =>
    runs.reduce((n, x) => n + (x.hostCommands.byKind[b] ?? 0), 0) - runs.reduce((n, x) => n + (x.hostCommands.byKind[a] ?? 0), 0) ||
    a.localeCompare(b),
);
table(
  ['command', ...runs.map((x) => x.id)],
  [
    ['**all**', ...runs.map((x) => `**${x.hostCommandsPerNode}**`)],
    ...ck.map((k) => [`\`${k}\``, ...runs.map((x) => cell(x.hostCommands.byKind[k]))]),
  ],
);
// 4. temporal
out.push('TEMPORAL');
table(
  [
    'run',
    'workflow runs',
    'workflow tasks (failed)',
    'activity tasks',
    'actions, histories',
    'per node·hop: workflow tasks',
    'activity tasks',
    'actions',
    'server action counter (per node·hop)',
    'of it: bench status queries, heartbeats',
  ],
  runs.map((x) => {
    const t = x.temporal,
      sa = t.serverActions;
    const failed = Object.values(t.workflowTaskFailures ?? {}).reduce((a, b) => a + b, 0);
    return [
      x.id,
      t.workflowRuns,
      `${t.workflowTasks} (${t.workflowTaskFailures ? failed : '–'})`,
      t.activityTasks,
      t.actions.total,
      t.perNodeHop.workflowTasks,
      t.perNodeHop.activityTasks,
      t.perNodeHop.actions,
      sa ? `${sa.total} (${r1(sa.total / nodeHops(x))})` : '–',
      sa ? `${sa.byType.grpc_QueryWorkflow ?? 0}, ${sa.byType.grpc_RecordActivityTaskHeartbeat ?? 0}` : '–',
    ];
  }),
);
const tk = [...new Set(runs.flatMap((x) => Object.keys(x.temporal.actions.byKind)))];
table(
  ['action (histories), per node·hop', ...runs.map((x) => x.id)],
  tk.map((k) => [
    k,
    ...runs.map((x) => cell(x.temporal.actions.byKind[k] === undefined ? undefined : r2(x.temporal.actions.byKind[k] / nodeHops(x)))),
  ]),
);
const sk = [...new Set(runs.flatMap((x) => Object.keys(x.temporal.serverActions?.byType ?? {})))];
table(
  ['server action counter, per node·hop', ...runs.map((x) => x.id)],
  sk.map((k) => [
    `\`${k}\``,
    ...runs.map((x) =>
      cell(x.temporal.serverActions?.byType[k] === undefined ? undefined : r2(x.temporal.serverActions.byType[k] / nodeHops(x))),
    ),
  ]),
);
// 5. walls
out.push('WALLS');
table(
  [
    'run',
    'wall s',
    'lower bound s',
    '× bound',
    'overhead s per node·hop',
    'cordoned s, median (max)',
    'worker window beyond drain + restart, median s',
    'drain mean s',
    'in queue / between steps s per node workflow',
    'worker MiB',
    'worker CPU s',
    'operator waits',
  ],
  runs.map((x) => [
    x.id,
    x.wallSeconds,
    x.lowerBoundSeconds,
    x.ratioToLowerBound,
    x.overheadPerNodeSeconds,
    `${x.nodes.cordoned.medianSeconds} (${x.nodes.cordoned.maxSeconds})`,
    x.nodes.cordoned.workerBeyondDrainAndRestartMedianSeconds,
    r2((x.nodes.activities.drainNode?.runMs ?? 0) / 1000),
    `${x.nodes.perNode.queueSeconds} / ${x.nodes.perNode.betweenStepsSeconds}`,
    x.worker.peakRssMiB,
    x.worker.cpuSeconds,
    x.operatorRetries?.length ?? 0,
  ]),
);
console.log(out.join('\n'));
