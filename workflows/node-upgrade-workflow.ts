import { ActivityFailure, ApplicationFailure, condition, getExternalWorkflowHandle, setHandler, workflowInfo } from '@temporalio/workflow';
import { activities as a } from './activities-proxy.js';
import { drainResolutionSignal, nodeStatusQuery, type DrainBlock, type DrainResolution, type NodeStatus } from './node-messages.js';
import { nodeBlockedSignal } from './upgrade-messages.js';

export interface NodeUpgradeInput {
  cluster: string;
  node: string;
  role: 'control-plane' | 'worker';
  /** Target Kubernetes version of this hop, `1.33.7`. */
  version: string;
  /** `control-plane`: kubeadm upgrade apply/node of the static pods; `node`: drain, packages, kubelet. */
  step: 'control-plane' | 'node';
  /** The control plane that runs `kubeadm upgrade apply` (the others run `upgrade node`). */
  first?: boolean;
  /** Owner recorded on cordons: the cluster upgrade's workflow id, stable across continue-as-new. */
  owner: string;
  drainTimeoutSeconds?: number;
  kubeletTimeoutSeconds: number;
  /** How long health checks may wait for Ready and rollouts to converge. */
  verifySeconds: number;
}

export interface NodeUpgradeResult {
  node: string;
  outcome: 'done' | 'skipped' | 'aborted';
  /** Whether this run cordoned the node (and so must uncordon it if the upgrade is abandoned). */
  cordonedByUs: boolean;
  forced: string[];
  resolutions: DrainResolution[];
  /** Seconds from the first eviction attempt to an empty node, blocked time included. */
  drainSeconds?: number;
}

const drainBlockOf = (err: unknown): DrainBlock | undefined => {
  const cause = err instanceof ActivityFailure ? err.cause : undefined;
  if (!(cause instanceof ApplicationFailure) || (cause.type !== 'DrainBlocked' && cause.type !== 'DrainRefused')) return undefined;
  const details = (cause.details?.[0] ?? {}) as { pods?: DrainBlock['pods']; blockers?: { pod: { namespace: string; name: string } }[] };
  const pods = details.pods ?? details.blockers?.map((b) => ({ namespace: b.pod.namespace, name: b.pod.name })) ?? [];
  return { kind: cause.type, message: cause.message, pods };
};

/** Tells the cluster upgrade (by workflow id, so it survives its continue-as-new) that this node is blocked or not. */
async function tellParent(node: string, block: DrainBlock | undefined): Promise<void> {
  const parent = workflowInfo().parent;
  if (!parent) return;
  await getExternalWorkflowHandle(parent.workflowId).signal(nodeBlockedSignal, block ? { node, block } : { node });
}

/**
 * One node's part of a hop, as its own child workflow so every node has its own history.
 * A drain that cannot finish waits for the operator's resolution instead of forcing anything.
 */
export async function nodeUpgradeWorkflow(input: NodeUpgradeInput): Promise<NodeUpgradeResult> {
  const { cluster, node, version } = input;
  const status: NodeStatus = { node, phase: 'pending', forced: [], resolutions: [] };
  let pending: DrainResolution | undefined;
  setHandler(nodeStatusQuery, () => status);
  setHandler(drainResolutionSignal, (resolution) => {
    // Only meaningful while blocked; the parent's update validator already refused the rest.
    if (status.phase === 'blocked') pending = resolution;
  });
  const result = (outcome: NodeUpgradeResult['outcome'], cordonedByUs: boolean): NodeUpgradeResult => ({
    node, outcome, cordonedByUs, forced: status.forced, resolutions: status.resolutions,
    ...(status.drainSeconds === undefined ? {} : { drainSeconds: status.drainSeconds }),
  });

  if (input.step === 'control-plane') {
    status.phase = 'upgrading-control-plane';
    await a.installPackages({ cluster, node, version, packages: ['kubeadm'] });
    if (input.first) await a.kubeadmUpgradeApply({ cluster, node, version });
    else await a.kubeadmUpgradeNode({ cluster, node, version });
    status.phase = 'verifying';
    await a.checkControlPlane({ cluster, node, version, waitSeconds: input.verifySeconds });
    status.phase = 'done';
    return result('done', false);
  }

  status.phase = 'cordoned';
  const cordon = await a.cordonNode({ cluster, node, owner: input.owner });
  const drainStarted = Date.now(); // workflow time: deterministic on replay
  for (;;) {
    status.phase = 'draining';
    try {
      await a.drainNode({ cluster, node, force: status.forced, ...(input.drainTimeoutSeconds ? { timeoutSeconds: input.drainTimeoutSeconds } : {}) });
      break;
    } catch (err) {
      const block = drainBlockOf(err);
      if (!block) throw err;
      status.phase = 'blocked';
      status.blocked = block;
      pending = undefined;
      await tellParent(node, block);
      await condition(() => pending !== undefined);
      await tellParent(node, undefined);
      const resolution = pending as unknown as DrainResolution;
      status.resolutions.push(resolution);
      delete status.blocked;
      if (resolution.action === 'skip') {
        // The node stays cordoned at its old version while the run goes on; the parent hands it back at the end.
        status.phase = 'skipped';
        return result('skipped', cordon.ownedByUs);
      }
      if (resolution.action === 'abort') {
        status.phase = 'aborted';
        return result('aborted', cordon.ownedByUs);
      }
      if (resolution.action === 'force') status.forced = [...new Set([...status.forced, ...resolution.pods])];
    }
  }
  status.drainSeconds = (Date.now() - drainStarted) / 1000;

  status.phase = 'upgrading';
  if (input.role === 'worker') {
    await a.installPackages({ cluster, node, version, packages: ['kubeadm'] });
    await a.kubeadmUpgradeNode({ cluster, node, version });
  }
  await a.installPackages({ cluster, node, version, packages: ['kubelet', 'kubectl'] });
  await a.restartKubelet({ cluster, node, version, timeoutSeconds: input.kubeletTimeoutSeconds });
  status.phase = 'verifying';
  await a.checkNodeReady({ cluster, node, version, waitSeconds: input.verifySeconds });
  if (cordon.ownedByUs) await a.uncordonNode({ cluster, node, owner: input.owner });
  await a.checkPodsOnNode({ cluster, node, waitSeconds: input.verifySeconds, require: true });
  status.phase = 'done';
  return result('done', cordon.ownedByUs);
}
