import type { ReadinessReport } from '../activities/readiness/index.js';
import { gateFindings, type ReadinessFinding } from '../rules/readiness/finding.js';

/**
 * The readiness section of `plan --cluster` (issue 21): every finding of every check, with what to
 * do and the name that acknowledges it. `acknowledged` are the operator's readiness acknowledgements
 * (`--acknowledge removed-api:…`): their findings are shown, but no longer hold.
 */
export interface ReadinessView {
  findings: ReadinessFinding[];
  /** The acknowledgement names of the findings that hold a hop (each once); empty: nothing holds. */
  held: string[];
  acknowledged: string[];
  /** The acknowledgement names of the holds the runbook fixes (--fix-prerequisites): they hold nothing. */
  fixed?: string[];
  /** What a check could not read: the report is incomplete there. */
  problems: string[];
  /** False when the worker did not report (older than the readiness checks) although the plan has hops. */
  checked: boolean;
}

export function readinessView(
  report: ReadinessReport | undefined,
  hops: readonly string[],
  acknowledged: readonly string[],
  fixing = false,
): ReadinessView {
  const findings = report?.findings ?? [];
  const gate = gateFindings(findings, acknowledged, fixing);
  return {
    findings,
    held: [...new Set(gate.held.map((f) => f.ack))],
    acknowledged: [...new Set(gate.acknowledged.map((f) => f.ack))],
    fixed: [...new Set(gate.fixed.map((f) => f.ack))],
    problems: report?.problems ?? [],
    checked: report !== undefined || hops.length === 0,
  };
}

/** `readiness: {findings, held, acknowledged, problems, checked}` of `--output json`. */
export const readinessToJson = (view: ReadinessView) => view;

export function readinessLines(cluster: string, view: ReadinessView): string[] {
  if (!view.checked) return [`readiness: not checked (the worker on ${cluster} predates the readiness checks)`];
  const problems = view.problems.map((p) => `  could not read: ${p}`);
  if (view.findings.length === 0) {
    return view.problems.length === 0
      ? ['readiness: nothing found']
      : ['readiness: nothing found, but the report is incomplete:', ...problems];
  }
  const holds = view.held.length;
  const head =
    holds === 0
      ? `readiness (${cluster}): ${count(view.findings.length, 'finding')}, none holds a hop:`
      : `readiness (${cluster}): ${count(view.findings.length, 'finding')}; the upgrade would hold until each is fixed or acknowledged (--acknowledge NAME):`;
  const lines = [head];
  for (const f of view.findings) {
    const state =
      f.severity === 'warn'
        ? 'WARN'
        : view.acknowledged.includes(f.ack)
          ? 'ACKNOWLEDGED'
          : (view.fixed ?? []).includes(f.ack)
            ? 'FIXED BY THE RUNBOOK'
            : 'HOLD';
    lines.push(`  ${state} ${f.check} before ${f.hop}${f.node ? ` on ${f.node}` : ''}: ${f.what}`);
    lines.push(`      to do: ${f.todo}`);
    if (f.fix) lines.push(`      runbook step ${f.fix.step} before ${f.hop} (--fix-prerequisites): ${f.fix.how}`);
    lines.push(`      acknowledge: ${f.ack}`);
    lines.push(`      source: ${f.source}`);
  }
  return [...lines, ...problems];
}

const count = (n: number, what: string) => `${n} ${what}${n === 1 ? '' : 's'}`;
