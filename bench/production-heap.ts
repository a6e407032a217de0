import { readFileSync } from 'node:fs';

/**
 * The worker's NODE_OPTIONS as the production image sets them (the Dockerfile's `ENV NODE_OPTIONS=…`;
 * empty when it sets none), so the benchmark's worker has the heap an operator's worker has.
 *
 * The image sets none for now: with `--max-old-space-size=256` the 1,000-node run stopped after 102 nodes.
 * The SDK sizes its default workflow cache from the heap limit (about 50 workflows at 256 MiB), a batch of
 * 100 node workflows evicted the upgrade's own workflow, and a status query that reached it while it was
 * replayed made the SDK refuse the completion ("legacy query response along with other commands") and shut
 * the worker down. A heap limit needs `maxCachedWorkflows` set with it (docs/benchmark.md).
 */
export function productionNodeOptions(dockerfile: string): string {
  const text = readFileSync(dockerfile, 'utf8');
  const line = /^ENV\s+NODE_OPTIONS=("?)([^"\n]*)\1\s*$/m.exec(text);
  return line?.[2]?.trim() ?? '';
}
