import { ApplicationFailure } from '@temporalio/activity';
import { describeDrainBlockers, type DrainOptions, type DrainPlan, type PodRef } from '../rules/index.js';
import type { ClusterConfig } from './cluster-config.js';
import type { ClusterResolver } from './cluster-access.js';
import { drainContext, throwIfCancelled } from './drain-context.js';
import { pollUntil, sleep } from '../tooling/poll-until.js';
import {
  evictPod,
  isTransientApiError,
  type EvictionOutcome,
  pdbsCovering,
  pdbsIn,
  podUidsOnNode,
  type PdbSelectors,
} from './drain-eviction.js';
import { readNodeDrainState } from './drain-facts.js';
import { ErrorType, httpStatus } from './errors.js';
import { seenAdmitted } from './pdb-admission.js';
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
  /** Set while the API server does not answer (restarting): the drain waits for it. */
  apiError?: string;
}

export interface DrainResult {
  node: string;
  /** Pods this attempt evicted or saw leave, `namespace/name`. */
  gone: string[];
  skipped: { pod: PodRef; reason: string }[];
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
/** Between looks at which evicted pods are gone: one list of the node's pods a round. */
const GONE_POLL_MS = 250;
const HEARTBEAT_MS = 5_000;
/**
 * How long one attempt rides through an API server that does not answer (a restart, a failover)
 * before it fails and the activity's retry policy takes over.
 */
const API_OUTAGE_MS = 120_000;
/**
 * A restarted API server listens before its RBAC authorizer has synced, and for that moment refuses
 * (403) what it allows: a 401/403 this soon after the server was seen away is part of the outage.
 * Without such an outage a 403 is what it says (missing RBAC) and fails the drain at once.
 */
const AFTER_OUTAGE_MS = 30_000;
const isAuthRefusal = (err: unknown): boolean =>
  (err as { type?: unknown })?.type === ErrorType.Forbidden || [401, 403].includes(httpStatus(err) ?? 0);
const key = (p: PodRef) => `${p.namespace}/${p.name}`;
/** Shared by every drain of this worker: evictions under one PDB reach the API server as its budget and status writes allow. */
const processGate = new PdbGate();

function options(config: ClusterConfig, force: unknown): DrainOptions {
  if (force !== undefined && (!Array.isArray(force) || !force.every((f) => typeof f === 'string' && f !== ''))) {
    throw ApplicationFailure.create({ type: ErrorType.Invalid, message: 'force must be a list of pod names', nonRetryable: true });
  }
  return {
    ignoreDaemonSets: config.drain.ignoreDaemonSets,
    deleteEmptyDirData: config.drain.deleteEmptyDirData,
    force: (force as string[] | undefined) ?? [],
  };
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
      const ctx = drainContext();
      const { kube, config } = deps.clusters(input.cluster);
      const timeoutSeconds = timeoutOf(input, config);
      const deadline = Date.now() + timeoutSeconds * 1000;
      const { node, pods, plan } = await readNodeDrainState(kube, input.node, options(config, input.force));
      if (!node.spec?.unschedulable) {
        throw ApplicationFailure.create({
          type: ErrorType.Invalid,
          nonRetryable: true,
          message: `node ${input.node} is schedulable: cordon it before draining, or evicted pods may land back on it`,
        });
      }
      if (plan.blockers.length > 0) {
        throw ApplicationFailure.create({
          type: ErrorType.DrainRefused,
          nonRetryable: true,
          message: `drain of ${input.node} refused: ${describeDrainBlockers(plan)}`,
          details: [{ blockers: plan.blockers }],
        });
      }

      const labels = new Map(pods.map((p) => [p.metadata?.uid, p.metadata?.labels ?? {}]));
      // Pods already terminating are not evicted again, but the drain is not done until they are gone.
      const terminating = plan.skipped.filter((s) => s.filter === 'terminating').map((s) => s.pod);
      const remaining = new Map([...plan.evict, ...terminating].map((p) => [key(p), p]));
      const blockedBy = new Map<string, { pdbs: string[]; message: string }>();
      const gone: string[] = [];
      let apiError: string | undefined;
      let outageSince: number | undefined;
      /** When the API server was last seen away (a connection-level failure or a 5xx). */
      let awayAt: number | undefined;
      const beat = () =>
        ctx.heartbeat({
          node: input.node,
          remaining: [...remaining.keys()].sort(),
          blockedBy: [...new Set([...blockedBy.entries()].flatMap(([k, b]) => b.pdbs.map((n) => `${k.split('/')[0]}/${n}`)))].sort(),
          gone: gone.length,
          attempt: ctx.attempt,
          ...(apiError === undefined ? {} : { apiError }),
        } satisfies DrainProgress);
      beat();

      // Also while nothing changes (a pod taking its grace period): silence would look like a dead worker.
      const keepAlive = setInterval(beat, HEARTBEAT_MS);
      const stop = new AbortController();
      const onCancel = () => stop.abort(ctx.signal?.reason);
      ctx.signal?.addEventListener('abort', onCancel, { once: true });
      if (ctx.signal?.aborted) onCancel();
      const leave = (pod: PodRef) => {
        remaining.delete(key(pod));
        blockedBy.delete(key(pod));
        gone.push(key(pod));
        beat();
      };
      // An API call that finds the server away is repeated (with the backoff, heartbeating why) until
      // it answers, the outage outlasts API_OUTAGE_MS or the drain its deadline: evictions are
      // idempotent (UID precondition) and reads are reads, so repeating them is safe.
      const api = async <T>(call: () => Promise<T>): Promise<T> => {
        for (let attempt = 0; ; attempt++) {
          throwIfCancelled(stop.signal);
          try {
            const value = await call();
            if (apiError !== undefined) {
              apiError = undefined;
              outageSince = undefined;
              beat();
            }
            return value;
          } catch (err) {
            const away = isTransientApiError(err);
            if (away) awayAt = Date.now();
            else if (!(isAuthRefusal(err) && awayAt !== undefined && Date.now() - awayAt < AFTER_OUTAGE_MS)) throw err;
            outageSince ??= Date.now();
            if (Date.now() - outageSince > API_OUTAGE_MS || Date.now() >= deadline) throw err;
            apiError = (err instanceof Error ? err.message : String(err)).split('\n')[0]?.slice(0, 200);
            beat();
            await sleep(BACKOFF_MS[Math.min(attempt, BACKOFF_MS.length - 1)] as number, stop.signal);
          }
        }
      };
      /**
       * Pods whose eviction was accepted (or that were terminating already) and are not gone yet. They
       * hold no eviction slot while they take their grace period: one list of the node's pods a round
       * (by UID: a StatefulSet's replacement may take the name) sees which are gone.
       */
      const awaiting = new Map<string, PodRef>();
      let evicting = true;
      const seeWhichAreGone = async (): Promise<void> => {
        if (awaiting.size === 0) return;
        const present = await api(() => podUidsOnNode(kube, input.node));
        for (const [k, pod] of awaiting) {
          if (present.has(pod.uid)) continue;
          awaiting.delete(k);
          leave(pod);
        }
      };
      const untilGone = async (): Promise<void> =>
        pollUntil(
          seeWhichAreGone,
          () => !evicting && awaiting.size === 0,
          () => undefined, // the pods left are reported below
          { timeoutMs: deadline - Date.now(), intervalMs: GONE_POLL_MS, signal: stop.signal },
        );
      // Which PDBs cover each pod, read once per namespace before the first eviction: the gate needs it
      // for every request, and a refusal names them.
      const pdbLists = new Map<string, Promise<PdbSelectors>>();
      const coveringOf = async (pod: PodRef): Promise<string[]> => {
        let list = pdbLists.get(pod.namespace);
        if (!list) pdbLists.set(pod.namespace, (list = api(() => pdbsIn(kube, pod.namespace))));
        return pdbsCovering(await list, labels.get(pod.uid) ?? {});
      };
      const drainOne = async (pod: PodRef, evict: boolean): Promise<void> => {
        const pdbs = evict ? await coveringOf(pod) : [];
        const gateKey = pdbGateKey(input.cluster, pod.namespace, pdbs);
        for (let attempt = 0; evict; attempt++) {
          throwIfCancelled(stop.signal);
          if (Date.now() >= deadline) return; // reported below, with the PDBs that refused
          // Cancelled while queued behind the PDB's other evictions: send nothing.
          const lease = { api: kube.coordination, namespace: pod.namespace, pdbs };
          // The server admits evictions under a PDB one status write at a time: the gate sends the next one
          // once it sees this one's write (one PDB only: a pod under several is refused anyway).
          const [only] = pdbs.length === 1 ? pdbs : [];
          const outcome = await api(() =>
            pdbGate.run<EvictionOutcome>(gateKey, {
              send: () => {
                throwIfCancelled(stop.signal);
                return evictPod(kube, pod, config.drain.gracePeriodSeconds);
              },
              ...(only === undefined
                ? {}
                : {
                    admitted: (answered, typicalMs, wanted) =>
                      seenAdmitted(kube, { namespace: pod.namespace, pdb: only, pod: pod.name, uid: pod.uid, answered, typicalMs, wanted }),
                  }),
              lease,
              signal: stop.signal,
            }),
          );
          if (outcome.kind === 'gone') return leave(pod);
          if (outcome.kind === 'accepted') break;
          if (outcome.byBudget) ctx.evictionRefused(input.cluster);
          blockedBy.set(key(pod), { pdbs, message: outcome.message });
          beat();
          await sleep(
            Math.min(BUDGET_RETRY_MS[Math.min(attempt, BUDGET_RETRY_MS.length - 1)] as number, deadline - Date.now()),
            stop.signal,
          );
        }
        blockedBy.delete(key(pod));
        awaiting.set(key(pod), pod);
      };
      const work = [...plan.evict.map((pod) => ({ pod, evict: true })), ...terminating.map((pod) => ({ pod, evict: false }))];
      const gone$ = untilGone().catch((err: unknown) => {
        stop.abort(err);
        throw err;
      });
      gone$.catch(() => undefined); // awaited below; not an unhandled rejection while the evictions fail first
      try {
        try {
          await inPool(work, PARALLEL_EVICTIONS, stop, ({ pod, evict }) => drainOne(pod, evict));
        } finally {
          evicting = false;
        }
        await gone$;
      } catch (err) {
        await gone$.catch(() => undefined);
        throw err;
      } finally {
        clearInterval(keepAlive);
        ctx.signal?.removeEventListener('abort', onCancel);
      }

      if (remaining.size > 0) throw drainBlocked(input.node, timeoutSeconds, [...remaining.values()], blockedBy);
      return {
        node: input.node,
        gone: gone.sort(),
        skipped: plan.skipped.map(({ pod, reason }) => ({ pod, reason })),
        warnings: plan.warnings.map((w) => w.reason),
        resumed: ctx.previousDetails !== undefined && ctx.previousDetails !== null,
      };
    },
  };
}

/** DrainBlocked names every pod still there and the PDBs (or refusal) in its way. */
function drainBlocked(
  node: string,
  seconds: number,
  pods: PodRef[],
  blockedBy: Map<string, { pdbs: string[]; message: string }>,
): ApplicationFailure {
  const sorted = [...pods].sort((a, b) => key(a).localeCompare(key(b)));
  const entries = sorted.map((p) => ({ namespace: p.namespace, name: p.name, pdbs: blockedBy.get(key(p))?.pdbs ?? [] }));
  const why = sorted.map((p) => {
    const b = blockedBy.get(key(p));
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
