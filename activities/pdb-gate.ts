import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import type { CoordinationV1Api } from '@kubernetes/client-node';
import type { PdbSnapshot } from './pdb-admission.js';
import { PdbLease } from './pdb-lease.js';

/**
 * Evictions per PodDisruptionBudget: their PDB writes one at a time, the evictions themselves side by
 * side up to the budget, in this worker process and, with a Lease in the cluster (pdb-lease.ts), across
 * every worker of the task queue.
 *
 * The API server admits an eviction by writing the PDB's status (disruptionsAllowed minus one, the pod
 * in disruptedPods), at the resourceVersion it listed the PDB at: evictions under one PDB sent at once
 * conflict there, and the server retries each loser itself every 500 ms, up to 20 times, before it answers
 * 429 or times out (504). Measured in bench/: ten nodes draining together under the same PDBs spent
 * seconds in those retries, and at 100 nodes evictions timed out; on the simulation, 20 evictions of one
 * node sent at once under one PDB (maxUnavailable 20) made 48-59 conflicting status writes and took 3.2 s
 * where one at a time took 2.0 s, and 5 at a time made 5-9 of them wait a retry.
 *
 * So a request under a key waits for its turn, is sent, and passes the turn on as soon as the server is
 * seen past its admission (`admitted`: the pod marked or deleting, pdb-admission.ts) or it is
 * answered, whichever comes first; the server may still be deleting the pod and answering while the
 * next eviction goes (a gain only where that tail is long: on the loopback simulation an eviction is
 * answered about as soon as a read could see it, and the turns stay one by one). A request is not sent while the budget last seen allows no more and another is in flight: in
 * flight under a PDB there are at most its disruptionsAllowed (and one when it is unknown or 0, as an
 * unready pod may be evicted even then). The PDB's floor never depends on this gate: the server refuses
 * an eviction the budget does not allow.
 *
 * Two workers drain nodes of one upgrade side by side, so the turns of one process are not enough. The
 * process's first request under a key takes the key's Lease; the requests queued behind it in this
 * process reuse it (renewed as it ages), and it is given back once none is queued or in flight: the Lease
 * costs one create and one delete per run of requests, not per request, and while one worker has
 * evictions in flight under a PDB no other sends any there (so in flight across workers too, at most
 * the budget). A worker killed mid-drain leaves it to expire.
 */

/** Where the key's Lease lives: the PDBs' namespace, through the cluster's own API. */
export interface GateLease {
  api: CoordinationV1Api;
  namespace: string;
  pdbs: readonly string[];
}

/** One request through the gate. */
export interface GateRequest<T> {
  send(): Promise<T>;
  /**
   * Given the request sent: resolves with the PDB's status once the server is seen to have admitted it, or
   * undefined. `wanted()`: whether another request waits for the turn (else looking is not worth a read).
   */
  admitted?(answer: Promise<T>, typicalMs: number, wanted: () => boolean): Promise<PdbSnapshot | undefined>;
  lease?: GateLease;
  signal?: AbortSignal;
}

interface KeyState {
  /** Requests of this process waiting for their turn or in it: while any, the process holds the Lease. */
  queued: number;
  /** Sent and not answered yet. */
  inFlight: number;
  /** The PDB's status as last seen after an admission. */
  last: PdbSnapshot | undefined;
  /** Wakes a turn waiting for an answer (the budget seen last allowed no more). */
  answered: (() => void)[];
}

/** Most requests a process keeps in flight under one PDB, whatever its budget. */
export const MAX_IN_FLIGHT_PER_PDB = 16;
/** What an eviction takes before one has been timed under a key (the first look at the PDB comes at half of it). */
const FIRST_GUESS_MS = 80;

export class PdbGate {
  private readonly tails = new Map<string, Promise<void>>();
  private readonly state = new Map<string, KeyState>();
  private readonly leases = new Map<string, PdbLease>();
  /** How long an eviction under each key took lately (a moving average); kept while the process lives. */
  private readonly typical = new Map<string, number>();
  /** This process as a Lease's holderIdentity: host, pid and a nonce (a restarted worker is another holder). */
  readonly holder: string;

  constructor(o: { holder?: string; leaseSeconds?: number } = {}) {
    this.holder = o.holder ?? `${hostname()}/${process.pid}/${randomBytes(3).toString('hex')}`;
    this.leaseSeconds = o.leaseSeconds;
  }

