import { cpus, tmpdir } from 'node:os';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { timelineFromRuns } from '../client/timeline/timeline-from-runs.js';
import { renderTimelineSvg } from '../client/timeline/timeline-svg.js';
import { ProcessRegistry } from '../demo/processes.js';
import { ensureTemporal, type DemoTemporal } from '../demo/temporal-server.js';
import { ensureSimBinaries, type SimBinaries } from '../sim/cluster/binaries.js';
import type { Simulation } from '../sim/simulation.js';
import { freePort } from '../tooling/free-port.js';
import { countWorkerRequests } from './api-requests.js';
import { hostCommands } from './host-commands.js';
import { temporalCost } from './temporal-cost.js';
import { runBaseline } from './baseline-run.js';
import {
  descriptionYaml,
  FROM,
  HOPS,
  LATENCIES_MS,
  QUICK_SIZE,
  runId,
  runsOf,
  BENCH_TOOLS,
  type BenchTool,
  SIZES,
  TERMINATION_GRACE_SECONDS,
  type BenchRun,
  type ClusterSize,
} from './cases.js';
import { drainBench, drainDescriptionYaml } from './drain-bench.js';
import { hostWaitSeconds, measuredLowerBoundSeconds, nominalLowerBoundSeconds } from './lower-bound.js';
import { comparisons, goals, issue41Goals, markdown, RESULT_SCHEMA, runResult, type BenchResult, type RunResult } from './report.js';
import { nodeBreakdown } from './node-breakdown.js';
import { phaseBreakdown } from './phase-breakdown.js';
import { productionNodeOptions } from './production-heap.js';
import { runSkewless } from './skewless-run.js';
import { assertUpgraded, freshCluster } from './world.js';

/**
 * `npm run bench`: skewless against the articles' runbook (bench/baseline.sh) on identical fresh
 * simulated clusters, one after the other on one Temporal dev server, and a drain of a full node.
 * Writes <out>/bench.json, <out>/bench.md and one timeline SVG per run.
 */

const repoRoot = fileURLToPath(new URL('../../', import.meta.url));
const CLI = join(repoRoot, 'bin', 'skewless.js');
const WORKER_NODE_OPTIONS = productionNodeOptions(join(repoRoot, 'Dockerfile'));

export const benchHelp = `Usage: npm run bench -- [--sizes 10x20,100x20] [--hops 1,2] [--tools baseline,skewless-1,skewless-batched,skewless-every-hop]
                       [--with-1000] [--no-drain] [--quick] [--worker-node-options OPTS] [--builds L=DIR,...] [--out DIR]

Runs each size × hop count × tool on a fresh simulated cluster (1 control plane, N workers, 20 or
10 pods a worker behind PDBs allowing a batch unavailable), the baseline being bench/baseline.sh (kubectl
drain and OpenSSH, node by node), skewless once node by node and once in batches of 10% of the
workers (at least 2); then a drain of one node with 110 pods by each. Unless --tools is given, the
sequential runs at 100 workers go one hop only (each takes over ten minutes a hop). --with-1000 adds
1,000 workers × 10 pods, one hop, skewless batched only (the sequential runs would take hours).
--quick: one 3-worker cluster: one hop with baseline, skewless-1 and skewless-batched, two hops with
skewless-batched and skewless-every-hop; a 30-pod drain (the test suite's shape check).
--worker-node-options: the worker's NODE_OPTIONS instead of the production image's (the Dockerfile's
ENV line): '' for no heap limit, --worker-node-options=--max-old-space-size=384 for another (with '=':
a value that starts with '-').
--builds LABEL=DIR,...: each skewless run once per build, in the order given, side by side on identical
fresh clusters (DIR: another checkout, built; its bin/skewless.js runs the CLI and the worker; '.' this one),
each run's id ending in -LABEL; the baseline runs once.
Results: DIR/bench.json, DIR/bench.md, DIR/<run>.svg (default bench/results).`;

class UsageError extends Error {}

interface Options {
  sizes: ClusterSize[];
  hops: (1 | 2)[];
  tools: BenchTool[];
  drainPods: number;
  out: string;
  /** --tools was given: it applies to 1,000 workers too. */
  toolsGiven: boolean;
  /** --quick: the suite's small version, each tool where it says something. */
  quick?: boolean;
  /** The worker's NODE_OPTIONS: the production image's unless --worker-node-options says otherwise. */
  workerNodeOptions: string;
  /** --builds: the skewless builds to run side by side (label → the checkout's root). */
  builds?: { label: string; root: string }[];
}

