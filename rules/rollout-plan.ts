import { compareNatural } from './natural-order.js';
import { FieldError, FieldPath, integer } from './input-shapes.js';
import { RuleError } from './rule-error.js';
import { batchesWithin, failureDomains, type FailureDomain } from './batch-by.js';
import { MAX_OPEN_CHILDREN } from './open-children.js';

/** The label that makes the rollout plan cluster state rather than a document. */
export const STAGE_LABEL = 'skewless.io/stage';

export type NodeRole = 'control-plane' | 'worker';

export interface PlanNode {
  name: string;
  role: NodeRole;
  labels?: Record<string, string>;
}

export interface RolloutPolicy {
  /** Workers upgraded first, on their own, before any batch. Default 1. */
  canary?: number;
  /** Explicit canary nodes; overrides `canary` when given. */
  canaryNodes?: string[];
  /**
   * Workers per batch. Default: maxUnavailable. A batch larger than maxUnavailable (itself at most
   * MAX_OPEN_CHILDREN) runs in waves of at most maxUnavailable within the batch.
   */
  batchSize?: number;
  /**
   * Workers out of service at once: a count, or a percentage of the workers such as `10%`. Default 1.
   * At most MAX_OPEN_CHILDREN (open-children.ts): a count above it is refused, a percentage that comes
   * to more is capped at it.
   */
  maxUnavailable?: number | string;
  /** `name` (natural order, the default) or `inventory` (as listed). */
  order?: 'name' | 'inventory';
  /** The control plane that runs `kubeadm upgrade apply`. Default: first in order. */
  firstControlPlane?: string;
  /**
   * A node label (`topology.kubernetes.io/zone`, any key): no batch mixes two of its values, and the
   * canary comes from the first value (rules/batch-by.ts). Default: none, batches in node order.
   */
  batchBy?: string;
  /** With batchBy: the label's values in the order their workers go; values not named follow in natural order. */
  batchOrder?: string[];
}

/** An upgrade's policy: the rollout's, plus its gates, timeouts and history budget (also what a fleet file sets per cluster). */
export interface UpgradePolicy extends RolloutPolicy {
  /** Wait for an `approve` update before the workers of each hop, and after each canary. */
  approveWorkers?: boolean;
  approveAfterCanary?: boolean;
  /** Soak after the canary when no approval is asked (seconds). */
  soakSeconds?: number;
  /**
   * Soak after every phase of a hop (the control plane, the canary, each batch): seconds to watch the
   * cluster (workload checks, probes, alerts) before the next phase starts. Default 0. After the canary
   * the longer of this and soakSeconds (rules/policy.ts soakSecondsAfter).
   */
  phaseSoakSeconds?: number;
  /**
   * Every worker's kubelet moves at every hop, as before issue 22. Default false: a worker moves only
   * when the skew policy would otherwise break, and at the last hop (rules/worker-moves.ts), so a
   * two-hop upgrade drains each worker once.
   */
  workersEveryHop?: boolean;
  /**
   * After each hop, Deployments left with every replica on one node are reported (the canary often
   * holds them all, every other node drained after it); with rebalance they are restarted through
   * their own rollout, one at a time, so the scheduler spreads them again (workflows/rebalance.ts).
   */
  rebalance?: boolean;
  /** PDB findings ("namespace/name") the operator acknowledges, so they don't block the start. */
  acknowledge?: string[];
  drainTimeoutSeconds?: number;
  /**
   * What a worker's drain that did not finish within drainTimeoutSeconds does (as AKS's undrainable
   * node behaviour): `wait` (default) for the operator's `skewless resolve`; `quarantine`: the node is
   * labelled `skewless.io/quarantined`, an Event recorded on it, and it stays cordoned at its old version
   * while the run goes on without it (the pods already evicted stay evicted). Every later hop is checked
   * against its old kubelet (rules/quarantine-skew.ts); one that would break the skew policy waits for the operator.
   */
  onDrainTimeout?: 'wait' | 'quarantine';
  /**
   * How long a step on a host keeps retrying (a host refusing SSH or rebooting, a command timing out)
   * before its node is reported blocked and the operator asked (`skewless resolve`). Turned into an
   * attempt count over each host profile's backoff (activity-options.ts: withHostRetryBudget), so a
   * running attempt is never cut short. Default: the profiles' own budgets, about 7 minutes of backoff
   * for a host command.
   */
  hostRetrySeconds?: number;
  /**
   * Let the runbook fix the hop prerequisites it can (issue 35): before the hop whose kubeadm brings
   * etcd 3.6, an etcd snapshot, then every stacked member below 3.5.26 patched to the newest 3.5 image,
   * one at a time with etcd's health checked between (rules/etcd-patch.ts). With it their
   * `etcd-version` holds need no acknowledgement; without it (default) they hold the start as before.
   */
  fixPrerequisites?: boolean;
  kubeletTimeoutSeconds?: number;
  verifySeconds?: number;
  /**
   * Continue as new at the next safe point (between hops, between worker phases) once the run's
   * history has this many events, or when the server suggests it. Default 4,000.
   */
  continueAsNewAfterEvents?: number;
}

