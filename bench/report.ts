import type { ApiRequests } from './api-requests.js';
import type { HostCommands } from './host-commands.js';
import type { TemporalCost } from './temporal-cost.js';
import type { LATENCIES_MS } from './cases.js';
import type { DrainMeasurement } from './drain-bench.js';
import type { NodeBreakdown } from './node-breakdown.js';
import type { PhaseBreakdown } from './phase-breakdown.js';

/**
 * The benchmark's result: every run's numbers, the side-by-side comparisons of one size and hop
 * count, the drain measurement, and each goal of issue 9 with the number it was judged on.
 * `RESULT_SCHEMA` names the shape; test/bench checks a small run against it.
 */

export const RESULT_SCHEMA = 'skewless-bench/1';

export interface RunResult {
  id: string;
  size: string;
  controlPlanes: number;
  workers: number;
  pods: number;
  hops: number;
  tool: 'baseline' | 'skewless';
  batchSize: number;
  /** skewless with --workers-every-hop (the plan before issue 22), run beside the default. */
  workersEveryHop?: boolean;
  /** --builds: the label of the skewless build that ran (the id ends in it). */
  build?: string;
  wallSeconds: number;
  /** From the run's host command log (bench/lower-bound.ts): the bound the goals use. */
  lowerBoundSeconds: number;
  /** From the configured latencies alone. */
  nominalLowerBoundSeconds: number;
  ratioToLowerBound: number;
  overheadPerNodeSeconds: number;
  simUpSeconds: number;
  /** SSH connections the simulated hosts accepted during the run, per node and hop (the baseline: OpenSSH, one per command). */
  sshHandshakesPerNode?: number;
  /** Commands the simulated hosts ran during the run, per node and hop (round trips). */
  hostCommandsPerNode?: number;
  /** The same commands by kind, per node and hop (bench/host-commands.ts). */
  hostCommands?: HostCommands;
  /** skewless only: Temporal history events. */
  events?: {
    parent: number;
    parentRuns: number;
    parentLargestRun: number;
    nodeWorkflows: number;
    nodeWorkflowEvents: number;
    perNode: number;
  };
  /** skewless only: the worker's requests to the API server (bench/api-requests.ts). */
  apiRequests?: ApiRequests;
  /**
   * skewless only: what the run cost Temporal, from the histories (bench/temporal-cost.ts), the status
   * queries the bench sent while it waited, and the dev server's own action counter over the run.
   */
  temporal?: TemporalCost & { statusQueries: number; serverActions?: { total: number; byType: Record<string, number> } };
  /** skewless only: the worker process while the upgrade ran. */
  worker?: { peakRssMiB: number; cpuSeconds: number; nodeOptions?: string };
  /** skewless only: nodes that waited for an operator and were answered with retry by the bench (`node: why`). */
  operatorRetries?: string[];
  /** skewless only: where a node's time went (bench/node-breakdown.ts). */
  nodes?: NodeBreakdown;
  /** skewless only: the parent's wall between and around its waves of node workflows (bench/phase-breakdown.ts). */
  phases?: PhaseBreakdown;
  timeline?: string;
}

export interface Comparison {
  size: string;
  hops: number;
  /** --builds: the build whose runs these are. */
  build?: string;
  baselineSeconds?: number;
  skewlessSequentialSeconds?: number;
  /** skewless node by node ÷ the baseline. */
  sequentialRatio?: number;
  batchSize?: number;
  skewlessBatchedSeconds?: number;
  /** The baseline ÷ skewless batched. */
  batchedSpeedup?: number;
  /** skewless batched with --workers-every-hop, and the default (workers move once) ÷ it. */
  everyHopSeconds?: number;
  workersOnceRatio?: number;
}

export interface Goal {
  goal: string;
  measured: string;
  met: boolean | null;
}

