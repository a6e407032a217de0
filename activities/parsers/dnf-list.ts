// dnf 4's `dnf list --showduplicates <pkg>...`: sections headed "Installed Packages" and "Available
// Packages", one row per package, `kubeadm.x86_64   1.33.7-150500.1.1   kubernetes` (a long name
// wraps its row onto the next line); and `rpm -q --qf '%{NAME} %{VERSION}-%{RELEASE}\n'`.
import { comparePackageVersions, upstreamVersion, type MadisonEntry } from './madison.js';

/** The Available section's rows as madison entries (the repository id as the source), newest first. */
export function parseDnfList(text: string): MadisonEntry[] {
  const entries: MadisonEntry[] = [];
  let available = false;
  const words = text.split('\n').reduce<string[][]>((rows, line) => {
    if (/^(Installed|Available|Extra|Obsoleting|Recently Added|Upgraded) Packages\s*$/.test(line)) {
      rows.push([line.trim()]);
      return rows;
    }
    const cells = line.trim().split(/\s+/).filter(Boolean);
    const last = rows.at(-1);
    // A row dnf wrapped: the name alone on one line, version and repository on the next.
    if (last && last.length === 1 && !/Packages$/.test(last[0] as string)) last.push(...cells);
    else if (cells.length) rows.push(cells);
    return rows;
  }, []);
  for (const row of words) {
    if (row.length === 1 && /Packages$/.test(row[0] as string)) {
      available = row[0] === 'Available Packages';
      continue;
    }
    if (!available || row.length !== 3) continue;
    const [nameArch = '', packageVersion = '', repo = ''] = row;
    const name = nameArch.replace(/\.[^.]+$/, '');
    const version = upstreamVersion(packageVersion);
    if (!/^[a-z0-9][a-z0-9+._-]*$/.test(name) || version === undefined) continue;
    entries.push({ package: name, packageVersion, version, source: repo.replace(/^@/, '') });
  }
  return entries.sort((a, b) => comparePackageVersions(b.packageVersion, a.packageVersion) || a.package.localeCompare(b.package));
}

/** `rpm -q --qf '%{NAME} %{VERSION}-%{RELEASE}\n' …`: installed package → `1.33.7-150500.1.1`; "not installed" lines skipped. */
export function parseRpmQuery(text: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const line of text.split('\n')) {
    const m = /^([a-z0-9][a-z0-9+._-]*) (\S+-\S+)$/.exec(line.trim());
    if (m) out[m[1] as string] = m[2] as string;
  }
  return out;
}

/** The query format parseRpmQuery reads. */
export const RPM_QUERY_FORMAT = '%{NAME} %{VERSION}-%{RELEASE}\\n';
