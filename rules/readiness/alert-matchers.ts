/**
 * The alert gate's matchers (`alerts.matchers` in a cluster's configuration, issue 21): Prometheus's own
 * label matchers, one per list entry, written as in a PromQL selector or an Alertmanager silence:
 *
 *   alertname="NodeDown"   severity=~"critical|page"   alertname!="Watchdog"   namespace!~"dev-.*"
 *
 * Every matcher must hold (AND, as in a selector: `{a="x", b="y"}`); an OR of values is a regex. None:
 * every firing alert gates. The gate reads Prometheus's `ALERTS` series through `/api/v1/query`, as kured
 * does (kubereboot/kured pkg/alerts/prometheus.go); kured's `--alert-filter-regexp=R` (names ignored) is
 * `alertname!~"R"`, its `--alert-filter-match-only` is `alertname=~"R"`, and only firing alerts count, as
 * with its `--alert-firing-only` (a pending alert has not yet met its rule's `for:`).
 *
 * Values are a double-quoted string (JSON's escapes: write `\\d` for the regex `\d`) or a bare word.
 * Regexes are RE2 and fully anchored, as Prometheus applies them; this module catches what is broken in
 * any dialect (unbalanced parentheses, RE2's missing lookarounds and backreferences), and Prometheus's
 * own refusal of the query (HTTP 400) is the last word, a configuration error too.
 */

export const MATCHER_OPS = ['=', '!=', '=~', '!~'] as const;
export type MatcherOp = (typeof MATCHER_OPS)[number];

export interface AlertMatcher {
  label: string;
  op: MatcherOp;
  value: string;
}

/** A Prometheus label name (docs/concepts/data_model). */
const LABEL = /^[a-zA-Z_][a-zA-Z0-9_]*$/;
const MATCHER = /^\s*([^\s=!~]*)\s*(=~|!~|!=|=)\s*(.*?)\s*$/s;
const BARE_VALUE = /^[^\s"'`{},=!~\\]+$/;
/** Labels the gate sets itself, or that are not an alert's. */
const RESERVED: Readonly<Record<string, string>> = {
  alertstate: 'the gate reads firing alerts only (alertstate="firing")',
  __name__: 'the gate reads the ALERTS series',
};

/** One matcher, or the one-line reason it is refused (without the key's name: the caller adds where). */
export function parseAlertMatcher(text: unknown): { matcher: AlertMatcher } | { problem: string } {
  const example = 'e.g. alertname="NodeDown" or severity=~"critical|page"';
  if (typeof text !== 'string' || text.trim() === '') return { problem: `must be a matcher label="value" (${example})` };
  const shown = JSON.stringify(text).slice(0, 80);
  if (/[\n\r\0]/.test(text)) return { problem: `${shown} holds a line break` };
  const m = MATCHER.exec(text);
  if (!m) return { problem: `${shown} is not a matcher: label, one of ${MATCHER_OPS.join(' ')}, value (${example})` };
  const [, label, op, raw] = m as unknown as [string, string, MatcherOp, string];
  if (!LABEL.test(label)) return { problem: `${shown}: ${JSON.stringify(label)} is not a label name` };
  if (RESERVED[label]) return { problem: `${shown}: ${label} is not a matcher's to set (${RESERVED[label]})` };
  let value: string;
  if (raw.startsWith('"')) {
    try {
      value = JSON.parse(raw) as string;
    } catch {
      return { problem: `${shown}: the value is not one double-quoted string (escape a backslash as \\\\ and a quote as \\")` };
    }
  } else if (BARE_VALUE.test(raw)) {
    value = raw;
  } else {
    return { problem: `${shown}: quote the value ("…") when it is empty or holds spaces, quotes, braces, commas or backslashes` };
  }
  if (op === '=~' || op === '!~') {
    const problem = regexProblem(value);
    if (problem) return { problem: `${shown}: ${problem}` };
  }
  return { matcher: { label, op, value } };
}

/** What no RE2 takes, or what no regex dialect can parse. */
function regexProblem(value: string): string | undefined {
  if (/\(\?<?[=!]/.test(value)) return 'RE2 (Prometheus) has no lookahead or lookbehind';
  if (/(^|[^\\])(\\\\)*\\[1-9]/.test(value)) return 'RE2 (Prometheus) has no backreferences';
  try {
    // A leading flag group (?i) is RE2's and not JavaScript's: the rest must still parse.
    new RegExp(`^(?:${value.replace(/^\(\?[imsU]+\)/, '')})$`);
  } catch (err) {
    return `not a regex: ${(err as Error).message.split('\n')[0]}`;
  }
  return undefined;
}

/** The matcher as PromQL takes it (and as the operator reads it back): `label op "value"`. */
export const matcherText = (m: AlertMatcher): string => `${m.label}${m.op}${JSON.stringify(m.value)}`;

const selector = (matchers: readonly AlertMatcher[], first: string[] = []): string => {
  const terms = [...first, ...matchers.map(matcherText)];
  return terms.length ? `{${terms.join(',')}}` : '';
};

/** The instant query of the gate: every firing alert the matchers select. */
export const firingAlertsQuery = (matchers: readonly AlertMatcher[]): string => `ALERTS${selector(matchers, ['alertstate="firing"'])}`;

/**
 * When each selected alert became active: Prometheus writes `ALERTS_FOR_STATE` (its value the alert's
 * activeAt, in Unix seconds) beside `ALERTS` for every active alert, with the same labels less `alertstate`.
 */
export const alertsSinceQuery = (matchers: readonly AlertMatcher[]): string => `ALERTS_FOR_STATE${selector(matchers)}`;
