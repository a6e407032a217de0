// Faults a test can inject into one host. Command faults match the command as the host runs it
// (argv joined by spaces, after `sudo` and `VAR=value`), by prefix: `apt-get install` matches
// `sudo -n DEBIAN_FRONTEND=noninteractive apt-get install -y kubeadm=1.33.7-1.1`. The fault's own
// text is read the same way, so a line copied from the host's commands.log matches too.
// Endpoint faults (refuse, rotateHostKey) act on the SSH endpoint and are carried out by the simulator.
import { canBeHostCommand } from '../../rules/host-command-forms.js';
import { parseCommandLine } from './command-line.js';

export type Fault =
  /** The next `times` (default 1) matching commands exit with `exitCode` (default 1), printing `stderr`. */
  | { kind: 'fail'; command: string; times?: number; exitCode?: number; stderr?: string }
  /** Connections are refused (the listener is closed; open connections are dropped) for `seconds`. */
  | { kind: 'refuse'; seconds: number }
  /** Matching commands (the next `times`, default all) never finish until the client closes the channel. */
  | { kind: 'hang'; command: string; times?: number }
  /** Matching commands (the next `times`, default all) take `ms` longer. */
  | { kind: 'slow'; command: string; ms: number; times?: number }
  /**
   * The host reboots while the next `times` (default 1) matching commands run: the connection drops
   * with no exit status. `apt-get install` is cut after dpkg unpacked the new packages and before it
   * configured them (dpkg interrupted, as after a power cut); any other command is cut before it changed anything.
   */
  | { kind: 'rebootDuring'; command: string; times?: number }
  /** The host presents a new host key from now on; known_hosts is not updated. */
  | { kind: 'rotateHostKey' };

export type CommandFault = Extract<Fault, { command: string }>;

/** What the injected faults do to one command about to run. */
export interface FaultEffect {
  fail?: { exitCode: number; stderr: string };
  hang: boolean;
  extraDelayMs: number;
  /** The host goes down while this command runs (rebootDuring). */
  reboot: boolean;
}

export function isCommandFault(fault: Fault): fault is CommandFault {
  return fault.kind === 'fail' || fault.kind === 'hang' || fault.kind === 'slow' || fault.kind === 'rebootDuring';
}

export function validateFault(fault: Fault): void {
  const positive = (n: number | undefined, what: string): void => {
    if (n !== undefined && !(Number.isFinite(n) && n >= 0)) throw new Error(`sim: fault ${fault.kind}: ${what} must be a number >= 0`);
  };
  if (isCommandFault(fault)) faultPattern(fault);
  if (fault.kind === 'refuse') positive(fault.seconds, 'seconds');
  if (fault.kind === 'slow') positive(fault.ms, 'ms');
  if ('times' in fault) positive(fault.times, 'times');
}

/**
 * The words a command fault matches: its command as the host's shell splits a command line, after
 * `sudo -n` and `VAR=value`, quotes removed (`sudo -n apt-mark showhold`, as commands.log shows it,
 * is `apt-mark showhold`). Text that shell refuses (a pipe, a glob) is matched word for word, as before.
 */
export function faultPattern(fault: CommandFault): string {
  if (typeof fault.command !== 'string') throw new Error(`sim: fault ${fault.kind}: command must be a string`);
  const parsed = parseCommandLine(fault.command);
  const words = parsed.ok ? parsed.steps.map((s) => s.command.argv.join(' ')) : [fault.command.trim().split(/\s+/).join(' ')];
  if (words.length > 1)
    throw new Error(
      `sim: fault ${fault.kind}: command ${JSON.stringify(fault.command)} is ${words.length} commands; a fault matches one (the host runs each step of && and ; on its own)`,
    );
  if (!words[0]) throw new Error(`sim: fault ${fault.kind}: command prefix is empty`);
  return words[0];
}

