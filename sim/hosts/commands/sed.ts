// `sed -i 's#A#B#g' FILE`: the in-place substitution kubernetes.io's upgrade guide has operators make
// to point a node's package repository at the next minor. Only `-i` with `s` commands is simulated
// (any delimiter, flags `g`); the pattern is a POSIX basic regular expression, as GNU sed reads it
// (GNU sed manual, "The s Command" and "BRE syntax"): `\(` `\)` group, `+ ? ( ) { } |` are literal.
import { readFileSync, statSync, writeFileSync } from 'node:fs';
import { fail, type CommandContext, type CommandOutcome } from './command.js';

interface Substitution {
  pattern: RegExp;
  replacement: string;
}

/** BRE → JavaScript: `\.` `\*` … stay literal, `\(`/`\)` group, and `+ ? ( ) { } |` are literal in a BRE. */
function breToRegExp(bre: string, global: boolean): RegExp {
  let out = '';
  for (let i = 0; i < bre.length; i++) {
    const c = bre[i]!;
    if (c === '\\' && i + 1 < bre.length) {
      const next = bre[++i]!;
      out += next === '(' || next === ')' ? next : `\\${next}`;
    } else if ('+?(){}|/'.includes(c)) out += `\\${c}`;
    else out += c;
  }
  return new RegExp(out, global ? 'g' : '');
}

/** `s<d>pattern<d>replacement<d>flags`, or undefined when the script is anything else. */
function parseScript(script: string): Substitution | undefined {
  if (script[0] !== 's' || script.length < 4) return undefined;
  const d = script[1]!;
  const parts: string[] = [''];
  for (let i = 2; i < script.length; i++) {
    const c = script[i]!;
    if (c === '\\' && script[i + 1] === d) {
      parts[parts.length - 1] += d;
      i++;
    } else if (c === d) parts.push('');
    else parts[parts.length - 1] += c;
  }
  if (parts.length !== 3 || !/^g?$/.test(parts[2]!)) return undefined;
  // In the replacement `&` is the match and `\1` a group; a `$` is literal.
  const replacement = parts[1]!
    .replace(/\$/g, '$$$$')
    .replace(/\\(\d)/g, '$$$1')
    .replace(/(^|[^\\])&/g, '$1$$&')
    .replace(/\\&/g, '&');
  try {
    return { pattern: breToRegExp(parts[0]!, parts[2] === 'g'), replacement };
  } catch {
    return undefined;
  }
}

export async function sed(ctx: CommandContext): Promise<CommandOutcome> {
  const args = ctx.argv.slice(1);
  const inPlace = args.includes('-i');
  const words = args.filter((a) => a !== '-i' && a !== '-e');
  if (!inPlace || words.length < 2) return fail(ctx, `sim: sed ${args.join(' ')} is not simulated (sed -i 's#A#B#g' FILE...)`, 2);
  const [script = '', ...files] = words;
  const sub = parseScript(script);
  if (!sub) return fail(ctx, `sim: sed script ${JSON.stringify(script)} is not simulated (one s command, flag g)`, 2);
  let code = 0;
  for (const file of files) {
    const path = ctx.machine.hostPath(file);
    const st = statSync(path, { throwIfNoEntry: false });
    if (!st) code = fail(ctx, `sed: can't read ${file}: No such file or directory`, 2);
    else if (!ctx.machine.mayRead(file, ctx.root)) code = fail(ctx, `sed: can't read ${file}: Permission denied`, 4);
    else if (!ctx.machine.mayWrite(file, ctx.root))
      code = fail(ctx, `sed: couldn't open temporary file ${file.replace(/[^/]*$/, '')}sedXXXXXX: Permission denied`, 4);
    else
      writeFileSync(
        path,
        readFileSync(path, 'utf8')
          .split('\n')
          .map((line) => line.replace(sub.pattern, sub.replacement))
          .join('\n'),
      );
  }
  return code;
}
