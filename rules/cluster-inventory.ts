import { RuleError } from './rule-error.js';
import type { PlanNode } from './rollout-plan.js';
import { INVENTORY_KEYS, type SkewInventory } from './skew-policy.js';
import { compareVersions, parseVersion } from './version.js';

/**
 * The plan's input: the skew inventory plus the nodes with their roles and labels.
 * `nodes` may be left out: every node running a kube-apiserver is then a control plane and
 * every other node with a kubelet a worker.
 */
export interface ClusterInventory extends SkewInventory {
  nodes?: PlanNode[];
}

/** The nodes of an inventory, given or derived, checked against the components listed. */
export function inventoryNodes(inventory: ClusterInventory): PlanNode[] {
  if (typeof inventory !== 'object' || inventory === null || !Array.isArray(inventory.apiservers)) {
    throw new RuleError('InvalidInventory', 'inventory must be an object with an "apiservers" list');
  }
  const apiserverNodes = new Set(inventory.apiservers.map((a) => a.node));
  if (inventory.nodes === undefined) {
    const workers = (inventory.kubelets ?? []).map((k) => k.node).filter((n) => !apiserverNodes.has(n));
    return [
      ...[...apiserverNodes].map((name): PlanNode => ({ name, role: 'control-plane' })),
      ...[...new Set(workers)].map((name): PlanNode => ({ name, role: 'worker' })),
    ];
  }
  if (!Array.isArray(inventory.nodes)) throw new RuleError('InvalidInventory', 'inventory.nodes must be a list');
  for (const node of inventory.nodes) {
    const runsApiserver = apiserverNodes.has(node?.name);
    if (node?.role === 'control-plane' && !runsApiserver) {
      throw new RuleError('InvalidInventory', `control-plane node ${node.name} has no kube-apiserver in inventory.apiservers`);
    }
    if (node?.role === 'worker' && runsApiserver) {
      throw new RuleError('InvalidInventory', `node ${node.name} runs a kube-apiserver but is listed as a worker`);
    }
  }
  const listed = new Set(inventory.nodes.map((n) => n?.name));
  for (const name of apiserverNodes) {
    if (!listed.has(name)) throw new RuleError('InvalidInventory', `kube-apiserver node ${name} is missing from inventory.nodes`);
  }
  return inventory.nodes;
}

/** The version the cluster upgrades from: its oldest kube-apiserver (patch included). */
export function clusterVersion(inventory: SkewInventory): string {
  const versions = inventory.apiservers.map((a) => parseVersion(a.version));
  const oldest = versions.reduce((a, b) => (compareVersions(b, a) < 0 ? b : a));
  return oldest.text;
}

/** A deep copy with every listed version normalised; throws a RuleError naming the bad entry. */
export function normalizeInventory<T extends SkewInventory>(inventory: T): T {
  const copy: T = { ...inventory };
  for (const key of Object.values(INVENTORY_KEYS)) {
    const entries = inventory[key];
    if (entries === undefined) continue;
    if (!Array.isArray(entries)) throw new RuleError('InvalidInventory', `inventory.${key} must be a list`);
    copy[key] = entries.map((e, i) => {
      if (typeof e?.node !== 'string' || e.node === '') {
        throw new RuleError('InvalidInventory', `inventory.${key}[${i}] must be {"node": "...", "version": "..."}`);
      }
      try {
        return { node: e.node, version: parseVersion(e.version).text };
      } catch (err) {
        throw new RuleError('InvalidInventory', `inventory.${key}[${i}] (${e.node}): ${(err as Error).message}`);
      }
    });
  }
  return copy;
}