export interface BenchResult {
  schema: typeof RESULT_SCHEMA;
  startedAt: string;
  finishedAt: string;
  machine: { cpus: number; node: string; platform: string };
  simulated: { latenciesMs: typeof LATENCIES_MS; terminationGraceSeconds: number; from: string; hops: string[] };
  runs: RunResult[];
  comparisons: Comparison[];
  drain?: { pods: number; measurements: DrainMeasurement[]; skewlessEvictionsPerSecond: number; kubectlEvictionsPerSecond: number };
  /** Runs that did not finish (the rest of the bench went on): why. */
  failures: { id: string; error: string }[];
  goals: Goal[];
  /** Issue 41's goals the bench can judge: the API server's load and the host round trips. */
  issue41Goals?: Goal[];
}

const r2 = (n: number) => Math.round(n * 100) / 100;
const r3 = (n: number) => Math.round(n * 1000) / 1000;

export function runResult(o: Omit<RunResult, 'ratioToLowerBound' | 'overheadPerNodeSeconds'>): RunResult {
  const nodes = o.controlPlanes + o.workers;
  const wall = r2(o.wallSeconds);
  return {
    ...o,
    wallSeconds: wall,
    ratioToLowerBound: r3(wall / o.lowerBoundSeconds),
    overheadPerNodeSeconds: r3((wall - o.lowerBoundSeconds) / (nodes * o.hops)),
  };
}

export function comparisons(runs: RunResult[]): Comparison[] {
  const keys = [...new Set(runs.map((r) => `${r.size}|${r.hops}|${r.build ?? ''}`))];
  return keys.map((k) => {
    const [size = '', hops = '0', build = ''] = k.split('|');
    // The baseline (no build) stands beside each build's runs.
    const of = runs.filter((r) => r.size === size && r.hops === Number(hops) && (r.build ?? '') === build);
    if (build) of.push(...runs.filter((r) => r.size === size && r.hops === Number(hops) && r.tool === 'baseline'));
    const base = of.find((r) => r.tool === 'baseline');
    const seq = of.find((r) => r.tool === 'skewless' && r.batchSize === 1);
    const batched = of.find((r) => r.tool === 'skewless' && r.batchSize > 1 && !r.workersEveryHop);
    const everyHop = of.find((r) => r.tool === 'skewless' && r.batchSize > 1 && r.workersEveryHop);
    return {
      size,
      hops: Number(hops),
      ...(build ? { build } : {}),
      ...(base ? { baselineSeconds: base.wallSeconds } : {}),
      ...(seq ? { skewlessSequentialSeconds: seq.wallSeconds } : {}),
      ...(base && seq ? { sequentialRatio: r3(seq.wallSeconds / base.wallSeconds) } : {}),
      ...(batched ? { batchSize: batched.batchSize, skewlessBatchedSeconds: batched.wallSeconds } : {}),
      ...(base && batched ? { batchedSpeedup: r2(base.wallSeconds / batched.wallSeconds) } : {}),
      ...(everyHop ? { everyHopSeconds: everyHop.wallSeconds } : {}),
      ...(everyHop && batched ? { workersOnceRatio: r3(batched.wallSeconds / everyHop.wallSeconds) } : {}),
    };
  });
}

/** Issue 9's goals, each judged on what was measured (null: not measured in this run). */
export function goals(runs: RunResult[], cmp: Comparison[], drain: BenchResult['drain']): Goal[] {
  return [...speedGoals(runs, cmp), ...drainGoals(runs, drain)];
}

