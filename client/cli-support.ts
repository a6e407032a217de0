import { readFileSync } from 'node:fs';
import { parseArgs, type ParseArgsConfig } from 'node:util';
import { RuleError } from '../rules/index.js';

/** Bad input: the CLI prints its one-line message and exits 2, having touched nothing. */
export class UsageError extends Error {
  override name = 'UsageError';
}

/** The command could not do its job (a workflow failed, no worker): one line, exit 1. */
export class CommandFailed extends Error {
  override name = 'CommandFailed';
}

/** `leftBehind`: an upgrade that finished but left nodes behind (skipped, quarantined, or cordoned by someone else): not 0, so a scheduler can tell. */
/** `interrupted`: Ctrl-C (SIGINT) on a command that follows a run: it stops following, the run goes on. */
export const EXIT = { ok: 0, notCompliant: 1, invalid: 2, unreachable: 3, leftBehind: 4, interrupted: 130 } as const;

export type Output = 'text' | 'json';

export interface CommandIo {
  out: (text: string) => void;
  err: (text: string) => void;
  /** A progress line that the next one replaces ('' erases it); only when stderr is a terminal. */
  transient?: (text: string) => void;
}

let transientShown = false;
/** Erases the progress line before anything else reaches the terminal. */
const eraseTransient = () => {
  if (transientShown) process.stderr.write('\r\x1b[2K');
  transientShown = false;
};

/**
 * stdout's reader is gone (`skewless history NAME | head -1`): what is left to print has no reader.
 * The command ends quietly at its next line, as a reader that stopped reading asked.
 */
export class OutputClosed extends Error {
  override name = 'OutputClosed';
}

let stdoutClosed = false;
/** Turns stdout's EPIPE (an 'error' event, thrown as an unhandled one without a listener) into OutputClosed. */
export function endQuietlyWhenStdoutCloses(): void {
  process.stdout.on('error', (err: NodeJS.ErrnoException) => {
    if (err.code !== 'EPIPE' && err.code !== 'ERR_STREAM_DESTROYED') throw err;
    stdoutClosed = true;
  });
}

export const processIo: CommandIo = {
  out: (text) => {
    if (stdoutClosed) throw new OutputClosed('stdout closed');
    if (process.stdout.isTTY) eraseTransient();
    process.stdout.write(text.endsWith('\n') ? text : `${text}\n`);
  },
  err: (text) => {
    eraseTransient();
    process.stderr.write(text.endsWith('\n') ? text : `${text}\n`);
  },
  ...(process.stderr.isTTY
    ? {
        transient: (text: string) => {
          eraseTransient();
          if (text === '') return;
          // One terminal row, never wrapped: a wrapped line could not be erased with \r.
          process.stderr.write(text.slice(0, Math.max(10, (process.stderr.columns || 80) - 1)));
          transientShown = true;
        },
      }
    : {}),
};

/** Options that each take one string value, for parseOptions: `...stringOptions('cluster', 'to')`. */
export const stringOptions = <K extends string>(...names: K[]) =>
  Object.fromEntries(names.map((name) => [name, { type: 'string' as const }])) as { [P in K]: { type: 'string' } };

/**
 * node:util parseArgs, with its errors turned into one-line usage errors. Booleans also take
 * --no-NAME, and --NAME=true|false as the temporal CLI spells it (--tls=false).
 */
export function parseOptions<T extends NonNullable<ParseArgsConfig['options']>>(args: string[], options: T, allowPositionals = false) {
  const booleans = new Set(
    Object.entries(options)
      .filter(([, o]) => o.type === 'boolean')
      .map(([name]) => name),
  );
  const spelled = args.map((arg) => {
    const m = /^--([a-z][a-z0-9-]*)=(true|false)$/.exec(arg);
    return m && booleans.has(m[1] as string) ? (m[2] === 'true' ? `--${m[1]}` : `--no-${m[1]}`) : arg;
  });
  try {
    return parseArgs({
      args: spelled,
      options: { ...options, help: { type: 'boolean', short: 'h' } },
      strict: true,
      allowPositionals,
      allowNegative: true,
    });
  } catch (err) {
    const message = (err as Error).message;
    // node says "argument is ambiguous" (three lines) for `--drain-timeout -5`: say what to type.
    const ambiguous = /^Option '(--[a-z0-9-]+)' argument is ambiguous/.exec(message);
    if (ambiguous) throw new UsageError(`${ambiguous[1]} needs a value; a value that starts with "-" is written ${ambiguous[1]}=VALUE`);
    throw new UsageError(message.split('\n')[0] ?? 'invalid arguments');
  }
}

/** `--help` (or `-h`) given: the command's help printed on stdout, and the command does nothing else (exit 0). */
export function helpAsked(values: { help?: boolean }, help: string, io: CommandIo): boolean {
  if (values.help) io.out(help);
  return values.help === true;
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
  if (!/^\d+$/.test(value) || Number(value) < min)
    throw new UsageError(`${flag} must be an integer ≥ ${min}, got ${JSON.stringify(value)}`);
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

const secrets = new Set<string>();

/** A value (an API key) that must never reach the terminal, even inside an unexpected error. */
export function registerSecret(value: string): void {
  if (value.length >= 4) secrets.add(value);
}

export function redact(text: string): string {
  let out = text;
  for (const secret of secrets) out = out.split(secret).join('<redacted>');
  return out;
}

/** Runs a command body; usage and rule errors become one stderr line and exit code 2. */
export async function runCommand(io: CommandIo, body: () => Promise<number> | number): Promise<number> {
  try {
    return await body();
  } catch (err) {
    if (err instanceof OutputClosed) return EXIT.ok; // the reader took what it wanted
    if (err instanceof Error) {
      err.message = redact(err.message);
      if (err.stack) err.stack = redact(err.stack);
    }
    if (err instanceof UsageError || err instanceof RuleError || (err as Error)?.name === 'ConfigError') {
      io.err(`skewless: ${(err as Error).message.replace(/\s*\n\s*/g, ' ')}`);
      return EXIT.invalid;
    }
    if ((err as Error)?.name === 'UnreachableError') {
      io.err(`skewless: ${(err as Error).message}`);
      return EXIT.unreachable;
    }
    // The namespace is checked by the server on the first call: a typo is the operator's, one line.
    if ((err as Error)?.name === 'NamespaceNotFoundError') {
      io.err(`skewless: ${(err as Error).message.split('\n')[0]} (--namespace or TEMPORAL_NAMESPACE)`);
      return EXIT.invalid;
    }
    if (err instanceof CommandFailed) {
      io.err(`skewless: ${err.message.replace(/\s*\n\s*/g, ' ')}`);
      return EXIT.notCompliant;
    }
    throw err;
  }
}
