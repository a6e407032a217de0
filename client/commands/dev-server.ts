import { spawn } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { ensureTemporalBinary } from '../../tooling/temporal-binary.js';
import { ALL_SEARCH_ATTRIBUTES } from '../../workflows/search-attributes.js';
import { type CommandIo, EXIT, helpAsked, intOption, parseOptions } from '../cli-support.js';

export const devServerHelp = `Usage: skewless dev-server [--db FILE] [--ip ADDRESS] [--port N] [--ui-port N]

Starts the Temporal dev server (built from the Go module proxy on first use) with its history
persisted to FILE (default .skewless/temporal-dev.db), the Web UI on, and skewless's search
attributes registered. Runs in the foreground until interrupted. A service: it takes no --output;
its own line goes to stderr, the Temporal server's log wherever the server writes it.
Defaults: --ip 127.0.0.1 --port 7233 --ui-port 8233.`;

// The temporal CLI's spelling of each search attribute type.
const CLI_TYPE: Record<string, string> = {
  KEYWORD: 'Keyword',
  TEXT: 'Text',
  INT: 'Int',
  DOUBLE: 'Double',
  BOOL: 'Bool',
  DATETIME: 'Datetime',
  KEYWORD_LIST: 'KeywordList',
};

/** The dev server's argv: shared by the CLI and the tests that start one. */
export function devServerArgs(o: { db: string; ip: string; port: number; uiPort: number; metricsPort?: number }): string[] {
  return [
    'server',
    'start-dev',
    '--db-filename',
    o.db,
    '--ip',
    o.ip,
    '--port',
    String(o.port),
    '--ui-port',
    String(o.uiPort),
    // Its /metrics (the bench reads the server's action counter there); otherwise a random free port.
    ...(o.metricsPort ? ['--metrics-port', String(o.metricsPort)] : []),
    '--log-level',
    'warn',
    ...ALL_SEARCH_ATTRIBUTES.flatMap((key) => ['--search-attribute', `${key.name}=${CLI_TYPE[key.type] ?? key.type}`]),
  ];
}

export async function devServerCommand(args: string[], io: CommandIo): Promise<number> {
  const { values } = parseOptions(args, {
    db: { type: 'string' },
    ip: { type: 'string' },
    port: { type: 'string' },
    'ui-port': { type: 'string' },
  });
  if (helpAsked(values, devServerHelp, io)) return EXIT.ok;
  const db = resolve(values.db ?? '.skewless/temporal-dev.db');
  const ip = values.ip ?? '127.0.0.1';
  const port = intOption(values.port, '--port', 1) ?? 7233;
  const uiPort = intOption(values['ui-port'], '--ui-port', 1) ?? 8233;
  mkdirSync(dirname(db), { recursive: true });
  const bin = ensureTemporalBinary();
  io.err(`skewless dev-server: Temporal on ${ip}:${port}, UI http://${ip}:${uiPort}, history in ${db}`);
  const child = spawn(bin, devServerArgs({ db, ip, port, uiPort }), { stdio: 'inherit' });
  for (const signal of ['SIGINT', 'SIGTERM'] as const) process.on(signal, () => child.kill(signal));
  return new Promise((done) => child.on('exit', (code) => done(code ?? EXIT.ok)));
}