/** `before=../old,after=.` → the builds, each checked to have its CLI. */
function buildsOption(value: string): { label: string; root: string }[] {
  const builds = value
    .split(',')
    .map((x) => x.trim())
    .filter(Boolean)
    .map((x) => {
      const m = /^([a-z0-9][a-z0-9.-]*)=(.+)$/.exec(x);
      if (!m) throw new UsageError(`--builds: ${JSON.stringify(x)} is not LABEL=DIR (a label of lower-case letters, digits, '.' and '-')`);
      const root = resolve(m[2] as string);
      if (!existsSync(join(root, 'bin', 'skewless.js')) || !existsSync(join(root, 'dist', 'client', 'cli.js')))
        throw new UsageError(`--builds: ${root} has no built skewless (bin/skewless.js and dist/; run npm run build:quick there)`);
      return { label: m[1] as string, root };
    });
  if (new Set(builds.map((b) => b.label)).size !== builds.length) throw new UsageError('--builds: each label once');
  return builds;
}

function options(argv: string[]): Options | undefined {
  let values;
  try {
    ({ values } = parseArgs({
      args: argv,
      options: {
        sizes: { type: 'string' },
        hops: { type: 'string' },
        tools: { type: 'string' },
        'with-1000': { type: 'boolean' },
        'no-drain': { type: 'boolean' },
        quick: { type: 'boolean' },
        out: { type: 'string' },
        'worker-node-options': { type: 'string' },
        builds: { type: 'string' },
        help: { type: 'boolean', short: 'h' },
      },
    }));
  } catch (err) {
    throw new UsageError(`${(err as Error).message.split('\n')[0]} (see --help)`);
  }
  if (values.help) return undefined;
  const list = (v: string | undefined) =>
    (v ?? '')
      .split(',')
      .map((x) => x.trim())
      .filter(Boolean);
  const allTools = BENCH_TOOLS;
  const tools = values.tools ? list(values.tools) : [...allTools];
  for (const t of tools)
    if (!(allTools as readonly string[]).includes(t))
      throw new UsageError(`--tools: unknown tool ${JSON.stringify(t)} (${BENCH_TOOLS.join(', ')})`);
  const hops = values.hops ? list(values.hops).map(Number) : [1, 2];
  for (const h of hops) if (h !== 1 && h !== 2) throw new UsageError('--hops: 1, 2 or 1,2');
  const out = resolve(values.out ?? join(repoRoot, 'bench', 'results'));
  const workerNodeOptions = (values['worker-node-options'] ?? WORKER_NODE_OPTIONS).trim();
  const builds = values.builds === undefined ? undefined : buildsOption(values.builds);
  if (values.quick)
    return {
      sizes: [QUICK_SIZE],
      hops: [1, 2],
      tools: [...allTools],
      drainPods: 30,
      out,
      toolsGiven: true,
      quick: true,
      workerNodeOptions,
    };
  const wanted = values.sizes ? list(values.sizes) : SIZES.filter((s) => s.workers < 1000 || values['with-1000']).map((s) => s.id);
  const sizes = wanted.map((id) => {
    const s = SIZES.find((x) => x.id === id);
    if (!s) throw new UsageError(`--sizes: unknown size ${JSON.stringify(id)} (${SIZES.map((x) => x.id).join(', ')})`);
    return s;
  });
  return {
    sizes,
    hops: hops as (1 | 2)[],
    tools: tools as Options['tools'],
    drainPods: values['no-drain'] ? 0 : 110,
    out,
    toolsGiven: Boolean(values.tools),
    workerNodeOptions,
    ...(builds ? { builds } : {}),
  };
}

/**
 * What runs where unless --tools says otherwise: everything at 10 workers; at 100 the sequential runs
 * (each over ten minutes a hop) only for one hop; at 1,000 skewless batched only, one hop.
 */
function toolsFor(size: ClusterSize, hops: 1 | 2, o: Options): Options['tools'] {
  // The small version: the baseline comparisons at one hop; at two, workers once beside every hop.
  if (o.quick) return hops === 1 ? ['baseline', 'skewless-1', 'skewless-batched'] : ['skewless-batched', 'skewless-every-hop'];
  if (o.toolsGiven) return o.tools;
  if (size.workers >= 1000) return hops === 1 ? ['skewless-batched'] : [];
  if (size.workers >= 100 && hops === 2) return o.tools.filter((t) => t === 'skewless-batched' || t === 'skewless-every-hop');
  return o.tools;
}

