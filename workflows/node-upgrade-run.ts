import {
  ActivityFailure,
  ApplicationFailure,
  CancellationScope,
  condition,
  getExternalWorkflowHandle,
  patched,
  setHandler,
  workflowInfo,
} from '@temporalio/workflow';
import type { Activities } from '../activities/index.js';
import type { KubePackage } from '../activities/host-packages.js';
import { activitiesWithin } from './activities-proxy.js';
import type { NodeStepInput, NodeStepResult } from './node-step-input.js';
import { countNodeUpgraded, recordDrainSeconds } from './metrics.js';
import {
  drainResolutionSignal,
  nodeStatusQuery,
  type DrainBlock,
  type DrainResolution,
  type NodeBlock,
  type NodePackagesLeft,
  type NodePhase,
  type NodeStatus,
} from './node-messages.js';
import { PATCH } from './patches.js';
import { stepBlockOf } from './step-block.js';
import { SUMMARY_OF } from './step-summary.js';
import { nodeBlockedSignal } from './rollout-messages.js';

/** Unwinds the node's steps once the operator skipped or aborted it, or its drain timed out under onDrainTimeout quarantine. */
export class Stopped extends Error {
  constructor(readonly outcome: 'skipped' | 'aborted' | 'quarantined') {
    super(outcome);
  }
}

const drainBlockOf = (err: unknown): DrainBlock | undefined => {
  const cause = err instanceof ActivityFailure ? err.cause : undefined;
  if (!(cause instanceof ApplicationFailure) || (cause.type !== 'DrainBlocked' && cause.type !== 'DrainRefused')) return undefined;
  const details = (cause.details?.[0] ?? {}) as { pods?: DrainBlock['pods']; blockers?: { pod: { namespace: string; name: string } }[] };
  const pods = details.pods ?? details.blockers?.map((b) => ({ namespace: b.pod.namespace, name: b.pod.name })) ?? [];
  return { kind: cause.type, message: cause.message, pods };
};

/** Names in both lists, once, in `a`'s order then `b`'s. */
const union = (a: readonly string[] | undefined, b: readonly string[]): string[] => [...new Set([...(a ?? []), ...b])];

/** The packages a failed install says it held again (its failure's details, `heldAgain`). */
function heldAgainOf(err: unknown): string[] {
  const cause = err instanceof ActivityFailure ? err.cause : undefined;
  if (!(cause instanceof ApplicationFailure)) return [];
  const found = (cause.details ?? []).find((d): d is { heldAgain: unknown[] } => Array.isArray((d as { heldAgain?: unknown })?.heldAgain));
  return found ? found.heldAgain.filter((p): p is string => typeof p === 'string') : [];
}

/** Tells the cluster upgrade (by workflow id, so it survives its continue-as-new) that this node is blocked, or where it goes on. */
async function tellParent(node: string, block: NodeBlock | undefined, phase?: NodePhase): Promise<void> {
  const parent = workflowInfo().parent;
  if (!parent) return;
  await getExternalWorkflowHandle(parent.workflowId).signal(
    nodeBlockedSignal,
    block ? { node, block } : { node, ...(phase ? { phase } : {}) },
  );
}

/**
 * One node's run: its status (the `nodeStatus` query), the operator's answer to a block (the
 * `drainResolution` signal the parent relays), and the steps of each kind of node work. The
 * handlers are registered by the constructor, before the workflow's first await.
 *
 * Skip is offered while the node runs its old kubelet: through the cordon, the drain and a worker's
 * kubeadm package (the kubeadm binary is in no skew rule). A failed `kubeadm upgrade node` is not
 * skippable: it may have stopped halfway through the files it writes, so retry or abort. Once it has
 * succeeded on a worker before the cordon (`prepareWorker`), the node runs its old kubelet with the
 * kubelet configuration of the hop written for its next start: the state kubernetes.io's own order
 * leaves every worker in, serving, for as long as its drain takes. So a drain that blocks after it is
 * still skippable: the node stays cordoned at its old kubelet, and a later run finds `kubeadm upgrade
 * node` done (it checks first) and moves only the kubelet. Before the patch the worker's kubeadm ran
 * after the drain, and from `kubeadm upgrade node` on nothing was skippable.
 */
