import { ApplicationFailure } from '@temporalio/activity';
import { describeDrainBlockers, drainRoundsOf, type DrainOptions, type DrainPlan, type PodRef } from '../rules/index.js';
import { drainOptionsOf, type ClusterConfig } from './cluster-config.js';
import type { ClusterResolver } from './cluster-access.js';
import { drainContext, throwIfCancelled } from './drain-context.js';
import { sleep } from '../tooling/poll-until.js';
import { ApiOutage } from './api-outage.js';
import { evictPod, type EvictionOutcome, pdbsCovering, pdbsIn, type PdbSelectors } from './drain-eviction.js';
import { readNodeDrainState } from './drain-facts.js';
import { EvictedPodsGone } from './drain-gone.js';
import { untilCompleted } from './drain-wait-completed.js';
import { ErrorType } from './errors.js';
import { seenAdmitted } from './pdb-admission.js';
import { PdbBudgetWatch } from './pdb-budget-watch.js';
import { throttledFor, type Throttle } from './throttling.js';
import { PdbGate, pdbGateKey } from './pdb-gate.js';

export interface PlanDrainInput {
  cluster: string;
  node: string;
  /** Pods the operator allowed to be lost (`namespace/name` or `name`). */
  force?: string[];
}

export interface DrainNodeInput extends PlanDrainInput {
  /** Default: the cluster's drain.timeoutSeconds. */
  timeoutSeconds?: number;
}

export type NodeDrainPlan = DrainPlan & { node: string };

/** Heartbeat details: what is left and which PDBs refuse right now. */
export interface DrainProgress {
  node: string;
  remaining: string[];
  blockedBy: string[];
  gone: number;
  attempt: number;
  /** Set while the API server does not answer (restarting) or throttles: the drain waits for it. */
  apiError?: string;
  /** Requests of this attempt the API server throttled (429 of Priority and Fairness), each retried after its Retry-After. */
  throttled?: number;
  /** With drain rules giving several orders: the round being evicted (1-based), of how many, and its order. */
  round?: DrainRound;
  /** Pods waited for until they complete (drain rule or label wait-completed), not evicted. */
  waitingToComplete?: string[];
}

export interface DrainRound {
  index: number;
  of: number;
  order: number;
}

export interface DrainResult {
  node: string;
  /** Pods this attempt evicted or saw leave, `namespace/name`. */
  gone: string[];
  skipped: { pod: PodRef; reason: string }[];
  /** The waitCompleted pods this attempt saw complete (or leave), `namespace/name`. */
  completed: string[];
  /** How many rounds the evictions went in (drain rules' orders; 1 without them). */
  rounds: number;
  warnings: string[];
  /** A previous attempt heartbeated progress: this one re-planned from the pods left. */
  resumed: boolean;
}

const PARALLEL_EVICTIONS = 16;
/** Between attempts at an API server that is away. */
const BACKOFF_MS = [1000, 2000, 4000, 5000];
/**
 * Between evictions a PDB refused: the budget frees as soon as a replacement is Ready, often within a
 * second or two (measured in bench/: a 1-2-4 s backoff made batched drains wait 4-6 s for it).
 */
const BUDGET_RETRY_MS = [500, 1000, 1000, 2000];
const HEARTBEAT_MS = 5_000;
/** How often a round looks whether the pods of the one before have gone (a look at memory, no API call). */
const ROUND_CHECK_MS = 200;
/**
 * How long one attempt rides through an API server that does not answer (a restart, a failover)
 * before it fails and the activity's retry policy takes over.
 */
const API_OUTAGE_MS = 120_000;
const key = (p: PodRef) => `${p.namespace}/${p.name}`;
/** Shared by every drain of this worker: evictions under one PDB reach the API server as its budget and status writes allow. */
const processGate = new PdbGate();

function options(config: ClusterConfig, force: unknown): DrainOptions {
  if (force !== undefined && (!Array.isArray(force) || !force.every((f) => typeof f === 'string' && f !== ''))) {
    throw ApplicationFailure.create({ type: ErrorType.Invalid, message: 'force must be a list of pod names', nonRetryable: true });
  }
  return drainOptionsOf(config, (force as string[] | undefined) ?? []);
}

function timeoutOf(input: DrainNodeInput, config: ClusterConfig): number {
  const t = input.timeoutSeconds ?? config.drain.timeoutSeconds;
  if (typeof t !== 'number' || !Number.isFinite(t) || t <= 0) {
    throw ApplicationFailure.create({
      type: ErrorType.Invalid,
      message: `timeoutSeconds must be a positive number, got ${JSON.stringify(t)}`,
      nonRetryable: true,
    });
  }
  return t;
}

