/**
 * The PodDisruptionBudget audit of the pre-flight: which budgets will refuse every eviction, so a
 * drain would block on them whatever the operator waits for. Facts in, findings out; no API calls.
 */

/** What the audit needs to know about one PDB (read from its spec, status and the pods it selects). */
export interface PdbFacts {
  name: string;
  namespace: string;
  /** spec.minAvailable: a count or a percentage such as `100%`. */
  minAvailable?: number | string;
  /** spec.maxUnavailable: a count or a percentage such as `0%`. */
  maxUnavailable?: number | string;
  /** Pods its selector covers now. */
  coveredPods: number;
  /** status.expectedPods: the replicas the disruption controller counts on (0 or absent when unknown). */
  expectedPods?: number;
  /** status.disruptionsAllowed, when the controller has observed the PDB. */
  disruptionsAllowed?: number;
}

export type PdbRuleId = 'max-unavailable-zero' | 'min-available-all' | 'no-disruptions-allowed' | 'unreadable-budget';

export interface PdbFinding {
  namespace: string;
  name: string;
  /** `error`: every drain of a node running its pods blocks. `warning`: drains block for now. */
  severity: 'error' | 'warning';
  ruleId: PdbRuleId;
  /** Why, with the numbers. */
  reason: string;
  /** What the operator can do about it. */
  remedy: string;
  /** One line: the PDB, the reason and the remedy. */
  message: string;
}

type Budget = { kind: 'count'; value: number } | { kind: 'percent'; value: number } | { kind: 'invalid'; text: string };

function readBudget(value: number | string): Budget {
  if (typeof value === 'number') {
    return Number.isInteger(value) && value >= 0 ? { kind: 'count', value } : { kind: 'invalid', text: String(value) };
  }
  const pct = /^(\d{1,3})%$/.exec(value);
  if (pct && Number(pct[1]) <= 100) return { kind: 'percent', value: Number(pct[1]) };
  // The API takes int-or-string; a digits-only string is read as the count it spells.
  if (/^\d{1,9}$/.test(value)) return { kind: 'count', value: Number(value) };
  return { kind: 'invalid', text: value };
}

/** The disruption controller rounds percentages up, for minAvailable and maxUnavailable alike. */
function scaled(budget: Budget, replicas: number): number {
  if (budget.kind === 'count') return budget.value;
  if (budget.kind === 'percent') return Math.ceil((budget.value * replicas) / 100);
  return NaN;
}

function finding(p: PdbFacts, severity: PdbFinding['severity'], ruleId: PdbRuleId, reason: string, remedy: string): PdbFinding {
  const id = `${p.namespace}/${p.name}`;
  return {
    namespace: p.namespace,
    name: p.name,
    severity,
    ruleId,
    reason,
    remedy,
    message: `PodDisruptionBudget ${id}: ${reason}; ${remedy}`,
  };
}

/**
 * Judges one PDB. The no-disruptions warning is left out when a blocking finding already explains
 * why disruptions are 0, so each PDB says one thing an operator can act on.
 */
export function auditPdb(p: PdbFacts): PdbFinding[] {
  const replicas = Math.max(p.coveredPods, p.expectedPods ?? 0);
  const found: PdbFinding[] = [];
  if (p.maxUnavailable !== undefined) {
    const b = readBudget(p.maxUnavailable);
    if (b.kind === 'invalid') {
      found.push(
        finding(
          p,
          'warning',
          'unreadable-budget',
          `maxUnavailable ${JSON.stringify(b.text)} is neither a count nor a percentage`,
          'fix the PDB spec so its effect can be judged',
        ),
      );
    } else if (b.value === 0) {
      found.push(
        finding(
          p,
          'error',
          'max-unavailable-zero',
          `maxUnavailable is ${JSON.stringify(p.maxUnavailable)}, so no pod it covers may ever be evicted and every drain of a node running one blocks`,
          'set maxUnavailable to at least 1 (or a percentage above 0) for the upgrade, or skip the node when its drain blocks',
        ),
      );
    }
  }
  if (p.minAvailable !== undefined) {
    const b = readBudget(p.minAvailable);
    if (b.kind === 'invalid') {
      found.push(
        finding(
          p,
          'warning',
          'unreadable-budget',
          `minAvailable ${JSON.stringify(b.text)} is neither a count nor a percentage`,
          'fix the PDB spec so its effect can be judged',
        ),
      );
    } else if (b.kind === 'percent' && b.value === 100) {
      found.push(
        finding(
          p,
          'error',
          'min-available-all',
          `minAvailable is "100%", so no pod it covers may ever be evicted and every drain of a node running one blocks`,
          'lower minAvailable below 100% (or use maxUnavailable: 1) for the upgrade, or skip the node when its drain blocks',
        ),
      );
    } else if (replicas > 0 && scaled(b, replicas) >= replicas) {
      const need = scaled(b, replicas);
      const spelled = b.kind === 'percent' ? `${p.minAvailable} (${need} of ${replicas} pods)` : String(need);
      found.push(
        finding(
          p,
          'error',
          'min-available-all',
          `minAvailable ${spelled} is at least the ${replicas} pod(s) it covers, so no eviction is ever allowed and every drain of a node running one blocks`,
          `scale the workload above ${need} replica(s), lower minAvailable below ${replicas} (or use maxUnavailable: 1), or skip the node when its drain blocks`,
        ),
      );
    }
  }
  const blocked = found.some((f) => f.severity === 'error');
  if (!blocked && p.disruptionsAllowed === 0 && replicas > 0) {
    found.push(
      finding(
        p,
        'warning',
        'no-disruptions-allowed',
        `it allows 0 disruptions right now (${p.coveredPods} pod(s) covered, ${p.expectedPods ?? 0} expected), so drains of nodes running its pods wait`,
        'wait for its pods to become Ready (or fix the ones that are not) before the drain, or raise its budget',
      ),
    );
  }
  return found;
}

/** Judges every PDB; every finding is kept, errors first, then by namespace and name. */
export function auditPdbs(pdbs: readonly PdbFacts[]): PdbFinding[] {
  const rank = { error: 0, warning: 1 } as const;
  return pdbs
    .flatMap(auditPdb)
    .sort((a, b) => rank[a.severity] - rank[b.severity] || a.namespace.localeCompare(b.namespace) || a.name.localeCompare(b.name));
}

/** A Kubernetes label selector (policy/v1 PDB, apps/v1 workloads). */
