import { clusterVersion, inventoryNodes, normalizeInventory, type ClusterInventory } from './cluster-inventory.js';
import { etcdPatchTarget } from './etcd-patch.js';
import { planHops } from './hop-plan.js';
import { nodesBehind, type WorkerHops } from './hop-work.js';
import type { PackageManager } from './package-commands.js';
import { planRollout, type RolloutPlan, type RolloutPolicy, type UpgradePolicy } from './rollout-plan.js';
import { checkRunbook, type RunbookCheck } from './runbook-check.js';
import { RuleError } from './rule-error.js';
import { parseAvailable, resolveTarget, type ResolvedTarget } from './target-expression.js';
import { minorOf, parseVersion } from './version.js';
import { applyStep, buildRunbook, type KubeProxyAddon, type RunbookStep } from './upgrade-runbook.js';
import { planWorkerHops, type HopMoves } from './worker-moves.js';

export interface UpgradePlanRequest {
  inventory: ClusterInventory;
  to: string;
  available: readonly string[];
  /** The rollout's shape, and workersEveryHop (default: each worker moves as few times as the skew policy allows). */
  policy?: UpgradePolicy;
  /** The nodes' package tools, for the commands the steps show (default apt). */
  packageManager?: PackageManager;
  /** The cluster configuration's `etcd.patchImageTag`: the etcd patch step's target (policy fixPrerequisites). */
  etcdPatchImageTag?: string;
  /** addons.kubeProxy and whether the cluster has the kube-proxy DaemonSet (the apply command shows the skip). */
  kubeProxy?: KubeProxyAddon;
  /** The rollout's cap on workers out at once (rules/rollout-plan.ts PlanOptions; default MAX_OPEN_CHILDREN). */
  maxOpenChildren?: number;
}

export interface UpgradePlan {
  from: string;
  hops: string[];
  /** What `to` asked for and what it became (an expression resolves to an exact version, or to nothing to do). */
  target: ResolvedTarget;
  rollout: RolloutPlan;
  /** The hops at which each worker of the rollout moves (its kubelet to that hop's version). */
  workerHops: WorkerHops;
  /** Per hop, what moves: its control planes, the workers that move and the workers that stay. */
  moves: HopMoves[];
  steps: RunbookStep[];
  skew: RunbookCheck;
}

/** Everything `skewless plan` prints and an upgrade follows, computed without touching anything. */
export function planUpgrade(request: UpgradePlanRequest): UpgradePlan {
  const inventory = normalizeInventory(request.inventory);
  const nodes = inventoryNodes(inventory);
  const from = clusterVersion(inventory);
  const target = resolveTarget(request.to, from, request.available);
  let hops = planHops({ from, to: request.to, available: request.available });
  // The control plane is at the target but nodes are behind (a run aborted or skipped them): the hop
  // to the control plane's own version finishes them. Only when the target names that version.
  const behind = nodesBehind(inventory, from);
  if (hops.length === 0 && behind.length > 0 && targetReached(from, target)) {
    if (!parseAvailable(request.available).some((v) => v.text === from)) {
      throw new RuleError(
        'MissingRelease',
        `${from} is not among the available versions: ${behind.join(', ')} cannot be brought to the control plane's version`,
      );
    }
    hops = [from];
  }
  const workers = nodes.filter((n) => n.role === 'worker').map((n) => n.name);
  const allHops = planWorkerHops(hops, inventory, workers, request.policy?.workersEveryHop ?? false);
  const options = request.maxOpenChildren === undefined ? {} : { maxOpenChildren: request.maxOpenChildren };
  const etcdPatch = request.policy?.fixPrerequisites === true ? { target: etcdPatchTarget(request.etcdPatchImageTag) } : undefined;
  const everyNode = buildRunbook(
    hops,
    planRollout(nodes, request.policy, options),
    request.packageManager,
    inventory,
    allHops,
    etcdPatch,
    request.kubeProxy,
  );
  // Nodes with nothing to do in any hop are left out of the rollout, so the canary and the batches
  // are made of the nodes that move; the control planes stay (a hop's snapshot and kubeadm run there).
  const moving = new Set(
    everyNode.filter((s) => s.action === 'upgrade-kubelet' || s.action === 'upgrade-control-plane').map((s) => s.node),
  );
  const idle = nodes.filter((n) => n.role === 'worker' && !moving.has(n.name)).map((n) => n.name);
  const rollout = planRollout(
    nodes.filter((n) => !idle.includes(n.name)),
    withoutCanaries(request.policy, idle),
    options,
  );
  const workerHops = Object.fromEntries(Object.entries(allHops).filter(([n]) => !idle.includes(n)));
  const steps = buildRunbook(hops, rollout, request.packageManager, inventory, workerHops, etcdPatch, request.kubeProxy);
  const moves = hopMoves(hops, rollout, inventory, steps);
  return { from, hops, target, rollout, workerHops, moves, steps, skew: checkRunbook(inventory, steps) };
}

/** What each hop moves, read off the steps; a worker that stays is named with the version it keeps. */
function hopMoves(hops: readonly string[], rollout: RolloutPlan, inventory: ClusterInventory, steps: readonly RunbookStep[]): HopMoves[] {
  const workers = Object.keys(rollout.stageLabels).filter((n) => !rollout.controlPlanes.includes(n));
  let state = inventory;
  return hops.map((hop) => {
    const mine = steps.filter((s) => s.hop === hop);
    const moved = (action: RunbookStep['action']) => new Set(mine.filter((s) => s.action === action).map((s) => s.node as string));
    const [components, kubelets] = [moved('upgrade-control-plane'), moved('upgrade-kubelet')];
    const stay = new Map<string, string[]>();
    for (const w of workers.filter((n) => !kubelets.has(n))) {
      const version = state.kubelets?.find((k) => k.node === w)?.version ?? 'its version';
      stay.set(version, [...(stay.get(version) ?? []), w]);
    }
    state = mine.reduce(applyStep, state);
    return {
      hop,
      controlPlanes: rollout.controlPlanes.filter((n) => components.has(n) || kubelets.has(n)),
      workers: workers.filter((n) => kubelets.has(n)),
      workersStay: [...stay].map(([version, nodes]) => ({ version, nodes })),
    };
  });
}

/** A target the control plane's version already satisfies: itself, its minor, or an expression with nothing newer. */
function targetReached(from: string, target: ResolvedTarget): boolean {
  return target.nothingToDo !== undefined || target.to === from || target.to === minorOf(parseVersion(from));
}

/** The policy without canary nodes that have nothing to do (named canaries all idle: the default canary). */
function withoutCanaries(policy: RolloutPolicy | undefined, idle: readonly string[]): RolloutPolicy | undefined {
  if (!policy?.canaryNodes || idle.length === 0) return policy;
  const canaryNodes = policy.canaryNodes.filter((n) => !idle.includes(n));
  if (canaryNodes.length > 0) return { ...policy, canaryNodes };
  const { canaryNodes: _dropped, ...rest } = policy;
  return rest;
}
