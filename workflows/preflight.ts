import type { Activities } from '../activities/index.js';

type Inventory = Awaited<ReturnType<Activities['takeInventory']>>;

/**
 * Why an upgrade must not start on the cluster as it is, besides the skew policy: nothing to upgrade
 * (the plan has no hop: the target is already reached), anything the inventory could not read,
 * PDBs that block every drain and that the operator has not acknowledged ("namespace/name"), and
 * NotReady nodes.
 * One list for the upgrade (which refuses) and `plan --cluster` (which reports).
 */
export function preflightRefusals(
  inventory: Inventory,
  acknowledge: readonly string[] = [],
  plan?: { from: string; hops: readonly string[]; to: string },
): string[] {
  return [
    ...(plan && plan.hops.length === 0
      ? [`nothing to upgrade: the control plane and every node are already at ${plan.from} (target ${plan.to})`]
      : []),
    // What the inventory could not read is invisible to the skew check (a kubelet whose version is unreadable).
    ...(inventory.problems ?? []).map((p) => `the inventory cannot read the cluster fully: ${p}`),
    ...inventory.pdbFindings
      .filter((f) => f.severity === 'error' && !acknowledge.includes(`${f.namespace}/${f.name}`))
      .map((f) => `${f.message} (acknowledge with --acknowledge ${f.namespace}/${f.name})`),
    ...inventory.nodes.filter((n) => !n.ready).map((n) => `node ${n.name} is not Ready`),
  ];
}
