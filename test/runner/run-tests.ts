import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ARCHIVE_ENV } from '../helpers/history-archive.js';
import { SHARED_TEMPORAL_ENV } from '../helpers/temporal-env.js';
import { startSharedTemporal, type SharedTemporal } from './shared-temporal.js';
import { FINALLY, TIER_NAMES, TIERS, type TierName } from './tiers.js';

/**
 * The suite's runner: `node dist/test/runner/run-tests.js [unit] [integration] [e2e] [--only TEXT]`.
 * Runs each tier's files (run-in-order.ts: node's test runner, in tiers.ts's order) with its concurrency and the services it needs (one Temporal dev
 * server per tier, stopped when the tier ends or the runner is killed), prints node's own report of each,
 * then one summary line per tier, the slowest files, and a total. With every tier (`npm test`) it keeps
 * the run's history archive and runs the secret scan over it last.
 */

const root = resolve(fileURLToPath(new URL('../../..', import.meta.url)));
const compiled = (source: string) => join(root, 'dist', source.replace(/\.ts$/, '.js'));

interface Counts {
  tests: number;
  pass: number;
  fail: number;
  cancelled: number;
  skipped: number;
  todo: number;
}
interface TierResult {
  name: string;
  counts: Counts;
  exitCode: number;
  wallMs: number;
  /** CPU of the tier's processes (undefined where /proc is not there). */
  cpuMs?: number;
  fileMs: Record<string, number>;
}

const TEST_TIMEOUT_MS = 20 * 60_000;

const zero = (): Counts => ({ tests: 0, pass: 0, fail: 0, cancelled: 0, skipped: 0, todo: 0 });

const SUMMARY_LINE = /^ℹ (tests|suites|pass|fail|cancelled|skipped|todo|duration_ms) [\d.]+$/;

/** The counts of node's spec report (`ℹ pass 12`); the last of each wins. */
function parseCounts(summary: string): Counts {
  const counts = zero();
  for (const key of Object.keys(counts) as (keyof Counts)[]) {
    const matches = [...summary.matchAll(new RegExp(`^ℹ ${key} (\\d+)$`, 'gm'))];
    const last = matches.at(-1);
    if (last) counts[key] = Number(last[1]);
  }
  return counts;
}

let current: { kill(): void } | undefined;
let services: SharedTemporal | undefined;
for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
  process.once(signal, () => {
    current?.kill();
    void (services?.stop() ?? Promise.resolve()).finally(() => process.kill(process.pid, signal));
  });
}

async function runTier(name: string, files: string[], concurrency: number, env: NodeJS.ProcessEnv): Promise<TierResult> {
  const timesDir = mkdtempSync(join(tmpdir(), 'skewless-times-'));
  const timesFile = join(timesDir, 'times.json');
  const args = [
    // A guard against a hang (a workflow nobody polls waits forever), far above the slowest test (the demo, ~4 min).
    `--test-timeout=${TEST_TIMEOUT_MS}`,
    compiled('test/runner/run-in-order.ts'),
    String(concurrency),
    ...files.map(compiled),
  ];
  const started = Date.now();
  const cpuBefore = childrenCpuMs();
  // Its own process group, so an interrupted run takes every test file's process with it.
  const child = spawn(process.execPath, args, {
    cwd: root,
    env: { ...env, SKEWLESS_FILE_TIMES_OUT: timesFile },
    stdio: ['ignore', 'pipe', 'inherit'],
    detached: true,
  });
  current = { kill: () => child.pid && process.kill(-child.pid, 'SIGTERM') };
  // node's summary (`ℹ pass 12`, at the start of a line) comes before the list of failures, which may be long.
  let summary = '';
  let partial = '';
  child.stdout.on('data', (chunk: Buffer) => {
    process.stdout.write(chunk);
    const lines = (partial + chunk.toString('utf8')).split('\n');
    partial = lines.pop() ?? '';
    for (const line of lines) if (SUMMARY_LINE.test(line)) summary += `${line}\n`;
  });
  const exitCode = await new Promise<number>((done) => child.once('close', (code, signal) => done(code ?? (signal ? 128 : 1))));
  current = undefined;
  const fileMs = existsSync(timesFile) ? (JSON.parse(readFileSync(timesFile, 'utf8')) as Record<string, number>) : {};
  rmSync(timesDir, { recursive: true, force: true });
  const cpuMs = cpuBefore === undefined ? undefined : (childrenCpuMs() ?? cpuBefore) - cpuBefore;
  return { name, counts: parseCounts(summary), exitCode, wallMs: Date.now() - started, cpuMs, fileMs };
}

/**
 * CPU time of this process's finished children and what they waited for (Linux: cutime + cstime of
 * /proc/self/stat), to say how many of the cores a tier used: the measure its concurrency is set by.
 */
function childrenCpuMs(): number | undefined {
  try {
    // Fields after the command's closing parenthesis; cutime and cstime are the 16th and 17th of the line.
    const fields = readFileSync('/proc/self/stat', 'utf8').split(') ')[1]?.split(' ') ?? [];
    const ticks = Number(fields[13]) + Number(fields[14]);
    return Number.isFinite(ticks) ? ticks * 10 : undefined; // USER_HZ is 100 on Linux
  } catch {
    return undefined;
  }
}