export class NodeUpgradeRun {
  private readonly a: Activities;
  private readonly status: NodeStatus;
  /** The operator's answer while the node is blocked; undefined until it comes. */
  private pending: DrainResolution | undefined;
  private cordonedByUs = false;
  /** Past the cordon step: the node is cordoned, by this run or by someone else before it. */
  private cordoned = false;
  /** Set when the drain timed out under onDrainTimeout quarantine: what blocked it. */
  private quarantined: NodeStepResult['quarantine'];
  /** A worker whose kubeadm work and package downloads were done before its cordon (prepareWorker). */
  private prepared = false;
  /** Whether this run keeps the node's holds on every path (PATCH.holdsOnEveryPath): decided at its first package install. */
  private keepsHolds: boolean | undefined;
  /** The node's holds before its first package install, where the repository points, and what was put back. */
  private readonly packages: NodePackagesLeft = {};

  constructor(private readonly input: NodeStepInput) {
    this.a = activitiesWithin(input.hostRetrySeconds);
    this.status = { node: input.node, phase: 'pending', forced: [...(input.force ?? [])], resolutions: [] };
  }

  /** The node's status query and the resolution its parent relays: before the workflow's first await. */
  registerHandlers(): void {
    setHandler(nodeStatusQuery, () => this.status);
    setHandler(drainResolutionSignal, (resolution) => {
      // Only meaningful while blocked; the parent's update validator already refused the rest.
      if (this.status.phase === 'blocked') this.pending = resolution;
    });
  }

  /** kubeadm on a control plane. Never skippable: an apiserver left behind would hold back every kubelet of the hop. */
  async upgradeControlPlane(): Promise<void> {
    const { cluster, node, version } = this.input;
    this.status.phase = 'upgrading-control-plane';
    await this.installKubeadm(false);
    if (this.input.first) await this.step('kubeadmUpgradeApply', { cluster, node, version });
    else await this.step('kubeadmUpgradeNode', { cluster, node, version });
    this.status.phase = 'verifying';
    await this.step('checkControlPlane', { cluster, node, version, waitSeconds: this.input.verifySeconds });
  }

  /** Cordons and empties the node; a blocked drain waits for the operator, who may force pods out. */
  async cordonAndDrain(): Promise<void> {
    const { cluster, node, drainTimeoutSeconds } = this.input;
    this.status.phase = 'cordoned';
    const cordon = await this.step('cordonNode', { cluster, node, owner: this.input.owner }, true);
    this.cordonedByUs = cordon.ownedByUs;
    this.cordoned = true;
    const drainStarted = Date.now(); // workflow time: deterministic on replay
    this.status.phase = 'draining';
    // Each attempt drains with the pods forced so far (a `force` answer adds to them).
    const drain = () => ({ cluster, node, force: this.status.forced });
    // Under quarantine a drain that timed out (DrainBlocked: the pods left after drainTimeoutSeconds) is no block
    // to wait on: it leaves untilDone and the node is quarantined. A refused drain (a pod no controller
    // manages) still waits: forcing it out is the operator's call. Only runs given onDrainTimeout take
    // this path, and none could before it existed, so no running execution changes its commands (no patch).
    const quarantine = this.input.onDrainTimeout === 'quarantine';
    const timedOut = (err: unknown) => (quarantine ? drainBlockOf(err) : undefined)?.kind === 'DrainBlocked';
    try {
      await this.untilDone(
        () => this.a.drainNode({ ...drain(), ...(drainTimeoutSeconds ? { timeoutSeconds: drainTimeoutSeconds } : {}) }),
        (err) => (timedOut(err) ? undefined : (drainBlockOf(err) ?? stepBlockOf(err, 'drainNode', SUMMARY_OF.drainNode(drain()), true))),
        true,
      );
    } catch (err) {
      if (!timedOut(err)) throw err;
      await this.quarantine(drainBlockOf(err) as DrainBlock);
    }
    this.status.drainSeconds = (Date.now() - drainStarted) / 1000;
    recordDrainSeconds(cluster, this.input.role, this.status.drainSeconds);
  }

  /** OS maintenance of the drained node. From the OS upgrade on the node is changing: retry or abort, no skip. */
  async maintainOs(): Promise<void> {
    const { cluster, node } = this.input;
    this.status.phase = 'upgrading';
    await this.step('runMaintenanceCommand', { cluster, node });
    await this.step('rebootNode', { cluster, node, timeoutSeconds: this.input.rebootTimeoutSeconds ?? 600 });
    await this.backInService({ cluster, node, waitSeconds: this.input.verifySeconds });
  }

