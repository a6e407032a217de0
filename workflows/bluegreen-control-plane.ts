import { condition, getExternalWorkflowHandle, startChild } from '@temporalio/workflow';
import type { BlueGreenPolicy } from './bluegreen-messages.js';
import { clusterUpgradeWorkflow } from './cluster-upgrade-workflow.js';
import { nodeStepPolicy } from './node-step-input.js';
import { abortSignal, type UpgradeStatus } from './rollout-messages.js';
import { upgradeWorkflowId } from '../contracts/workflow-ids.js';

export interface ControlPlaneFirst {
  cluster: string;
  version: string;
  policy: BlueGreenPolicy;
  verifySeconds: number;
  /** The blue/green run's id and who rolled it back, for the abort it relays. */
  owner: string;
  rolledBackBy: () => string | undefined;
  aborted: () => string | undefined;
}

/**
 * The control plane to `version` before a green pool joins at it (a kubelet is never newer than the
 * apiserver): the upgrade `upgrade/<cluster>`, control planes only (`controlPlaneOnly`), as a child,
 * so its snapshot, kubeadm order, drains, blocks and controls are the upgrade's own (`--workflow
 * upgrade`). A rollback of the blue/green run meanwhile aborts it after its step in flight (no
 * downgrade). Returns the upgrade's final status.
 */
export async function upgradeControlPlaneFirst(o: ControlPlaneFirst): Promise<UpgradeStatus> {
  const { cluster, version, policy } = o;
  const id = upgradeWorkflowId(cluster);
  const child = await startChild(clusterUpgradeWorkflow, {
    workflowId: id,
    staticSummary: `control plane of ${cluster} to v${version} before the green pool`,
    args: [
      {
        cluster,
        to: version,
        controlPlaneOnly: true,
        policy: {
          ...nodeStepPolicy({ ...policy, verifySeconds: o.verifySeconds }),
          ...(policy.acknowledge?.length ? { acknowledge: policy.acknowledge } : {}),
        },
      },
    ],
  });
  const done = await Promise.race([child.result(), condition(() => o.aborted() !== undefined).then(() => undefined)]);
  if (done) return done;
  await getExternalWorkflowHandle(id).signal(abortSignal, { by: o.rolledBackBy() ?? 'bluegreen', reason: `${o.owner} rolled back` });
  return child.result();
}