export type PhaseKind = 'control-plane' | 'canary' | 'batch';

export interface RolloutPhase {
  kind: PhaseKind;
  /** Value of the stage label its nodes carry. */
  stage: string;
  nodes: string[];
  /** Nodes of this phase out of service at once. */
  maxUnavailable: number;
  /** With batchBy: the label's value every node of the phase carries (`''`: the nodes without it). */
  domain?: string;
}

export interface RolloutPlan {
  /** Control planes in upgrade order; the first runs `kubeadm upgrade apply`. */
  controlPlanes: string[];
  phases: RolloutPhase[];
  /** Node → stage label value. */
  stageLabels: Record<string, string>;
  /**
   * The resolved numbers, so the plan says what it did with percentages and defaults. `cappedFrom`:
   * the workers a percentage of maxUnavailable came to, when that was more than MAX_OPEN_CHILDREN
   * (open-children.ts) and maxUnavailable is the cap instead (absent: not capped).
   */
  policy: {
    canary: number;
    batchSize: number;
    maxUnavailable: number;
    order: 'name' | 'inventory';
    batchBy?: string;
    cappedFrom?: number;
  };
}

/** How the plan is made, beside the operator's policy (never an input of theirs). */
export interface PlanOptions {
  /** An upgrade without control planes is refused; OS maintenance of some workers is not (false). */
  requireControlPlane?: boolean;
  /**
   * The most workers out at once whatever maxUnavailable says: MAX_OPEN_CHILDREN. A workflow that
   * planned before the cap replays its plan with Infinity (workflows/open-children.ts).
   */
  maxOpenChildren?: number;
}

function positiveInt(value: unknown, name: string, min: number): number {
  try {
    return integer({ min })(value, FieldPath.root(name));
  } catch (err) {
    throw err instanceof FieldError ? new RuleError('InvalidPolicy', err.message) : err;
  }
}

/** maxUnavailable as a count of workers: a percentage of `workers` (at least 1), or the count given. Not capped. */
export function resolveMaxUnavailable(value: number | string | undefined, workers: number): number {
  if (value === undefined) return 1;
  if (typeof value === 'string') {
    const pct = /^(100|[1-9]?\d)%$/.exec(value);
    if (pct) return Math.max(1, Math.floor((workers * Number(pct[1])) / 100));
    if (!/^\d+$/.test(value)) {
      throw new RuleError('InvalidPolicy', `maxUnavailable must be a count or a percentage such as 10%, got ${JSON.stringify(value)}`);
    }
    value = Number(value);
  }
  return positiveInt(value, 'maxUnavailable', 1);
}

