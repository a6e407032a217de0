// The package sources a host has beside Kubernetes', as on any real host: Docker's apt line with its
// distribution and component, CRI-O's addon repository under pkgs.k8s.io, a company mirror; as
// files of /etc/apt/sources.list.d (apt) or /etc/yum.repos.d (dnf), each served or broken (404) as
// the description says. What apt and dnf do with them is apt-archive.ts's and rpm-archive.ts's.
import { posix } from 'node:path';
import { parseSources, type OtherRepository } from './apt-archive.js';
import { parseRepoFile, REPOS_DIR, type PackageManager } from './rpm-archive.js';

export const APT_SOURCE_PARTS = '/etc/apt/sources.list.d';

/** One extra source file: its name in the tool's directory, its text, and whether its repositories answer 404. */
export interface ExtraSource {
  /** A plain file name: `docker.list` (apt), `docker-ce.repo` (dnf). */
  file: string;
  text: string;
  /** Every repository the file names answers 404 (a stale or withdrawn repository); default false. */
  broken?: boolean;
}

/** Where the file lives on a host of `manager`. */
export const extraSourcePath = (manager: PackageManager, file: string): string =>
  posix.join(manager === 'dnf' ? REPOS_DIR : APT_SOURCE_PARTS, file);

/** The repository URLs a file names (apt: each `deb` line's URI; dnf: each section's baseurl), or the tool's complaint. */
export function repositoryUrls(manager: PackageManager, source: ExtraSource): string[] | string {
  const path = extraSourcePath(manager, source.file);
  if (manager === 'dnf') {
    const sections = parseRepoFile(path, source.text);
    return typeof sections === 'string' ? sections : sections.flatMap((s) => (s.baseurl ? [s.baseurl] : []));
  }
  const entries = parseSources(path, source.text);
  return typeof entries === 'string' ? entries : entries.map((e) => e.uri);
}

/** What the host's archive makes of its extra sources' repositories. */
export function otherRepositories(manager: PackageManager, sources: readonly ExtraSource[]): OtherRepository[] {
  return sources.flatMap((s) => {
    const urls = repositoryUrls(manager, s);
    return typeof urls === 'string' ? [] : urls.map((url) => ({ url, served: s.broken !== true }));
  });
}

const FILE_NAME = /^[A-Za-z0-9][A-Za-z0-9_.-]*$/;

/**
 * Why `source` cannot be a host's extra source file on `manager`, one line; undefined when it can.
 * The name must be what the tool reads (apt: `*.list`, dnf: `*.repo`) and not the Kubernetes file itself.
 */
export function extraSourceProblem(manager: PackageManager, source: ExtraSource): string | undefined {
  const ext = manager === 'dnf' ? '.repo' : '.list';
  const own = manager === 'dnf' ? 'kubernetes.repo' : 'kubernetes.list';
  if (typeof source.file !== 'string' || !FILE_NAME.test(source.file) || !source.file.endsWith(ext))
    return `file must be a file name ending in ${ext} (${manager} reads only those), got ${JSON.stringify(source.file)}`;
  if (source.file === own) return `file ${own} is the Kubernetes source the simulation writes itself`;
  if (typeof source.text !== 'string' || source.text.trim() === '') return "text must be the file's content";
  if (source.broken !== undefined && typeof source.broken !== 'boolean') return 'broken must be true or false';
  const urls = repositoryUrls(manager, source);
  if (typeof urls === 'string') return urls;
  if (urls.length === 0) return `text names no repository (${manager === 'dnf' ? 'a section with baseurl=' : 'a deb line'})`;
  return undefined;
}
