import type { V1PodDisruptionBudget } from '@kubernetes/client-node';
import { sleep } from '../tooling/poll-until.js';
import type { KubeApi } from './kube-api.js';
import { ObjectWatch, type OutageWitness } from './object-watch.js';

/**
 * Longest wait for a PDB to allow a disruption before its pod's eviction is tried again anyway: a safety
 * net, as the eviction is what decides (the watch may lag, or the PDB change in a way it cannot tell).
 */
const MAX_WAIT_MS = 30_000;
/**
 * The watch showed the PDB allowing a disruption when the server refused: it lags the server. The eviction is
 * sent again on the next event that shows it allowing one, or after this long: never a loop faster.
 */
const STALE_WAIT_MS = 1_000;

/** Whether a PDB's status, as last seen, allows a disruption now (a status the controller has not caught up with does not). */
function allows(pdb: V1PodDisruptionBudget | undefined): boolean {
  if (pdb === undefined) return true; // gone: it gates nothing any more
  const observed = (pdb.status?.observedGeneration ?? 0) >= (pdb.metadata?.generation ?? 1);
  return observed && (pdb.status?.disruptionsAllowed ?? 0) > 0;
}

/**
 * The PDBs a drain's refused evictions wait on, each followed by one watch (object-watch.ts) opened at its
 * first refusal: a refused pod's eviction is sent again when its PDB's status allows a disruption,
 * instead of every 0.5-2 s while it does not (a PDB blocked for ten minutes cost 300 evictions a pod).
 */
export class PdbBudgetWatch {
  readonly #watches = new Map<string, { watch: ObjectWatch<V1PodDisruptionBudget>; wake: Set<() => void>; failed: boolean }>();
  readonly #stop = new AbortController();

  /** `guard` wraps each list: rides out (and bounds) an API server outage (drain.ts's `api`). */
  constructor(
    private readonly kube: KubeApi,
    private readonly signal: AbortSignal,
    private readonly guard: <T>(call: () => Promise<T>) => Promise<T> = (call) => call(),
    private readonly outage?: OutageWitness,
  ) {}

  /** Stops every watch (the drain is over). */
  close(): void {
    this.#stop.abort();
  }

  /**
   * Call right after the PDB refused an eviction. Resolves at once when the watch's first list (made now,
   * after the refusal) shows the PDB allowing a disruption; else on the first event after the call that
   * shows it allowing one (the refusal is fresher than anything the watch saw before it), after `maxMs` (at
   * most MAX_WAIT_MS; STALE_WAIT_MS when the watch already showed it allowing one), or once its watch
   * failed (then the caller's own retry pace applies: `fallbackMs`).
   */
  async untilAllowed(namespace: string, name: string, o: { maxMs: number; fallbackMs: number }): Promise<void> {
    const kube = this.kube.watch;
    if (kube === undefined) return sleep(Math.min(o.fallbackMs, o.maxMs), this.signal);
    const key = `${namespace}/${name}`;
    let entry = this.#watches.get(key);
    // A watch opened now lists the PDB after the refusal: what it shows is fresher than the refusal.
    const listedNow = !entry;
    if (!entry) {
      const e = { wake: new Set<() => void>(), failed: false } as {
        watch: ObjectWatch<V1PodDisruptionBudget>;
        wake: Set<() => void>;
        failed: boolean;
      };
      const fieldSelector = `metadata.name=${name}`;
      e.watch = new ObjectWatch<V1PodDisruptionBudget>({
        kube,
        path: `/apis/policy/v1/namespaces/${encodeURIComponent(namespace)}/poddisruptionbudgets`,
        query: { fieldSelector },
        list: () =>
          this.guard(async () => {
            const { items, metadata } = await this.kube.policy.listNamespacedPodDisruptionBudget({ namespace, fieldSelector });
            return { items, resourceVersion: metadata?.resourceVersion ?? '' };
          }),
        onChange: () => e.wake.forEach((w) => w()),
        onFailure: () => {
          e.failed = true;
          e.wake.forEach((w) => w());
        },
        signal: AbortSignal.any([this.signal, this.#stop.signal]),
        ...(this.outage ? { outage: this.outage } : {}),
      });
      this.#watches.set(key, (entry = e));
      await e.watch.start();
    }
    const e = entry;
    if (e.failed) return sleep(Math.min(o.fallbackMs, o.maxMs), this.signal);
    const woken = new AbortController();
    const wake = () => {
      if (e.failed || allows(e.watch.objects()?.[0])) woken.abort();
    };
    const allowed = allows(e.watch.objects()?.[0]);
    if (allowed && listedNow) return;
    e.wake.add(wake);
    try {
      await sleep(Math.min(o.maxMs, allowed ? STALE_WAIT_MS : MAX_WAIT_MS), AbortSignal.any([this.signal, woken.signal]));
    } catch (err) {
      if (this.signal.aborted) throw this.signal.reason ?? err;
    } finally {
      e.wake.delete(wake);
    }
  }
}