/** Each node named once, with a role: the plan's input as the inventory must give it. */
function checkPlanNodes(nodes: readonly PlanNode[]): void {
  if (!Array.isArray(nodes)) throw new RuleError('InvalidInventory', 'nodes must be a list');
  const seen = new Set<string>();
  for (const [i, node] of nodes.entries()) {
    if (typeof node?.name !== 'string' || node.name === '') {
      throw new RuleError('InvalidInventory', `nodes[${i}] needs a name`);
    }
    if (node.role !== 'control-plane' && node.role !== 'worker') {
      throw new RuleError('InvalidInventory', `node ${node.name}: role must be "control-plane" or "worker"`);
    }
    if (seen.has(node.name)) throw new RuleError('InvalidInventory', `node ${node.name} is listed twice`);
    seen.add(node.name);
  }
}

/** Control planes in upgrade order: by the plan's order, the one named first (it runs `kubeadm upgrade apply`) first. */
function controlPlaneOrder(sorted: readonly PlanNode[], policy: RolloutPolicy, requireControlPlane: boolean): string[] {
  const controlPlanes = sorted.filter((n) => n.role === 'control-plane').map((n) => n.name);
  // An upgrade needs a control plane; OS maintenance of some workers does not (requireControlPlane: false).
  if (controlPlanes.length === 0 && requireControlPlane) throw new RuleError('InvalidInventory', 'the cluster has no control-plane node');
  if (policy.firstControlPlane !== undefined) {
    const i = controlPlanes.indexOf(policy.firstControlPlane);
    if (i < 0) throw new RuleError('InvalidPolicy', `firstControlPlane ${policy.firstControlPlane} is not a control-plane node`);
    controlPlanes.unshift(...controlPlanes.splice(i, 1));
  }
  return controlPlanes;
}

/** The workers grouped by the value of policy.batchBy, in policy.batchOrder; one group without batchBy. */
function workerDomains(sorted: readonly PlanNode[], workers: string[], policy: RolloutPolicy): FailureDomain[] {
  if (policy.batchOrder !== undefined && policy.batchBy === undefined)
    throw new RuleError('InvalidPolicy', 'batchOrder orders the values of batchBy: give batchBy too');
  if (policy.batchBy === undefined) return [{ value: '', nodes: workers }];
  return failureDomains(
    sorted.filter((n) => n.role === 'worker'),
    policy.batchBy,
    policy.batchOrder,
  );
}

/** The canary's workers: those the policy names, or the first `canary` of the first domain. */
function canaryWorkers(workers: string[], domains: FailureDomain[], policy: RolloutPolicy): string[] {
  if (policy.canaryNodes !== undefined) {
    for (const name of policy.canaryNodes) {
      if (!workers.includes(name)) throw new RuleError('InvalidPolicy', `canary node ${name} is not a worker`);
    }
    return workers.filter((w) => policy.canaryNodes?.includes(w));
  }
  // The canary comes from the first domain (all the workers when there is no batchBy).
  const canary = policy.canary === undefined ? 1 : positiveInt(policy.canary, 'canary', 0);
  const first = domains[0]?.nodes ?? [];
  return first.slice(0, Math.min(canary, first.length));
}

/** The canary phase, then batches of `batchSize` that never mix two domains. */
function workerPhases(
  canaryNodes: string[],
  domains: FailureDomain[],
  sizes: { batchSize: number; maxUnavailable: number },
  batchBy: string | undefined,
): RolloutPhase[] {
  const phases: RolloutPhase[] = [];
  const tagged = (value: string) => (batchBy === undefined ? {} : { domain: value });
  if (canaryNodes.length > 0) {
    const value = domains.find((d) => d.nodes.includes(canaryNodes[0] as string))?.value ?? '';
    const oneDomain = canaryNodes.every((n) => domains.some((d) => d.value === value && d.nodes.includes(n)));
    phases.push({
      kind: 'canary',
      stage: 'canary',
      nodes: canaryNodes,
      maxUnavailable: Math.min(canaryNodes.length, sizes.maxUnavailable),
      ...(oneDomain ? tagged(value) : {}),
    });
  }
  const rest = domains.map((d) => ({ ...d, nodes: d.nodes.filter((w) => !canaryNodes.includes(w)) }));
  for (const [i, batch] of batchesWithin(rest, sizes.batchSize).entries()) {
    phases.push({
      kind: 'batch',
      stage: `batch-${i + 1}`,
      nodes: batch.nodes,
      maxUnavailable: Math.min(batch.nodes.length, sizes.maxUnavailable),
      ...tagged(batch.value),
    });
  }
  return phases;
}