/** Issue 9's: against the baseline and the lower bound, overhead and scale. */
function speedGoals(runs: RunResult[], cmp: Comparison[]): Goal[] {
  const out: Goal[] = [];
  const seq = cmp.filter((c) => c.sequentialRatio !== undefined);
  out.push({
    goal: 'batch size 1: skewless within 1.05× of the sequential baseline',
    measured: seq.map((c) => `${c.size} ${c.hops} hop: ${c.sequentialRatio}×`).join('; ') || 'not run',
    met: seq.length ? seq.every((c) => (c.sequentialRatio as number) <= 1.05) : null,
  });
  const batched = runs.filter((r) => r.tool === 'skewless' && r.batchSize > 1);
  out.push({
    goal: 'batched: within 1.2× of the critical-path lower bound',
    measured: batched.map((r) => `${r.size} ${r.hops} hop: ${r.ratioToLowerBound}×`).join('; ') || 'not run',
    met: batched.length ? batched.every((r) => r.ratioToLowerBound <= 1.2) : null,
  });
  const fast = cmp.filter((c) => c.batchedSpeedup !== undefined);
  out.push({
    goal: 'batched: faster than the baseline by at least batch size ÷ 1.5',
    measured:
      fast.map((c) => `${c.size} ${c.hops} hop: ${c.batchedSpeedup}× (needs ${r2((c.batchSize as number) / 1.5)}×)`).join('; ') ||
      'not run',
    met: fast.length ? fast.every((c) => (c.batchedSpeedup as number) >= (c.batchSize as number) / 1.5) : null,
  });
  const once = cmp.filter((c) => c.workersOnceRatio !== undefined);
  out.push({
    goal: 'several hops, batched: workers moving once take at most 0.6× the wall of workers at every hop',
    measured: once.map((c) => `${c.size} ${c.hops} hops: ${c.workersOnceRatio}×`).join('; ') || 'not run',
    met: once.length ? once.every((c) => (c.workersOnceRatio as number) <= 0.6) : null,
  });
  const at100 = runs.filter((r) => r.tool === 'skewless' && r.workers === 100);
  out.push({
    goal: 'overhead under 0.3 s per node at 100 nodes',
    measured: at100.map((r) => `${r.id}: ${r.overheadPerNodeSeconds} s`).join('; ') || 'not run',
    met: at100.length ? at100.every((r) => r.overheadPerNodeSeconds < 0.3) : null,
  });
  const big = runs.filter((r) => r.tool === 'skewless' && r.workers >= 1000);
  // A history is one run's: continue-as-new is how a long upgrade keeps each under Temporal's limits (the total is shown too).
  out.push({
    goal: '1,000 nodes: parent history under 10,000 events, worker under 500 MB RSS',
    measured:
      big
        .map(
          (r) =>
            `${r.id}: parent ${r.events?.parentLargestRun} events in its largest run (${r.events?.parent} in ${r.events?.parentRuns} runs), worker ${r.worker?.peakRssMiB} MiB (${Math.round((r.worker?.peakRssMiB ?? 0) * 1.048576)} MB) with NODE_OPTIONS=${r.worker?.nodeOptions || '(none)'}`,
        )
        .join('; ') || 'not run (--with-1000)',
    met: big.length
      ? big.every((r) => (r.events?.parentLargestRun ?? Infinity) < 10_000 && (r.worker?.peakRssMiB ?? Infinity) * 1.048576 < 500)
      : null,
  });
  return out;
}

/** Issue 22's: fewer and faster drains. */
function drainGoals(runs: RunResult[], drain: BenchResult['drain']): Goal[] {
  const out: Goal[] = [];
  const at100 = runs.filter((r) => r.tool === 'skewless' && r.workers === 100);
  const big = runs.filter((r) => r.tool === 'skewless' && r.workers >= 1000);
  const b10 = runs.filter((r) => r.tool === 'skewless' && r.workers === 100 && r.batchSize === 10 && !r.workersEveryHop);
  out.push({
    goal: '100 workers in batches of 10: within 2× of the critical-path lower bound',
    measured: b10.map((r) => `${r.id}: ${r.ratioToLowerBound}×`).join('; ') || 'not run',
    met: b10.length ? b10.every((r) => r.ratioToLowerBound <= 2) : null,
  });
  const over100 = at100.filter((r) => !r.workersEveryHop);
  out.push({
    goal: 'overhead at most 0.5 s per node·hop at 100 workers',
    measured: over100.map((r) => `${r.id}: ${r.overheadPerNodeSeconds} s`).join('; ') || 'not run',
    met: over100.length ? over100.every((r) => r.overheadPerNodeSeconds <= 0.5) : null,
  });
  const windows = runs.filter((r) => r.tool === 'skewless' && !r.workersEveryHop && (r.nodes?.cordoned.workers ?? 0) > 0);
  out.push({
    goal: 'median cordoned window of a worker at most its drain + kubelet restart + 0.5 s',
    measured: windows.map((r) => `${r.id}: +${r.nodes?.cordoned.workerBeyondDrainAndRestartMedianSeconds} s`).join('; ') || 'not run',
    met: windows.length ? windows.every((r) => (r.nodes?.cordoned.workerBeyondDrainAndRestartMedianSeconds ?? Infinity) <= 0.5) : null,
  });
  out.push({
    goal: '1,000 workers in batches of 100: within 8× of the lower bound, no node waiting for an operator',
    measured:
      big.map((r) => `${r.id}: ${r.ratioToLowerBound}×, ${r.operatorRetries?.length ?? 0} node(s) waited for an operator`).join('; ') ||
      'not run (--with-1000)',
    met: big.length ? big.every((r) => r.ratioToLowerBound <= 8 && (r.operatorRetries?.length ?? 0) === 0) : null,
  });
  out.push({
    goal: 'drain of 110 pods: evictions per second at least those of kubectl drain',
    measured: drain ? `skewless ${drain.skewlessEvictionsPerSecond}/s, kubectl ${drain.kubectlEvictionsPerSecond}/s` : 'not run',
    met: drain ? drain.skewlessEvictionsPerSecond >= drain.kubectlEvictionsPerSecond : null,
  });
  return out;
}

