import {
  ActivityFailure,
  ApplicationFailure,
  condition,
  getExternalWorkflowHandle,
  patched,
  setHandler,
  workflowInfo,
} from '@temporalio/workflow';
import type { Activities } from '../activities/index.js';
import { activitiesWithin } from './activities-proxy.js';
import { countNodeUpgraded, recordDrainSeconds } from './metrics.js';
import {
  drainResolutionSignal,
  nodeStatusQuery,
  type DrainBlock,
  type DrainResolution,
  type NodeBlock,
  type NodePhase,
  type NodeStatus,
} from './node-messages.js';
import { stepBlockOf } from './step-block.js';
import { SUMMARY_OF } from './step-summary.js';
import { nodeBlockedSignal } from './upgrade-messages.js';
import { PATCH } from './patches.js';

export interface NodeUpgradeInput {
  cluster: string;
  node: string;
  role: 'control-plane' | 'worker';
  /** Target Kubernetes version of this hop, `1.33.7` (empty for `maintain`: no version changes). */
  version: string;
  /**
   * `control-plane`: kubeadm upgrade apply/node of the static pods; `node`: drain, packages, kubelet;
   * `maintain` (OS maintenance): drain, the configured OS upgrade command, reboot, Ready, uncordon;
   * `drain` (blue/green: a node leaving the cluster): cordon and drain, and the node stays cordoned.
   */
  step: 'control-plane' | 'node' | 'maintain' | 'drain';
  /** The control plane that runs `kubeadm upgrade apply` (the others run `upgrade node`). */
  first?: boolean;
  /** Owner recorded on cordons: the cluster upgrade's workflow id, stable across continue-as-new. */
  owner: string;
  drainTimeoutSeconds?: number;
  kubeletTimeoutSeconds: number;
  /** How long health checks may wait for Ready and rollouts to converge. */
  verifySeconds: number;
  /** How long a host step keeps retrying before the node is reported blocked (UpgradePolicy.hostRetrySeconds). */
  hostRetrySeconds?: number;
  /** Pods (`namespace/name`) the operator let go before the start (maintain --force-pod): the drain deletes them. */
  force?: string[];
  /** `maintain`: how long the node may take to come back over SSH and Ready after its reboot. */
  rebootTimeoutSeconds?: number;
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

/** Tells the cluster upgrade (by workflow id, so it survives its continue-as-new) that this node is blocked, or where it goes on. */
async function tellParent(node: string, block: NodeBlock | undefined, phase?: NodePhase): Promise<void> {
  const parent = workflowInfo().parent;
  if (!parent) return;
  await getExternalWorkflowHandle(parent.workflowId).signal(
    nodeBlockedSignal,
    block ? { node, block } : { node, ...(phase ? { phase } : {}) },
  );
}

/** Unwinds the node's steps once the operator skipped or aborted it. */
class Stopped extends Error {
  constructor(readonly outcome: 'skipped' | 'aborted') {
    super(outcome);
  }
}

/**
 * One node's part of a hop, as its own child workflow so every node has its own history.
 * Nothing that goes wrong moves on by itself: a drain that cannot finish, or a step that failed once
 * its retries were spent (a host unreachable, a host key that changed, a node not Ready after the
 * kubelet restart), reports the node blocked and waits for the operator's resolution. Retry runs the
 * failed step again (every activity reads the state first). Skip is offered only while the node is
 * untouched at its old version: see `skippable` below. Force is for drains only.
 */
export async function nodeUpgradeWorkflow(input: NodeUpgradeInput): Promise<NodeUpgradeResult> {
  const { cluster, node, version } = input;
  const a = activitiesWithin(input.hostRetrySeconds);
  const status: NodeStatus = { node, phase: 'pending', forced: [...(input.force ?? [])], resolutions: [] };
  let pending: DrainResolution | undefined;
  let cordonedByUs = false;
  setHandler(nodeStatusQuery, () => status);
  setHandler(drainResolutionSignal, (resolution) => {
    // Only meaningful while blocked; the parent's update validator already refused the rest.
    if (status.phase === 'blocked') pending = resolution;
  });
  const result = (outcome: NodeUpgradeResult['outcome']): NodeUpgradeResult => ({
    node,
    outcome,
    cordonedByUs,
    forced: status.forced,
    resolutions: status.resolutions,
    ...(status.drainSeconds === undefined ? {} : { drainSeconds: status.drainSeconds }),
  });

  /** Reports the block to the parent and waits for the operator; the node goes on in the phase it was in. */
  const waitForOperator = async (block: NodeBlock): Promise<DrainResolution> => {
    const phase = status.phase;
    status.phase = 'blocked';
    status.blocked = block;
    pending = undefined;
    await tellParent(node, block);
    await condition(() => pending !== undefined);
    const resolution = pending as unknown as DrainResolution;
    status.resolutions.push(resolution);
    delete status.blocked;
    status.phase = phase;
    await tellParent(node, undefined, phase);
    return resolution;
  };

  /**
   * Runs one step; if it fails (after its retry policy gave up) the node is blocked until the
   * operator answers: retry runs the step again, skip (where offered) and abort stop the node.
   */
  const step = async <K extends keyof Activities>(
    name: K,
    args: Parameters<Activities[K]>[0],
    skippable = false,
  ): Promise<Awaited<ReturnType<Activities[K]>>> => {
    const call = a[name] as (arg: typeof args) => Promise<Awaited<ReturnType<Activities[K]>>>;
    for (;;) {
      try {
        return await call(args);
      } catch (err) {
        const summary = (SUMMARY_OF[name] as (i: typeof args) => string)(args);
        const block = stepBlockOf(err, name, summary, skippable);
        if (!block) throw err;
        const resolution = await waitForOperator(block);
        if (resolution.action === 'skip') throw new Stopped('skipped');
        if (resolution.action === 'abort') throw new Stopped('aborted');
      }
    }
  };

  try {
    if (input.step === 'control-plane') {
      // Never skippable: an apiserver left behind would hold back every kubelet of the hop.
      status.phase = 'upgrading-control-plane';
      if (patched(PATCH.hopRepository)) await step('pointPackageRepository', { cluster, node, version });
      await step('installPackages', { cluster, node, version, packages: ['kubeadm'] });
      if (input.first) await step('kubeadmUpgradeApply', { cluster, node, version });
      else await step('kubeadmUpgradeNode', { cluster, node, version });
      status.phase = 'verifying';
      await step('checkControlPlane', { cluster, node, version, waitSeconds: input.verifySeconds });
      status.phase = 'done';
      return result('done');
    }

    // Skip is offered while the node runs its old kubelet with its old configuration: through the
    // cordon, the drain and a worker's kubeadm package (the kubeadm binary is in no skew rule). From
    // `kubeadm upgrade node` on (it rewrites the kubelet's configuration for the new version) the node
    // is half moved, and leaving it like that for the rest of the run is not an answer: retry or abort.
    status.phase = 'cordoned';
    const cordon = await step('cordonNode', { cluster, node, owner: input.owner }, true);
    cordonedByUs = cordon.ownedByUs;
    const drainStarted = Date.now(); // workflow time: deterministic on replay
    for (;;) {
      status.phase = 'draining';
      try {
        await a.drainNode({
          cluster,
          node,
          force: status.forced,
          ...(input.drainTimeoutSeconds ? { timeoutSeconds: input.drainTimeoutSeconds } : {}),
        });
        break;
      } catch (err) {
        const block =
          drainBlockOf(err) ?? stepBlockOf(err, 'drainNode', SUMMARY_OF.drainNode({ cluster, node, force: status.forced }), true);
        if (!block) throw err;
        const resolution = await waitForOperator(block);
        // A skipped node stays cordoned at its old version while the run goes on; the parent hands it back at the end.
        if (resolution.action === 'skip') throw new Stopped('skipped');
        if (resolution.action === 'abort') throw new Stopped('aborted');
        if (resolution.action === 'force') status.forced = [...new Set([...status.forced, ...resolution.pods])];
      }
    }
    status.drainSeconds = (Date.now() - drainStarted) / 1000;
    recordDrainSeconds(cluster, input.role, status.drainSeconds);

    if (input.step === 'drain') {
      // The node leaves the cluster (its pool is replaced): it stays cordoned, empty, for its removal.
      status.phase = 'done';
      return result('done');
    }
    status.phase = 'upgrading';
    if (input.step === 'maintain') {
      // From the OS upgrade on the node is changing: retry or abort, no skip.
      await step('runMaintenanceCommand', { cluster, node });
      await step('rebootNode', { cluster, node, timeoutSeconds: input.rebootTimeoutSeconds ?? 600 });
      status.phase = 'verifying';
      await step('checkNodeReady', { cluster, node, waitSeconds: input.verifySeconds });
      if (cordonedByUs) await step('uncordonNode', { cluster, node, owner: input.owner });
      await step('checkPodsOnNode', { cluster, node, waitSeconds: input.verifySeconds, require: true });
      status.phase = 'done';
      return result('done');
    }
    if (input.role === 'worker') {
      if (patched(PATCH.hopRepository)) await step('pointPackageRepository', { cluster, node, version }, true);
      await step('installPackages', { cluster, node, version, packages: ['kubeadm'] }, true);
      await step('kubeadmUpgradeNode', { cluster, node, version });
    }
    await step('installPackages', { cluster, node, version, packages: ['kubelet', 'kubectl'] });
    await step('restartKubelet', { cluster, node, version, timeoutSeconds: input.kubeletTimeoutSeconds });
    status.phase = 'verifying';
    await step('checkNodeReady', { cluster, node, version, waitSeconds: input.verifySeconds });
    if (cordonedByUs) await step('uncordonNode', { cluster, node, owner: input.owner });
    await step('checkPodsOnNode', { cluster, node, waitSeconds: input.verifySeconds, require: true });
    status.phase = 'done';
    countNodeUpgraded(cluster, input.role);
    return result('done');
  } catch (err) {
    if (!(err instanceof Stopped)) throw err;
    status.phase = err.outcome;
    return result(err.outcome);
  }
}
