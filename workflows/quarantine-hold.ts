import { firstHopBreakingQuarantine, quarantineSkewAt, type SkewInventory } from '../rules/index.js';
import { WORKFLOW_FAILURE } from '../contracts/failure-types.js';
import type { Rollout } from './rollout.js';
import type { UpgradeStatus } from './rollout-messages.js';

// What an upgrade owes for the nodes it quarantined (policy onDrainTimeout quarantine): their old
// kubelets stay within the skew policy for the rest of the run (rules/quarantine-skew.ts).

/** What the check reads of the upgrade: its status and rollout, and the cluster as last read (`live`) or read again (`forget` first). */
export interface QuarantineContext {
  status: UpgradeStatus;
  rollout: Rollout<UpgradeStatus>;
  hop: string;
  live: () => Promise<SkewInventory>;
  forget: () => void;
}

/**
 * Before the hop moves the control plane, each quarantined kubelet must stay within the skew policy
 * against it. One that would not halts the run (status.halted, step quarantineSkew) until the operator
 * upgraded, removed or drained it by hand and retries (the cluster is read again), or aborts. Nothing is
 * read or run when no node is quarantined, so a run without quarantine keeps its commands.
 */
export async function quarantineHolds(ctx: QuarantineContext): Promise<'aborted' | 'holds'> {
  const { status, rollout, hop } = ctx;
  const quarantined = status.quarantined ?? [];
  while (quarantined.length > 0) {
    const kubelets = ((await ctx.live()).kubelets ?? []).filter((k) => quarantined.includes(k.node));
    // Where each is now (the operator may have moved one by hand): the outcome names that version.
    for (const k of kubelets) {
      const state = status.nodes[k.node];
      if (state) state.version = k.version;
    }
    const violations = quarantineSkewAt(kubelets, hop);
    if (violations.length === 0) return 'holds';
    const named = violations.map((v) => `${v.node} (kubelet ${v.version})`).join(', ');
    await rollout.holdUntilAnswered({
      after: 'quarantine',
      hop,
      step: 'quarantineSkew',
      failure: WORKFLOW_FAILURE.SkewViolation,
      message: `hop ${hop} would leave quarantined ${named} outside the skew policy: upgrade, drain or remove them, then retry; or abort`,
      workloads: violations.map((v) => `${v.node} kubelet ${v.version}: ${v.rule}`),
      actions: ['retry', 'abort'],
    });
    if (rollout.aborted()) return 'aborted';
    ctx.forget(); // the operator may have moved or removed the node: read the cluster again
  }
  return 'holds';
}

/** When a node is quarantined at `hop`: whether its old kubelet holds through the hops after it, or which hop will wait for the operator. */
export function quarantineProof(status: UpgradeStatus, hops: readonly string[], hop: string, node: string): string | undefined {
  const later = hops.slice(hops.indexOf(hop) + 1);
  const at = status.nodes[node]?.version ?? status.nodes[node]?.from;
  if (later.length === 0 || !at) return undefined;
  const breaks = firstHopBreakingQuarantine([{ node, version: at }], later);
  return breaks
    ? `${node} quarantined at ${at}: hop ${breaks.hop} would break the skew policy (${breaks.violations[0]?.rule}); the run will halt before it unless ${node} moves`
    : `${node} quarantined at ${at}: its kubelet stays within the skew policy through ${later.at(-1)}`;
}
