// `grep -F [-m N] PATTERN FILE`: the fixed-string search the readiness check runs over an apiserver's
// audit log (activities/readiness/removed-api-usage.ts), with GNU grep's exit codes (0 a line
// matched, 1 none, 2 trouble) and messages. Other options are refused as not simulated.
import { readFileSync, statSync } from 'node:fs';
import { fail, type CommandContext, type CommandOutcome } from './command.js';

export async function grep(ctx: CommandContext): Promise<CommandOutcome> {
  const [flag, ...args] = ctx.argv.slice(1);
  let max = Infinity;
  if (flag !== '-F') return fail(ctx, `sim: grep ${ctx.argv.slice(1).join(' ')} is not simulated (only grep -F [-m N] PATTERN FILE)`, 2);
  if (args[0] === '-m') {
    max = Number(args[1]);
    if (!Number.isInteger(max) || max < 0) return fail(ctx, `grep: invalid max count`, 2);
    args.splice(0, 2);
  }
  const [pattern, path, ...extra] = args;
  if (pattern === undefined || path === undefined || extra.length > 0)
    return fail(ctx, `sim: grep ${ctx.argv.slice(1).join(' ')} is not simulated (one pattern, one file)`, 2);
  const file = ctx.machine.hostPath(path);
  const st = statSync(file, { throwIfNoEntry: false });
  if (!st) return fail(ctx, `grep: ${path}: No such file or directory`, 2);
  if (st.isDirectory()) return fail(ctx, `grep: ${path}: Is a directory`, 2);
  if (!ctx.machine.mayRead(path, ctx.root)) return fail(ctx, `grep: ${path}: Permission denied`, 2);
  let found = 0;
  const lines = readFileSync(file, 'utf8').split('\n');
  if (lines.at(-1) === '') lines.pop();
  for (const line of lines) {
    if (found >= max) break;
    if (!line.includes(pattern)) continue;
    ctx.out(`${line}\n`);
    found++;
  }
  return found > 0 ? 0 : 1;
}
