/**
 * The other package sources of a node that fail to refresh (a stale Docker or CRI-O repository, a
 * company mirror gone): never the hop's business, since skewless refreshes the Kubernetes source
 * alone, but the node's own `apt-get update` and unattended upgrades fail until they are fixed, and
 * an operator reading a failed refresh should not have to guess whose 404 it was. A warning each,
 * naming the node, the file and the URL.
 */
import type { ReadinessFinding } from './finding.js';

export interface OtherSourceFailure {
  node: string;
  /** The file that configures it (`/etc/apt/sources.list.d/docker.list`); undefined when none of the files names it. */
  file?: string;
  /** Its URL (credentials masked by the caller), with apt's distribution when it has one. */
  url: string;
  suite?: string;
  /** dnf's repository id. */
  repo?: string;
  /** The HTTP status the tool reported, when it did. */
  status?: string;
}

const APT_SOURCE = 'https://manpages.debian.org/bookworm/apt/sources.list.5.en.html';
const DNF_SOURCE = 'https://dnf.readthedocs.io/en/latest/conf_ref.html#skip-if-unavailable-label';

/** One warning per failing source and node, at the run's first hop. */
export function otherSourceFindings(hop: string, failures: readonly OtherSourceFailure[]): ReadinessFinding[] {
  return failures.map((f) => {
    const where = [f.repo ? `repository '${f.repo}'` : undefined, `${f.url}${f.suite ? ` ${f.suite}` : ''}`].filter(Boolean).join(' ');
    const file = f.file ?? 'a source file';
    return {
      check: 'other-source',
      severity: 'warn',
      hop,
      node: f.node,
      what: `${file} (${where}) fails to refresh${f.status ? ` (${f.status})` : ''}; skewless refreshes the Kubernetes source alone, so the upgrade is not held`,
      todo: `fix or remove ${file} on ${f.node}: until then the node's own ${f.repo ? 'dnf' : 'apt-get update'} and unattended upgrades fail`,
      source: f.repo ? DNF_SOURCE : APT_SOURCE,
      ack: `other-source:${f.node}:${f.file ?? f.url}`,
    };
  });
}
