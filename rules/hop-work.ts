import type { RolloutPlan } from './rollout-plan.js';
import type { ComponentVersion, SkewInventory } from './skew-policy.js';
import { compareVersions, parseVersion } from './version.js';

/**
 * What a hop still has to move, judged from the versions before it. In an upgrade from a converged
 * cluster every node is below every hop and a hop moves everything; a run that stopped half-way
 * (aborted after the control plane, a node skipped) leaves nodes behind, and the next run to the same
 * version moves only those, through the same phases, without touching what is already there.
 */
export interface HopWork {
  hop: string;
  /** Control planes whose apiserver, controller-manager or scheduler is below the hop, in the rollout's order. */
  controlPlanes: string[];
  /**
   * Whether the first of them runs `kubeadm upgrade apply`: only when it is the rollout's first control
   * plane. Once that one is at the hop, apply has run, and the rest run `kubeadm upgrade node`.
   */
  apply: boolean;
  /** Nodes whose kubelet is below the hop, or whose kubelet version is not known. */
  kubelets: string[];
}

/** Worker → the hops (their versions) at which its kubelet moves, in order (rules/worker-moves.ts planWorkerHops). */
export type WorkerHops = Record<string, string[]>;

/** Whether `node`'s kubelet moves at `hop`: a node the plan does not name (a control plane, or no plan) moves at every hop. */
export function movesAtHop(workerHops: WorkerHops | undefined, node: string, hop: string): boolean {
  return workerHops?.[node]?.includes(hop) ?? true;
}

/** A version below the hop; an unknown version counts as below (the node is moved rather than assumed done). */
export function isBelowHop(version: string | undefined, hop: string): boolean {
  return version === undefined || compareVersions(parseVersion(version), parseVersion(hop)) < 0;
}

/**
 * The hop's work on the cluster as `state` describes it: nodes already at the hop are left out, and
 * so are workers the plan moves at another hop (`workerHops`; absent: every worker at every hop).
 */
export function hopWork(state: SkewInventory, hop: string, rollout: RolloutPlan, workerHops?: WorkerHops): HopWork {
  const versionOf = (entries: readonly ComponentVersion[] | undefined, node: string) => entries?.find((e) => e.node === node)?.version;
  const componentsBelow = (node: string) =>
    isBelowHop(versionOf(state.apiservers, node), hop) ||
    [state.controllerManagers, state.schedulers].some((list) => list?.some((e) => e.node === node && isBelowHop(e.version, hop)));
  const controlPlanes = rollout.controlPlanes.filter(componentsBelow);
  const nodes = [...rollout.controlPlanes, ...rollout.phases.filter((p) => p.kind !== 'control-plane').flatMap((p) => p.nodes)];
  return {
    hop,
    controlPlanes,
    apply: controlPlanes[0] !== undefined && controlPlanes[0] === rollout.controlPlanes[0],
    kubelets: nodes.filter((n) => isBelowHop(versionOf(state.kubelets, n), hop) && movesAtHop(workerHops, n, hop)),
  };
}

/** Every node moves in every hop (workers at the hops `workerHops` names): the work of a hop when nothing is known of the versions before it. */
export function fullHopWork(hop: string, rollout: RolloutPlan, workerHops?: WorkerHops): HopWork {
  const workers = rollout.phases.filter((p) => p.kind !== 'control-plane').flatMap((p) => p.nodes);
  return {
    hop,
    controlPlanes: [...rollout.controlPlanes],
    apply: rollout.controlPlanes.length > 0,
    kubelets: [...rollout.controlPlanes, ...workers.filter((n) => movesAtHop(workerHops, n, hop))],
  };
}

/**
 * Nodes a converged cluster would not have: kubelets or control-plane components older than the
 * control plane's own version (`from`, its oldest apiserver). With them, an upgrade whose target the
 * control plane has reached still has a hop to run: the one that finishes them.
 */
export function nodesBehind(state: SkewInventory, from: string): string[] {
  const behind = new Set<string>();
  for (const list of [state.controllerManagers, state.schedulers, state.kubelets]) {
    for (const e of list ?? []) if (isBelowHop(e.version, from)) behind.add(e.node);
  }
  return [...behind];
}