/** Beyond 2 requests per evicted pod, what per node and hop still counts as issue 41's "small constant per node". */
export const SMALL_CONSTANT_PER_NODE_HOP = 10;
/** A request sent again and again, each under a second after the last, for this long is a loop faster than once a second. */
export const LOOP_SECONDS = 2;
/** Issue 41's bound on host commands per node and hop. */
export const HOST_COMMANDS_PER_NODE_HOP = 15;

/** Issue 41's goals the bench judges on every skewless run (the walls' goals are issue 22's, above). */
export function issue41Goals(runs: RunResult[]): Goal[] {
  const sk = runs.filter((r) => r.tool === 'skewless' && !r.workersEveryHop);
  const api = sk.filter((r) => r.apiRequests?.beyondTwoPerEvictionPerNodeHop !== undefined);
  const loops = sk.filter((r) => r.apiRequests?.busiestRepeats !== undefined);
  const cmds = sk.filter((r) => r.hostCommandsPerNode !== undefined);
  return [
    {
      goal: `worker API requests: at most 2 per evicted pod plus a small constant per node (read here: ≤ ${SMALL_CONSTANT_PER_NODE_HOP} per node·hop beyond 2 per evicted pod)`,
      measured:
        api
          .map(
            (r) =>
              `${r.id}: ${r.apiRequests?.perEvictedPod} per evicted pod, ${r.apiRequests?.beyondTwoPerEvictionPerNodeHop} per node·hop beyond 2 each`,
          )
          .join('; ') || 'not run',
      met: api.length ? api.every((r) => (r.apiRequests?.beyondTwoPerEvictionPerNodeHop ?? Infinity) <= SMALL_CONSTANT_PER_NODE_HOP) : null,
    },
    {
      goal: `no request in a loop faster than once a second (read here: no request sent again and again, each under a second after the last, for ${LOOP_SECONDS} s or more)`,
      measured:
        loops
          .map((r) => {
            const s = r.apiRequests?.longestLastingSubSecondStreak;
            return `${r.id}: ${s ? `${s.count} × ${s.request}, ${s.meanGapSeconds} s apart for ${s.spanSeconds} s` : 'no request repeated under a second apart'}`;
          })
          .join('; ') || 'not run',
      met: loops.length ? loops.every((r) => (r.apiRequests?.longestLastingSubSecondStreak?.spanSeconds ?? 0) < LOOP_SECONDS) : null,
    },
    {
      goal: `host commands per node·hop at most ${HOST_COMMANDS_PER_NODE_HOP}`,
      measured: cmds.map((r) => `${r.id}: ${r.hostCommandsPerNode}`).join('; ') || 'not run',
      met: cmds.length ? cmds.every((r) => (r.hostCommandsPerNode ?? Infinity) <= HOST_COMMANDS_PER_NODE_HOP) : null,
    },
  ];
}

