import { createHash } from 'node:crypto';
import { V1MicroTime, type CoordinationV1Api, type V1Lease } from '@kubernetes/client-node';
import { httpStatus } from './errors.js';
import { sleep } from '../tooling/poll-until.js';

/**
 * The per-PDB eviction gate across worker processes: a coordination.k8s.io Lease in the PDB's namespace,
 * taken and given back with compare-and-swap (create, or replace at the resourceVersion read; a 409
 * means another worker moved first), the way client-go's leader election does. Every worker of a task
 * queue reaches the cluster it drains, so the cluster is the one place they all see.
 *
 * Given back by deleting it (at the resourceVersion this holder wrote), so no Lease outlives a drain;
 * a holder that dies (SIGKILL) leaves it to expire: another takes it over once it has seen the same
 * record unchanged for leaseDurationSeconds, by its own clock (renewTime is the holder's clock).
 */

export const LEASE_PREFIX = 'skewless-evictions-';
export const LEASE_PDBS_ANNOTATION = 'skewless.io/pdbs';
/** Long enough for an eviction request and its queue of one process; short enough after a crash. */
export const LEASE_SECONDS = 15;
/** Between looks at a Lease another worker holds: an eviction request takes milliseconds. */
const POLL_MS = 100;

/** The Lease of a set of PDBs: readable for one, hashed when several (or too long for a name). */
export function leaseName(pdbs: readonly string[]): string {
  const sorted = [...pdbs].sort();
  const plain = `${LEASE_PREFIX}${sorted.join('.')}`;
  if (sorted.length === 1 && plain.length <= 253) return plain;
  return `${LEASE_PREFIX}${createHash('sha256').update(sorted.join('+')).digest('hex').slice(0, 20)}`;
}

export class PdbLease {
  readonly name: string;
  /** The resourceVersion of our record and when we wrote it (this process's clock). */
  private held: { resourceVersion: string; at: number } | undefined;
  /** The other holder's record as last seen, and since when: expiry by observation. */
  private seen: { record: string; since: number } | undefined;

  constructor(
    private readonly api: CoordinationV1Api,
    private readonly namespace: string,
    private readonly pdbs: readonly string[],
    private readonly holder: string,
    private readonly seconds = LEASE_SECONDS,
  ) {
    this.name = leaseName(pdbs);
  }

  get holding(): boolean {
    return this.held !== undefined;
  }

  /** Resolves once this holder has the Lease, renewed when a third of it has passed. API errors propagate. */
  async acquire(signal?: AbortSignal): Promise<void> {
    if (this.held && Date.now() - this.held.at < (this.seconds * 1000) / 3) return;
    // Mostly no Lease exists (they are given back when idle): create it first, read only when that conflicts.
    if (!this.held && (await this.write(() => this.api.createNamespacedLease({ namespace: this.namespace, body: this.record() })))) return;
    for (;;) {
      signal?.throwIfAborted();
      const current = await this.read();
      if (!current) {
        if (await this.write(() => this.api.createNamespacedLease({ namespace: this.namespace, body: this.record() }))) return;
        continue;
      }
      if (this.free(current)) {
        const transitions = (current.spec?.leaseTransitions ?? 0) + (current.spec?.holderIdentity === this.holder ? 0 : 1);
        const record = this.record(transitions);
        const body = { ...record, metadata: { ...record.metadata, resourceVersion: current.metadata?.resourceVersion } };
        if (await this.write(() => this.api.replaceNamespacedLease({ name: this.name, namespace: this.namespace, body }))) return;
        continue;
      }
      await sleep(POLL_MS, signal);
    }
  }

  /** Gives it back (deletes our record); a record changed meanwhile (expired, taken) is not ours to delete. */
  async release(): Promise<void> {
    const held = this.held;
    this.held = undefined;
    if (!held) return;
    try {
      await this.api.deleteNamespacedLease({
        name: this.name,
        namespace: this.namespace,
        body: { preconditions: { resourceVersion: held.resourceVersion } },
      });
    } catch {
      // 404/409: gone, or someone else's now; anything else (the API away): it expires on its own.
    }
  }

  private async read(): Promise<V1Lease | undefined> {
    try {
      return await this.api.readNamespacedLease({ name: this.name, namespace: this.namespace });
    } catch (err) {
      if (httpStatus(err) === 404) return undefined;
      throw err;
    }
  }

  /** Ours already, nobody's, or another holder's record unchanged for a whole lease duration. */
  private free(lease: V1Lease): boolean {
    const holder = lease.spec?.holderIdentity;
    if (!holder || holder === this.holder) return true;
    const record = `${holder} ${lease.metadata?.resourceVersion}`;
    if (this.seen?.record !== record) this.seen = { record, since: Date.now() };
    return Date.now() - this.seen.since >= (lease.spec?.leaseDurationSeconds ?? this.seconds) * 1000;
  }

  /** A create or replace: true when it is ours now, false when another worker wrote first (409, or 404 on replace). */
  private async write(send: () => Promise<V1Lease>): Promise<boolean> {
    const at = Date.now();
    try {
      const written = await send();
      this.held = { resourceVersion: written.metadata?.resourceVersion ?? '', at };
      this.seen = undefined;
      return true;
    } catch (err) {
      if ([404, 409].includes(httpStatus(err) ?? 0)) return false;
      throw err;
    }
  }

  private record(transitions = 0): V1Lease {
    const now = new V1MicroTime();
    return {
      apiVersion: 'coordination.k8s.io/v1',
      kind: 'Lease',
      metadata: { name: this.name, namespace: this.namespace, annotations: { [LEASE_PDBS_ANNOTATION]: [...this.pdbs].sort().join(',') } },
      spec: {
        holderIdentity: this.holder,
        leaseDurationSeconds: this.seconds,
        acquireTime: now,
        renewTime: now,
        leaseTransitions: transitions,
      },
    };
  }
}
