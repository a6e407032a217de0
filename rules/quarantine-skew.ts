import { checkSkew, type ComponentVersion, type SkewViolation } from './skew-policy.js';

/**
 * The proof a run owes for the nodes it quarantined (`onDrainTimeout: quarantine`): a quarantined
 * node keeps its old kubelet for the rest of the run, so every later hop must keep it within the
 * kubelet rule of the skew policy (at most 3 minors older than the newest kube-apiserver from 1.28, 2
 * before). During a hop the apiservers range from the previous version to the hop's, so the hop's
 * version is the newest apiserver the old kubelet meets; it is never newer than the oldest one.
 */

/** The label on a quarantined node, its value the hop whose drain did not finish (activities/quarantine-node.ts writes it). */
export const QUARANTINED_LABEL = 'skewless.io/quarantined';

/** The skew violations of the quarantined kubelets once the control plane is at `hop` (empty: they stay within the policy). */
export function quarantineSkewAt(kubelets: readonly ComponentVersion[], hop: string): SkewViolation[] {
  if (kubelets.length === 0) return [];
  const report = checkSkew({ apiservers: [{ node: `control plane at ${hop}`, version: hop }], kubelets: [...kubelets] });
  return report.violations.filter((v) => v.component === 'kubelet');
}

/** The first of `hops` at which a quarantined kubelet would break the skew policy, or undefined when they hold through the last. */
export function firstHopBreakingQuarantine(
  kubelets: readonly ComponentVersion[],
  hops: readonly string[],
): { hop: string; violations: SkewViolation[] } | undefined {
  for (const hop of hops) {
    const violations = quarantineSkewAt(kubelets, hop);
    if (violations.length > 0) return { hop, violations };
  }
  return undefined;
}