const log = (line: string) => process.stderr.write(`[bench] ${line}\n`);

/** What every run of one invocation shares: the scratch folder, the processes, the dev server, the binaries. */
interface Bench {
  o: Options;
  work: string;
  logsDir: string;
  registry: ProcessRegistry;
  binaries: SimBinaries;
  temporal: DemoTemporal;
  /** The dev server's /metrics (its action counter). */
  metricsUrl: string;
}

/** What the invocation measured so far. */
interface Measured {
  startedAt: string;
  runs: RunResult[];
  failures: BenchResult['failures'];
  drain?: BenchResult['drain'];
}

/** Writes bench.json and bench.md (after every run, so that an interrupted bench keeps what it measured); returns the Markdown. */
function save(o: Options, m: Measured): string {
  const cmp = comparisons(m.runs);
  const result: BenchResult = {
    schema: RESULT_SCHEMA,
    startedAt: m.startedAt,
    finishedAt: new Date().toISOString(),
    machine: { cpus: cpus().length, node: process.version, platform: `${process.platform} ${process.arch}` },
    simulated: { latenciesMs: LATENCIES_MS, terminationGraceSeconds: TERMINATION_GRACE_SECONDS, from: FROM, hops: [...HOPS] },
    runs: m.runs,
    comparisons: cmp,
    ...(m.drain ? { drain: m.drain } : {}),
    failures: m.failures,
    goals: goals(m.runs, cmp, m.drain),
    issue41Goals: issue41Goals(m.runs),
  };
  writeFileSync(join(o.out, 'bench.json'), `${JSON.stringify(result, null, 2)}\n`);
  const md = markdown(result);
  writeFileSync(join(o.out, 'bench.md'), md);
  return md;
}

/** The scratch folder, the process registry and a dev server of the invocation's own. */
async function startBench(o: Options): Promise<Bench> {
  mkdirSync(o.out, { recursive: true });
  const work = mkdtempSync(join(tmpdir(), 'skewless-bench-'));
  const logsDir = join(o.out, 'logs');
  mkdirSync(logsDir, { recursive: true });
  const registry = new ProcessRegistry(join(work, 'pids.json'));
  process.on('exit', () => registry.killAllNow());
  for (const signal of ['SIGINT', 'SIGTERM'] as const) process.on(signal, () => process.exit(130));
  const binaries = ensureSimBinaries();
  mkdirSync(join(work, 'logs'), { recursive: true });
  const port = await freePort();
  const metricsPort = await freePort();
  const temporal = await ensureTemporal({
    address: `127.0.0.1:${port}`,
    namespace: 'default',
    uiPort: await freePort(),
    metricsPort,
    stateDir: work,
    registry,
    say: log,
    signal: new AbortController().signal,
  });
  return { o, work, logsDir, registry, binaries, temporal, metricsUrl: `http://127.0.0.1:${metricsPort}/metrics` };
}

async function stopBench(b: Bench): Promise<void> {
  await b.temporal.connection.close().catch(() => undefined);
  if (b.temporal.server) await b.registry.stop(b.temporal.server, 10_000);
  b.registry.killAllNow();
  rmSync(b.work, { recursive: true, force: true });
}

/**
 * Counts, over the run, what `count` says of each host (SSH handshakes accepted, commands run),
 * per node and hop: what connection reuse and fewer round trips save.
 */
function perNodeHop(sim: Simulation, run: BenchRun, count: (host: string) => number): () => number {
  const total = () => sim.hosts.hosts.reduce((n, h) => n + count(h.name), 0);
  const atStart = total();
  return () => Math.round(((total() - atStart) / (run.size.controlPlanes + run.size.workers) / run.hops) * 10) / 10;
}

/** Every host's command lines from now on: call the result after the run. */
function commandsFromNow(sim: Simulation): () => string[] {
  const from = new Map(sim.hosts.hosts.map((h) => [h.name, sim.hosts.commandLog(h.name).length]));
  return () =>
    sim.hosts.hosts.flatMap((h) =>
      sim.hosts
        .commandLog(h.name)
        .slice(from.get(h.name) ?? 0)
        .map((e) => e.command),
    );
}