const cell = (v: unknown) => (v === undefined || v === null ? '–' : String(v));

/** A caption, a table's header and its rows, and a blank line after each; nothing when there are no rows. */
function captionedTable(caption: string, header: string, align: string, rows: string[]): string[] {
  return rows.length ? [caption, '', header, align, ...rows, ''] : [];
}

export function markdown(result: BenchResult): string {
  const lat = Object.entries(result.simulated.latenciesMs)
    .map(([k, v]) => `${k} ${v} ms`)
    .join(', ');
  const lines = [
    `# skewless benchmark (${result.startedAt})`,
    '',
    `Machine: ${result.machine.cpus} CPUs, Node ${result.machine.node}, ${result.machine.platform}. Simulated latencies: ${lat}; pod termination grace ${result.simulated.terminationGraceSeconds} s. From ${result.simulated.from} to ${result.simulated.hops.join(' → ')}.`,
    '',
    '| run | tool | batch | wall s | lower bound s (nominal) | × bound | overhead s per node·hop | parent events (runs) | events/node | worker MiB | worker CPU s |',
    '|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|',
    ...result.runs.map(
      (r) =>
        `| ${r.id} | ${r.tool} | ${r.batchSize} | ${r.wallSeconds} | ${r.lowerBoundSeconds} (${r.nominalLowerBoundSeconds}) | ${r.ratioToLowerBound} | ${r.overheadPerNodeSeconds} | ${r.events ? `${r.events.parent} (${r.events.parentRuns})` : '–'} | ${cell(r.events?.perNode)} | ${cell(r.worker?.peakRssMiB)} | ${cell(r.worker?.cpuSeconds)} |`,
    ),
    '',
    '| size | hops | baseline s | skewless b1 s | b1 ÷ baseline | batch | skewless batched s | baseline ÷ batched | batched, workers every hop s | once ÷ every hop |',
    '|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|',
    ...result.comparisons.map(
      (c) =>
        `| ${c.size} | ${c.hops} | ${cell(c.baselineSeconds)} | ${cell(c.skewlessSequentialSeconds)} | ${cell(c.sequentialRatio)} | ${cell(c.batchSize)} | ${cell(c.skewlessBatchedSeconds)} | ${cell(c.batchedSpeedup)} | ${cell(c.everyHopSeconds)} | ${cell(c.workersOnceRatio)} |`,
    ),
    '',
  ];
  for (const r of result.runs.filter((x) => x.operatorRetries?.length)) {
    lines.push(
      `${r.id}: ${r.operatorRetries?.length} node(s) waited for an operator and the bench answered retry (e.g. ${r.operatorRetries?.[0]}).`,
      '',
    );
  }
  const ssh = result.runs.filter((r) => r.sshHandshakesPerNode !== undefined);
  if (ssh.length) lines.push(`SSH handshakes per node and hop: ${ssh.map((r) => `${r.id} ${r.sshHandshakesPerNode}`).join(', ')}.`, '');
  const cmds = result.runs.filter((r) => r.hostCommandsPerNode !== undefined);
  if (cmds.length) lines.push(`Host commands per node and hop: ${cmds.map((r) => `${r.id} ${r.hostCommandsPerNode}`).join(', ')}.`, '');
  for (const f of result.failures) lines.push(`${f.id}: did not finish: ${f.error}`, '');
  lines.push(...apiRequestTable(result), ...kindTables(result), ...temporalTable(result));
  lines.push(...breakdownTables(result));
  if (result.drain) {
    lines.push(
      `Drain of one node with ${result.drain.pods} pods: skewless ${result.drain.skewlessEvictionsPerSecond} evictions/s, kubectl drain ${result.drain.kubectlEvictionsPerSecond} evictions/s (best of ${result.drain.measurements.length / 2} rounds each: ${result.drain.measurements.map((m) => `${m.tool} ${m.seconds} s`).join(', ')}).`,
      '',
    );
  }
  const goalRows = (goals: Goal[]) =>
    goals.map((g) => `| ${g.goal} | ${g.measured} | ${g.met === null ? 'not run' : g.met ? 'yes' : 'no'} |`);
  lines.push('| goal | measured | met |', '|---|---|---|', ...goalRows(result.goals), '');
  if (result.issue41Goals?.length)
    lines.push("Issue 41's goals:", '', '| goal | measured | met |', '|---|---|---|', ...goalRows(result.issue41Goals), '');
  return lines.join('\n');
}

