// Which package source a refresh failed on, read from apt's and dnf's own messages, so that a
// neighbour's broken repository (Docker's, CRI-O's addon repository, a company mirror) is named as
// what it is and never taken for the node's Kubernetes source.
// apt (apt-get update, apt 2.x; apt-pkg/acquire-item.cc, apt-private/private-update.cc):
//   E: The repository 'https://download.docker.com/linux/debian bookworm Release' does not have a Release file.
//   E: Failed to fetch https://download.docker.com/linux/debian/dists/bookworm/InRelease  404  Not Found [IP: … 443]
//   (a flat repository, pkgs.k8s.io's, has an empty distribution: 'https://pkgs.k8s.io/core:/stable:/v1.35/deb  Release')
// dnf 4 (libdnf):
//   Error: Failed to download metadata for repo 'docker-ce-stable': Cannot download repomd.xml: …
//   Errors during downloading metadata for repository 'docker-ce-stable':
//     - Status code: 404 for https://download.docker.com/linux/rhel/9/x86_64/stable/repodata/repomd.xml (IP: …)

/** One source that failed: its URL (and apt's distribution) as the tool printed it, and the HTTP status when given. */
export interface RefreshFailure {
  url: string;
  /** apt: the distribution (`bookworm`; empty for a flat repository). */
  suite?: string;
  /** dnf: the repository id. */
  repo?: string;
  /** `404` and the like, when the tool said it. */
  status?: string;
}

const withSlash = (url: string): string => (url.endsWith('/') ? url : `${url}/`);

/** Every source an `apt-get update` reported as failed, once each (by URL and distribution). */
export function parseAptUpdateFailures(output: string): RefreshFailure[] {
  const found = new Map<string, RefreshFailure>();
  const add = (f: RefreshFailure): void => {
    const key = `${withSlash(f.url)} ${f.suite ?? ''}`;
    const known = found.get(key);
    if (!known) found.set(key, f);
    else if (!known.status && f.status) known.status = f.status;
  };
  // An Err: line is followed by the status on the next line: `Err:3 URL SUITE Release` / `  404  Not Found`.
  const lines = output.split('\n');
  lines.forEach((line, i) => {
    const release =
      /^E: The repository '(\S+) (\S*) ?Release' (?:does not have a Release file|is not signed|no longer has a Release file)/.exec(line);
    if (release) add({ url: release[1]!, suite: release[2] ?? '' });
    const err = /^Err:\d+ (\S+) (\S*) ?(?:In)?Release\s*$/.exec(line);
    const status = /^\s+(\d{3})\s/.exec(lines[i + 1] ?? '');
    if (err) add({ url: err[1]!, suite: err[2] ?? '', ...(status ? { status: status[1]! } : {}) });
    const fetch = /^[EW]: Failed to fetch (\S+)\s+(\d{3})?/.exec(line);
    if (fetch) {
      // .../dists/<suite>/... names a distribution; a flat repository's files sit under its URL.
      const dists = /^(.*?)\/dists\/([^/]+)\//.exec(fetch[1]!);
      add({
        url: dists ? dists[1]! : fetch[1]!.replace(/\/(?:In)?Release$|\/Packages(?:\.\w+)?$/, ''),
        suite: dists ? dists[2]! : '',
        ...(fetch[2] ? { status: fetch[2] } : {}),
      });
    }
  });
  // A Release failure and its Err: line are one source: keep one entry, with the status if either had it.
  return [...found.values()];
}

/** Every repository a dnf command reported as failing to download metadata, once each. */
export function parseDnfMetadataFailures(output: string): RefreshFailure[] {
  const found = new Map<string, RefreshFailure>();
  let current: string | undefined;
  for (const line of output.split('\n')) {
    const head = /^Errors during downloading metadata for repository '([^']+)'/.exec(line);
    if (head) current = head[1];
    const failed = /^Error: Failed to download metadata for repo '([^']+)'/.exec(line);
    const id = head?.[1] ?? failed?.[1];
    if (id && !found.has(id)) found.set(id, { url: '', repo: id });
    const status = /^\s+- Status code: (\d{3}) for (\S+)/.exec(line);
    if (status && current) {
      const f = found.get(current) ?? { url: '', repo: current };
      f.status = status[1]!;
      f.url = status[2]!.replace(/repodata\/repomd\.xml$/, '');
      found.set(current, f);
    }
  }
  return [...found.values()];
}

/** A package source as a node's files configure it: which file, which URL (apt: and distribution; dnf: and id). */
export interface ConfiguredSource {
  file: string;
  url: string;
  suite?: string;
  repo?: string;
}

/** The `deb` lines of one-line-style apt source files, given as `file → text`. */
export function parseAptSourceFiles(files: Readonly<Record<string, string>>): ConfiguredSource[] {
  const out: ConfiguredSource[] = [];
  for (const [file, text] of Object.entries(files)) {
    for (const raw of text.split('\n')) {
      const m = /^deb\s+(?:\[[^\]]*\]\s+)?(\S+)\s+(\S+)/.exec(raw.replace(/#.*/, '').trim());
      if (m) out.push({ file, url: m[1]!, suite: m[2] === '/' ? '' : m[2]! });
    }
  }
  return out;
}

/** The sections of .repo files (`[id]` and its `baseurl=`), given as `file → text`. */
export function parseDnfRepoFiles(files: Readonly<Record<string, string>>): ConfiguredSource[] {
  const out: ConfiguredSource[] = [];
  for (const [file, text] of Object.entries(files)) {
    let current: ConfiguredSource | undefined;
    for (const raw of text.split('\n')) {
      const line = raw.trim();
      const head = /^\[([^\]]+)\]$/.exec(line);
      if (head) {
        current = { file, url: '', repo: head[1]!.trim() };
        out.push(current);
      }
      const base = /^baseurl\s*=\s*(\S+)/.exec(line);
      if (base && current && !current.url) current.url = base[1]!.split(',')[0]!;
    }
  }
  return out;
}

const sameUrl = (a: string, b: string): boolean => a !== '' && withSlash(stripCredentials(a)) === withSlash(stripCredentials(b));
const stripCredentials = (url: string): string => url.replace(/^([a-z+]+:\/\/)[^/@\s]+@/i, '$1');

/** The configured source a failure is about (by repo id, else URL and distribution); undefined when none matches. */
export function sourceOfFailure(failure: RefreshFailure, sources: readonly ConfiguredSource[]): ConfiguredSource | undefined {
  if (failure.repo !== undefined) return sources.find((s) => s.repo === failure.repo);
  return (
    sources.find((s) => sameUrl(s.url, failure.url) && (failure.suite === undefined || (s.suite ?? '') === failure.suite)) ??
    sources.find((s) => sameUrl(s.url, failure.url))
  );
}
