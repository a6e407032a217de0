import { writeFileSync } from 'node:fs';

/**
 * A node:test reporter (second to the spec reporter) that adds up the duration of each file's top-level
 * tests and suites (a suite's duration includes its before/after hooks), and writes
 * `{ "<file>": ms, ... }` to SKEWLESS_FILE_TIMES_OUT when the run ends: the runner's "slowest files".
 */
interface TestEvent {
  type: string;
  data: { file?: string; nesting?: number; details?: { duration_ms?: number } };
}

export default async function* fileTimes(source: AsyncIterable<TestEvent>): AsyncGenerator<string> {
  const totals: Record<string, number> = {};
  for await (const event of source) {
    if (event.type !== 'test:pass' && event.type !== 'test:fail') continue;
    const { file, nesting, details } = event.data;
    if (!file || nesting !== 0) continue;
    totals[file] = (totals[file] ?? 0) + (details?.duration_ms ?? 0);
  }
  const out = process.env.SKEWLESS_FILE_TIMES_OUT;
  if (out) writeFileSync(out, `${JSON.stringify(totals)}\n`);
  yield '';
}