/** The row's fields every tool has, known before the run. */
function runBase(run: BenchRun, id: string, upSeconds: number) {
  return {
    id,
    size: run.size.id,
    controlPlanes: run.size.controlPlanes,
    workers: run.size.workers,
    pods: run.size.workers * run.size.podsPerWorker,
    hops: run.hops,
    tool: run.tool,
    batchSize: run.batchSize,
    ...(run.workersEveryHop ? { workersEveryHop: true } : {}),
    ...(run.build ? { build: run.build } : {}),
    simUpSeconds: Math.round(upSeconds * 10) / 10,
    nominalLowerBoundSeconds: nominalLowerBoundSeconds({
      controlPlanes: run.size.controlPlanes,
      workers: run.size.workers,
      hops: run.hops,
      batchSize: run.batchSize,
    }),
  };
}

/** One run on a fresh cluster of its own: the upgrade by its tool, checked, its timeline written; its row. */
async function measureRun(b: Bench, run: BenchRun, sim: Simulation, id: string, upSeconds: number): Promise<RunResult> {
  const versions = HOPS.slice(0, run.hops);
  const target = versions.at(-1) as string;
  const base = runBase(run, id, upSeconds);
  const counters = {
    sshHandshakesPerNode: perNodeHop(sim, run, (host) => sim.hosts.connectionsAccepted(host)),
    hostCommandsPerNode: perNodeHop(sim, run, (host) => sim.hosts.commandLog(host).length),
  };
  const commands = commandsFromNow(sim);
  const nodeHops = (run.size.controlPlanes + run.size.workers) * run.hops;
  const counted = () => ({
    sshHandshakesPerNode: counters.sshHandshakesPerNode(),
    hostCommandsPerNode: counters.hostCommandsPerNode(),
    hostCommands: hostCommands(commands(), nodeHops),
  });
  /** The bound from this run's own host command log (after the run). */
  const measuredBound = () =>
    measuredLowerBoundSeconds({
      hops: run.hops,
      batchSize: run.batchSize,
      controlPlanes: sim.description.nodes.filter((n) => n.role === 'control-plane').map((n) => n.name),
      workers: sim.description.nodes.filter((n) => n.role === 'worker').map((n) => n.name),
      hostWaits: (node) => hostWaitSeconds(sim.hosts.commandLog(node)),
    });
  const svg = `${id}.svg`;
  if (run.tool === 'baseline') {
    const r = await runBaseline({
      sim,
      binaries: b.binaries,
      registry: b.registry,
      logsDir: b.logsDir,
      versions: [...versions],
      label: id,
    });
    await assertUpgraded(sim, target, id);
    const lanes = [...new Set(r.bars.map((x) => x.lane))];
    writeFileSync(join(b.o.out, svg), renderTimelineSvg({ title: `${id}: bench/baseline.sh (kubectl drain + ssh)`, lanes, bars: r.bars }));
    return runResult({ ...base, lowerBoundSeconds: measuredBound(), wallSeconds: r.wallSeconds, timeline: svg, ...counted() });
  }
  const root = b.o.builds?.find((x) => x.label === run.build)?.root;
  const s = await runSkewless({
    sim,
    temporal: b.temporal,
    registry: b.registry,
    cli: root ? join(root, 'bin', 'skewless.js') : CLI,
    metricsUrl: b.metricsUrl,
    logsDir: b.logsDir,
    to: target,
    batchSize: run.batchSize,
    label: id,
    nodeOptions: b.o.workerNodeOptions,
    ...(run.workersEveryHop ? { workersEveryHop: true } : {}),
  });
  await assertUpgraded(sim, target, id);
  const title = `${id}: skewless upgrade --batch-size ${run.batchSize}${run.workersEveryHop ? ' --workers-every-hop' : ''}${root ? ` (${root})` : ''}`;
  writeFileSync(join(b.o.out, svg), renderTimelineSvg(timelineFromRuns(s.runs, title)));
  const nodes = run.size.controlPlanes + run.size.workers;
  return runResult({
    ...base,
    lowerBoundSeconds: measuredBound(),
    wallSeconds: s.wallSeconds,
    worker: s.worker,
    timeline: svg,
    operatorRetries: s.retries,
    ...counted(),
    nodes: nodeBreakdown(s.runs),
    phases: phaseBreakdown(s.runs),
    events: { ...s.events, perNode: Math.round(((s.events.parent + s.events.nodeWorkflowEvents) / nodes / run.hops) * 10) / 10 },
    apiRequests: countWorkerRequests(s.auditEvents, nodes * run.hops),
    temporal: {
      ...temporalCost(s.runs, nodes * run.hops),
      statusQueries: s.statusQueries,
      ...(s.serverActions ? { serverActions: s.serverActions } : {}),
    },
  });
}

