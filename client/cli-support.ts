import { readFileSync } from 'node:fs';
import { parseArgs, type ParseArgsConfig } from 'node:util';
import { RuleError } from '../rules/index.js';

/** Bad input: the CLI prints its one-line message and exits 2, having touched nothing. */
export class UsageError extends Error {
  override name = 'UsageError';
}

export const EXIT = { ok: 0, notCompliant: 1, invalid: 2, unreachable: 3 } as const;

export type Output = 'text' | 'json';

export interface CommandIo {
  out: (text: string) => void;
  err: (text: string) => void;
}

export const processIo: CommandIo = {
  out: (text) => process.stdout.write(text.endsWith('\n') ? text : `${text}\n`),
  err: (text) => process.stderr.write(text.endsWith('\n') ? text : `${text}\n`),
};

/** node:util parseArgs, with its errors turned into one-line usage errors. */
export function parseOptions<T extends NonNullable<ParseArgsConfig['options']>>(args: string[], options: T, allowPositionals = false) {
  try {
    return parseArgs({ args, options: { ...options, help: { type: 'boolean', short: 'h' } }, strict: true, allowPositionals });
  } catch (err) {
    throw new UsageError((err as Error).message.split('\n')[0] ?? 'invalid arguments');
  }
}

export function outputFormat(value: string | undefined): Output {
  if (value === undefined || value === 'text') return 'text';
  if (value === 'json') return 'json';
  throw new UsageError(`--output must be "json" or "text", got ${JSON.stringify(value)}`);
}

export function requireOption(value: string | undefined, flag: string): string {
  if (value === undefined || value === '') throw new UsageError(`${flag} is required`);
  return value;
}

export function intOption(value: string | undefined, flag: string, min: number): number | undefined {
  if (value === undefined) return undefined;
  if (!/^\d+$/.test(value) || Number(value) < min) throw new UsageError(`${flag} must be an integer ≥ ${min}, got ${JSON.stringify(value)}`);
  return Number(value);
}

export function readJsonFile(path: string, what: string): unknown {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    throw new UsageError(`cannot read ${what} ${path}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
  }
  try {
    return JSON.parse(text);
  } catch (err) {
    throw new UsageError(`${what} ${path} is not valid JSON: ${(err as Error).message.split('\n')[0]}`);
  }
}

/** Runs a command body; usage and rule errors become one stderr line and exit code 2. */
export async function runCommand(io: CommandIo, body: () => Promise<number> | number): Promise<number> {
  try {
    return await body();
  } catch (err) {
    if (err instanceof UsageError || err instanceof RuleError) {
      io.err(`skewless: ${err.message.replace(/\s*\n\s*/g, ' ')}`);
      return EXIT.invalid;
    }
    if ((err as Error)?.name === 'UnreachableError') {
      io.err(`skewless: ${(err as Error).message}`);
      return EXIT.unreachable;
    }
    throw err;
  }
}
