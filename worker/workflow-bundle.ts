import { existsSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { bundleWorkflowCode } from '@temporalio/worker';
import { distRoot, workflowBundlePath } from '../tooling/build-info.js';

/**
 * The workflow bundle, built once by `npm run build` (Temporal's advice for production workers):
 * a worker that bundles at start runs webpack in its own process and keeps the memory; measured,
 * an idle worker held 306 MiB RSS bundling itself and 221 MiB loading this file.
 */
export const workflowsPath = join(distRoot, 'workflows', 'index.js');
export const prebuiltBundlePath = workflowBundlePath;
/** What the bundle is made of: the workflows and the pure rules they import (the lint bans anything else). */
const SOURCES = ['workflows', 'rules'].map((d) => join(distRoot, d));

const newestJs = (dir: string): number =>
  readdirSync(dir, { withFileTypes: true }).reduce((newest, e) => {
    const path = join(dir, e.name);
    if (e.isDirectory()) return Math.max(newest, newestJs(path));
    return e.name.endsWith('.js') ? Math.max(newest, statSync(path).mtimeMs) : newest;
  }, 0);

/** The prebuilt bundle, unless it is missing or older than a compiled workflow (a `tsc` after the build). */
export function prebuiltBundle(): { codePath: string } | undefined {
  if (!existsSync(prebuiltBundlePath)) return undefined;
  const built = statSync(prebuiltBundlePath).mtimeMs;
  return SOURCES.every((d) => !existsSync(d) || newestJs(d) <= built) ? { codePath: prebuiltBundlePath } : undefined;
}

export async function writeWorkflowBundle(): Promise<number> {
  const quiet = () => undefined;
  const { code } = await bundleWorkflowCode({
    workflowsPath,
    logger: { log: quiet, trace: quiet, debug: quiet, info: quiet, warn: (m) => console.warn(m), error: (m) => console.error(m) },
  });
  writeFileSync(prebuiltBundlePath, code);
  return Buffer.byteLength(code);
}
