import { clusterVersion, inventoryNodes, normalizeInventory, type ClusterInventory } from './cluster-inventory.js';
import { planHops } from './hop-plan.js';
import { nodesBehind } from './hop-work.js';
import type { PackageManager } from './package-commands.js';
import { planRollout, type RolloutPlan, type RolloutPolicy } from './rollout-plan.js';
import { checkRunbook, type RunbookCheck } from './runbook-check.js';
import { RuleError } from './rule-error.js';
import { parseAvailable, resolveTarget, type ResolvedTarget } from './target-expression.js';
import { minorOf, parseVersion } from './version.js';
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
  const target = resolveTarget(request.to, from, request.available);
  let hops = planHops({ from, to: request.to, available: request.available });
  // The control plane is at the target but nodes are behind (a run aborted or skipped them): the hop
  // to the control plane's own version finishes them. Only when the target names that version.
  const behind = nodesBehind(inventory, from);
  if (hops.length === 0 && behind.length > 0 && targetReached(from, target)) {
    if (!parseAvailable(request.available).some((v) => v.text === from)) {
      throw new RuleError(
        'MissingRelease',
        `${from} is not among the available versions: ${behind.join(', ')} cannot be brought to the control plane's version`,
      );
    }
    hops = [from];
  }
  const everyNode = buildRunbook(hops, planRollout(nodes, request.policy), request.packageManager, inventory);
  // Nodes with nothing to do in any hop are left out of the rollout, so the canary and the batches
  // are made of the nodes that move; the control planes stay (a hop's snapshot and kubeadm run there).
  const moving = new Set(
    everyNode.filter((s) => s.action === 'upgrade-kubelet' || s.action === 'upgrade-control-plane').map((s) => s.node),
  );
  const idle = nodes.filter((n) => n.role === 'worker' && !moving.has(n.name)).map((n) => n.name);
  const rollout = planRollout(
    nodes.filter((n) => !idle.includes(n.name)),
    withoutCanaries(request.policy, idle),
  );
  const steps = buildRunbook(hops, rollout, request.packageManager, inventory);
  return { from, hops, target, rollout, steps, skew: checkRunbook(inventory, steps) };
}

/** A target the control plane's version already satisfies: itself, its minor, or an expression with nothing newer. */
function targetReached(from: string, target: ResolvedTarget): boolean {
  return target.nothingToDo !== undefined || target.to === from || target.to === minorOf(parseVersion(from));
}

/** The policy without canary nodes that have nothing to do (named canaries all idle: the default canary). */
function withoutCanaries(policy: RolloutPolicy | undefined, idle: readonly string[]): RolloutPolicy | undefined {
  if (!policy?.canaryNodes || idle.length === 0) return policy;
  const canaryNodes = policy.canaryNodes.filter((n) => !idle.includes(n));
  if (canaryNodes.length > 0) return { ...policy, canaryNodes };
  const { canaryNodes: _dropped, ...rest } = policy;
  return rest;
}
