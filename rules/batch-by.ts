import { compareNatural } from './natural-order.js';

/** The group of workers that carry one value of the batch-by label (`''`: the workers without it). */
export interface FailureDomain {
  value: string;
  nodes: string[];
}

/**
 * The workers grouped by the value of the node label `key` (a failure domain, such as
 * `topology.kubernetes.io/zone`), so that no batch takes two domains' replicas at once (GKE upgrades
 * a multi-zone pool one zone at a time). The values named in `order` come first, in that order; the
 * others follow in natural order; workers without the label come last, as a domain of their own.
 * A value of `order` that no worker carries is passed over (its workers may be done already).
 * Within a domain the workers keep the order they are given in.
 */
export function failureDomains(
  workers: readonly { name: string; labels?: Record<string, string> }[],
  key: string,
  order: readonly string[] = [],
): FailureDomain[] {
  const byValue = new Map<string, string[]>();
  for (const w of workers) {
    const value = w.labels?.[key] ?? '';
    byValue.set(value, [...(byValue.get(value) ?? []), w.name]);
  }
  const rank = (v: string) => (order.includes(v) ? order.indexOf(v) : v === '' ? Infinity : order.length);
  const values = [...byValue.keys()].sort((a, b) => rank(a) - rank(b) || compareNatural(a, b));
  return values.map((value) => ({ value, nodes: byValue.get(value) as string[] }));
}

/** Each domain's nodes cut into batches of `size`, never two domains in one batch. */
export function batchesWithin(domains: readonly FailureDomain[], size: number): FailureDomain[] {
  return domains.flatMap((d) => {
    const out: FailureDomain[] = [];
    for (let i = 0; i < d.nodes.length; i += size) out.push({ value: d.value, nodes: d.nodes.slice(i, i + size) });
    return out;
  });
}