/** The `i`th run of the plan on a fresh cluster; one run that does not finish costs its row, not the others' numbers. */
async function measureRunOnFreshCluster(b: Bench, m: Measured, run: BenchRun, i: number, of: number): Promise<void> {
  const id = runId(run);
  const cluster = `b${i + 1}-${run.tool === 'baseline' ? 'base' : `sk${run.batchSize}`}${run.build ? `-${run.build}` : ''}`;
  log(
    `${i + 1}/${of} ${id}: starting a fresh cluster (${run.size.controlPlanes} + ${run.size.workers} nodes, ${run.size.workers * run.size.podsPerWorker} pods)`,
  );
  let world: Awaited<ReturnType<typeof freshCluster>> | undefined;
  try {
    world = await freshCluster(descriptionYaml(run.size, cluster), cluster, b.work, b.binaries);
    const last = await measureRun(b, run, world.sim, id, world.upSeconds);
    m.runs.push(last);
    log(`${id}: ${last.wallSeconds} s (lower bound ${last.lowerBoundSeconds} s, ${last.ratioToLowerBound}×)`);
  } catch (err) {
    m.failures.push({ id, error: (err as Error).message.split('\n')[0] ?? String(err) });
    log(`${id}: did not finish: ${m.failures.at(-1)?.error}`);
  } finally {
    await world?.close().catch(() => undefined);
    save(b.o, m);
  }
}

/** The drain of one node with `pods` pods, skewless and kubectl alternating, on a cluster of its own. */
async function measureDrain(b: Bench, pods: number): Promise<NonNullable<BenchResult['drain']>> {
  log(`drain of one node with ${pods} pods: skewless and kubectl, alternating`);
  const world = await freshCluster(drainDescriptionYaml('drain', pods), 'drain', b.work, b.binaries);
  try {
    const measurements = await drainBench(world.sim, b.binaries);
    const best = (tool: string) => Math.max(...measurements.filter((x) => x.tool === tool).map((x) => x.evictionsPerSecond));
    const drain = { pods, measurements, skewlessEvictionsPerSecond: best('skewless'), kubectlEvictionsPerSecond: best('kubectl') };
    log(`drain: skewless ${drain.skewlessEvictionsPerSecond}/s, kubectl ${drain.kubectlEvictionsPerSecond}/s`);
    return drain;
  } finally {
    await world.close();
  }
}

async function main(): Promise<number> {
  let o: Options | undefined;
  try {
    o = options(process.argv.slice(2));
  } catch (err) {
    if (err instanceof UsageError) {
      process.stderr.write(`bench: ${err.message}\n`);
      return 2;
    }
    throw err;
  }
  if (!o) {
    process.stdout.write(`${benchHelp}\n`);
    return 0;
  }
  const m: Measured = { startedAt: new Date().toISOString(), runs: [], failures: [] };
  const b = await startBench(o);
  try {
    const opts = o;
    const plan: BenchRun[] = o.sizes
      .flatMap((size) => opts.hops.flatMap((hops) => runsOf(size, hops, toolsFor(size, hops, opts))))
      // --builds: each skewless run once per build, one after the other, so that both meet the same machine.
      .flatMap((run) => (run.tool === 'skewless' && opts.builds ? opts.builds.map((x) => ({ ...run, build: x.label })) : [run]));
    for (const [i, run] of plan.entries()) await measureRunOnFreshCluster(b, m, run, i, plan.length);
    if (o.drainPods > 0) m.drain = await measureDrain(b, o.drainPods);
    process.stdout.write(save(o, m));
    log(`results: ${join(o.out, 'bench.json')}, ${join(o.out, 'bench.md')}`);
    return m.failures.length ? 1 : 0;
  } finally {
    await stopBench(b);
  }
}

main().then(
  (code) => process.exit(code),
  (err) => {
    process.stderr.write(`bench: ${(err as Error).stack ?? String(err)}\n`);
    process.exit(1);
  },
);