/** Runs `task` over `items`, at most `limit` at once; the first failure stops the others (via `stop`). */
async function inPool<T>(items: readonly T[], limit: number, stop: AbortController, task: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  const runner = async () => {
    while (next < items.length && !stop.signal.aborted) {
      const item = items[next++] as T;
      try {
        await task(item);
      } catch (err) {
        stop.abort(err);
        throw err;
      }
    }
  };
  const results = await Promise.allSettled(Array.from({ length: Math.min(limit, items.length) }, runner));
  const failed = results.find((r) => r.status === 'rejected');
  if (failed) throw stop.signal.reason ?? failed.reason;
}

/** `pdbGate`: the process's gate unless given one (a test's second "worker" in the same process). */
export function createDrainActivities(deps: { clusters: ClusterResolver; pdbGate?: PdbGate }) {
  const pdbGate = deps.pdbGate ?? processGate;
  return {
    /** Read-only: what a drain of the node would evict, skip, warn about and refuse. */
    async planDrain(input: PlanDrainInput): Promise<NodeDrainPlan> {
      const { kube, config } = deps.clusters(input.cluster);
      const { plan } = await readNodeDrainState(kube, input.node, options(config, input.force));
      return { node: input.node, ...plan };
    },

    /**
     * Evicts the planned pods (PDBs honoured) and waits until each is gone, by UID. Re-plans from the
     * current pods on every attempt, so a retry or resume only deals with what is left.
     */
    async drainNode(input: DrainNodeInput): Promise<DrainResult> {
      const { kube, config } = deps.clusters(input.cluster);
      const timeoutSeconds = timeoutOf(input, config);
      const deadline = Date.now() + timeoutSeconds * 1000;
      const { node, pods, plan } = await readNodeDrainState(kube, input.node, options(config, input.force));
      refuseUndrainable(input.node, node.spec?.unschedulable === true, plan);
      const drain = new NodeDrain({ input, kube, config, pdbGate, deadline, plan, pods });
      await drain.run();
      if (drain.remaining.size > 0)
        throw drainBlocked(input.node, timeoutSeconds, [...drain.remaining.values()], drain.blockedBy, drain.waitingToComplete);
      return {
        node: input.node,
        gone: drain.gone.sort(),
        skipped: plan.skipped.map(({ pod, reason }) => ({ pod, reason })),
        completed: drain.completed.sort(),
        rounds: drain.rounds.length,
        warnings: plan.warnings.map((w) => w.reason),
        resumed: drain.ctx.previousDetails !== undefined && drain.ctx.previousDetails !== null,
      };
    },
  };
}

/** A drain refused before anything is evicted: the node schedulable, or a pod nothing may evict. */
function refuseUndrainable(node: string, cordoned: boolean, plan: DrainPlan): void {
  if (!cordoned) {
    throw ApplicationFailure.create({
      type: ErrorType.Invalid,
      nonRetryable: true,
      message: `node ${node} is schedulable: cordon it before draining, or evicted pods may land back on it`,
    });
  }
  if (plan.blockers.length > 0) {
    throw ApplicationFailure.create({
      type: ErrorType.DrainRefused,
      nonRetryable: true,
      message: `drain of ${node} refused: ${describeDrainBlockers(plan)}`,
      details: [{ blockers: plan.blockers }],
    });
  }
}

type Kube = ReturnType<ClusterResolver>['kube'];

interface NodeDrainSetup {
  input: DrainNodeInput;
  kube: Kube;
  config: ClusterConfig;
  pdbGate: PdbGate;
  /** Epoch ms: evictions stop being sent, and the wait for pods to go ends. */
  deadline: number;
  plan: DrainPlan;
  pods: readonly { metadata?: { uid?: string; labels?: Record<string, string> } }[];
}

/**
 * One attempt at draining a node: the evictions (at most PARALLEL_EVICTIONS at once, each through the
 * PDB gate) and, beside them, the wait until every evicted or terminating pod is gone; heartbeats all along.
 */