  /**
   * A worker's work that needs no drain, before its cordon, in kubernetes.io's order: the hop's
   * repository and kubeadm package, `kubeadm upgrade node` (it writes the kubelet's configuration for
   * its next start; the running kubelet is untouched), and the kubelet and kubectl packages fetched
   * into the package cache, not installed. Cordoned, the node then only drains, installs them from
   * the cache and restarts its kubelet. Returns at once for control planes and for runs before the patch.
   */
  async prepareWorker(): Promise<void> {
    if (this.input.role !== 'worker' || !patched(PATCH.workBeforeCordon)) return;
    const { cluster, node, version } = this.input;
    this.status.phase = 'preparing';
    await this.installKubeadm(true);
    // A node that may be quarantined stays at its old kubelet for the rest of the run and after it: it
    // keeps its old kubelet configuration too, so `kubeadm upgrade node` waits until its drain finished.
    if (!this.mayQuarantine) await this.step('kubeadmUpgradeNode', { cluster, node, version });
    await this.step('downloadPackages', { cluster, node, version, packages: ['kubelet', 'kubectl'] }, true);
    this.prepared = true;
  }

  private get mayQuarantine(): boolean {
    return this.input.onDrainTimeout === 'quarantine';
  }

  /** The drained node's kubelet (and, unless prepared before the cordon, a worker's kubeadm upgrade node) at the hop's version. */
  async upgradeKubelet(): Promise<void> {
    const { cluster, node, version, role } = this.input;
    this.status.phase = 'upgrading';
    if (role === 'worker' && !this.prepared) await this.installKubeadm(true);
    if (role === 'worker' && (!this.prepared || this.mayQuarantine)) await this.step('kubeadmUpgradeNode', { cluster, node, version });
    await this.installPackages(['kubelet', 'kubectl'], false);
    await this.step('restartKubelet', { cluster, node, version, timeoutSeconds: this.input.kubeletTimeoutSeconds });
    await this.backInService({ cluster, node, version, waitSeconds: this.input.verifySeconds });
    countNodeUpgraded(cluster, role);
  }

  /**
   * The node's result; a skipped node stays cordoned at its old version, and the parent hands it back at
   * the end; a quarantined one stays cordoned after the end too.
   */
  finish(outcome: NodeStepResult['outcome']): NodeStepResult {
    const { status } = this;
    status.phase = outcome;
    return {
      node: status.node,
      outcome,
      cordonedByUs: this.cordonedByUs,
      cordoned: this.cordoned,
      forced: status.forced,
      resolutions: status.resolutions,
      ...(status.drainSeconds === undefined ? {} : { drainSeconds: status.drainSeconds }),
      ...(outcome === 'quarantined' && this.quarantined ? { quarantine: this.quarantined } : {}),
      ...(this.keepsHolds && Object.keys(this.packages).length > 0 ? { packages: this.packages } : {}),
    };
  }

  /**
   * The drain did not finish in time: the node is labelled and an Event recorded on it, and it ends
   * 'quarantined', cordoned at its old version (the pods evicted so far stay evicted). The parent
   * leaves it out of the rest of the run and does not hand it back.
   */
  private async quarantine(block: DrainBlock): Promise<never> {
    const { cluster, node, owner, version } = this.input;
    this.quarantined = { message: block.message, pods: block.pods.map((p) => `${p.namespace}/${p.name}`) };
    await this.step('quarantineNode', { cluster, node, owner, hop: version, message: block.message }, true);
    throw new Stopped('quarantined');
  }

  /** The hop's kubeadm, from the node's package repository pointed at the hop's minor first. */
  private async installKubeadm(skippable: boolean): Promise<void> {
    const { cluster, node, version } = this.input;
    if (patched(PATCH.hopRepository)) {
      const pointed = await this.step('pointPackageRepository', { cluster, node, version }, skippable);
      // Plain JSON in the result: the file's name (no path) and the minor it names now.
      if (pointed?.file) this.packages.repository = { file: pointed.file.split('/').at(-1) as string, minor: pointed.minor };
    }
    await this.installPackages(['kubeadm'], skippable);
  }

