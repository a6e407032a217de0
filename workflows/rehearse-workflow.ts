import type { RehearsalFacts } from '../activities/rehearsal.js';
import { activities as a } from './activities-proxy.js';

export interface RehearseReadInput {
  cluster: string;
  /** Ask the first control plane's package manager which versions its repository offers (one read-only SSH command). */
  askRepository: boolean;
}

export interface RehearseReadResult {
  facts: RehearsalFacts;
  /** What the first control plane's repository offers, when asked; every twin host gets it. */
  repository?: { node: string; versions: string[] };
}

/** Workflow id of a rehearsal's read: one at a time per cluster. */
export { rehearseWorkflowId } from '../contracts/workflow-ids.js';

/**
 * `skewless rehearse`'s read of the live cluster, on the production worker (the only process with
 * its credentials): the facts a simulated twin is built from, and optionally the package versions
 * the first control plane's repository offers. Read-only; its result (names, counts, labels and
 * versions) is all that leaves the cluster, and it lands in this workflow's history.
 */
export async function rehearseReadWorkflow(input: RehearseReadInput): Promise<RehearseReadResult> {
  const facts = await a.describeClusterForRehearsal({ cluster: input.cluster });
  if (!input.askRepository) return { facts };
  const node = facts.nodes.find((n) => n.role === 'control-plane' && n.components?.apiserver)?.name;
  if (!node) return { facts };
  return { facts, repository: { node, versions: await a.availableVersions({ cluster: input.cluster, node }) } };
}
