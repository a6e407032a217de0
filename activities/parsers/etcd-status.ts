// What `etcdctl member list -w json` and `etcdctl endpoint status --cluster -w json` print, read into
// the rules' shapes (rules/etcd-patch.ts). Member ids are uint64: JSON numbers past 2^53 would be
// rounded by JSON.parse, so they are quoted before parsing and kept as decimal strings. An endpoint
// that did not answer is on stderr (`Failed to get the status of endpoint URL (reason)`), not in the JSON.
import type { EtcdEndpointStatus, EtcdMemberEntry } from '../../rules/index.js';

const quoteIds = (text: string): string => text.replace(/("(?:ID|member_id|leader|cluster_id)"\s*:\s*)(\d+)/g, '$1"$2"');

function parseJson(text: string): unknown {
  try {
    return JSON.parse(quoteIds(text.trim()));
  } catch {
    return undefined;
  }
}

const str = (v: unknown): string | undefined => (typeof v === 'string' ? v : undefined);

/** The members of `member list -w json`, or undefined when it is not that output. */
export function parseMemberList(stdout: string): EtcdMemberEntry[] | undefined {
  const doc = parseJson(stdout) as { members?: unknown } | undefined;
  if (!doc || !Array.isArray(doc.members)) return undefined;
  const out: EtcdMemberEntry[] = [];
  for (const m of doc.members as Record<string, unknown>[]) {
    const id = str(m?.ID);
    if (id === undefined) return undefined;
    out.push({ id, name: str(m.name) ?? '' });
  }
  return out;
}

/** Every endpoint's status of `endpoint status --cluster -w json`, and the endpoints stderr says failed. */
export function parseEndpointStatus(stdout: string, stderr: string): EtcdEndpointStatus[] | undefined {
  const doc = stdout.trim() === '' ? [] : parseJson(stdout);
  if (!Array.isArray(doc)) return undefined;
  const out: EtcdEndpointStatus[] = [];
  for (const e of doc as { Endpoint?: unknown; Status?: Record<string, unknown> }[]) {
    const s = e?.Status ?? {};
    const header = (s.header ?? {}) as Record<string, unknown>;
    const errors = Array.isArray(s.errors) ? s.errors.filter((x): x is string => typeof x === 'string') : [];
    const memberId = str(header.member_id);
    const version = str(s.version);
    const leader = str(s.leader);
    out.push({
      endpoint: str(e?.Endpoint) ?? '',
      ...(memberId ? { memberId } : {}),
      ...(version ? { version } : {}),
      ...(leader ? { leader } : {}),
      ...(errors.length > 0 ? { errors } : {}),
    });
  }
  for (const m of stderr.matchAll(/Failed to get the status of endpoint (\S+) \((.{0,200})\)/g))
    out.push({ endpoint: m[1] ?? '', errors: [m[2] ?? 'no answer'] });
  return out;
}