/**
 * Orders the nodes into phases: control planes one at a time, then the canary, then batches.
 * Deterministic: the same nodes and policy always give the same plan.
 */
export function planRollout(nodes: readonly PlanNode[], policy: RolloutPolicy = {}, options: PlanOptions = {}): RolloutPlan {
  checkPlanNodes(nodes);
  const order = policy.order ?? 'name';
  if (order !== 'name' && order !== 'inventory') {
    throw new RuleError('InvalidPolicy', `order must be "name" or "inventory", got ${JSON.stringify(order)}`);
  }
  const sorted = order === 'name' ? [...nodes].sort((a, b) => compareNatural(a.name, b.name)) : [...nodes];
  const controlPlanes = controlPlaneOrder(sorted, policy, options.requireControlPlane !== false);
  const workers = sorted.filter((n) => n.role === 'worker').map((n) => n.name);

  // One child workflow per node out at once: never more than one run may keep open (open-children.ts).
  // A count above the cap is refused by the policy check (policy.ts) before any plan; one that gets here
  // (a blue/green batch size) is capped as a percentage is, and the plan says so.
  const asked = resolveMaxUnavailable(policy.maxUnavailable, workers.length);
  const maxUnavailable = Math.min(asked, options.maxOpenChildren ?? MAX_OPEN_CHILDREN);
  const batchSize = policy.batchSize === undefined ? maxUnavailable : positiveInt(policy.batchSize, 'batchSize', 1);
  const domains = workerDomains(sorted, workers, policy);
  const canaryNodes = canaryWorkers(workers, domains, policy);

  const phases: RolloutPhase[] = [
    ...controlPlanes.map((name): RolloutPhase => ({ kind: 'control-plane', stage: 'control-plane', nodes: [name], maxUnavailable: 1 })),
    ...workerPhases(canaryNodes, domains, { batchSize, maxUnavailable }, policy.batchBy),
  ];
  const stageLabels: Record<string, string> = {};
  for (const phase of phases) for (const node of phase.nodes) stageLabels[node] = phase.stage;
  return {
    controlPlanes,
    phases,
    stageLabels,
    policy: {
      canary: canaryNodes.length,
      batchSize,
      maxUnavailable,
      order,
      ...(policy.batchBy === undefined ? {} : { batchBy: policy.batchBy }),
      ...(asked > maxUnavailable ? { cappedFrom: asked } : {}),
    },
  };
}

/**
 * The plan with some workers taken out (nodes the operator skipped): their phases shrink, and a
 * phase left empty goes. Control planes are never taken out.
 */
export function withoutNodes(plan: RolloutPlan, nodes: readonly string[]): RolloutPlan {
  if (nodes.length === 0) return plan;
  const out = new Set(nodes.filter((n) => !plan.controlPlanes.includes(n)));
  const phases = plan.phases
    .map((p) => ({ ...p, nodes: p.nodes.filter((n) => !out.has(n)) }))
    .filter((p) => p.nodes.length > 0)
    .map((p) => ({ ...p, maxUnavailable: Math.min(p.maxUnavailable, p.nodes.length) }));
  const stageLabels = Object.fromEntries(Object.entries(plan.stageLabels).filter(([n]) => !out.has(n)));
  return { ...plan, phases, stageLabels };
}
