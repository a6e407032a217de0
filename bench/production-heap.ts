import { readFileSync } from 'node:fs';

/**
 * The worker's NODE_OPTIONS as the production image sets them (the Dockerfile's `ENV NODE_OPTIONS=…`),
 * so the benchmark's worker has the heap an operator's worker has. Node sizes its old generation from
 * the machine's memory when none is set (~4 GB on 24 GiB here) and then collects late: the worker's RSS
 * would say more about this machine than about skewless.
 */
export function productionNodeOptions(dockerfile: string): string {
  const text = readFileSync(dockerfile, 'utf8');
  const line = /^ENV\s+NODE_OPTIONS=("?)([^"\n]+)\1\s*$/m.exec(text);
  if (!line?.[2])
    throw new Error(`${dockerfile} sets no ENV NODE_OPTIONS for the worker: the bench runs the worker with the production heap`);
  return line[2].trim();
}
