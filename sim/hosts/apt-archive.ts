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
// Not modelled: deb822 `.sources` files, /etc/apt/sources.list entries other than the file itself,
// signatures (the keyring is a placeholder), architectures, suites with components.
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

/** Package versions (`1.32.4-1.1`) the archive serves at `uri`, newest first; undefined: 404. */
export function archiveOffers(archive: readonly string[], uri: string): string[] | undefined {
  // A user and password in the URL (a site's authenticating proxy) reach the same repository.
  const base = withoutCredentials(uri.endsWith('/') ? uri : `${uri}/`);
  const minor = /^https:\/\/pkgs\.k8s\.io\/core:\/stable:\/v(\d+\.\d+)\/deb\/$/.exec(base)?.[1];
  const versions = base === LOCAL_MIRROR ? archive : minor ? archive.filter((v) => minorOf(v) === minor) : [];
  return versions.length ? sortNewestFirst([...new Set(versions.map(toPackageVersion))]) : undefined;
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
  /** `/` for a flat repository (pkgs.k8s.io's layout). */
  suite: string;
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
    entries.push({ file, uri: uri.endsWith('/') ? uri : `${uri}/`, suite });
  }
  return entries;
}

/** What apt calls a source in its output: `https://pkgs.k8s.io/core:/stable:/v1.32/deb  InRelease`. */
export const sourceLabel = (entry: SourceEntry): string => `${withoutCredentials(entry.uri).replace(/\/$/, '')}  `;

/** The lists file apt keeps for a flat source (URItoFileName: scheme and credentials dropped, `/` as `_`). */
export const listsFileName = (entry: SourceEntry): string =>
  `${withoutCredentials(entry.uri)
    .replace(/^[a-z+]+:\/\//, '')
    .replace(/\/$/, '')
    .replace(/\//g, '_')}_Packages`;

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
