// The Kubernetes apt archive the simulated hosts reach, and the apt configuration on a host that
// names it. Modelled on what kubernetes.io's "Installing kubeadm" sets up and apt does with it:
// - pkgs.k8s.io serves one flat repository per minor (`core:/stable:/v1.32/deb/`); a node's
//   /etc/apt/sources.list.d/kubernetes.list holds exactly one such `deb [signed-by=…] … /` line, so
//   it is offered one minor at a time. A minor the archive does not have answers 404.
// - A site's local mirror (the named variant `local-mirror`) offers every minor from one line.
// - `apt-get update` fetches each source's index into the lists directory
//   (/var/lib/apt/lists/<URI with / as _>_Packages) and drops the lists of sources no longer
//   configured; apt-cache and apt-get install read only those lists, so a changed file offers
//   nothing new until the next update.
// - Other sources beside it, as on any host (Docker's `deb [arch=amd64 signed-by=…] URL bookworm stable`,
//   CRI-O's addon repository under pkgs.k8s.io, a company mirror): the description says which answer
//   (an index with none of the Kubernetes packages) and which answer 404 (OtherRepository).
// Not modelled: deb822 `.sources` files, signatures (the keyring is a placeholder), architectures
// other than amd64, In-Release/Release distinctions beyond their messages.
// Sources: kubernetes.io "Installing kubeadm" and "Upgrading kubeadm clusters" (the file, the line,
// the sed of the minor); apt.conf(5) and sources.list(5) (Dir::Etc::SourceList/SourceParts,
// Dir::State::Lists, the one-line format, flat repositories with suite "/"); apt's URItoFileName in
// apt-pkg/contrib/strutl.cc (the lists file names) and its update messages (Err:/404, "does not have
// a Release file", exit 100).
import semver from 'semver';
import { toKubernetesVersion, toPackageVersion } from './host-state.js';

export const KEYRING = '/etc/apt/keyrings/kubernetes-apt-keyring.gpg';
export const KUBERNETES_LIST = '/etc/apt/sources.list.d/kubernetes.list';
const PKGS_K8S_IO = 'https://pkgs.k8s.io';
/** A made-up, never-resolvable host (.invalid): a site mirror that offers every minor. */
const LOCAL_MIRROR = 'http://apt-mirror.sim.invalid/kubernetes/all/deb/';

/** How a host's Kubernetes repository is set up: as kubernetes.io's guide does, or from a site mirror. */
export const REPOSITORY_LAYOUTS = ['per-minor', 'local-mirror'] as const;
export type RepositoryLayout = (typeof REPOSITORY_LAYOUTS)[number];

const minorOf = (version: string): string => {
  const v = semver.parse(version.replace(/^v/, ''));
  if (!v) throw new Error(`sim: not a version: ${version}`);
  return `${v.major}.${v.minor}`;
};

/** The one line of kubernetes.list that kubernetes.io's guide writes for a minor (`1.32`). */
export const guideSourceLine = (minor: string): string => `deb [signed-by=${KEYRING}] ${PKGS_K8S_IO}/core:/stable:/v${minor}/deb/ /`;

/** kubernetes.list of a host whose packages are at `version`. */
export function sourcesFileFor(layout: RepositoryLayout, version: string): string {
  return `${layout === 'per-minor' ? guideSourceLine(minorOf(version)) : `deb [signed-by=${KEYRING}] ${LOCAL_MIRROR} /`}\n`;
}

/** A URI as apt prints and files it: without a user and password. */
const withoutCredentials = (uri: string): string => uri.replace(/^([a-z+]+:\/\/)[^/@]+@/, '$1');

/**
 * A repository other than Kubernetes' a host's description names (apt: a source's URI; dnf: a
 * baseurl), with a trailing `/` and no credentials: `served` ones answer with an index that offers
 * none of the Kubernetes packages, the others 404.
 */
export interface OtherRepository {
  url: string;
  served: boolean;
}

/** A repository URL as the simulation's archive compares them: a trailing `/`, no user and password. */
export const repositoryKey = (uri: string): string => withoutCredentials(uri.endsWith('/') ? uri : `${uri}/`);

