import type { Activities } from '../activities/index.js';

type Inventory = Awaited<ReturnType<Activities['takeInventory']>>;

/**
 * Why an upgrade must not start on the cluster as it is, besides the skew policy: PDBs that block
 * every drain and that the operator has not acknowledged ("namespace/name"), and NotReady nodes.
 * One list for the upgrade (which refuses) and `plan --cluster` (which reports).
 */
export function preflightRefusals(inventory: Inventory, acknowledge: readonly string[] = []): string[] {
  return [
    ...inventory.pdbFindings
      .filter((f) => f.severity === 'error' && !acknowledge.includes(`${f.namespace}/${f.name}`))
      .map((f) => `${f.message} (acknowledge with --acknowledge ${f.namespace}/${f.name})`),
    ...inventory.nodes.filter((n) => !n.ready).map((n) => `node ${n.name} is not Ready`),
  ];
}
