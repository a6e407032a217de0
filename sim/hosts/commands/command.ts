// The contract between the command runner and one tool's module (apt-get, kubeadm, ...).
import type { HostMachine } from '../host-machine.js';

/** Returned by reboot: the runner logs it, then the machine goes down and the session drops without an exit status. */
export const REBOOT = Symbol('reboot');
/** The host went down while the command ran (a rebootDuring fault): it never finished, no exit status. */
export const CRASH = Symbol('crash');
export type CommandOutcome = number | typeof REBOOT | typeof CRASH;

export interface CommandContext {
  /** argv[0] is the tool's name without its directory (`/usr/bin/kubeadm` → `kubeadm`). */
  readonly argv: readonly string[];
  readonly env: Readonly<Record<string, string>>;
  /** Runs as root: through `sudo`, or the simulator does not require it. */
  readonly root: boolean;
  readonly machine: HostMachine;
  /** Fires when the client closes the channel or the connection drops. */
  readonly signal: AbortSignal;
  /**
   * A rebootDuring fault cuts this command: a tool that models a half-done state (apt-get install)
   * stops there and returns CRASH. Tools not in REBOOTS_MIDWAY never see it: the runner crashes first.
   */
  readonly rebootMidway?: boolean;
  out(text: string): void;
  err(text: string): void;
}

export type CommandHandler = (ctx: CommandContext) => Promise<CommandOutcome>;

/** Prints `message` (a line) on stderr and returns `exitCode`. */
export function fail(ctx: CommandContext, message: string, exitCode: number): number {
  ctx.err(message.endsWith('\n') ? message : `${message}\n`);
  return exitCode;
}

/** Prints lines on stdout. */
export function print(ctx: CommandContext, ...lines: string[]): void {
  ctx.out(lines.map((l) => `${l}\n`).join(''));
}