/** Where a node workflow's time went, and the upgrade's wall around its node workflows. */
function breakdownTables(result: BenchResult): string[] {
  const broken = result.runs.filter((r) => r.nodes?.nodeWorkflows);
  return [
    ...captionedTable(
      "Where a node workflow's time went (means per node workflow: its span; activities waiting in the task queue; no step in flight, i.e. workflow tasks deciding the next step) and how long its node was out of service (cordoned: from the cordonNode activity's start to the uncordonNode activity's end, median and max over the run's nodes):",
      '| run | node workflows | span s | in queue s | between steps s | cordoned s, median (max) | slowest steps (mean run ms) |',
      '|---|---:|---:|---:|---:|---:|---|',
      broken.map((r) => {
        const b = r.nodes as NodeBreakdown;
        const top = Object.entries(b.activities)
          .sort(([, x], [, y]) => y.runMs - x.runMs)
          .slice(0, 4)
          .map(([k, v]) => `${k} ${v.runMs}`)
          .join(', ');
        const cordoned = b.cordoned.nodes
          ? `${b.cordoned.medianSeconds} (${b.cordoned.maxSeconds})${b.cordoned.open ? `, ${b.cordoned.open} left cordoned` : ''}`
          : '–';
        return `| ${r.id} | ${b.nodeWorkflows} | ${b.perNode.spanSeconds} | ${b.perNode.queueSeconds} | ${b.perNode.betweenStepsSeconds} | ${cordoned} | ${top} |`;
      }),
    ),
    ...captionedTable(
      "Where the upgrade's wall went around its node workflows (from the parent's history; a wave: the node workflows one workflow task started, i.e. a batch; starting: the wave's initiation to its last node workflow started by the Temporal server; a wave: its initiation to its last node workflow closed; the slowest node workflow of each wave, mean; the parent alone before the first wave, between waves and after the last):",
      '| run | waves (nodes mean, max) | starting s, total (mean, max) | child start s, median | waves s, total | slowest node s, mean | before s | between s, total | after s |',
      '|---|---:|---:|---:|---:|---:|---:|---:|---:|',
      result.runs.flatMap((r) => {
        const p = r.phases;
        if (!p) return [];
        return [
          `| ${r.id} | ${p.waves} (${p.nodesMean}, ${p.nodesMax}) | ${p.startingTotalSeconds} (${p.startingMeanSeconds}, ${p.startingMaxSeconds}) | ${p.childStartMedianSeconds} | ${p.wavesTotalSeconds}${p.overlapping ? ' (overlapping)' : ''} | ${p.slowestNodeMeanSeconds} | ${p.beforeSeconds} | ${p.betweenTotalSeconds} | ${p.afterSeconds} |`,
        ];
      }),
    ),
  ];
}

