// Quoting argv for the POSIX shell an SSH server runs the command line in. Every word becomes one
// literal argument: nothing in it is read as syntax (`;`, `$()`, globs, quotes, newlines, `#`, `~`).

/** Words made only of these characters mean the same quoted or not, so they stay readable. */
const PLAIN = /^[A-Za-z0-9_@%+:,./=-]+$/;
/** A variable name the product may set: upper case, as the tools' own variables are. */
export const ENV_NAME = /^[A-Z_][A-Z0-9_]*$/;

/** One word, quoted for sh: single quotes, with each `'` written as `'\''`. */
export function quoteWord(word: string): string {
  if (word.includes('\0')) throw new TypeError('a shell word cannot contain a NUL byte');
  if (word !== '' && PLAIN.test(word) && !word.startsWith('=')) return word;
  return `'${word.replace(/'/g, `'\\''`)}'`;
}

/**
 * A command line for `argv`, run with `env` (`NAME=value` words before it) and, when `sudo`, through
 * `sudo -n` (never prompts: a missing sudo rule fails at once instead of hanging on a password).
 * The command word is always quoted if it contains `=`, so it can never turn into an assignment.
 */
export function commandLine(argv: readonly string[], options: { env?: Record<string, string>; sudo?: boolean } = {}): string {
  if (argv.length === 0) throw new TypeError('empty argv');
  const words: string[] = options.sudo ? ['sudo', '-n'] : [];
  for (const [name, value] of Object.entries(options.env ?? {})) {
    if (!ENV_NAME.test(name)) throw new TypeError(`invalid environment variable name ${JSON.stringify(name)}`);
    if (/[\0\n\r]/.test(value) || value.length > 4096) throw new TypeError(`invalid value for environment variable ${name}`);
    words.push(`${name}=${quoteWord(value)}`);
  }
  const [command, ...args] = argv as [string, ...string[]];
  words.push(command.includes('=') ? `'${command.replace(/'/g, `'\\''`)}'` : quoteWord(command));
  for (const a of args) words.push(quoteWord(a));
  return words.join(' ');
}
