import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import type { CoordinationV1Api } from '@kubernetes/client-node';
import { PdbLease } from './pdb-lease.js';

/**
 * One eviction request in flight per PodDisruptionBudget, in this worker process and, with a Lease in
 * the cluster (pdb-lease.ts), across every worker of the task queue.
 *
 * The API server admits an eviction by writing the PDB's status (disruptionsAllowed minus one, the pod
 * in disruptedPods), so evictions under one PDB are serialised there anyway: sent at once, all but one
 * conflict, and the server retries each itself every 500 ms, up to 20 times, before it answers 429 or
 * the request times out (504). Measured in bench/: ten nodes draining together under the same PDBs
 * spent seconds in those retries, and at 100 nodes evictions timed out. Queueing them here, in order,
 * costs nothing the server would not make them wait for, and takes the 500 ms sleeps away. The PDB's
 * floor itself never depends on this gate: the server refuses an eviction the budget does not allow.
 *
 * Two workers drain nodes of one upgrade side by side, so the queue of one process is not enough. The
 * process's first request under a key takes the key's Lease; the requests queued behind it in this
 * process reuse it (renewed as it ages), and the last one gives it back: the Lease costs one create and
 * one delete per run of requests, not per request.
 */

/** Where the key's Lease lives: the PDBs' namespace, through the cluster's own API. */
export interface GateLease {
  api: CoordinationV1Api;
  namespace: string;
  pdbs: readonly string[];
}

export class PdbGate {
  private readonly tails = new Map<string, Promise<void>>();
  /** Per key: requests of this process queued or running, and the Lease they share. */
  private readonly queued = new Map<string, number>();
  private readonly leases = new Map<string, PdbLease>();
  /** This process as a Lease's holderIdentity: host, pid and a nonce (a restarted worker is another holder). */
  readonly holder: string;

  constructor(o: { holder?: string; leaseSeconds?: number } = {}) {
    this.holder = o.holder ?? `${hostname()}/${process.pid}/${randomBytes(3).toString('hex')}`;
    this.leaseSeconds = o.leaseSeconds;
  }

  private readonly leaseSeconds: number | undefined;

  /**
   * Runs `task` once the requests queued before it under `key` are done (and, given `lease`, once this
   * process holds the key's Lease); no key: at once. API errors taking the Lease reject, as the task's would.
   */
  async run<T>(key: string | undefined, task: () => Promise<T>, lease?: GateLease, signal?: AbortSignal): Promise<T> {
    if (key === undefined) return task();
    const before = this.tails.get(key) ?? Promise.resolve();
    let release!: () => void;
    const mine = new Promise<void>((r) => (release = r));
    const tail = before.then(() => mine);
    this.tails.set(key, tail);
    this.queued.set(key, (this.queued.get(key) ?? 0) + 1);
    await before;
    try {
      if (lease) await this.leaseOf(key, lease).acquire(signal);
      return await task();
    } finally {
      const left = (this.queued.get(key) ?? 1) - 1;
      if (left > 0) this.queued.set(key, left);
      else {
        this.queued.delete(key);
        // Given back before the next request of this process may start: it takes it anew.
        await this.leases.get(key)?.release();
        this.leases.delete(key);
      }
      release();
      // The last in the queue leaves no entry behind: keys come and go with the cluster's PDBs.
      if (this.tails.get(key) === tail) this.tails.delete(key);
    }
  }

  private leaseOf(key: string, l: GateLease): PdbLease {
    let lease = this.leases.get(key);
    if (!lease) this.leases.set(key, (lease = new PdbLease(l.api, l.namespace, l.pdbs, this.holder, this.leaseSeconds)));
    return lease;
  }

  /** Keys with requests in flight or queued (tests). */
  get busy(): number {
    return this.tails.size;
  }
}

/** The gate key of a pod's eviction: the PDBs that cover it (more than one: the server refuses it anyway). */
export function pdbGateKey(cluster: string, namespace: string, pdbs: readonly string[]): string | undefined {
  return pdbs.length === 0 ? undefined : `${cluster}/${namespace}/${[...pdbs].sort().join('+')}`;
}
