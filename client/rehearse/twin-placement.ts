import { compareNatural } from '../../rules/index.js';

/**
 * The twin's scheduler places its copies of the cluster's pods itself, so which node's drain blocks on
 * the twin follows the twin's placement, not the cluster's. This pure rule tells the two apart, by the
 * workload each blocking budget covers: a drain that blocked on the twin where the cluster runs none of
 * those workloads' pods is the twin's placement only; the cluster's nodes where they run (read from the
 * cluster) are where the real run's drains block on the same budgets.
 */

/**
 * A drain that blocked on the twin: `clusterNodesByPdb`, for each budget that refused it (the cluster's
 * name), the cluster's nodes running the pods of the workload it covers (absent: the facts have none).
 */
export interface TwinBlock {
  node: string;
  clusterNodesByPdb?: Record<string, string[]>;
}

export interface ClusterPlacement {
  /** Nodes whose drain blocked on the twin only because its scheduler put a covered pod there. */
  twinOnly: string[];
  /** The cluster's nodes running pods of the workloads whose budgets blocked on the twin, with those budgets. */
  clusterBlocks: { node: string; pdbs: string[] }[];
}

/** Undefined when no drain blocked, or the facts carry no placement (an older reading): nothing is claimed about the cluster. */
export function clusterPlacement(blocks: readonly TwinBlock[]): ClusterPlacement | undefined {
  if (blocks.length === 0 || blocks.some((b) => b.clusterNodesByPdb === undefined)) return undefined;
  const pdbsOn = new Map<string, Set<string>>();
  for (const b of blocks)
    for (const [pdb, nodes] of Object.entries(b.clusterNodesByPdb ?? {}))
      for (const n of nodes) pdbsOn.set(n, (pdbsOn.get(n) ?? new Set<string>()).add(pdb));
  // A node is the twin's placement only when the cluster runs no pod there that one of its blocking budgets covers.
  const agrees = (b: TwinBlock) => Object.values(b.clusterNodesByPdb ?? {}).some((nodes) => nodes.includes(b.node));
  const agreed = new Set(blocks.filter(agrees).map((b) => b.node));
  return {
    twinOnly: [...new Set(blocks.map((b) => b.node).filter((n) => !agreed.has(n)))].sort(compareNatural),
    clusterBlocks: [...pdbsOn]
      .sort(([a], [b]) => compareNatural(a, b))
      .map(([node, pdbs]) => ({ node, pdbs: [...pdbs].sort(compareNatural) })),
  };
}

/**
 * What a node line of the twin's timings adds for the cluster: the twin's block there is its placement
 * only, or the cluster's drain of that node blocks on budgets the twin did not meet there. Nothing where
 * the twin and the cluster agree.
 */
export function placementNote(node: string, placement: ClusterPlacement | undefined, blocks: readonly TwinBlock[]): string | undefined {
  if (!placement) return undefined;
  if (placement.twinOnly.includes(node)) return "blocked on the twin's placement only";
  const onCluster = placement.clusterBlocks.find((c) => c.node === node);
  if (!onCluster) return undefined;
  const metHere = new Set(blocks.filter((b) => b.node === node).flatMap((b) => Object.keys(b.clusterNodesByPdb ?? {})));
  const notMet = onCluster.pdbs.filter((p) => !metHere.has(p));
  return notMet.length ? `on the cluster its drain blocks on PDB ${notMet.join(', ')}` : undefined;
}