class NodeDrain {
  readonly ctx = drainContext();
  /** The pods still on the node that the drain waits for, by `namespace/name`. */
  readonly remaining: Map<string, PodRef>;
  readonly blockedBy = new Map<string, { pdbs: string[]; message: string }>();
  readonly gone: string[] = [];
  readonly completed: string[] = [];
  /** The evictions in rounds by drain-rule order, lowest first (one round without rules). */
  readonly rounds: ReturnType<typeof drainRoundsOf<PodRef & { order?: number }>>;
  /** The waitCompleted pods not completed yet, by `namespace/name`. */
  readonly waitingToComplete = new Set<string>();
  private round: DrainRound | undefined;
  /** Pods already terminating are not evicted again, but the drain is not done until they are gone. */
  private readonly terminating: PodRef[];
  private readonly labels: Map<string | undefined, Record<string, string>>;
  private apiError: string | undefined;
  private outageSince: number | undefined;
  /** When the API server was last seen away (by a call or a broken watch): its restart's 403s are part of it. */
  private readonly outage = new ApiOutage();
  private readonly stop = new AbortController();
  /** The evicted (or terminating) pods not gone yet, followed through the node's pod watch. */
  private readonly evicted: EvictedPodsGone;
  /** Which PDBs cover each pod, read once per namespace before the first eviction: the gate needs it for every request, and a refusal names them. */
  private readonly pdbLists = new Map<string, Promise<PdbSelectors>>();
  /** The PDBs refused evictions wait on, one watch each. */
  private readonly budgets: PdbBudgetWatch;
  private throttledCount = 0;

  constructor(private readonly o: NodeDrainSetup) {
    this.labels = new Map(o.pods.map((p) => [p.metadata?.uid, p.metadata?.labels ?? {}]));
    this.terminating = o.plan.skipped.filter((s) => s.filter === 'terminating').map((s) => s.pod);
    this.remaining = new Map([...o.plan.evict, ...this.terminating, ...o.plan.waitCompleted].map((p) => [key(p), p]));
    this.rounds = drainRoundsOf(o.plan.evict);
    for (const p of o.plan.waitCompleted) this.waitingToComplete.add(key(p));
    this.evicted = new EvictedPodsGone({
      kube: o.kube,
      node: o.input.node,
      guard: (call) => this.api(call),
      outage: this.outage,
      onGone: (pod) => this.leave(pod),
      signal: this.stop.signal,
    });
    this.budgets = new PdbBudgetWatch(o.kube, this.stop.signal, (call) => this.api(call), this.outage);
  }

  private beat = (): void =>
    this.ctx.heartbeat({
      node: this.o.input.node,
      remaining: [...this.remaining.keys()].sort(),
      blockedBy: [...new Set([...this.blockedBy.entries()].flatMap(([k, b]) => b.pdbs.map((n) => `${k.split('/')[0]}/${n}`)))].sort(),
      gone: this.gone.length,
      attempt: this.ctx.attempt,
      ...(this.apiError === undefined ? {} : { apiError: this.apiError }),
      ...(this.round === undefined ? {} : { round: this.round }),
      ...(this.waitingToComplete.size === 0 ? {} : { waitingToComplete: [...this.waitingToComplete].sort() }),
      ...(this.throttledCount === 0 ? {} : { throttled: this.throttledCount }),
    } satisfies DrainProgress);

  /** The evictions and the wait for the pods to go, until both end, the deadline passes or the activity is cancelled. */
  async run(): Promise<void> {
    const { ctx, stop } = this;
    this.beat();
    // Also while nothing changes (a pod taking its grace period): silence would look like a dead worker.
    const keepAlive = setInterval(this.beat, HEARTBEAT_MS);
    const onCancel = () => stop.abort(ctx.signal?.reason);
    ctx.signal?.addEventListener('abort', onCancel, { once: true });
    if (ctx.signal?.aborted) onCancel();
    const gone$ = this.evicted.untilGone(this.o.deadline).catch((err: unknown) => {
      stop.abort(err);
      throw err;
    });
    gone$.catch(() => undefined); // awaited below; not an unhandled rejection while the evictions fail first
    const completed$ = untilCompleted(this.o.plan.waitCompleted, this.o.deadline, {
      kube: this.o.kube,
      node: this.o.input.node,
      guard: (call) => this.api(call),
      outage: this.outage,
      onCompleted: (pod) => this.complete(pod),
      signal: stop.signal,
    }).catch((err: unknown) => {
      stop.abort(err);
      throw err;
    });
    completed$.catch(() => undefined);
    try {
      try {
        await inPool(this.terminating, PARALLEL_EVICTIONS, stop, (pod) => this.drainOne(pod, false));
        await this.evictInRounds();
      } finally {
        this.evicted.doneExpecting();
      }
      await gone$;
      await completed$;
    } catch (err) {
      await gone$.catch(() => undefined);
      await completed$.catch(() => undefined);
      throw err;
    } finally {
      this.evicted.close();
      this.budgets.close();
      clearInterval(keepAlive);
      ctx.signal?.removeEventListener('abort', onCancel);
    }
  }