  private readonly leaseSeconds: number | undefined;

  /**
   * Sends the request once its turn under `key` has come (after the requests queued before it were
   * admitted or answered, given `lease` once this process holds the key's Lease, and once the budget seen
   * last allows it), and resolves with its answer; no key: at once. API errors taking the Lease reject,
   * as the request's would.
   */
  async run<T>(key: string | undefined, request: GateRequest<T>): Promise<T> {
    if (key === undefined) return request.send();
    const before = this.tails.get(key) ?? Promise.resolve();
    let passTurn!: () => void;
    const mine = new Promise<void>((r) => (passTurn = r));
    const tail = before.then(() => mine);
    this.tails.set(key, tail);
    const st = this.stateOf(key);
    st.queued++;
    let answer: Promise<T> | undefined;
    try {
      await before;
      if (request.lease) await this.leaseOf(key, request.lease).acquire(request.signal);
      // One may always go (an unready pod may be evicted with no disruption allowed); more while the budget seen last allows.
      const allows = () =>
        st.inFlight === 0 || (st.last !== undefined && st.last.disruptionsAllowed > 0 && st.inFlight < MAX_IN_FLIGHT_PER_PDB);
      while (!allows()) {
        request.signal?.throwIfAborted();
        await new Promise<void>((r) => {
          st.answered.push(r);
          request.signal?.addEventListener('abort', () => r(), { once: true });
        });
      }
      request.signal?.throwIfAborted();
      const sentAt = Date.now();
      st.inFlight++;
      // This one spends a disruption of the budget seen last: until a newer status is seen, count it spent
      // (a turn passed on by the answer, no admission seen, would otherwise send on a stale budget).
      if (st.last) st.last = { ...st.last, disruptionsAllowed: st.last.disruptionsAllowed - 1 };
      answer = request.send();
      // Registered before anything else awaits the answer: the count is right for whoever runs next.
      const onAnswer = () => {
        st.inFlight--;
        const took = Date.now() - sentAt;
        this.typical.set(key, Math.round(((this.typical.get(key) ?? took) + took) / 2));
        for (const wake of st.answered.splice(0)) wake();
      };
      const settled = answer.then(onAnswer, onAnswer);
      if (request.admitted) {
        const seen = await Promise.race([request.admitted(answer, this.typical.get(key) ?? FIRST_GUESS_MS, () => st.queued > 1), settled]);
        if (seen) st.last = seen;
      } else await settled;
    } finally {
      st.queued--;
      await this.giveBackIfIdle(key, st);
      passTurn();
      // The last in the queue leaves no entry behind: keys come and go with the cluster's PDBs.
      if (this.tails.get(key) === tail) this.tails.delete(key);
    }
    try {
      return await (answer as Promise<T>);
    } finally {
      await this.giveBackIfIdle(key, st);
    }
  }

  /**
   * Once this process has nothing queued or in flight under the key, it gives the key's Lease back (and
   * forgets the key): another worker's evictions then see every write of ours, and so the budget.
   */
  private async giveBackIfIdle(key: string, st: KeyState): Promise<void> {
    if (st.queued > 0 || st.inFlight > 0) return;
    if (this.state.get(key) === st) this.state.delete(key);
    const lease = this.leases.get(key);
    this.leases.delete(key);
    await lease?.release();
  }

  private stateOf(key: string): KeyState {
    let st = this.state.get(key);
    if (!st) this.state.set(key, (st = { queued: 0, inFlight: 0, last: undefined, answered: [] }));
    return st;
  }

  private leaseOf(key: string, l: GateLease): PdbLease {
    let lease = this.leases.get(key);
    if (!lease) this.leases.set(key, (lease = new PdbLease(l.api, l.namespace, l.pdbs, this.holder, this.leaseSeconds)));
    return lease;
  }

  /** Keys with requests in flight or queued (tests). */
  get busy(): number {
    return new Set([...this.tails.keys(), ...this.state.keys()]).size;
  }
}

/** The gate key of a pod's eviction: the PDBs that cover it (more than one: the server refuses it anyway). */
export function pdbGateKey(cluster: string, namespace: string, pdbs: readonly string[]): string | undefined {
  return pdbs.length === 0 ? undefined : `${cluster}/${namespace}/${[...pdbs].sort().join('+')}`;
}
