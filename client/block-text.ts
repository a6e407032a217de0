import type { NodeBlock } from '../workflows/node-messages.js';
import type { HaltState } from '../workflows/rollout-messages.js';

/**
 * How `status` and `watch` say why an upgrade waits for the operator, and how to answer: one line
 * for what is wrong, one for the `skewless resolve` command that answers it.
 */

/**
 * A blocked drain names its pods and PDBs (in its message); a failed step names the step, the failure
 * type and why it stopped retrying, then its message unless `withMessage` is false (watch has just
 * printed it: the run's events record every failed step with its message).
 */
export function blockText(block: NodeBlock, withMessage = true): string {
  if (block.kind !== 'StepFailed') return block.message;
  return `${block.summary} failed (${block.failure}, ${block.gaveUp})${withMessage ? `: ${block.message}` : ''}`;
}

export function resolveHint(cluster: string, node: string, block: NodeBlock): string {
  const actions = block.kind === 'StepFailed' ? block.actions : ['retry', 'skip', 'force', 'abort'];
  return `resolve with: skewless resolve ${cluster} --node ${node} --action ${actions.join('|')}`;
}

/** The halted rollout: what failed, the workloads that fell short, and the answer. */
export function haltLines(cluster: string, halt: HaltState, withMessage = true): string[] {
  return [
    halt.step === 'quarantineSkew'
      ? `HALTED before hop ${halt.hop}: quarantined nodes would break the skew policy${withMessage ? `: ${halt.message}` : ''}`
      : halt.step === 'capacity'
        ? `HALTED before ${halt.after}${halt.hop ? ` of hop ${halt.hop}` : ''}, nothing evicted: its pods would not fit (${halt.failure})${withMessage ? `: ${halt.message}` : ''}`
        : `HALTED after ${halt.after}${halt.hop ? ` of hop ${halt.hop}` : ''}: workload check failed (${halt.failure})${withMessage ? `: ${halt.message}` : ''}`,
    ...halt.workloads.map((w) => `  ${w}`),
    `  resolve with: skewless resolve ${cluster} --action ${halt.actions.join('|')}`,
  ];
}
