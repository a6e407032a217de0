// The Kubernetes rpm repositories the simulated RHEL-family hosts reach, and the dnf configuration
// on a host that names them. Modelled on what kubernetes.io's "Installing kubeadm" (Red Hat-based
// distributions) sets up and dnf 4 does with it:
// - pkgs.k8s.io serves one rpm repository per minor (`core:/stable:/v1.32/rpm/`, its metadata at
//   `repodata/repomd.xml`); /etc/yum.repos.d/kubernetes.repo names one minor in `baseurl=` and
//   `gpgkey=`, and excludes the Kubernetes packages (`exclude=kubelet kubeadm kubectl cri-tools
//   kubernetes-cni`) so that only `--disableexcludes=kubernetes` installs them: the guide's hold.
// - A minor the archive does not have answers 404 for repomd.xml, and dnf fails (skip_if_unavailable
//   is off by default on dnf 4 in RHEL 8 and later).
// - dnf fetches a repository's metadata itself when its cache is missing or expired; the cache is
//   keyed by the repository's id *and* URLs, so a changed baseurl is fetched afresh. The model
//   fetches on every command, which nothing here can tell apart.
// - Package versions are `VERSION-RELEASE`; pkgs.k8s.io's builds (openSUSE Build Service) carry the
//   release `150500.1.1` (kubeadm-1.32.4-150500.1.1.x86_64.rpm).
// - Other repositories beside it (Docker's docker-ce.repo, CRI-O's addon repository, a company
//   mirror): served (none of the Kubernetes packages) or 404 as the description says. With
//   `skip_if_unavailable` on (`--setopt=*.skip_if_unavailable=True`, or in the section) dnf 4 reports
//   each that fails ("Failed to download metadata for repo 'ID'"), names them in "Ignoring
//   repositories: …" and goes on without them.
// Not modelled: gpg checks (the key is never fetched), dnf's metadata_expire and `dnf clean`,
// versionlock, modules, several baseurls or mirrorlists in one section, variables such as $basearch.
// Sources: kubernetes.io "Installing kubeadm" and "Upgrading kubeadm clusters" (the file, the sed of
// the minor, `yum install -y kubeadm-'1.33.x-*' --disableexcludes=kubernetes`); dnf.conf(5)
// (exclude/excludepkgs, enabled, skip_if_unavailable); dnf(8) (--disableexcludes, --repofrompath,
// --repo, --showduplicates, list's sections); yum.conf(5) for the .repo file's INI format.
import semver from 'semver';
import { repositoryKey, type OtherRepository, type RepositoryLayout } from './apt-archive.js';

/** The package tools of a host: Debian's (apt, dpkg) or the RHEL family's (dnf, rpm). */
export const PACKAGE_MANAGERS = ['apt', 'dnf'] as const;
export type PackageManager = (typeof PACKAGE_MANAGERS)[number];

export const KUBERNETES_REPO = '/etc/yum.repos.d/kubernetes.repo';
export const REPOS_DIR = '/etc/yum.repos.d';
/** pkgs.k8s.io's rpms carry this release (the build service's). */
export const RPM_RELEASE = '150500.1.1';
/** A made-up, never-resolvable host (.invalid): a site mirror that offers every minor. */
const LOCAL_MIRROR = 'http://rpm-mirror.sim.invalid/kubernetes/all/rpm/';
const PKGS_K8S_IO = 'https://pkgs.k8s.io';
/** What the guide excludes from the repository, so that nothing upgrades them by accident. */
export const GUIDE_EXCLUDE = ['kubelet', 'kubeadm', 'kubectl', 'cri-tools', 'kubernetes-cni'];

export const toRpmVersion = (kubernetes: string): string => `${kubernetes.replace(/^v/, '')}-${RPM_RELEASE}`;

const minorOf = (version: string): string => {
  const v = semver.parse(version.replace(/^v/, ''));
  if (!v) throw new Error(`sim: not a version: ${version}`);
  return `${v.major}.${v.minor}`;
};

/** kubernetes.repo as the install guide writes it for a minor, or for the site mirror. */
export function repoFileFor(layout: RepositoryLayout, version: string): string {
  const base = layout === 'per-minor' ? `${PKGS_K8S_IO}/core:/stable:/v${minorOf(version)}/rpm/` : LOCAL_MIRROR;
  return [
    '[kubernetes]',
    'name=Kubernetes',
    `baseurl=${base}`,
    'enabled=1',
    'gpgcheck=1',
    `gpgkey=${base}repodata/repomd.xml.key`,
    `exclude=${GUIDE_EXCLUDE.join(' ')}`,
    '',
  ].join('\n');
}

/** rpm versions (`1.32.4-150500.1.1`) the archive serves at `baseurl`; undefined: 404. */
export function rpmArchiveOffers(
  archive: readonly string[],
  baseurl: string,
  others: readonly OtherRepository[] = [],
): string[] | undefined {
  const base = repositoryKey(baseurl);
  const minor = /^https:\/\/pkgs\.k8s\.io\/core:\/stable:\/v(\d+\.\d+)\/rpm\/$/.exec(base)?.[1];
  const versions = base === LOCAL_MIRROR ? archive : minor ? archive.filter((v) => minorOf(v) === minor) : [];
  if (versions.length) return [...new Set(versions.map(toRpmVersion))];
  // Another repository the description names: served (none of the Kubernetes packages) or 404.
  return others.some((o) => o.served && repositoryKey(o.url) === base) ? [] : undefined;
}

/** One section of a .repo file, as dnf reads it. */
export interface RepoSection {
  id: string;
  file: string;
  baseurl: string | undefined;
  enabled: boolean;
  /** `exclude=` / `excludepkgs=`: package name globs, space or comma separated. */
  exclude: string[];
  /** `skip_if_unavailable=` of the section, when set. */
  skipIfUnavailable?: boolean;
}

/** The sections of a .repo file, or dnf's complaint about a line it cannot parse. */
export function parseRepoFile(file: string, text: string): RepoSection[] | string {
  const sections: RepoSection[] = [];
  let current: RepoSection | undefined;
  for (const [i, raw] of text.split('\n').entries()) {
    const line = raw.trim();
    if (line === '' || line.startsWith('#') || line.startsWith(';')) continue;
    const head = /^\[([^\]]+)\]$/.exec(line);
    if (head) {
      current = { id: head[1]!.trim(), file, baseurl: undefined, enabled: true, exclude: [] };
      sections.push(current);
      continue;
    }
    const kv = /^([A-Za-z_]+)\s*=\s*(.*)$/.exec(line);
    if (!kv || !current) return `Error: Parsing file '${file}' failed: Parsing file '${file}' failed: bad line ${i + 1}: ${raw}`;
    const [, key = '', value = ''] = kv;
    if (key === 'baseurl') current.baseurl = value.split(/[\s,]+/)[0];
    else if (key === 'enabled') current.enabled = !/^(0|false|no|off)$/i.test(value);
    else if (key === 'exclude' || key === 'excludepkgs') current.exclude.push(...value.split(/[\s,]+/).filter(Boolean));
    else if (key === 'skip_if_unavailable') current.skipIfUnavailable = /^(1|true|yes|on)$/i.test(value);
  }
  return sections;
}

/** dnf's fnmatch of package names and specs: `*` any run, `?` one character, `[…]` a class. */
export function globMatches(glob: string, text: string): boolean {
  const body = glob
    .replace(/[.+^${}()|\\]/g, '\\$&')
    .replace(/\*/g, '.*')
    .replace(/\?/g, '.');
  return new RegExp(`^${body}$`).test(text);
}
