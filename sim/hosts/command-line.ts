// The shell a simulated host pretends to have: just enough of POSIX sh to split what the product
// sends (quotes, escapes, `&&`, `;`, `sudo`, `VAR=value`) into argv lists. Anything richer is refused,
// because the product must never depend on a remote shell's expansions.

export interface SimpleCommand {
  argv: string[];
  /** `VAR=value` assignments before the command (or between `sudo` and it). */
  env: Record<string, string>;
  sudo: boolean;
}

export interface CommandStep {
  command: SimpleCommand;
  /** Joined by `&&`: runs only if the last status is 0 (skipped commands leave the status alone). */
  onlyIfSucceeded: boolean;
}

export type ParsedCommandLine = { ok: true; steps: CommandStep[] } | { ok: false; error: string };

export const UNSUPPORTED = 'sim: unsupported shell syntax';

type Token = { kind: 'word'; value: string; assignment: boolean } | { kind: 'op'; op: '&&' | ';' };

class Unsupported extends Error {}
const refuse = (what: string): never => {
  throw new Unsupported(`${UNSUPPORTED}: ${what}`);
};

const UNQUOTED_REFUSED: Record<string, string> = {
  '|': "pipe '|'",
  '<': 'redirection',
  '>': 'redirection',
  '`': 'backticks',
  '(': "subshell '('",
  ')': "subshell ')'",
  '*': "glob '*' (quote it)",
  '?': "glob '?' (quote it)",
  '[': "glob '[' (quote it)",
  '{': "brace '{'",
  '}': "brace '}'",
};
const NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

function tokenize(line: string): Token[] {
  const tokens: Token[] = [];
  let word: string | null = null;
  let quotedBeforeEquals = false; // `"A"=b` is not an assignment in sh
  let equalsAt = -1;
  const flush = (): void => {
    if (word === null) return;
    const assignment = equalsAt > 0 && !quotedBeforeEquals && NAME.test(word.slice(0, equalsAt));
    tokens.push({ kind: 'word', value: word, assignment });
    word = null;
    quotedBeforeEquals = false;
    equalsAt = -1;
  };
  const op = (o: '&&' | ';'): void => {
    flush();
    tokens.push({ kind: 'op', op: o });
  };
  for (let i = 0; i < line.length; i++) {
    const c = line[i]!;
    if (c === ' ' || c === '\t') flush();
    else if (c === '\n' || c === ';') {
      if (c === ';' && line[i + 1] === ';') refuse("';;'");
      op(';');
    } else if (c === '&') {
      if (line[i + 1] !== '&') refuse("background '&'");
      i++;
      op('&&');
    } else if (c === '|' && line[i + 1] === '|') refuse("'||'");
    else if (c === '$') refuse(line[i + 1] === '(' ? '$(...)' : "expansion '$'");
    else if (c in UNQUOTED_REFUSED) refuse(UNQUOTED_REFUSED[c]!);
    else if ((c === '#' || c === '~') && word === null) refuse(c === '#' ? "comment '#'" : "tilde '~'");
    else if (c === '\\') {
      const next = line[i + 1];
      i++;
      if (next === '\n') continue; // line continuation
      word = (word ?? '') + (next ?? '\\');
    } else if (c === "'") {
      const end = line.indexOf("'", i + 1);
      if (end < 0) refuse('unterminated single quote');
      if (equalsAt < 0) quotedBeforeEquals = true;
      word = (word ?? '') + line.slice(i + 1, end);
      i = end;
    } else if (c === '"') {
      if (equalsAt < 0) quotedBeforeEquals = true;
      let value = '';
      for (i++; ; i++) {
        const d = line[i];
        if (d === undefined) refuse('unterminated double quote');
        if (d === '"') break;
        if (d === '$' || d === '`') refuse(d === '$' ? "expansion '$' in double quotes" : 'backticks');
        if (d === '\\' && line[i + 1] !== undefined && '$`"\\\n'.includes(line[i + 1]!)) {
          i++;
          if (line[i] !== '\n') value += line[i];
        } else value += d;
      }
      word = (word ?? '') + value;
    } else {
      if (c === '=' && equalsAt < 0) equalsAt = (word ?? '').length;
      word = (word ?? '') + c;
    }
  }
  flush();
  return tokens;
}

function toCommand(words: Extract<Token, { kind: 'word' }>[]): SimpleCommand {
  const env: Record<string, string> = {};
  let sudo = false;
  let i = 0;
  const assignments = (): void => {
    for (; i < words.length && words[i]!.assignment; i++) {
      const w = words[i]!.value;
      env[w.slice(0, w.indexOf('='))] = w.slice(w.indexOf('=') + 1);
    }
  };
  assignments();
  if (words[i]?.value === 'sudo') {
    sudo = true;
    for (i++; words[i]?.value.startsWith('-'); i++) {
      if (words[i]!.value !== '-n' && words[i]!.value !== '--non-interactive') refuse(`sudo option ${words[i]!.value}`);
    }
    assignments();
  }
  return { argv: words.slice(i).map((w) => w.value), env, sudo };
}

/** Splits a command line into steps, or says why the simulated host refuses it. */
export function parseCommandLine(line: string): ParsedCommandLine {
  try {
    const steps: CommandStep[] = [];
    let words: Extract<Token, { kind: 'word' }>[] = [];
    let joinedByAnd = false;
    for (const token of [...tokenize(line), { kind: 'op', op: ';' } as const]) {
      if (token.kind === 'word') {
        words.push(token);
        continue;
      }
      if (words.length === 0) {
        // An empty command is fine only as a trailing `;` or a blank line; `&&` needs both sides.
        if (token.op === '&&' || joinedByAnd) refuse(`syntax error near '${token.op}'`);
        continue;
      }
      steps.push({ command: toCommand(words), onlyIfSucceeded: joinedByAnd });
      words = [];
      joinedByAnd = token.op === '&&';
    }
    return { ok: true, steps };
  } catch (err) {
    if (err instanceof Unsupported) return { ok: false, error: err.message };
    throw err;
  }
}
