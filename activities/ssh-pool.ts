// The worker's SSH connections, kept open between activity executions: one per host, port and user,
// shared by every command to that host (SSH multiplexes channels), closed after a short idle time.
// A connection is made (and its host key checked against known_hosts) by the shell's `open`; the
// pool never makes one by itself and never sees a credential.
import type { Client } from 'ssh2';

interface Entry {
  key: string;
  client: Promise<Client>;
  /** Leases not yet released. */
  users: number;
  idle?: NodeJS.Timeout;
  /** Takes no new lease (closed by its host, broken, or the pool closing): closed once its last lease is released. */
  retired: boolean;
}

export interface Lease {
  client: Client;
  /** The connection served an earlier lease: it may have broken since (a command that cannot open a channel on it is worth one retry). */
  reused: boolean;
  /** Done with the connection; `broken`: nobody else gets it (a command cut short mid-way, a channel refused). */
  release(broken?: boolean): void;
}

const quietEnd = (client: Client): void => {
  client.removeAllListeners('close');
  client.on('error', () => undefined); // late socket errors after we are done are not news
  client.end();
};

/** Resolves with `work`, or rejects with the signal's reason when it fires first (`work` goes on for the other waiters). */
function unlessAborted<T>(work: Promise<T>, signal: AbortSignal | undefined): Promise<T> {
  if (!signal) return work;
  if (signal.aborted) return Promise.reject(signal.reason ?? new Error('cancelled'));
  return new Promise<T>((resolve, reject) => {
    const onAbort = (): void => reject(signal.reason ?? new Error('cancelled'));
    signal.addEventListener('abort', onAbort, { once: true });
    work.then(
      (v) => (signal.removeEventListener('abort', onAbort), resolve(v)),
      (e: unknown) => (signal.removeEventListener('abort', onAbort), reject(e)),
    );
  });
}

export class SshPool {
  private readonly entries = new Map<string, Entry>();
  private closed = false;

  /** `idleMs`: how long a connection nobody uses stays open. */
  constructor(private readonly idleMs: number) {}

  /**
   * The open connection for `key`, else one made by `open` (shared by the leases that ask while it
   * is being made). `signal` ends this caller's wait, not the connection: others may be waiting on it.
   */
  async lease(key: string, open: () => Promise<Client>, signal: AbortSignal | undefined): Promise<Lease> {
    let entry = this.entries.get(key);
    const reused = entry !== undefined;
    if (!entry) entry = this.add(key, open);
    const e = entry;
    e.users++;
    clearTimeout(e.idle);
    let client: Client;
    try {
      client = await unlessAborted(e.client, signal);
    } catch (err) {
      this.release(e, false);
      throw err;
    }
    let released = false;
    return {
      client,
      reused,
      release: (broken = false) => {
        if (released) return;
        released = true;
        this.release(e, broken);
      },
    };
  }

  /** Whether `key` has a connection that takes leases (made or being made). */
  has(key: string): boolean {
    return this.entries.has(key);
  }

  /** Closes every connection nobody uses and retires the rest (closed as their leases end); later leases get connections of their own. */
  close(): void {
    this.closed = true;
    for (const e of [...this.entries.values()]) {
      this.retire(e);
      clearTimeout(e.idle);
      if (e.users === 0) void e.client.then(quietEnd, () => undefined);
    }
  }

  private add(key: string, open: () => Promise<Client>): Entry {
    const e: Entry = { key, client: open(), users: 0, retired: this.closed };
    if (!this.closed) this.entries.set(key, e);
    e.client.then(
      (c) => {
        // Many commands may share the connection at once; each listens for its close while it runs.
        c.setMaxListeners(0);
        c.once('close', () => this.retire(e));
      },
      () => this.retire(e),
    );
    return e;
  }

  private retire(e: Entry): void {
    e.retired = true;
    if (this.entries.get(e.key) === e) this.entries.delete(e.key);
  }

  private release(e: Entry, broken: boolean): void {
    e.users--;
    if (broken) this.retire(e);
    if (e.users > 0) return;
    if (e.retired) {
      void e.client.then(quietEnd, () => undefined);
      return;
    }
    e.idle = setTimeout(() => {
      this.retire(e);
      void e.client.then(quietEnd, () => undefined);
    }, this.idleMs);
    e.idle.unref();
  }
}