function selectFiles(files: readonly string[], only: string[]): string[] {
  return only.length === 0 ? [...files] : files.filter((f) => only.some((o) => f.includes(o)));
}

function parseArgs(argv: string[]): { tiers: TierName[]; only: string[] } {
  const tiers: TierName[] = [];
  const only: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i] as string;
    if (arg === '--only') {
      const text = argv[++i];
      if (!text) throw new Error('--only needs a piece of a test file path');
      only.push(text);
    } else if ((TIER_NAMES as readonly string[]).includes(arg)) tiers.push(arg as TierName);
    else
      throw new Error(
        `unknown tier or option ${JSON.stringify(arg)}: tiers are ${TIER_NAMES.join(', ')}; --only TEXT (repeatable) runs the files whose path contains TEXT`,
      );
  }
  return { tiers: tiers.length ? tiers : [...TIER_NAMES], only };
}

const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`;

function printSummary(results: TierResult[]): Counts {
  const total = zero();
  console.log('\n# skewless test tiers');
  for (const r of results) {
    for (const key of Object.keys(total) as (keyof Counts)[]) total[key] += r.counts[key];
    const c = r.counts;
    console.log(
      `# ${r.name.padEnd(12)} ${String(c.tests).padStart(5)} tests  ${String(c.pass).padStart(5)} pass  ${String(c.fail).padStart(3)} fail  ${String(c.skipped).padStart(3)} skipped  ${seconds(r.wallMs).padStart(9)} wall${r.cpuMs === undefined ? '' : `  ${(r.cpuMs / r.wallMs).toFixed(2)} cores`}${r.exitCode === 0 ? '' : `  (the tier's node exited ${r.exitCode})`}`,
    );
  }
  const slowest = results
    .flatMap((r) => Object.entries(r.fileMs).map(([file, ms]) => ({ file: relative(root, file), ms, tier: r.name })))
    .sort((a, b) => b.ms - a.ms)
    .slice(0, 10);
  if (slowest.length) {
    console.log('# slowest files (their top-level tests and hooks):');
    for (const s of slowest) console.log(`#   ${seconds(s.ms).padStart(9)}  ${s.tier.padEnd(12)} ${s.file}`);
  }
  return total;
}

async function main(): Promise<number> {
  const { tiers, only } = parseArgs(process.argv.slice(2));
  const whole = tiers.length === TIER_NAMES.length && only.length === 0;
  const env: NodeJS.ProcessEnv = { ...process.env };
  if (whole) {
    // The secret scan, last, reads every history the run's servers archived before they stopped.
    const archive = join(root, '.skewless', 'history-archive');
    rmSync(archive, { recursive: true, force: true });
    mkdirSync(archive, { recursive: true });
    env[ARCHIVE_ENV] = archive;
  }
  const started = Date.now();
  const results: TierResult[] = [];
  for (const name of tiers) {
    const tier = TIERS[name];
    const files = selectFiles(tier.files, only);
    if (files.length === 0) continue;
    console.log(
      `\n# tier ${name}: ${files.length} files, ${tier.concurrency} at a time${tier.temporal ? ', one shared Temporal dev server' : ''}`,
    );
    const tierEnv = { ...env };
    if (tier.temporal) {
      services = await startSharedTemporal();
      tierEnv[SHARED_TEMPORAL_ENV] = services.address;
    }
    try {
      results.push(await runTier(name, files, tier.concurrency, tierEnv));
    } finally {
      await services?.stop();
      services = undefined;
    }
  }
  if (whole) results.push(await runTier('finally', [...FINALLY], 1, env));
  const total = printSummary(results);
  // Every file's time, for whoever orders the tiers (tiers.ts lists the slowest first) or reads a slow run.
  const timesOut = join(root, '.skewless', 'test-times.json');
  mkdirSync(dirname(timesOut), { recursive: true });
  const filesOf = (r: TierResult) =>
    Object.fromEntries(
      Object.entries(r.fileMs)
        .sort(([, a], [, b]) => b - a)
        .map(([f, ms]) => [relative(root, f), Math.round(ms)]),
    );
  writeFileSync(
    timesOut,
    `${JSON.stringify(Object.fromEntries(results.map((r) => [r.name, { wallMs: r.wallMs, files: filesOf(r) }])), null, 1)}\n`,
  );
  console.log(`# every file's time: ${relative(root, timesOut)}`);
  console.log(`# all tiers: ${seconds(Date.now() - started)} wall`);
  console.log(`total: ${total.pass} passed, ${total.fail + total.cancelled} failed, ${total.skipped} skipped`);
  const failed = total.fail + total.cancelled > 0 || results.some((r) => r.exitCode !== 0) || results.length === 0;
  return failed ? 1 : 0;
}

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    console.error(`run-tests: ${err instanceof Error ? err.message : String(err)}`);
    process.exit(2);
  },
);
