// What apt on a host sees of its package repositories: the sources files and the lists directory
// (both movable with `-o Dir::…`, as a probe of another minor does without touching the node's
// own), the versions the lists offer, and `apt-get update` filling the lists from the archive.
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { posix } from 'node:path';
import {
  archiveOffers,
  comparePackageVersions,
  listsFileNames,
  packagesIndex,
  parseSources,
  sortNewestFirst,
  sourceLabel,
  versionsInIndex,
  type SourceEntry,
} from '../apt-archive.js';
import type { HostMachine } from '../host-machine.js';
import { toPackageVersion } from '../host-state.js';

export { comparePackageVersions } from '../apt-archive.js';

/** apt's configuration options a command line set with `-o Key=Value` (keys ignore case). */
export type AptOptions = ReadonlyMap<string, string>;

/** Where apt reads its sources and keeps its lists. */
export interface AptDirs {
  sourceList: string;
  /** undefined: `Dir::Etc::SourceParts=-` (none). */
  sourceParts: string | undefined;
  lists: string;
  /**
   * APT::Get::List-Cleanup (default on): an update removes the lists of sources it did not read.
   * apt.conf(5): "The only reason to turn it off is if you frequently change your sources list".
   */
  listCleanup: boolean;
}

/** apt's FindFile: a value not starting with `/` is relative to its parent directory (`Dir::Etc` is /etc/apt/). */
const underDir = (parent: string, value: string): string => (value.startsWith('/') ? value : posix.join(parent, value));

export function aptDirs(options: AptOptions): AptDirs {
  const parts = options.get('dir::etc::sourceparts') ?? 'sources.list.d';
  const cleanup = options.get('apt::get::list-cleanup');
  return {
    sourceList: underDir('/etc/apt', options.get('dir::etc::sourcelist') ?? 'sources.list'),
    sourceParts: parts === '-' || parts === '/dev/null' || parts === '' ? undefined : underDir('/etc/apt', parts),
    lists: underDir('/var/lib/apt', options.get('dir::state::lists') ?? 'lists'),
    listCleanup: cleanup === undefined || !/^(0|false|no|off)$/i.test(cleanup),
  };
}

/** Records `-o Key=Value`; false when the setting is not of that form. */
export function addAptOption(options: Map<string, string>, setting: string | undefined): boolean {
  const m = /^([^=]+)=(.*)$/.exec(setting ?? '');
  if (!m) return false;
  options.set(m[1]!.toLowerCase(), m[2]!);
  return true;
}

const isFile = (path: string): boolean => statSync(path, { throwIfNoEntry: false })?.isFile() === true;

/** Every configured `deb` source, or apt's error lines when a sources file cannot be read or parsed. */
export function readSources(machine: HostMachine, dirs: AptDirs, asRoot: boolean): SourceEntry[] | string {
  const files: string[] = [];
  if (isFile(machine.hostPath(dirs.sourceList))) files.push(dirs.sourceList);
  if (dirs.sourceParts && existsSync(machine.hostPath(dirs.sourceParts))) {
    for (const name of readdirSync(machine.hostPath(dirs.sourceParts)).sort()) {
      // apt reads *.list here and ignores other names (with a notice this model leaves out).
      if (name.endsWith('.list')) files.push(posix.join(dirs.sourceParts, name));
    }
  }
  const entries: SourceEntry[] = [];
  for (const file of files) {
    if (!machine.mayRead(file, asRoot))
      return `E: Could not open file ${file} - open (13: Permission denied)\nE: The list of sources could not be read.`;
    const parsed = parseSources(file, readFileSync(machine.hostPath(file), 'utf8'));
    if (typeof parsed === 'string') return `${parsed}\nE: The list of sources could not be read.`;
    entries.push(...parsed);
  }
  return entries;
}

export interface Offer {
  version: string;
  entry: SourceEntry;
}

/** What the lists offer of `name` through the configured sources, newest first. */
export function offers(machine: HostMachine, dirs: AptDirs, sources: readonly SourceEntry[], name: string): Offer[] {
  const found: Offer[] = [];
  for (const entry of sources) {
    for (const list of listsFileNames(entry)) {
      const file = machine.hostPath(posix.join(dirs.lists, list));
      if (!isFile(file)) continue;
      for (const version of versionsInIndex(readFileSync(file, 'utf8'), name)) {
        if (!found.some((o) => o.version === version)) found.push({ version, entry });
      }
    }
  }
  return found.sort((a, b) => comparePackageVersions(b.version, a.version));
}

