import { sleep } from '../tooling/poll-until.js';
import type { KubeWatch } from './kube-api.js';

/** Who is told that a watch's connection broke (api-outage.ts's ApiOutage): the server may be restarting. */
export interface OutageWitness {
  sawAway(): void;
}

/** What a list gave: the objects and where a watch continues from. */
export interface Listing<T> {
  items: T[];
  resourceVersion: string;
}

/** The part of any Kubernetes object a watch needs. */
export interface Watched {
  metadata?: { uid?: string; resourceVersion?: string };
}

/**
 * The server closes a watch after this long and it is opened again from the last resourceVersion seen:
 * a connection that died without a word (a balancer's idle cut) is noticed within a minute.
 */
const WATCH_SECONDS = 60;
/** No event, not even a bookmark, for this long: the connection is taken for dead and the watch opened again. */
const SILENT_MS = (WATCH_SECONDS + 15) * 1000;
/** Before a list after a watch failed (the API server away): never a loop faster than once a second. */
const RELIST_MS = 1_000;
/**
 * A watch the server has not even answered (its headers) within this long is dead: an API server going
 * down as it was opened. The client gives no handle on it until it answers, so it is abandoned, not aborted.
 */
const OPEN_MS = 10_000;

export interface ObjectWatchOptions<T extends Watched> {
  kube: KubeWatch;
  /** The collection's path, e.g. /api/v1/pods or /apis/apps/v1/namespaces/default/deployments. */
  path: string;
  /** The selectors the list used too (fieldSelector, labelSelector). */
  query?: Record<string, string>;
  /** Lists the collection; the caller's wrapper rides out (and bounds) an API server outage. */
  list: () => Promise<Listing<T>>;
  /** Called after each list and each event that changed an object. */
  onChange: () => void;
  /** A list that failed for good: the wait cannot go on. */
  onFailure: (err: unknown) => void;
  signal: AbortSignal;
  /** Told when a watch's connection broke: the relist that follows may meet a restarted server's first 403s. */
  outage?: OutageWitness;
  /** How long a watch may take to answer before it is abandoned (default OPEN_MS; tests shorten it). */
  openMs?: number;
}

/**
 * Follows a collection of objects as an informer does: one list, then one watch from its resourceVersion.
 * A watch the server ends is opened again from the last resourceVersion seen (bookmarks keep it fresh);
 * one that is too old (410 Gone), failed or fell silent is replaced by a new list, which also tells every
 * change missed in between. Objects are kept by UID: a same-named replacement is another object.
 */
export class ObjectWatch<T extends Watched> {
  /** The objects as last known, by UID; undefined until the first list. */
  #objects: Map<string, T> | undefined;
  #resourceVersion = '';
  #request: AbortController | undefined;
  #silence: NodeJS.Timeout | undefined;
  /** The current watch's number: events and endings of an abandoned one are ignored. */
  #generation = 0;
  /** Lists made (the first and every relist): what the wait cost the API server beside its watches. */
  lists = 0;
  readonly #o: ObjectWatchOptions<T>;

