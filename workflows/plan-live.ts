import type { Activities } from '../activities/index.js';
import { planUpgrade, type UpgradePlan, type UpgradePolicy } from '../rules/index.js';
import { activities as a } from './activities-proxy.js';
import { applyRule } from './rule-failure.js';
import { planWithinOpenChildren } from './open-children-cap.js';

export type LiveInventory = Awaited<ReturnType<Activities['takeInventory']>>;

export interface LivePlanRequest {
  cluster: string;
  /** A version, a minor, or an expression (`latest-patch`, `next-minor`). */
  to: string;
  /**
   * The policy to plan with, or a function that gives it once the cluster is read: a policy that
   * depends on a patch asks `patched()` there, at the same place in history as before there was a planLive.
   */
  policy: UpgradePolicy | (() => UpgradePolicy);
  /** The policy's batchBy: the node label the inventory keeps for the plan (absent: none, as before). */
  batchBy?: string;
}

/**
 * An upgrade's plan from the live cluster, read through the worker: the inventory, what the package
 * repository offers on the first apiserver's node, then the pure rules (a RuleError becomes a
 * business failure). What the upgrade, `plan --cluster`, a schedule's run and a fleet's cluster share.
 */
export async function planLive(request: LivePlanRequest): Promise<{ inventory: LiveInventory; plan: UpgradePlan }> {
  const { cluster, to } = request;
  const inventory = await a.takeInventory({ cluster, ...(request.batchBy === undefined ? {} : { labelKeys: [request.batchBy] }) });
  // `to` only names a repository file that cannot offer the target in the failure (an argument: replay-safe).
  const available = await a.availableVersions({ cluster, node: inventory.skew.apiservers[0]?.node ?? '', to });
  const policy = typeof request.policy === 'function' ? request.policy() : request.policy;
  const plan = planWithinOpenChildren(
    (maxOpenChildren) =>
      applyRule(() =>
        planUpgrade({
          inventory: inventory.skew,
          to,
          available,
          policy,
          packageManager: inventory.packageManager,
          etcdPatchImageTag: inventory.etcdPatchImageTag,
          ...(inventory.kubeProxyAddon ? { kubeProxy: inventory.kubeProxyAddon } : {}),
          maxOpenChildren,
        }),
      ),
    (made) => made.rollout,
  );
  return { inventory, plan };
}