  /**
   * Packages at the hop's version. Since PATCH.holdsOnEveryPath the node's holds are read before its
   * first install, and put back after an install that failed, before the node waits for the operator
   * (the install puts back what it lifted itself; this covers a worker that died in between).
   */
  private async installPackages(packages: KubePackage[], skippable: boolean): Promise<void> {
    const { cluster, node, version } = this.input;
    const args = { cluster, node, version, packages };
    this.keepsHolds ??= patched(PATCH.holdsOnEveryPath);
    if (!this.keepsHolds) {
      await this.step('installPackages', args, skippable);
      return;
    }
    if (this.packages.heldBefore === undefined)
      this.packages.heldBefore = (await this.step('readPackageHolds', { cluster, node }, skippable)).held ?? [];
    await this.untilDone(
      () => this.a.installPackages(args),
      (err) => stepBlockOf(err, 'installPackages', SUMMARY_OF.installPackages(args), skippable),
      false,
      async (err) => {
        this.packages.putBack = union(this.packages.putBack, heldAgainOf(err));
        await this.putHoldsBack();
      },
    );
  }

  /**
   * The holds read before the first install, put back where the node lost them; what it could not is
   * recorded, never thrown: the node's path (a block, a skip, an abort) goes on. Runs even while the
   * workflow is being cancelled. Nothing to do before the first install.
   */
  async putHoldsBack(): Promise<void> {
    const { heldBefore } = this.packages;
    if (heldBefore === undefined) return;
    const { cluster, node } = this.input;
    await CancellationScope.nonCancellable(async () => {
      try {
        const r = await this.a.restorePackageHolds({ cluster, node, held: heldBefore as KubePackage[] });
        Object.assign(this.packages, { held: r.held, putBack: union(this.packages.putBack, r.putBack), notPutBack: r.missing });
        delete this.packages.unchecked;
      } catch (err) {
        this.packages.unchecked = err instanceof ActivityFailure ? (err.cause?.message ?? err.message) : String(err);
      }
    });
  }

  /** Ready again, uncordoned if this run cordoned it, and its pods running: the node is done. */
  private async backInService(ready: Parameters<Activities['checkNodeReady']>[0]): Promise<void> {
    const { cluster, node, owner, verifySeconds } = this.input;
    this.status.phase = 'verifying';
    await this.step('checkNodeReady', ready);
    if (this.cordonedByUs) await this.step('uncordonNode', { cluster, node, owner });
    await this.step('checkPodsOnNode', { cluster, node, waitSeconds: verifySeconds, require: true });
  }

  /** One activity, run until it succeeds or the operator stops the node (see untilDone). */
  private async step<K extends keyof Activities>(
    name: K,
    args: Parameters<Activities[K]>[0],
    skippable = false,
  ): Promise<Awaited<ReturnType<Activities[K]>>> {
    const call = this.a[name] as (arg: typeof args) => Promise<Awaited<ReturnType<Activities[K]>>>;
    const summary = SUMMARY_OF[name] as (i: typeof args) => string;
    return this.untilDone(
      () => call(args),
      (err) => stepBlockOf(err, name, summary(args), skippable),
    );
  }

  /**
   * Runs `attempt`; if it fails (after its retry policy gave up) the node is blocked until the
   * operator answers: retry runs it again, skip (where offered) and abort stop the node, force
   * (drains only) lets the named pods go and runs it again. A failure that is no block fails the node.
   */
  private async untilDone<T>(
    attempt: () => Promise<T>,
    blockOf: (err: unknown) => NodeBlock | undefined,
    forceable = false,
    beforeBlock?: (err: unknown) => Promise<void>,
  ): Promise<T> {
    for (;;) {
      try {
        return await attempt();
      } catch (err) {
        const block = blockOf(err);
        if (!block) throw err;
        await beforeBlock?.(err);
        const resolution = await this.waitForOperator(block);
        if (resolution.action === 'skip') throw new Stopped('skipped');
        if (resolution.action === 'abort') throw new Stopped('aborted');
        if (resolution.action === 'force' && forceable) this.status.forced = [...new Set([...this.status.forced, ...resolution.pods])];
      }
    }
  }

  /** Reports the block to the parent and waits for the operator; the node goes on in the phase it was in. */
  private async waitForOperator(block: NodeBlock): Promise<DrainResolution> {
    const { status } = this;
    const phase = status.phase;
    status.phase = 'blocked';
    status.blocked = block;
    this.pending = undefined;
    await tellParent(status.node, block);
    await condition(() => this.pending !== undefined);
    const resolution = this.pending as unknown as DrainResolution;
    status.resolutions.push(resolution);
    delete status.blocked;
    status.phase = phase;
    await tellParent(status.node, undefined, phase);
    return resolution;
  }
}