/**
 * Why a command fault can never match a command the host carries out, one line; undefined when it
 * can. A fault matches by whole words from the start (CommandFaults.take), so it can never match when
 * - its program (first word) is not on the host (`tool` answers undefined): `apt` (not `apt-get`), or
 *   `dnf` on a Debian host, would wait for a command that never comes;
 * - its second word is a plain word (not an option) and the program takes a verb there, but not that
 *   one (`dnf instal`, `apt-get remove`): the host answers such a command "invalid operation" before it
 *   runs anything, so nothing skewless sends, nor any command that does something, ever matches.
 * A pattern that starts with options (`apt-get -o …`) names no verb here and is taken as it is.
 */
export function unmatchableFault(
  fault: CommandFault,
  tool: (program: string) => { verbs?: readonly string[] } | undefined,
): string | undefined {
  const [program = '', second] = faultPattern(fault).split(' ');
  const found = tool(program);
  const never = `sim: fault ${fault.kind}: command ${JSON.stringify(fault.command)} can never match:`;
  if (!found) return `${never} the host has no program '${program}' (commands.log shows what it runs)`;
  if (found.verbs && second !== undefined && !second.startsWith('-') && !found.verbs.includes(second))
    return `${never} ${program} has no operation '${second}' here (it carries out ${found.verbs.join(', ')})`;
  return undefined;
}

/**
 * Why a command fault can never match a command skewless sends, one line; undefined when it can. The
 * product's forms (rules/host-command-forms.ts) decide, with the commands the cluster configuration
 * has an operator configure (`configured`: maintenance.command). What `sim fault` and a description
 * file (sim/description.ts) arm is checked so; a test of the host itself may still arm a fault on any
 * command of a program it has (HostSimulator.setFault without `sentBySkewless`).
 */
export function unsentFault(fault: CommandFault, configured: readonly (readonly string[])[] = []): string | undefined {
  const pattern = faultPattern(fault);
  if (canBeHostCommand(pattern.split(' '), configured)) return undefined;
  return `sim: fault ${fault.kind}: command ${JSON.stringify(fault.command)} can never match: skewless sends no command that starts with '${pattern}' (rules/host-command-forms.ts lists what it sends)`;
}

/** A command fault still armed, and how many more runs it takes (null: every run). */
export interface ArmedFault {
  fault: CommandFault;
  remaining: number | null;
}

interface Armed {
  fault: CommandFault;
  /** The fault's command, read as the host reads one (faultPattern). */
  prefix: string;
  remaining: number;
}

export class CommandFaults {
  private armed: Armed[] = [];

  add(fault: CommandFault): void {
    validateFault(fault);
    const remaining = fault.times ?? (fault.kind === 'fail' || fault.kind === 'rebootDuring' ? 1 : Infinity);
    this.armed.push({ fault, prefix: faultPattern(fault), remaining });
  }

  clear(): void {
    this.armed = [];
  }

  /** The faults still armed, in the order they were added. */
  list(): ArmedFault[] {
    return this.armed.map((a) => ({ fault: a.fault, remaining: Number.isFinite(a.remaining) ? a.remaining : null }));
  }

  /** The faults for `argv`; each matching fault uses up one of its runs. */
  take(argv: readonly string[]): FaultEffect {
    const text = argv.join(' ');
    const effect: FaultEffect = { hang: false, extraDelayMs: 0, reboot: false };
    for (const entry of this.armed) {
      const { prefix } = entry;
      if (entry.remaining <= 0 || !(text === prefix || text.startsWith(`${prefix} `))) continue;
      const f = entry.fault;
      if (f.kind === 'fail') {
        if (effect.fail) continue; // one failure per run; a second fail fault keeps its runs
        effect.fail = { exitCode: f.exitCode ?? 1, stderr: f.stderr ?? `sim: injected failure of '${prefix}'` };
      } else if (f.kind === 'hang') effect.hang = true;
      else if (f.kind === 'rebootDuring') effect.reboot = true;
      else effect.extraDelayMs += f.ms;
      entry.remaining--;
    }
    this.armed = this.armed.filter((e) => e.remaining > 0);
    return effect;
  }
}
