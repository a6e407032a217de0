import { httpStatus, kubeCall } from './errors.js';

/** One page of a Kubernetes list call. */
export interface ListPage<T> {
  items: T[];
  metadata?: { _continue?: string; resourceVersion?: string };
}

/** The default page size: big enough for few round trips, small enough to keep each response cheap. */
export const DEFAULT_PAGE_SIZE = 500;

/**
 * Reads a whole list in pages of `limit` with `continue` tokens, so 10,000 pods never arrive in one
 * response. A continue token can expire (410 Gone) on a long walk: the list then starts over, a few
 * times at most, because a list mixed from two snapshots would count pods twice.
 */
export async function listAll<T>(
  what: string,
  page: (params: { limit: number; _continue?: string }) => Promise<ListPage<T>>,
  limit = DEFAULT_PAGE_SIZE,
): Promise<T[]> {
  return (await listAllAt(what, page, limit)).items;
}

/** listAll, with the resourceVersion of the snapshot its pages came from: where a watch goes on from. */
export async function listAllAt<T>(
  what: string,
  page: (params: { limit: number; _continue?: string }) => Promise<ListPage<T>>,
  limit = DEFAULT_PAGE_SIZE,
): Promise<{ items: T[]; resourceVersion: string }> {
  for (let attempt = 1; ; attempt++) {
    const items: T[] = [];
    let token: string | undefined;
    let resourceVersion = '';
    try {
      do {
        const result = await page({ limit, ...(token ? { _continue: token } : {}) });
        items.push(...result.items);
        // Every page of one list is of the first page's snapshot.
        resourceVersion ||= result.metadata?.resourceVersion ?? '';
        token = result.metadata?._continue || undefined;
      } while (token);
      return { items, resourceVersion };
    } catch (err) {
      if (httpStatus(err) === 410 && token && attempt < 3) continue;
      // Typed like every other API failure (errors.ts).
      return kubeCall(what, () => Promise.reject(err));
    }
  }
}
