import { writeFileSync } from 'node:fs';
import { run } from 'node:test';
import { spec } from 'node:test/reporters';

/**
 * One tier's test files, started in the order given:
 * `node --test-timeout=MS dist/test/runner/run-in-order.js CONCURRENCY FILE...`.
 * `node --test FILE...` sorts its files by path (node 20's createTestFileList), which started the
 * slowest files that tiers.ts lists first (faults/worker-kill, windows/maintenance-windows) last
 * in the e2e tier, so that they ended it alone; node's `run()` keeps the order. Prints node's spec
 * report, and writes each file's time (its top-level tests and suites, hooks included) as
 * `{ "<file>": ms }` to SKEWLESS_FILE_TIMES_OUT: the runner's "slowest files". The file processes
 * inherit `--test-timeout` from this one's command line, as under `node --test`.
 */
const [concurrencyArg, ...files] = process.argv.slice(2);
const concurrency = Number(concurrencyArg);
if (!Number.isInteger(concurrency) || concurrency < 1 || files.length === 0) throw new Error('usage: run-in-order.js CONCURRENCY FILE...');

const stream = run({ files, concurrency, timeout: testTimeoutMs() });
const fileMs: Record<string, number> = {};
const addFileTime = (data: { file?: string; nesting: number; details: { duration_ms: number } }) => {
  if (data.file && data.nesting === 0) fileMs[data.file] = (fileMs[data.file] ?? 0) + data.details.duration_ms;
};
stream.on('test:pass', addFileTime);
stream.on('test:fail', (data) => {
  addFileTime(data);
  if (!data.todo) process.exitCode = 1;
});
stream.compose(new spec()).pipe(process.stdout);
process.once('beforeExit', () => {
  const out = process.env.SKEWLESS_FILE_TIMES_OUT;
  if (out) writeFileSync(out, `${JSON.stringify(fileMs)}\n`);
});

/** The `--test-timeout` this process was started with, for the files as a whole too (as `node --test` does). */
function testTimeoutMs(): number {
  const flag = process.execArgv.find((a) => a.startsWith('--test-timeout='));
  return flag ? Number(flag.slice('--test-timeout='.length)) : Infinity;
}
