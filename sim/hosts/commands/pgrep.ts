// `pgrep [-a] [-l] [-x] [-f] PATTERN` over the host's process table: one line per match (pid, or
// with -l the name, with -a the command line), exit 1 when nothing matches, 2 on bad usage. The
// pattern is an extended regex; -x anchors it as procps does (`^(PATTERN)$`); -f matches the whole
// command line instead of the name. pgrep never lists itself.
import { processes } from '../process-table.js';
import { fail, print, type CommandContext, type CommandOutcome } from './command.js';

export async function pgrep(ctx: CommandContext): Promise<CommandOutcome> {
  let [list, long, exact, full] = [false, false, false, false];
  const patterns: string[] = [];
  for (const a of ctx.argv.slice(1)) {
    if (/^-[alxf]+$/.test(a)) {
      list ||= a.includes('a');
      long ||= a.includes('l');
      exact ||= a.includes('x');
      full ||= a.includes('f');
    } else if (a.startsWith('-')) return fail(ctx, `pgrep: invalid option -- '${a.slice(1, 2)}'`, 2);
    else patterns.push(a);
  }
  if (patterns.length !== 1)
    return fail(ctx, patterns.length === 0 ? 'pgrep: no matching criteria specified' : 'pgrep: only one pattern can be provided', 2);
  let re: RegExp;
  try {
    re = new RegExp(exact ? `^(${patterns[0]})$` : (patterns[0] as string));
  } catch {
    return fail(ctx, `pgrep: cannot compile regular expression '${patterns[0]}'`, 2);
  }
  const found = processes(ctx.machine).filter((p) => p.name !== 'pgrep' && re.test(full ? p.cmdline : p.name));
  for (const p of found) print(ctx, list ? `${p.pid} ${p.cmdline}` : long ? `${p.pid} ${p.name}` : String(p.pid));
  return found.length > 0 ? 0 : 1;
}
