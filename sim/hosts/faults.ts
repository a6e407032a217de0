// Faults a test can inject into one host. Command faults match the command as the host runs it
// (argv joined by spaces, after `sudo` and `VAR=value`), by prefix: `apt-get install` matches
// `sudo -n DEBIAN_FRONTEND=noninteractive apt-get install -y kubeadm=1.33.7-1.1`. The fault's own
// text is read the same way, so a line copied from the host's commands.log matches too.
// Endpoint faults (refuse, rotateHostKey) act on the SSH endpoint and are carried out by the simulator.
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
 * Why a command fault can never match on a host, one line; undefined when it can. `hasProgram`
 * answers whether the host has the fault's program (its first word): a fault for `apt` (not
 * `apt-get`), or for `dnf` on a Debian host, would wait for a command that never comes.
 */
export function unmatchableFault(fault: CommandFault, hasProgram: (program: string) => boolean): string | undefined {
  const program = faultPattern(fault).split(' ')[0] ?? '';
  if (hasProgram(program)) return undefined;
  return `sim: fault ${fault.kind}: command ${JSON.stringify(fault.command)} can never match: the host has no program '${program}' (commands.log shows what it runs)`;
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
