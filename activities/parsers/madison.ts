// `apt-cache madison <pkg>...`: one line per package version and source,
// `   kubeadm | 1.33.7-1.1 | https://pkgs.k8s.io/core:/stable:/v1.33/deb  Packages`.

export interface MadisonEntry {
  package: string;
  /** The Debian version to install, `1.33.7-1.1`. */
  packageVersion: string;
  /** The Kubernetes version it carries, `1.33.7` (upstream part, epoch and revision dropped). */
  version: string;
  source: string;
}

const UPSTREAM = /^(?:\d+:)?(\d+\.\d+\.\d+(?:-(?:alpha|beta|rc)\.\d+)?)(?:-[0-9A-Za-z.+~]+)?$/;

/** The Kubernetes version in a Debian version (`1:1.33.7-1.1` → `1.33.7`), or undefined. */
export function upstreamVersion(packageVersion: string): string | undefined {
  return UPSTREAM.exec(packageVersion)?.[1];
}

const numeric = (text: string): number[] =>
  text
    .split(/[^0-9]+/)
    .filter(Boolean)
    .map(Number);

function compareNumbers(a: number[], b: number[]): number {
  for (let i = 0; i < Math.max(a.length, b.length); i++) {
    const d = (a[i] ?? -1) - (b[i] ?? -1);
    if (d !== 0) return d;
  }
  return 0;
}

/** Orders Debian versions of Kubernetes packages: by Kubernetes version, then by revision (`-2.1` after `-1.1`). */
export function comparePackageVersions(a: string, b: string): number {
  const va = upstreamVersion(a) ?? a;
  const vb = upstreamVersion(b) ?? b;
  const [baseA = '', preA] = va.split('-', 2);
  const [baseB = '', preB] = vb.split('-', 2);
  return (
    compareNumbers(numeric(baseA), numeric(baseB)) ||
    (preA === preB
      ? 0
      : preA === undefined
        ? 1
        : preB === undefined
          ? -1
          : compareNumbers(numeric(preA), numeric(preB)) || preA.localeCompare(preB)) ||
    compareNumbers(numeric(a.slice(a.indexOf(va) + va.length)), numeric(b.slice(b.indexOf(vb) + vb.length)))
  );
}

/** Every well-formed line, newest version first; lines that are not madison rows are skipped. */
export function parseMadison(text: string): MadisonEntry[] {
  const entries: MadisonEntry[] = [];
  for (const line of text.split('\n')) {
    const cells = line.split('|').map((c) => c.trim());
    if (cells.length !== 3) continue;
    const [pkg = '', packageVersion = '', source = ''] = cells;
    const version = upstreamVersion(packageVersion);
    if (!/^[a-z0-9][a-z0-9+.-]*$/.test(pkg) || version === undefined) continue;
    entries.push({ package: pkg, packageVersion, version, source: source.replace(/\s+Packages$/, '') });
  }
  return entries.sort((a, b) => comparePackageVersions(b.packageVersion, a.packageVersion) || a.package.localeCompare(b.package));
}

/** The Debian version of `pkg` that carries Kubernetes `version` (the newest revision), or undefined. */
export function packageVersionFor(entries: readonly MadisonEntry[], pkg: string, version: string): string | undefined {
  return entries.find((e) => e.package === pkg && e.version === version)?.packageVersion;
}
