// dpkg on a simulated host: a package changes in two steps, unpack then configure, as on a real one,
// and both go to /var/log/dpkg.log in dpkg's own format. A reboot between the two leaves the package
// unpacked but not configured (HostState.unconfigured) until `dpkg --configure -a`. The log is the
// evidence tests use for "no package installed twice": each version is unpacked and configured once.
import { appendFileSync, existsSync, mkdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { hostDir, type HostStore, type PackageName } from './host-state.js';

export const DPKG_LOG = '/var/log/dpkg.log';

export interface PackageChange {
  pkg: PackageName;
  from: string;
  to: string;
}

/** `2025-01-31 10:00:00`, as dpkg stamps its log. */
const stamp = (d = new Date()): string =>
  d
    .toISOString()
    .replace('T', ' ')
    .replace(/\.\d+Z$/, '');

function log(store: HostStore, lines: string[]): void {
  const path = store.hostPath(DPKG_LOG);
  mkdirSync(dirname(path), { recursive: true });
  const at = stamp();
  appendFileSync(path, lines.map((l) => `${at} ${l}\n`).join(''));
}

/** Unpacks each change: the new files are in place and the status file records the new version, not yet configured. */
export function unpackPackages(store: HostStore, changes: readonly PackageChange[]): void {
  if (changes.length === 0) return;
  log(store, [
    'startup archives unpack',
    ...changes.flatMap((c) => [
      `upgrade ${c.pkg}:amd64 ${c.from} ${c.to}`,
      `status half-configured ${c.pkg}:amd64 ${c.from}`,
      `status unpacked ${c.pkg}:amd64 ${c.to}`,
    ]),
  ]);
  store.update((s) => {
    for (const c of changes) s.packages[c.pkg] = c.to;
    s.unconfigured = [...new Set([...(s.unconfigured ?? []), ...changes.map((c) => c.pkg)])];
  });
}

/** Configures the named packages, or every unconfigured one; returns those it configured. */
export function configurePackages(store: HostStore, only?: readonly PackageName[]): PackageName[] {
  const pending = (store.state.unconfigured ?? []).filter((p) => !only || only.includes(p));
  if (pending.length === 0) return [];
  log(store, [
    'startup packages configure',
    ...pending.flatMap((p) => [
      `configure ${p}:amd64 ${store.state.packages[p]} <none>`,
      `status half-configured ${p}:amd64 ${store.state.packages[p]}`,
      `status installed ${p}:amd64 ${store.state.packages[p]}`,
    ]),
  ]);
  store.update((s) => {
    const left = (s.unconfigured ?? []).filter((p) => !pending.includes(p));
    if (left.length) s.unconfigured = left;
    else delete s.unconfigured;
  });
  return pending;
}

/** The lines of a host's dpkg.log (none before its first package change), read from the state dir. */
export function readDpkgLog(stateDir: string, host: string): string[] {
  const path = join(hostDir(stateDir, host), 'root', DPKG_LOG);
  return existsSync(path)
    ? readFileSync(path, 'utf8')
        .split('\n')
        .filter((l) => l !== '')
    : [];
}

/** How many times each `package version` was unpacked and configured, from dpkg.log lines. */
export function packageInstallCounts(lines: readonly string[]): Record<string, { unpacked: number; configured: number }> {
  const counts: Record<string, { unpacked: number; configured: number }> = {};
  const at = (pkg: string, version: string) => (counts[`${pkg.replace(/:.*$/, '')} ${version}`] ??= { unpacked: 0, configured: 0 });
  for (const line of lines) {
    const [, , action, pkg, a, b] = line.split(' ');
    if (action === 'upgrade' && pkg && b) at(pkg, b).unpacked++;
    else if (action === 'configure' && pkg && a) at(pkg, a).configured++;
  }
  return counts;
}