/** The worker's API requests per run (issue 41): what the API server pays for the upgrade. */
function apiRequestTable(result: BenchResult): string[] {
  return captionedTable(
    "The worker's requests to the API server (its audit log, the worker's identity only): in all, per accepted eviction, per node and hop, per node and hop beyond 2 per evicted pod, the most in flight at once (watches aside) and the most watches open, the request repeated most often within 10 s, the longest streak of one request repeated under a second apart, and the five most frequent kinds:",
    '| run | requests | evictions | per evicted pod | per node·hop | beyond 2/pod, per node·hop | peak in flight | peak watches | busiest repeat /s | longest streak under 1 s apart (by count; the longest lasting) | most frequent |',
    '|---|---:|---:|---:|---:|---:|---:|---:|---|---|---|',
    result.runs.flatMap((r) => {
      const a = r.apiRequests;
      if (!a) return [];
      const top = Object.entries(a.byKind)
        .slice(0, 5)
        .map(([k, n]) => `${k} ${n}`)
        .join(', ');
      const busiest = a.busiestRepeats?.[0];
      const streak = a.longestSubSecondStreak;
      const lasting = a.longestLastingSubSecondStreak;
      return [
        `| ${r.id} | ${a.total} | ${a.evictions} | ${cell(a.perEvictedPod ?? undefined)} | ${a.perNodeHop} | ${cell(a.beyondTwoPerEvictionPerNodeHop)} | ${cell(a.peakInFlight)} | ${cell(a.peakWatches)} | ${busiest ? `${busiest.perSecond} \`${busiest.request}\`` : '–'} | ${streak ? `${streak.count} × \`${streak.request}\`, ${streak.meanGapSeconds} s apart` : '–'}${lasting ? `; ${lasting.count} × \`${lasting.request}\` for ${lasting.spanSeconds} s` : ''} | ${top} |`,
      ];
    }),
  );
}

/** Rows: each kind any run had; columns: the runs that have `of`; a cell: that run's count ('–' for none). */
function kindTable(caption: string, result: BenchResult, of: (r: RunResult) => Record<string, number> | undefined): string[] {
  const runs = result.runs.filter((r) => of(r));
  const totals = new Map<string, number>();
  for (const r of runs) for (const [k, n] of Object.entries(of(r) ?? {})) totals.set(k, (totals.get(k) ?? 0) + n);
  const kinds = [...totals].sort(([a, x], [b, y]) => y - x || a.localeCompare(b)).map(([k]) => k);
  return captionedTable(
    caption,
    `| kind | ${runs.map((r) => r.id).join(' | ')} |`,
    `|---|${runs.map(() => '---:').join('|')}|`,
    kinds.map((k) => `| ${k.replace(/\|/g, '\\|')} | ${runs.map((r) => cell(of(r)?.[k])).join(' | ')} |`),
  );
}

/** The worker's requests by verb and resource, and the hosts' commands by kind, run beside run. */
function kindTables(result: BenchResult): string[] {
  return [
    ...kindTable("The worker's API requests by verb and resource (counts over the run):", result, (r) => r.apiRequests?.byKind),
    ...kindTable('Host commands by kind, per node·hop (each an SSH exec; bench/host-commands.ts):', result, (r) =>
      r.tool === 'skewless' ? r.hostCommands?.byKind : undefined,
    ),
    ...kindTable(
      "Temporal actions by kind, from the histories (Temporal Cloud's mapping of history events to actions; bench/temporal-cost.ts):",
      result,
      (r) => r.temporal?.actions.byKind,
    ),
    ...kindTable(
      "The dev server's own action counter over the run, by type (queries and heartbeats included):",
      result,
      (r) => r.temporal?.serverActions?.byType,
    ),
  ];
}

/** What each skewless run cost Temporal, in all and per node·hop. */
function temporalTable(result: BenchResult): string[] {
  return captionedTable(
    "What each run cost Temporal: workflow runs, workflow tasks, activity tasks (attempts) and actions from the histories (Temporal Cloud's mapping), in all and per node·hop; the bench's own status queries while it waited (one every 2 s, each an action); the dev server's action counter over the run (everything: queries and heartbeats too):",
    '| run | workflow runs | workflow tasks (failed) | activity tasks | actions (histories) | per node·hop: workflow tasks | activity tasks | actions | bench status queries | server action counter |',
    '|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|',
    result.runs.flatMap((r) => {
      const t = r.temporal;
      if (!t) return [];
      return [
        `| ${r.id} | ${t.workflowRuns} | ${t.workflowTasks} (${Object.values(t.workflowTaskFailures ?? {}).reduce((a, b) => a + b, 0)}) | ${t.activityTasks} | ${t.actions.total} | ${t.perNodeHop.workflowTasks} | ${t.perNodeHop.activityTasks} | ${t.perNodeHop.actions} | ${t.statusQueries} | ${cell(t.serverActions?.total)} |`,
      ];
    }),
  );
}
