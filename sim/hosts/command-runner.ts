// Runs one exec request's command line on a machine: parse, then each step with the host's faults
// applied, stopping at the first failure of an `&&` chain; every request lands in the command log.
//
// A client that goes away mid-command (its process killed, the connection dropped): sshd closes the
// session. An exec request has no terminal, so no SIGHUP: the command runs on until it next writes
// to the closed stdout or stderr, and SIGPIPE ends it there. Whether that is before or after it has
// done its work depends on where it was, so the host can go either way (HangupPolicy): `dies` (the
// default) ends the command at its next wait, before its effect; `finishes` lets it complete on the
// host, its output lost and no exit status sent. Either way the log says the client hung up.
import type { ServerChannel } from 'ssh2';
import { parseCommandLine, type SimpleCommand } from './command-line.js';
import { CRASH, REBOOT, type CommandContext, type CommandOutcome } from './commands/command.js';
import { lookupCommand, REBOOTS_MIDWAY } from './commands/index.js';
import { AbortedError, asError, sleep, type HostMachine } from './host-machine.js';
import { HostPathError } from './host-state.js';
import { startProcess } from './process-table.js';

export interface ExecIo {
  out(text: string): void;
  err(text: string): void;
  /** Ends the command: the client went away and the command dies of it, or the simulator stops. */
  signal: AbortSignal;
  /** Whether the client has gone away (the command may still be running: HangupPolicy `finishes`). */
  hungUp?: () => boolean;
}

/** What a command in flight does when its client goes away (see the top of this file). */
export type HangupFate = 'dies' | 'finishes';
export type HangupPolicy = (host: string, command: string) => HangupFate;

/** A command starting or ending on a host, for observers (a fault harness timing its kills). */
export type CommandEvent =
  | { phase: 'start'; host: string; command: string; time: number }
  | { phase: 'end'; host: string; command: string; time: number; exitCode: number | null; hungUp: boolean; durationMs: number };
export type CommandObserver = (event: CommandEvent) => void;

/** `exitCode` null: the client went away first, or the host rebooted (no exit status is sent). */
export interface ExecResult {
  exitCode: number | null;
  reboot: boolean;
  /** The host went down in the middle of the command (rebootDuring): logged without an exit code. */
  crashed?: boolean;
}

export async function runCommandLine(machine: HostMachine, line: string, io: ExecIo, observe?: CommandObserver): Promise<ExecResult> {
  const started = Date.now();
  observe?.({ phase: 'start', host: machine.name, command: line, time: started });
  const result = await run(machine, line, io).catch((err: unknown): ExecResult => {
    if (err instanceof AbortedError || io.signal.aborted) return { exitCode: null, reboot: false };
    machine.config.onError(asError(err, `${machine.name}: '${line}'`));
    io.err(`sim: internal error: ${err instanceof Error ? err.message : String(err)}\n`);
    return { exitCode: 1, reboot: false };
  });
  const exitCode = io.signal.aborted && !result.reboot ? null : result.exitCode;
  const hungUp = io.hungUp?.() ?? false;
  const durationMs = Date.now() - started;
  // The log is the host's view: a command that ran to its end logs its status even if the client
  // had gone by then (a step that ignores the hangup, such as systemctl, finishes what it started);
  // null when it was cut short or the host went down under it. A reboot "succeeds" though the
  // client never hears its status.
  const logged = result.reboot && !result.crashed ? 0 : result.exitCode;
  machine.store.appendCommand({
    time: new Date(started).toISOString(),
    command: line,
    exitCode: logged,
    durationMs,
    ...(hungUp ? { hungUp } : {}),
  });
  observe?.({ phase: 'end', host: machine.name, command: line, time: Date.now(), exitCode: logged, hungUp, durationMs });
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
    if (command.argv.length === 0) {
      // `VAR=value` alone sets a shell variable; `sudo` alone prints its usage.
      if (command.sudo) io.err('usage: sudo -h | -K | -k | -V\n');
      status = command.sudo ? 1 : 0;
      continue;
    }
    // A process for pgrep from here until the step ends, however it ends (a hung one included).
    const exited = startProcess(machine, command.argv);
    let outcome: CommandOutcome;
    try {
      outcome = await runStep(machine, command, io);
    } finally {
      exited();
      // The kubelet notices a static-pod manifest moved in or out (a control plane only).
      void machine.noticeManifests();
    }
    if (outcome === REBOOT) return { exitCode: null, reboot: true };
    if (outcome === CRASH) return { exitCode: null, reboot: true, crashed: true };
    status = outcome;
  }
  return { exitCode: status, reboot: false };
}

export interface ChannelOptions {
  hangup?: HangupPolicy;
  observe?: CommandObserver;
}

async function runStep(machine: HostMachine, command: SimpleCommand, io: ExecIo): Promise<CommandOutcome> {
  const [name = '', ...args] = command.argv;
  const fault = machine.faults.take(command.argv);
  if (fault.extraDelayMs > 0) await sleep(fault.extraDelayMs, io.signal);
  if (fault.hang) await sleep(2 ** 31 - 1, io.signal); // until the client gives up
  if (fault.fail) {
    io.err(fault.fail.stderr.endsWith('\n') ? fault.fail.stderr : `${fault.fail.stderr}\n`);
    return fault.fail.exitCode;
  }
  const found = lookupCommand(name, machine.config.packageManager);
  if (!found) {
    io.err(`bash: line 1: ${name}: command not found\n`);
    return 127;
  }
  if (fault.reboot && !REBOOTS_MIDWAY.has(found.handler)) return CRASH;
  const ctx: CommandContext = {
    argv: [found.name, ...args],
    env: command.env,
    root: command.sudo || machine.loginIsRoot,
    machine,
    signal: io.signal,
    out: io.out,
    err: io.err,
    ...(fault.reboot ? { rebootMidway: true } : {}),
  };
  try {
    return await found.handler(ctx);
  } catch (err) {
    if (!(err instanceof HostPathError)) throw err;
    io.err(`${err.message}\n`);
    return 2;
  }
}

/** Serves one exec request: output to the channel, then its exit status (none after a reboot). */
export function execOnChannel(machine: HostMachine, command: string, channel: ServerChannel, options: ChannelOptions = {}): void {
  const aborter = new AbortController();
  let hungUp = false;
  // No command reads stdin; draining it lets ssh2 emit 'close' when the client closes the channel
  // or the connection drops (it waits for the readable side to end first).
  channel.resume();
  channel.on('close', () => {
    hungUp = true;
    if ((options.hangup?.(machine.name, command) ?? 'dies') === 'dies') aborter.abort();
  });
  // The simulator stopping ends every command too (a hung one would otherwise keep the process alive).
  const onShutdown = (): void => aborter.abort();
  if (machine.lifetimeSignal.aborted) aborter.abort();
  machine.lifetimeSignal.addEventListener('abort', onShutdown, { once: true });
  const { signal } = aborter;
  runCommandLine(
    machine,
    command,
    {
      out: (text) => void (!hungUp && channel.write(text)),
      err: (text) => void (!hungUp && channel.stderr.write(text)),
      signal,
      hungUp: () => hungUp,
    },
    options.observe,
  )
    .then(
      (result) => {
        if (result.reboot) return machine.reboot(); // drops this connection too: no exit status, as with a real reboot
        if (result.exitCode === null || signal.aborted || hungUp) return;
        channel.exit(result.exitCode);
        channel.end();
      },
      (err: unknown) => machine.config.onError(err instanceof Error ? err : new Error(String(err))),
    )
    .finally(() => machine.lifetimeSignal.removeEventListener('abort', onShutdown));
}
