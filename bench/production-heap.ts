import { readFileSync } from 'node:fs';

/**
 * The worker's NODE_OPTIONS as the production image sets them (the Dockerfile's `ENV NODE_OPTIONS=…`;
 * empty when it sets none), so the benchmark's worker has the heap an operator's worker has.
 *
 * A heap limit needs the workflow cache set with it: the SDK sizes its default cache from the limit (about
 * 50 workflows at 256 MiB), and a batch of 100 node workflows evicted the upgrade's own workflow, which then
 * shut the worker down (worker/create-worker.ts WORKFLOW_CACHE_SIZE).
 */
export function productionNodeOptions(dockerfile: string): string {
  const text = readFileSync(dockerfile, 'utf8');
  const line = /^ENV\s+NODE_OPTIONS=("?)([^"\n]*)\1\s*$/m.exec(text);
  return line?.[2]?.trim() ?? '';
}
