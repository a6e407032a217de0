import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * Where the running copy of skewless lives and what it is made of. Every path is taken from this
 * file's own place (dist/tooling/), never from the working directory or a checkout: the same code
 * runs from a clone (`npm run build`) and from the installed npm package, whose root holds `dist/`,
 * `bin/`, `docs/`, `deploy/`, `scripts/ensure-temporal.sh` and `tooling/versions.json` alike.
 */
export const packageRoot = fileURLToPath(new URL('../..', import.meta.url));
export const distRoot = join(packageRoot, 'dist');
/** Written by `npm run build` (worker/bundle-workflows.ts), loaded by every worker. */
export const workflowBundlePath = join(distRoot, 'workflow-bundle.js');
/** The script that builds the Temporal CLI once (the dev server); shipped in the package too. */
export const ensureTemporalScript = join(packageRoot, 'scripts', 'ensure-temporal.sh');

const require = createRequire(import.meta.url);

export function packageVersion(): string {
  return (JSON.parse(readFileSync(join(packageRoot, 'package.json'), 'utf8')) as { version: string }).version;
}

/**
 * The build id of the workflow code: the first 12 hex digits of the bundle's SHA-256, so two workers
 * share one exactly when they run the same workflow code (what Worker Versioning keys a build by).
 * Undefined when no bundle is built (a checkout before `npm run build`).
 */
export function workflowBuildId(bundlePath = workflowBundlePath): string | undefined {
  if (!existsSync(bundlePath)) return undefined;
  return createHash('sha256').update(readFileSync(bundlePath)).digest('hex').slice(0, 12);
}

/** The Temporal TypeScript SDK this copy resolves (the client's package; the SDK's packages move together). */
export function temporalSdkVersion(): string {
  return (require('@temporalio/client/package.json') as { version: string }).version;
}