/** The offered versions of `name` (the default dirs and sources: what apt-get install sees). */
export function offeredVersions(machine: HostMachine, name: string, dirs = aptDirs(new Map())): string[] {
  const sources = readSources(machine, dirs, true);
  return typeof sources === 'string' ? [] : offers(machine, dirs, sources, name).map((o) => o.version);
}

/** Every version the archive has released, newest first (what `kubeadm upgrade plan` learns from dl.k8s.io). */
export function releasedVersions(machine: HostMachine): string[] {
  return sortNewestFirst([...new Set(machine.config.repository.map(toPackageVersion))]);
}

/** apt matches `pkg=1.33.7-*` with fnmatch: `*` any run, `?` one character. */
function globToRegExp(glob: string): RegExp {
  const body = glob
    .replace(/[.+^${}()|[\]\\]/g, '\\$&')
    .replace(/\*/g, '.*')
    .replace(/\?/g, '.');
  return new RegExp(`^${body}$`);
}

/** The newest offered version of `name` matching an exact version or a glob, or undefined. */
export function resolveVersion(machine: HostMachine, name: string, wanted: string): string | undefined {
  const offered = offeredVersions(machine, name);
  if (!/[*?]/.test(wanted)) return offered.find((v) => v === wanted);
  const re = globToRegExp(wanted);
  return offered.find((v) => re.test(v));
}

/** The version `apt-get install pkg` would pick: the newest offered if newer, else what is installed. */
export function candidateVersion(machine: HostMachine, name: string, installed: string): string {
  const newest = offeredVersions(machine, name)[0];
  return newest !== undefined && comparePackageVersions(newest, installed) > 0 ? newest : installed;
}

export interface UpdateResult {
  lines: string[];
  /** `E:`/`N:` lines of sources that failed (a 404), one `E:` per source: the update then exits 100. */
  errors: string[];
}

/**
 * `apt-get update`: each source's index fetched from the archive into the lists directory, and
 * (APT::Get::List-Cleanup, on unless turned off) the lists of sources it did not read removed. A
 * source the archive does not have answers 404, keeps no lists and gets its own `E:` line, as apt
 * prints it: `E: The repository 'URI SUITE Release' does not have a Release file.`; the other
 * sources are fetched all the same.
 */
export function updateLists(machine: HostMachine, dirs: AptDirs, sources: readonly SourceEntry[]): UpdateResult {
  const listsDir = machine.hostPath(dirs.lists);
  mkdirSync(listsDir, { recursive: true });
  const lines: string[] = [];
  const errors: string[] = [];
  const kept = new Set<string>();
  let item = 0;
  for (const entry of sources) {
    const label = sourceLabel(entry);
    const versions = archiveOffers(machine.config.repository, entry.uri, machine.config.otherRepositories);
    if (!versions) {
      lines.push(`Ign:${++item} ${label}InRelease`, `Err:${++item} ${label}Release`, '  404  Not Found [IP: 34.107.204.206 443]');
      errors.push(`E: The repository '${label}Release' does not have a Release file.`);
      continue;
    }
    const index = packagesIndex(versions);
    let fresh = false;
    for (const name of listsFileNames(entry)) {
      kept.add(name);
      const file = posix.join(listsDir, name);
      if (isFile(file) && readFileSync(file, 'utf8') === index) continue;
      fresh = true;
      writeFileSync(file, index);
    }
    lines.push(fresh ? `Get:${++item} ${label}InRelease [1,189 B]` : `Hit:${++item} ${label}InRelease`);
  }
  if (dirs.listCleanup) {
    for (const name of readdirSync(listsDir)) if (name.endsWith('_Packages') && !kept.has(name)) rmSync(posix.join(listsDir, name));
  }
  lines.push('Reading package lists...');
  if (errors.length)
    errors.push(
      "N: Updating from such a repository can't be done securely, and is therefore disabled by default.",
      'N: See apt-secure(8) manpage for repository creation and user configuration details.',
    );
  return { lines, errors };
}