  constructor(options: ObjectWatchOptions<T>) {
    this.#o = options;
    options.signal.addEventListener('abort', () => this.#close(), { once: true });
  }

  /** The objects now, or undefined before the first list answered. */
  objects(): T[] | undefined {
    return this.#objects && [...this.#objects.values()];
  }

  /** Whether an object with this UID exists as last known (false before the first list too). */
  has(uid: string): boolean {
    return this.#objects?.has(uid) ?? false;
  }

  /** Whether the first list answered. */
  get listed(): boolean {
    return this.#objects !== undefined;
  }

  /**
   * Lists, then follows by watch; returns once the first list answered (or failed: then onFailure was
   * called). With `watch: false` it only lists: `follow()` opens the watch when the list was not enough.
   */
  async start(o: { watch?: boolean } = {}): Promise<void> {
    await this.#relist(o.watch ?? true);
  }

  /** Opens the watch after `start({ watch: false })`, from that list's resourceVersion. */
  follow(): void {
    if (this.#objects !== undefined) void this.#watch();
  }

  async #relist(thenWatch = true): Promise<void> {
    if (this.#o.signal.aborted) return;
    let listing: Listing<T>;
    try {
      this.lists++;
      listing = await this.#o.list();
    } catch (err) {
      if (!this.#o.signal.aborted) this.#o.onFailure(err);
      return;
    }
    this.#objects = new Map(listing.items.map((o) => [o.metadata?.uid ?? '', o]));
    this.#resourceVersion = listing.resourceVersion;
    this.#o.onChange();
    if (thenWatch) void this.#watch();
  }

  #onEvent(type: string, object: unknown): boolean {
    const o = object as T;
    const rv = o?.metadata?.resourceVersion;
    if (rv) this.#resourceVersion = rv;
    const uid = o?.metadata?.uid;
    if (!uid || type === 'BOOKMARK') return false;
    if (type === 'DELETED') this.#objects?.delete(uid);
    else this.#objects?.set(uid, o);
    return true;
  }

  async #watch(): Promise<void> {
    if (this.#o.signal.aborted) return;
    const generation = ++this.#generation;
    const current = () => generation === this.#generation;
    const openedAt = Date.now();
    let outdated = false;
    const onEvent = (type: string, object: unknown) => {
      if (!current()) return;
      this.#armSilence(SILENT_MS);
      // A Status: 410 Gone when the resourceVersion is older than the server keeps.
      if (type === 'ERROR') outdated = (object as { code?: number })?.code === 410 || outdated;
      else if (this.#onEvent(type, object)) this.#o.onChange();
    };
    const onDone = (err: unknown) => {
      if (!current()) return;
      this.#disarmSilence();
      this.#request = undefined;
      if (this.#o.signal.aborted) return;
      if (err) this.#o.outage?.sawAway();
      if (outdated || err)
        this.#relistSoon(); // gone or failed: a new list says what was missed
      // The server's timeout ended it: go on from where it was (a second later if it ended at once: a
      // server closing every watch, or a connection cut, is no reason to loop).
      else if (Date.now() - openedAt >= RELIST_MS) void this.#watch();
      else
        void sleep(RELIST_MS, this.#o.signal).then(
          () => this.#watch(),
          () => undefined,
        );
    };
    this.#armSilence(this.#o.openMs ?? OPEN_MS);
    // The client rejects before any request is made when it cannot build one (its credentials): taken as a
    // failed watch, not left as a rejection no one awaits (which would end the worker).
    const request = this.#o.kube.watch(
      this.#o.path,
      { ...this.#o.query, resourceVersion: this.#resourceVersion, allowWatchBookmarks: true, timeoutSeconds: WATCH_SECONDS },
      onEvent,
      onDone,
    );
    let opened: AbortController;
    try {
      opened = await request;
    } catch (err) {
      onDone(err);
      return;
    }
    // Abandoned while it opened, or stopped: not followed.
    if (!current() || this.#o.signal.aborted) return opened.abort();
    this.#request = opened;
    this.#armSilence(SILENT_MS);
  }

  #relistSoon(): void {
    void sleep(RELIST_MS, this.#o.signal).then(
      () => this.#relist(),
      () => undefined,
    );
  }

  /** No answer, or no event for too long: the watch is abandoned (its events and ending ignored) and a list starts again. */
  #armSilence(ms: number): void {
    this.#disarmSilence();
    this.#silence = setTimeout(() => {
      this.#silence = undefined;
      this.#generation++;
      const dead = this.#request;
      this.#request = undefined;
      dead?.abort();
      if (!this.#o.signal.aborted) this.#relistSoon();
    }, ms);
    this.#silence.unref();
  }

  #disarmSilence(): void {
    if (this.#silence) clearTimeout(this.#silence);
    this.#silence = undefined;
  }

  #close(): void {
    this.#disarmSilence();
    this.#request?.abort();
  }
}
