import { clusterVersion, inventoryNodes, normalizeInventory, type ClusterInventory } from './cluster-inventory.js';
import { planHops } from './hop-plan.js';
import type { PackageManager } from './package-commands.js';
import { planRollout, type RolloutPlan, type RolloutPolicy } from './rollout-plan.js';
import { checkRunbook, type RunbookCheck } from './runbook-check.js';
import { resolveTarget, type ResolvedTarget } from './target-expression.js';
import { buildRunbook, type RunbookStep } from './upgrade-runbook.js';

export interface UpgradePlanRequest {
  inventory: ClusterInventory;
  to: string;
  available: readonly string[];
  policy?: RolloutPolicy;
  /** The nodes' package tools, for the commands the steps show (default apt). */
  packageManager?: PackageManager;
}

export interface UpgradePlan {
  from: string;
  hops: string[];
  /** What `to` asked for and what it became (an expression resolves to an exact version, or to nothing to do). */
  target: ResolvedTarget;
  rollout: RolloutPlan;
  steps: RunbookStep[];
  skew: RunbookCheck;
}

/** Everything `skewless plan` prints and an upgrade follows, computed without touching anything. */
export function planUpgrade(request: UpgradePlanRequest): UpgradePlan {
  const inventory = normalizeInventory(request.inventory);
  const nodes = inventoryNodes(inventory);
  const from = clusterVersion(inventory);
  const hops = planHops({ from, to: request.to, available: request.available });
  const target = resolveTarget(request.to, from, request.available);
  const rollout = planRollout(nodes, request.policy);
  const steps = buildRunbook(hops, rollout, request.packageManager);
  return { from, hops, target, rollout, steps, skew: checkRunbook(inventory, steps) };
}
