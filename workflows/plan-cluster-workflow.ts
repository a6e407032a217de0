import { patched } from '@temporalio/workflow';
import type { BarePod } from '../activities/bare-pods.js';
import type { BatchCapacity } from '../activities/batch-capacity.js';
import type { ReadinessReport } from '../activities/readiness/index.js';
import { describeTarget, type UpgradePlan, type UpgradePolicy } from '../rules/index.js';
import { activities as a } from './activities-proxy.js';
import { PATCH } from './patches.js';
import { preflightRefusals } from './preflight.js';
import { planLive } from './plan-live.js';

export interface PlanClusterInput {
  cluster: string;
  to: string;
  /** The upgrade policy (fixPrerequisites adds the etcd patch to the runbook), plus the findings the operator would acknowledge at upgrade time. */
  policy?: UpgradePolicy & { acknowledge?: string[] };
}

export interface PlanClusterResult {
  plan: UpgradePlan;
  /** Why `upgrade` would refuse to start on the cluster as it is now (besides a skew violation). */
  refusals: string[];
  /** What the inventory could not read as expected. */
  problems: string[];
  /**
   * Drains that will block: pods no controller manages, by node (at most the inventory's listed ones;
   * `barePodCount` counts them all). Not a refusal: the upgrade stops at each such node and waits for
   * `skewless resolve` (skip, or force the pod), as at any blocked drain.
   */
  barePods: BarePod[];
  barePodCount: number;
  /** What would hold each hop (issue 21); absent from a worker older than the readiness checks, and when there is no hop. */
  readiness?: ReadinessReport;
  /**
   * Each worker phase of the plan judged on the cluster as it is now, alone (issue 40): how many of its
   * nodes may be out at once with their pods fitting elsewhere, and the headroom left. Absent from an older worker.
   */
  capacity?: ({ stage: string; asked: number } & BatchCapacity)[];
}

/**
 * `skewless plan --cluster`: the plan an upgrade would follow, from the live cluster, read through
 * the worker (the only process with the cluster's credentials). Read-only: the inventory and the
 * package repository's versions on the first apiserver's node, then the pure rules. Workflow id
 * `plan/<cluster>/<unique>`, so plans never collide with the cluster's `upgrade/<cluster>`.
 */
export async function planClusterWorkflow(input: PlanClusterInput): Promise<PlanClusterResult> {
  const { cluster, to } = input;
  const policy = input.policy ?? {};
  const { inventory, plan } = await planLive({ cluster, to, policy, batchBy: policy.batchBy });
  // The same pre-flight refusals as the upgrade's start, reported instead of thrown.
  const refusals = preflightRefusals(inventory, policy.acknowledge, { from: plan.from, hops: plan.hops, to: describeTarget(plan.target) });
  const barePods = inventory.barePods ?? [];
  const readiness =
    patched(PATCH.readinessFindings) && plan.hops.length > 0
      ? await a.readinessReport({ cluster, from: plan.from, hops: plan.hops, policy, workerHops: plan.workerHops })
      : undefined;
  // Capacity per phase (issue 40): each phase's first maxUnavailable nodes, as the upgrade checks them before it starts.
  const phases = plan.rollout.phases.filter((p) => p.kind !== 'control-plane');
  const asked = phases.map((p) => p.nodes.slice(0, Math.max(1, p.maxUnavailable)));
  const capacity =
    phases.length > 0 && patched(PATCH.batchCapacity)
      ? (await a.checkBatchCapacity({ cluster, batches: asked })).batches.map((b, i) => ({
          stage: phases[i]?.stage ?? '',
          asked: asked[i]?.length ?? 0,
          ...b,
        }))
      : undefined;
  return {
    plan,
    refusals,
    ...(capacity ? { capacity } : {}),
    problems: inventory.problems,
    barePods,
    barePodCount: inventory.barePodCount ?? barePods.length,
    ...(readiness ? { readiness } : {}),
  };
}