  /**
   * Each round's evictions, lowest order first; a round starts once every pod of the one before is
   * gone (storage daemons leave after what uses them). Past the deadline the rounds stop: the pods left
   * are reported by drainNode.
   */
  private async evictInRounds(): Promise<void> {
    const { rounds, stop } = this;
    for (const [i, { order, pods }] of rounds.entries()) {
      if (rounds.length > 1) {
        this.round = { index: i + 1, of: rounds.length, order };
        this.beat();
      }
      await inPool(pods, PARALLEL_EVICTIONS, stop, (pod) => this.drainOne(pod, true));
      if (i < rounds.length - 1 && !(await this.untilLeft(pods))) return;
    }
  }

  /** Waits until none of `pods` remains on the node (the watch's onGone), or the deadline: false then. */
  private async untilLeft(pods: readonly PodRef[]): Promise<boolean> {
    for (;;) {
      throwIfCancelled(this.stop.signal);
      if (!pods.some((p) => this.remaining.has(key(p)))) return true;
      const left = this.o.deadline - Date.now();
      if (left <= 0) return false;
      await sleep(Math.min(left, ROUND_CHECK_MS), this.stop.signal);
    }
  }

  private complete(pod: PodRef): void {
    this.remaining.delete(key(pod));
    this.waitingToComplete.delete(key(pod));
    this.completed.push(key(pod));
    this.beat();
  }

  private leave(pod: PodRef): void {
    this.remaining.delete(key(pod));
    this.blockedBy.delete(key(pod));
    this.gone.push(key(pod));
    this.beat();
  }

  /**
   * An API call that finds the server away is repeated (with the backoff, heartbeating why) until
   * it answers, the outage outlasts API_OUTAGE_MS or the drain its deadline: evictions are
   * idempotent (UID precondition) and reads are reads, so repeating them is safe.
   */
  private async api<T>(call: () => Promise<T>): Promise<T> {
    for (let attempt = 0; ; attempt++) {
      throwIfCancelled(this.stop.signal);
      try {
        const value = await call();
        if (this.apiError !== undefined) {
          this.apiError = undefined;
          this.outageSince = undefined;
          this.beat();
        }
        return value;
      } catch (err) {
        const throttle = throttledFor(err);
        if (throttle && Date.now() < this.o.deadline) {
          await this.throttled(throttle);
          continue;
        }
        if (!this.outage.isPartOf(err)) throw err;
        this.outageSince ??= Date.now();
        if (Date.now() - this.outageSince > API_OUTAGE_MS || Date.now() >= this.o.deadline) throw err;
        this.apiError = (err instanceof Error ? err.message : String(err)).split('\n')[0]?.slice(0, 200);
        this.beat();
        await sleep(BACKOFF_MS[Math.min(attempt, BACKOFF_MS.length - 1)] as number, this.stop.signal);
      }
    }
  }

  private async coveringOf(pod: PodRef): Promise<string[]> {
    let list = this.pdbLists.get(pod.namespace);
    if (!list) this.pdbLists.set(pod.namespace, (list = this.api(() => pdbsIn(this.o.kube, pod.namespace))));
    return pdbsCovering(await list, this.labels.get(pod.uid) ?? {});
  }

  private async drainOne(pod: PodRef, evict: boolean): Promise<void> {
    const { ctx, stop } = this;
    const { input, deadline } = this.o;
    const pdbs = evict ? await this.coveringOf(pod) : [];
    for (let attempt = 0; evict; attempt++) {
      throwIfCancelled(stop.signal);
      if (Date.now() >= deadline) return; // reported by drainNode, with the PDBs that refused
      const outcome = await this.api(() => this.evictThroughGate(pod, pdbs));
      if (outcome.kind === 'gone') return this.leave(pod);
      if (outcome.kind === 'accepted') break;
      if (outcome.kind === 'throttled') {
        await this.throttled(outcome.throttle);
        continue;
      }
      if (outcome.byBudget) ctx.evictionRefused(input.cluster);
      this.blockedBy.set(key(pod), { pdbs, message: outcome.message });
      this.beat();
      await this.untilBudgetMayAllow(pdbs, pod.namespace, attempt, outcome.byBudget === true);
    }
    this.blockedBy.delete(key(pod));
    this.evicted.expect(pod);
  }