/** Package versions (`1.32.4-1.1`) the archive serves at `uri`, newest first; undefined: 404. */
export function archiveOffers(archive: readonly string[], uri: string, others: readonly OtherRepository[] = []): string[] | undefined {
  // A user and password in the URL (a site's authenticating proxy) reach the same repository.
  const base = repositoryKey(uri);
  const minor = /^https:\/\/pkgs\.k8s\.io\/core:\/stable:\/v(\d+\.\d+)\/deb\/$/.exec(base)?.[1];
  const versions = base === LOCAL_MIRROR ? archive : minor ? archive.filter((v) => minorOf(v) === minor) : [];
  if (versions.length) return sortNewestFirst([...new Set(versions.map(toPackageVersion))]);
  return others.some((o) => o.served && repositoryKey(o.url) === base) ? [] : undefined;
}

/** Compares two Debian versions of the simulated packages by their Kubernetes part. */
export function comparePackageVersions(a: string, b: string): number {
  const va = semver.parse(toKubernetesVersion(a));
  const vb = semver.parse(toKubernetesVersion(b));
  if (!va || !vb) return a.localeCompare(b);
  return semver.compare(va, vb) || a.localeCompare(b);
}

export const sortNewestFirst = (versions: string[]): string[] => versions.sort((a, b) => comparePackageVersions(b, a));

/** One `deb` line of a one-line-style sources file. */
export interface SourceEntry {
  file: string;
  uri: string;
  /** `/` for a flat repository (pkgs.k8s.io's layout), else a distribution such as `bookworm`. */
  suite: string;
  /** The components of a distribution (`stable`, `main contrib`); none for a flat repository. */
  components: string[];
}

/** The entries of a sources file, or apt's complaint about the first malformed line. */
export function parseSources(file: string, text: string): SourceEntry[] | string {
  const entries: SourceEntry[] = [];
  for (const [i, raw] of text.split('\n').entries()) {
    const line = raw.replace(/#.*/, '').trim();
    if (line === '') continue;
    const words = line
      .replace(/\[[^\]]*\]/, ' ')
      .trim()
      .split(/\s+/);
    const [type, uri, suite, ...components] = words;
    if (type === 'deb-src') continue;
    if (type !== 'deb') return `E: Malformed entry ${i + 1} in list file ${file} (Component)`;
    if (!uri || !/^[a-z+]+:\/\//.test(uri)) return `E: Malformed entry ${i + 1} in list file ${file} (URI parse)`;
    if (!suite) return `E: Malformed entry ${i + 1} in list file ${file} (Suite)`;
    if (suite.endsWith('/') !== (components.length === 0))
      return `E: Malformed entry ${i + 1} in list file ${file} (absolute Suite Component)`;
    entries.push({ file, uri: uri.endsWith('/') ? uri : `${uri}/`, suite, components });
  }
  return entries;
}

/**
 * What apt calls a source in its output, before the file it names: URI and distribution,
 * `https://pkgs.k8s.io/core:/stable:/v1.32/deb  InRelease` (a flat repository's empty one),
 * `https://download.docker.com/linux/debian bookworm InRelease`.
 */
export const sourceLabel = (entry: SourceEntry): string =>
  `${withoutCredentials(entry.uri).replace(/\/$/, '')} ${entry.suite === '/' ? '' : entry.suite} `;

/**
 * The lists files apt keeps for a source (URItoFileName: scheme and credentials dropped, `/` as
 * `_`): a flat one's `…_deb_Packages`, a distribution's `…_dists_bookworm_stable_binary-amd64_Packages` per component.
 */
export function listsFileNames(entry: SourceEntry): string[] {
  const base = withoutCredentials(entry.uri)
    .replace(/^[a-z+]+:\/\//, '')
    .replace(/\/$/, '');
  const name = (path: string) => `${path.replace(/\//g, '_')}_Packages`;
  if (entry.suite === '/') return [name(base)];
  return entry.components.map((c) => name(`${base}/dists/${entry.suite}/${c}/binary-amd64`));
}

/** A Packages index of the three Kubernetes packages at `versions`. */
export function packagesIndex(versions: readonly string[]): string {
  return versions
    .flatMap((version) =>
      ['kubeadm', 'kubectl', 'kubelet'].map(
        (name) => `Package: ${name}\nVersion: ${version}\nArchitecture: amd64\nMaintainer: Kubernetes Authors <dev@kubernetes.io>\n`,
      ),
    )
    .join('\n');
}

/** The versions of `name` a Packages index lists. */
export function versionsInIndex(text: string, name: string): string[] {
  const versions: string[] = [];
  for (const stanza of text.split(/\n\s*\n/)) {
    if (new RegExp(`^Package: ${name}$`, 'm').test(stanza)) {
      const version = /^Version: (\S+)$/m.exec(stanza)?.[1];
      if (version) versions.push(version);
    }
  }
  return versions;
}
