import type { ClusterInventory } from './cluster-inventory.js';
import { checkSkew, type SkewViolation } from './skew-policy.js';
import { applyStep, type RunbookStep } from './upgrade-runbook.js';

export interface RunbookCheck {
  compliant: boolean;
  /** Steps whose resulting state was checked (the state-changing ones). */
  checkedSteps: number;
  /** The first state that breaks the policy: index -1 is the cluster as it is now. */
  failure?: { stepIndex: number; step?: RunbookStep; violations: SkewViolation[] };
}

/**
 * Walks the runbook, applying each step to the inventory and judging the state it produces,
 * so a step that would break the policy is named before anything runs. Control-plane components
 * are judged with the kubeadm topology (they talk to the kube-apiserver on their own node).
 */
export function checkRunbook(inventory: ClusterInventory, steps: readonly RunbookStep[]): RunbookCheck {
  const initial = checkSkew(inventory, { topology: 'kubeadm' });
  if (!initial.compliant) return { compliant: false, checkedSteps: 0, failure: { stepIndex: -1, violations: initial.violations } };
  let state = inventory;
  let checked = 0;
  for (const [i, step] of steps.entries()) {
    const next = applyStep(state, step);
    if (next === state) continue;
    state = next;
    checked++;
    const report = checkSkew(state, { topology: 'kubeadm' });
    if (!report.compliant)
      return { compliant: false, checkedSteps: checked, failure: { stepIndex: i, step, violations: report.violations } };
  }
  return { compliant: true, checkedSteps: checked };
}