  /**
   * Before a refused eviction is sent again. The first refusal waits the pace (most budgets free within a
   * second, as a replacement gets Ready: a watch would cost more than the one retry it saves); from the
   * second on, until the PDB's status next shows a disruption allowed (followed by watch,
   * pdb-budget-watch.ts), not at a pace. Another refusal (several PDBs, a 409) always waits the pace.
   */
  private async untilBudgetMayAllow(pdbs: string[], namespace: string, attempt: number, byBudget: boolean): Promise<void> {
    const left = this.o.deadline - Date.now();
    const pace = Math.min(BUDGET_RETRY_MS[Math.min(attempt, BUDGET_RETRY_MS.length - 1)] as number, left);
    const [only] = pdbs.length === 1 ? pdbs : [];
    if (!byBudget || only === undefined || attempt === 0) return sleep(pace, this.stop.signal);
    await this.budgets.untilAllowed(namespace, only, { maxMs: left, fallbackMs: pace });
  }

  /** The API server throttled a request: wait its Retry-After, counted and heartbeated as throttling, not as a PDB refusal. */
  private async throttled(t: Throttle): Promise<void> {
    this.ctx.apiThrottled(this.o.input.cluster);
    this.apiError = `throttled by the API server (Priority and Fairness${t.priorityLevelUid ? `, priority level ${t.priorityLevelUid}` : ''}): retrying after ${t.retryAfterMs / 1000} s`;
    this.throttledCount++;
    this.beat();
    await sleep(Math.min(t.retryAfterMs, Math.max(0, this.o.deadline - Date.now())), this.stop.signal);
    this.apiError = undefined;
  }

  /**
   * One eviction through the PDB gate. Cancelled while queued behind the PDB's other evictions: nothing
   * is sent. The server admits evictions under a PDB one status write at a time: the gate sends the next
   * one once it sees this one's write (one PDB only: a pod under several is refused anyway).
   */
  private evictThroughGate(pod: PodRef, pdbs: string[]): Promise<EvictionOutcome> {
    const { kube, config, input, pdbGate } = this.o;
    const lease = { api: kube.coordination, namespace: pod.namespace, pdbs };
    const [only] = pdbs.length === 1 ? pdbs : [];
    return pdbGate.run<EvictionOutcome>(pdbGateKey(input.cluster, pod.namespace, pdbs), {
      send: () => {
        throwIfCancelled(this.stop.signal);
        return evictPod(kube, pod, config.drain.gracePeriodSeconds);
      },
      ...(only === undefined
        ? {}
        : {
            admitted: (answered, typicalMs, wanted) =>
              seenAdmitted(kube, { namespace: pod.namespace, pdb: only, pod: pod.name, uid: pod.uid, answered, typicalMs, wanted }),
          }),
      lease,
      signal: this.stop.signal,
    });
  }
}

/** DrainBlocked names every pod still there and the PDBs (or refusal) in its way. */
function drainBlocked(
  node: string,
  seconds: number,
  pods: PodRef[],
  blockedBy: Map<string, { pdbs: string[]; message: string }>,
  waitingToComplete: ReadonlySet<string> = new Set(),
): ApplicationFailure {
  const sorted = [...pods].sort((a, b) => key(a).localeCompare(key(b)));
  const entries = sorted.map((p) => ({ namespace: p.namespace, name: p.name, pdbs: blockedBy.get(key(p))?.pdbs ?? [] }));
  const why = sorted.map((p) => {
    const b = blockedBy.get(key(p));
    if (waitingToComplete.has(key(p))) return `${key(p)} (not completed yet: waitCompleted)`;
    if (!b) return `${key(p)} (not gone yet)`;
    return b.pdbs.length > 0 ? `${key(p)} (PDB ${b.pdbs.join(', ')})` : `${key(p)} (eviction refused: ${b.message})`;
  });
  return ApplicationFailure.create({
    type: ErrorType.DrainBlocked,
    nonRetryable: true,
    message: `drain of ${node} did not finish within ${seconds} s; ${pods.length} pod(s) remain: ${why.join('; ')}`,
    details: [{ pods: entries }],
  });
}

export type DrainActivities = ReturnType<typeof createDrainActivities>;
