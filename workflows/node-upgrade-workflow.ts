import { TemporalFailure } from '@temporalio/workflow';
import type { NodeStepInput, NodeStepResult } from './node-step-input.js';
import { NodeUpgradeRun, Stopped } from './node-upgrade-run.js';

export type { NodeStepInput, NodeStepResult } from './node-step-input.js';

/**
 * One node's part of a hop, as its own child workflow so every node has its own history.
 * Nothing that goes wrong moves on by itself: a drain that cannot finish, or a step that failed once
 * its retries were spent (a host unreachable, a host key that changed, a node not Ready after the
 * kubelet restart), reports the node blocked and waits for the operator's resolution. Retry runs the
 * failed step again (every activity reads the state first). Skip is offered only while the node is
 * untouched at its old version (node-upgrade-run.ts). Force is for drains only.
 */
export async function nodeUpgradeWorkflow(input: NodeStepInput): Promise<NodeStepResult> {
  const run = new NodeUpgradeRun(input);
  run.registerHandlers();
  try {
    if (input.step === 'control-plane') await run.upgradeControlPlane();
    else {
      // A worker's kubeadm work and package downloads, before the cordon (kubernetes.io's order).
      if (input.step === 'node') await run.prepareWorker();
      await run.cordonAndDrain();
      // `drain` (blue/green): the node leaves the cluster, and stays cordoned and empty for its removal.
      if (input.step === 'maintain') await run.maintainOs();
      else if (input.step !== 'drain') await run.upgradeKubelet();
    }
    return run.finish('done');
  } catch (err) {
    // Every path that did not finish leaves the node's package holds as they were before the run.
    if (err instanceof Stopped || err instanceof TemporalFailure) await run.putHoldsBack();
    if (!(err instanceof Stopped)) throw err;
    return run.finish(err.outcome);
  }
}
