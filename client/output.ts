import type { CommandIo } from './cli-support.js';

export { outputFormat, type Output } from './cli-support.js';

/**
 * What the commands print for automation (`--output json`) and for a person watching (`text`).
 *
 * - stdout carries the command's data only: one JSON document, or, for commands that follow an
 *   upgrade (`upgrade`, `watch`), one JSON object per line (NDJSON) for each change and a last
 *   line with the outcome. Every NDJSON record has `type`, `cluster` and `at` (ISO time).
 * - stderr carries errors (one line each) and, only when stderr is a terminal, a transient
 *   progress line that is erased before anything else is printed: no spinner lands in a log file.
 */

/** The option every data-printing command takes. */
export const OUTPUT_OPTION = { output: { type: 'string' } } as const;

/** One JSON document on stdout (indented, as `status` has always printed it). */
export function printJson(io: CommandIo, value: unknown, indent = false): void {
  io.out(indent ? JSON.stringify(value, null, 2) : JSON.stringify(value));
}

/** One NDJSON record on stdout: a single line, whatever it holds. */
export function printRecord(io: CommandIo, type: string, cluster: string, fields: Record<string, unknown> = {}): void {
  io.out(JSON.stringify({ type, cluster, at: new Date().toISOString(), ...fields }));
}

const FRAMES = ['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏'];

function elapsed(ms: number): string {
  const s = Math.floor(ms / 1000);
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m${String(s % 60).padStart(2, '0')}s`;
  return `${Math.floor(s / 3600)}h${String(Math.floor((s % 3600) / 60)).padStart(2, '0')}m`;
}

export interface Spinner {
  /** Shows TEXT with a turning frame and how long TEXT has been shown; nothing when stderr is no terminal. */
  show(text: string): void;
  clear(): void;
}

/** The transient progress line on stderr (io.transient exists only when stderr is a terminal). */
export function spinner(io: CommandIo): Spinner {
  let frame = 0;
  let last = '';
  let since = Date.now();
  return {
    show(text) {
      if (!io.transient) return;
      if (text !== last) [last, since] = [text, Date.now()];
      io.transient(`${FRAMES[frame++ % FRAMES.length]} ${text} (${elapsed(Date.now() - since)})`);
    },
    clear() {
      last = '';
      io.transient?.('');
    },
  };
}

/** Shows TEXT on the spinner, turning, while WORK runs; then erases it. */
export async function whileShowing<T>(io: CommandIo, text: string, work: () => Promise<T>): Promise<T> {
  const s = spinner(io);
  if (!io.transient) return work();
  s.show(text);
  const timer = setInterval(() => s.show(text), 200);
  try {
    return await work();
  } finally {
    clearInterval(timer);
    s.clear();
  }
}
