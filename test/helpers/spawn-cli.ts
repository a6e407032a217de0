import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { repoRoot, type CliResult } from './run-cli.js';

/** A `skewless` process running in the background: its output so far, and its end. */
export interface RunningCli {
  child: ChildProcess;
  stdout(): string;
  stderr(): string;
  exited: Promise<CliResult>;
}

/**
 * Starts the real `skewless` executable without blocking this process: tests that run a worker
 * in-process must never spawnSync (the worker would starve and the CLI wait on it forever).
 */
export function spawnCli(args: string[], env: NodeJS.ProcessEnv): RunningCli {
  const child = spawn(process.execPath, [join(repoRoot, 'bin', 'skewless.js'), ...args], { env, cwd: repoRoot });
  let out = '';
  let err = '';
  child.stdout?.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr?.on('data', (d: Buffer) => (err += d.toString()));
  const exited = new Promise<CliResult>((resolve) => child.on('close', (code) => resolve({ code, stdout: out, stderr: err })));
  return { child, stdout: () => out, stderr: () => err, exited };
}

/** Runs `skewless ARGS` to its end, asynchronously. */
export const cliAsync = (args: string[], env: NodeJS.ProcessEnv): Promise<CliResult> => spawnCli(args, env).exited;
