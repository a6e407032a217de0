// `etcdutl snapshot status <file>` (or etcdctl's before 3.6) in its three layouts:
// -w json `{"hash":1582891171,"revision":8,"totalKey":7,"totalSize":24576,"version":"3.6.0"}`,
// -w table (a bordered table) and -w simple `5e5900a3, 8, 7, 25 kB, 3.6.0`.

export interface SnapshotStatus {
  /** The snapshot's hash as etcd computes it, 8 hex digits. */
  hash: string;
  revision: number;
  totalKeys: number;
  /** Exact bytes from JSON; from table/simple, the rounded human size converted back. */
  totalSizeBytes: number;
  /** The storage version (etcd ≥ 3.6 prints it), else undefined. */
  version?: string;
}

const UNITS: Record<string, number> = { B: 1, kB: 1e3, KB: 1e3, MB: 1e6, GB: 1e9, TB: 1e12, KiB: 1024, MiB: 1024 ** 2, GiB: 1024 ** 3 };

function humanBytes(text: string): number | undefined {
  const m = /^([\d.]+)\s*([A-Za-z]+)$/.exec(text.trim());
  const unit = m ? UNITS[m[2]!] : undefined;
  return m && unit ? Math.round(Number(m[1]) * unit) : undefined;
}

const count = (text: string | undefined): number | undefined =>
  text !== undefined && /^\d+$/.test(text.trim()) ? Number(text.trim()) : undefined;

function fromCells(cells: string[]): SnapshotStatus | undefined {
  const [hash, revision, keys, size, version] = cells.map((c) => c.trim());
  const r = count(revision);
  const k = count(keys);
  const s = size === undefined ? undefined : humanBytes(size);
  if (!hash || !/^[0-9a-f]{1,8}$/.test(hash) || r === undefined || k === undefined || s === undefined) return undefined;
  return { hash: hash.padStart(8, '0'), revision: r, totalKeys: k, totalSizeBytes: s, ...(version ? { version } : {}) };
}

/** The status, or undefined when `text` is none of the three layouts (a help text, an error). */
export function parseSnapshotStatus(text: string): SnapshotStatus | undefined {
  const trimmed = text.trim();
  if (trimmed.startsWith('{')) {
    try {
      const j = JSON.parse(trimmed) as Record<string, unknown>;
      const num = (v: unknown): number | undefined => (typeof v === 'number' && Number.isInteger(v) && v >= 0 ? v : undefined);
      const hash = num(j.hash);
      const revision = num(j.revision);
      const totalKeys = num(j.totalKey);
      const totalSizeBytes = num(j.totalSize);
      if (hash === undefined || revision === undefined || totalKeys === undefined || totalSizeBytes === undefined) return undefined;
      return {
        hash: hash.toString(16).padStart(8, '0'),
        revision,
        totalKeys,
        totalSizeBytes,
        ...(typeof j.version === 'string' ? { version: j.version } : {}),
      };
    } catch {
      return undefined;
    }
  }
  const lines = trimmed
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l !== '');
  if (lines[0]?.startsWith('+')) {
    const rows = lines.filter((l) => l.startsWith('|')).map((l) => l.slice(1, -1).split('|'));
    if (rows.length !== 2 || rows[0]?.[0]?.trim() !== 'HASH') return undefined;
    return fromCells(rows[1]!);
  }
  return lines.length === 1 ? fromCells(lines[0]!.split(',')) : undefined;
}
