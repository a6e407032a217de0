import { patched } from '@temporalio/workflow';
import type { BarePod } from '../activities/bare-pods.js';
import type { ReadinessReport } from '../activities/readiness/index.js';
import { describeTarget, planUpgrade, type RolloutPolicy, type UpgradePlan } from '../rules/index.js';
import { activities as a } from './activities-proxy.js';
import { PATCH } from './patches.js';
import { preflightRefusals } from './preflight.js';
import { applyRule } from './rule-failure.js';

export interface PlanClusterInput {
  cluster: string;
  to: string;
  /** The rollout policy, plus the PDB findings the operator would acknowledge at upgrade time. */
  policy?: RolloutPolicy & { acknowledge?: string[] };
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
  const inventory = await a.takeInventory({ cluster });
  const available = await a.availableVersions({ cluster, node: inventory.skew.apiservers[0]?.node ?? '', to });
  const plan = applyRule(() => planUpgrade({ inventory: inventory.skew, to, available, policy, packageManager: inventory.packageManager }));
  // The same pre-flight refusals as the upgrade's start, reported instead of thrown.
  const refusals = preflightRefusals(inventory, policy.acknowledge, { from: plan.from, hops: plan.hops, to: describeTarget(plan.target) });
  const barePods = inventory.barePods ?? [];
  const readiness =
    patched(PATCH.readinessFindings) && plan.hops.length > 0
      ? await a.readinessReport({ cluster, from: plan.from, hops: plan.hops, policy, workerHops: plan.workerHops })
      : undefined;
  return {
    plan,
    refusals,
    problems: inventory.problems,
    barePods,
    barePodCount: inventory.barePodCount ?? barePods.length,
    ...(readiness ? { readiness } : {}),
  };
}
