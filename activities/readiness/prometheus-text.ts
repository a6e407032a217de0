/**
 * The Prometheus text exposition format, as far as the readiness checks read it: one sample per
 * line, `name{label="value",…} value [timestamp]`; `#` lines (HELP, TYPE) skipped. Label values
 * unescape `\\`, `\"` and `\n` (https://prometheus.io/docs/instrumenting/exposition_formats/#text-based-format).
 */
export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

const SAMPLE = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})?\s+(\S+)(?:\s+-?\d+)?\s*$/;
const LABEL = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"\s*,?\s*/gy;

/** The samples of the metrics named in `names` (all samples when it is empty); malformed lines are skipped. */
export function parsePrometheusText(text: string, names: readonly string[] = []): Sample[] {
  const wanted = new Set(names);
  const out: Sample[] = [];
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const m = SAMPLE.exec(line);
    if (!m) continue;
    const name = m[1] as string;
    if (wanted.size > 0 && !wanted.has(name)) continue;
    const labels = parseLabels(m[3] ?? '');
    if (labels === undefined) continue;
    const value = Number(m[4]);
    if (Number.isNaN(value) && m[4] !== 'NaN') continue;
    out.push({ name, labels, value });
  }
  return out;
}

function parseLabels(body: string): Record<string, string> | undefined {
  const labels: Record<string, string> = {};
  LABEL.lastIndex = 0;
  let at = 0;
  while (at < body.length) {
    LABEL.lastIndex = at;
    const m = LABEL.exec(body);
    if (!m) return undefined;
    labels[m[1] as string] = (m[2] as string).replace(/\\(.)/g, (_all, c: string) => (c === 'n' ? '\n' : c));
    at = LABEL.lastIndex;
  }
  return labels;
}
