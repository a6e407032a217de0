// The package managers' caches of downloaded archives, as files in the host root: what
// `apt-get install --download-only` and `dnf install --downloadonly` leave behind, and what a later
// install finds there instead of fetching it again.
//   apt: archives go to Dir::Cache::archives, /var/cache/apt/archives/<name>_<version>_<arch>.deb, and
//   apt-get keeps them after an install (apt-get(8): "clean clears out the local repository of retrieved
//   package files"; only `apt`, not `apt-get`, drops them, Binary::apt::APT::Keep-Downloaded-Packages).
//   dnf: packages go to the repository's cache directory, /var/cache/dnf/<repoid>-<hash>/packages/, and
//   with keepcache=0 (dnf.conf(5)'s default) "downloaded packages will be removed after a successful
//   transaction", those of a --downloadonly run included. The hash part is left out of the model.
import { existsSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import type { PackageName } from './host-state.js';

interface CacheHost {
  hostPath(path: string): string;
}

export type ArchiveFormat = 'deb' | 'rpm';

export const archivePath = (format: ArchiveFormat, pkg: PackageName, version: string): string =>
  format === 'deb'
    ? `/var/cache/apt/archives/${pkg}_${version}_amd64.deb`
    : `/var/cache/dnf/kubernetes/packages/${pkg}-${version}.x86_64.rpm`;

/** Whether every archive of `changes` is in the cache already (then an install downloads nothing). */
export function allCached(host: CacheHost, format: ArchiveFormat, changes: readonly { pkg: PackageName; to: string }[]): boolean {
  return changes.every((c) => existsSync(host.hostPath(archivePath(format, c.pkg, c.to))));
}

/** The archives of `changes`, fetched into the cache. */
export function storeArchives(host: CacheHost, format: ArchiveFormat, changes: readonly { pkg: PackageName; to: string }[]): void {
  for (const c of changes) {
    const path = host.hostPath(archivePath(format, c.pkg, c.to));
    mkdirSync(dirname(path), { recursive: true });
    writeFileSync(path, `simulated ${format} archive of ${c.pkg} ${c.to}\n`);
  }
}

/** dnf's keepcache=0: the transaction's packages leave the cache once it succeeded. */
export function dropArchives(host: CacheHost, format: ArchiveFormat, changes: readonly { pkg: PackageName; to: string }[]): void {
  for (const c of changes) rmSync(host.hostPath(archivePath(format, c.pkg, c.to)), { force: true });
}
