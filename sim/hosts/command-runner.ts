// Runs one exec request's command line on a machine: parse, then each step with the host's faults
// applied, stopping at the first failure of an `&&` chain; every request lands in the command log.
import type { ServerChannel } from 'ssh2';
import { parseCommandLine } from './command-line.js';
import { CRASH, REBOOT, type CommandContext } from './commands/command.js';
import { lookupCommand, REBOOTS_MIDWAY } from './commands/index.js';
import { AbortedError, asError, sleep, type HostMachine } from './host-machine.js';
import { HostPathError } from './host-state.js';

export interface ExecIo {
  out(text: string): void;
  err(text: string): void;
  /** Fires when the client closes the channel or the connection drops. */
  signal: AbortSignal;
}

/** `exitCode` null: the client went away first, or the host rebooted (no exit status is sent). */
export interface ExecResult {
  exitCode: number | null;
  reboot: boolean;
  /** The host went down in the middle of the command (rebootDuring): logged without an exit code. */
  crashed?: boolean;
}

export async function runCommandLine(machine: HostMachine, line: string, io: ExecIo): Promise<ExecResult> {
  const started = Date.now();
  const result = await run(machine, line, io).catch((err: unknown): ExecResult => {
    if (err instanceof AbortedError || io.signal.aborted) return { exitCode: null, reboot: false };
    machine.config.onError(asError(err, `${machine.name}: '${line}'`));
    io.err(`sim: internal error: ${err instanceof Error ? err.message : String(err)}\n`);
    return { exitCode: 1, reboot: false };
  });
  const exitCode = io.signal.aborted && !result.reboot ? null : result.exitCode;
  // A reboot "succeeds" on the host even though the client never hears its status.
  machine.store.appendCommand({ time: new Date(started).toISOString(), command: line, exitCode: result.reboot && !result.crashed ? 0 : exitCode, durationMs: Date.now() - started });
  return { exitCode, reboot: result.reboot };
}

async function run(machine: HostMachine, line: string, io: ExecIo): Promise<ExecResult> {
  const parsed = parseCommandLine(line);
  if (!parsed.ok) {
    io.err(`${parsed.error}\n`);
    return { exitCode: 2, reboot: false };
  }
  let status = 0;
  for (const { command, onlyIfSucceeded } of parsed.steps) {
    if (onlyIfSucceeded && status !== 0) continue;
    const [name, ...args] = command.argv;
    if (name === undefined) {
      // `VAR=value` alone sets a shell variable; `sudo` alone prints its usage.
      if (command.sudo) io.err('usage: sudo -h | -K | -k | -V\n');
      status = command.sudo ? 1 : 0;
      continue;
    }
    const fault = machine.faults.take(command.argv);
    if (fault.extraDelayMs > 0) await sleep(fault.extraDelayMs, io.signal);
    if (fault.hang) await sleep(2 ** 31 - 1, io.signal); // until the client gives up
    if (fault.fail) {
      io.err(fault.fail.stderr.endsWith('\n') ? fault.fail.stderr : `${fault.fail.stderr}\n`);
      status = fault.fail.exitCode;
      continue;
    }
    const found = lookupCommand(name);
    if (!found) {
      io.err(`bash: line 1: ${name}: command not found\n`);
      status = 127;
      continue;
    }
    if (fault.reboot && !REBOOTS_MIDWAY.has(found.handler)) return { exitCode: null, reboot: true, crashed: true };
    const ctx: CommandContext = {
      argv: [found.name, ...args], env: command.env, root: command.sudo || !machine.config.requireSudo,
      machine, signal: io.signal, out: io.out, err: io.err, ...(fault.reboot ? { rebootMidway: true } : {}),
    };
    try {
      const outcome = await found.handler(ctx);
      if (outcome === REBOOT) return { exitCode: null, reboot: true };
      if (outcome === CRASH) return { exitCode: null, reboot: true, crashed: true };
      status = outcome;
    } catch (err) {
      if (!(err instanceof HostPathError)) throw err;
      io.err(`${err.message}\n`);
      status = 2;
    }
  }
  return { exitCode: status, reboot: false };
}

/** Serves one exec request: output to the channel, then its exit status (none after a reboot). */
export function execOnChannel(machine: HostMachine, command: string, channel: ServerChannel): void {
  const aborter = new AbortController();
  // No command reads stdin; draining it lets ssh2 emit 'close' when the client closes the channel
  // or the connection drops (it waits for the readable side to end first).
  channel.resume();
  channel.on('close', () => aborter.abort());
  // The simulator stopping ends every command too (a hung one would otherwise keep the process alive).
  const onShutdown = (): void => aborter.abort();
  if (machine.lifetimeSignal.aborted) aborter.abort();
  machine.lifetimeSignal.addEventListener('abort', onShutdown, { once: true });
  const { signal } = aborter;
  runCommandLine(machine, command, {
    out: (text) => void (!signal.aborted && channel.write(text)),
    err: (text) => void (!signal.aborted && channel.stderr.write(text)),
    signal,
  }).then((result) => {
    if (result.reboot) return machine.reboot(); // drops this connection too: no exit status, as with a real reboot
    if (result.exitCode === null || signal.aborted) return;
    channel.exit(result.exitCode);
    channel.end();
  }, (err: unknown) => machine.config.onError(err instanceof Error ? err : new Error(String(err))))
    .finally(() => machine.lifetimeSignal.removeEventListener('abort', onShutdown));
}
