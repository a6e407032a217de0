/**
 * One eviction request in flight per PodDisruptionBudget in this worker process.
 *
 * The API server admits an eviction by writing the PDB's status (disruptionsAllowed minus one, the pod
 * in disruptedPods), so evictions under one PDB are serialised there anyway: sent at once, all but one
 * conflict, and the server retries each itself every 500 ms, up to 20 times, before it answers 429 or
 * the request times out (504). Measured in bench/: ten nodes draining together under the same PDBs
 * spent seconds in those retries, and at 100 nodes evictions timed out. Queueing them here, in order,
 * costs nothing the server would not make them wait for, and takes the 500 ms sleeps away.
 */
export class PdbGate {
  private readonly tails = new Map<string, Promise<void>>();

  /** Runs `task` once the requests queued before it under `key` are done; no key: at once. */
  async run<T>(key: string | undefined, task: () => Promise<T>): Promise<T> {
    if (key === undefined) return task();
    const before = this.tails.get(key) ?? Promise.resolve();
    let release!: () => void;
    const mine = new Promise<void>((r) => (release = r));
    const tail = before.then(() => mine);
    this.tails.set(key, tail);
    await before;
    try {
      return await task();
    } finally {
      release();
      // The last in the queue leaves no entry behind: keys come and go with the cluster's PDBs.
      if (this.tails.get(key) === tail) this.tails.delete(key);
    }
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
