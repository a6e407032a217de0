import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { tempDir } from './temp-dir.js';

export const repoRoot = fileURLToPath(new URL('../../../', import.meta.url));
const bin = join(repoRoot, 'bin', 'skewless.js');

export interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs the real `skewless` executable, as a script or an operator would. */
export function runCli(args: string[]): CliResult {
  const r = spawnSync(process.execPath, [bin, ...args], { encoding: 'utf8', cwd: repoRoot, timeout: 60_000 });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

/** Writes JSON (or raw text) files into a fresh temporary folder; returns their paths. */
export function writeFiles(files: Record<string, unknown>): Record<string, string> {
  const dir = tempDir('cli');
  const paths: Record<string, string> = {};
  for (const [name, content] of Object.entries(files)) {
    paths[name] = join(dir, name);
    writeFileSync(paths[name], typeof content === 'string' ? content : JSON.stringify(content));
  }
  return paths;
}
