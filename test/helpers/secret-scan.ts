// The secret scanner for workflow histories: pure (no I/O), so a unit test can plant secrets in each
// kind of field and see it fail. It walks every event of a history in the temporal CLI's JSON form
// (historyToJSON), decodes every payload it meets (inputs, results, failure details, memos, search
// attributes, heartbeat details, signal/update arguments, marker data, user metadata), and judges
// every string: the payloads' decoded JSON (keys too), failure messages, stack traces and causes.
//
// Two kinds of finding: a pattern that means secret material whatever its value (a private-key PEM
// header, a kubeconfig's client-key-data, a bearer token, `password: …`), and an actual secret of the
// test world (the simulations' private keys and kubeconfig client keys), recognised by hashes of
// fixed-length windows of it, so the archive that feeds the scanner never holds a secret itself.
import { createHash } from 'node:crypto';

/** Window length and stride of the world-secret fingerprints: any leak of ≥ WINDOW + STRIDE - 1 characters is caught. */
export const WINDOW = 32;
export const STRIDE = 16;

/** A base64-ish run long enough to hold a window (PEM bodies, base64 DER, OpenSSH key blobs, base64url). */
const RUN = new RegExp(`[A-Za-z0-9+/_-]{${WINDOW},}`, 'g');

const windowHash = (w: string): string => createHash('sha256').update(`skewless-secret-window:${w}`).digest('hex').slice(0, 16);

/** The fingerprints of one secret text: hashes of its windows at every STRIDE-th position of each run. */
export function fingerprintSecret(secret: string): string[] {
  const out = new Set<string>();
  for (const [run] of secret.matchAll(RUN)) {
    for (let i = 0; i + WINDOW <= run.length; i += STRIDE) out.add(windowHash(run.slice(i, i + WINDOW)));
    out.add(windowHash(run.slice(run.length - WINDOW))); // the tail, so a leak of just the end is caught too
  }
  return [...out];
}

/**
 * The secret parts of a credentials file (private key, kubeconfig, token file): each private-key PEM
 * block's body, each kubeconfig `client-key-data` (as written and decoded), `token`/`password` values.
 * Public material (certificates, public keys) is not a secret and is left out.
 */
export function secretMaterial(text: string): string[] {
  const out: string[] = [];
  for (const m of text.matchAll(/-----BEGIN ([A-Z0-9 ]*PRIVATE KEY)-----([\s\S]*?)-----END \1-----/g)) {
    const pemBody = m[2] as string;
    out.push(pemBody, pemBody.replace(/\s+/g, '')); // line by line, and joined (a leak that lost its newlines)
  }
  for (const m of text.matchAll(/^\s*client-key-data:\s*["']?([A-Za-z0-9+/=]+)/gm)) {
    const data = m[1] as string;
    out.push(data);
    out.push(...secretMaterial(Buffer.from(data, 'base64').toString('utf8')));
  }
  for (const m of text.matchAll(/^\s*(?:token|password):\s*["']?([^\s"']{8,})/gm)) out.push(m[1] as string);
  return out.filter((s) => s.replace(/\s/g, '').length >= WINDOW);
}

export interface Rule {
  name: string;
  test: RegExp;
}

/** Patterns that mean a secret whatever its value. Each names what leaked, never the value. */
export const RULES: Rule[] = [
  { name: 'private-key PEM block', test: /-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----/ },
  { name: 'OpenSSH private-key body', test: /b3BlbnNzaC1rZXktdjE/ }, // base64 of "openssh-key-v1", the header of every OpenSSH private key
  { name: 'PuTTY private key', test: /PuTTY-User-Key-File-\d/ },
  { name: 'kubeconfig client-key-data', test: /client-key-data/i },
  { name: 'kubeconfig client-certificate-data', test: /client-certificate-data/i },
  { name: 'kubeconfig token', test: /(?:^|[\s{,"'])token\s*["']?\s*[:=]\s*["']?[A-Za-z0-9._~+/-]{8,}/im },
  { name: 'bearer token', test: /\bbearer\s+[A-Za-z0-9._~+/-]{16,}/i },
  { name: 'password', test: /\bpass(?:word|wd)\s*["']?\s*[:=]\s*["']?[^\s"',}]{1,}/i },
];

/** Keys of decoded payload objects whose non-empty string values are secrets by name. */
const SECRET_KEY =
  /^(?:token|bearerToken|password|passwd|secret|clientKey|client-key|clientKeyData|privateKey|private-key|apiKey|api-key)$/i;

export interface Finding {
  workflowId: string;
  runId: string;
  eventId: string;
  eventType: string;
  /** Where in the event: `activityTaskFailedEventAttributes.failure.cause.stackTrace`, `…input.payloads[0]<json>.node`. */
  field: string;
  rule: string;
}

export interface ScanStats {
  events: number;
  payloads: number;
  /** Payloads the scanner could not read (binary/encrypted): counted, so an archive of them all is not a clean bill. */
  encrypted: number;
  strings: number;
}

export interface HistoryToScan {
  workflowId: string;
  runId: string;
  /** historyToJSON's form: `{ events: [...] }`. */
  history: { events?: unknown[] };
}

const b64 = (s: unknown): Buffer => Buffer.from(typeof s === 'string' ? s : '', 'base64');

function isPayload(v: Record<string, unknown>): v is { metadata: Record<string, string>; data?: string } {
  const m = v.metadata;
  return (
    typeof m === 'object' &&
    m !== null &&
    typeof (m as Record<string, unknown>).encoding === 'string' &&
    (v.data === undefined || typeof v.data === 'string')
  );
}

/** Scans one string: the rule names and world-secret sources it matches. */
export function scanText(text: string, known: ReadonlyMap<string, string> = new Map()): string[] {
  const hits = RULES.filter((r) => r.test.test(text)).map((r) => r.name);
  if (known.size > 0) {
    for (const [run] of text.matchAll(RUN)) {
      for (let i = 0; i + WINDOW <= run.length; i++) {
        const source = known.get(windowHash(run.slice(i, i + WINDOW)));
        if (source) {
          hits.push(`secret of the test world (${source})`);
          return hits;
        }
      }
    }
  }
  return hits;
}

/** Scans every event of one history. */
export function scanHistory(h: HistoryToScan, known: ReadonlyMap<string, string> = new Map()): { findings: Finding[]; stats: ScanStats } {
  const findings: Finding[] = [];
  const stats: ScanStats = { events: 0, payloads: 0, encrypted: 0, strings: 0 };
  for (const event of h.history.events ?? []) {
    if (typeof event !== 'object' || event === null) continue;
    stats.events++;
    const e = event as Record<string, unknown>;
    const where = { workflowId: h.workflowId, runId: h.runId, eventId: String(e.eventId ?? '?'), eventType: String(e.eventType ?? '?') };
    const report = (field: string, text: string) => {
      stats.strings++;
      for (const rule of scanText(text, known)) findings.push({ ...where, field, rule });
    };
    const walk = (v: unknown, path: string, decoded: boolean): void => {
      if (typeof v === 'string') return report(path, v);
      if (Array.isArray(v)) return v.forEach((x, i) => walk(x, `${path}[${i}]`, decoded));
      if (typeof v !== 'object' || v === null) return;
      const o = v as Record<string, unknown>;
      if (!decoded && isPayload(o)) return payload(o, path);
      for (const [key, value] of Object.entries(o)) {
        const at = path ? `${path}.${key}` : key;
        if (decoded) {
          report(`${at}<key>`, key);
          if (SECRET_KEY.test(key) && typeof value === 'string' && value !== '')
            findings.push({ ...where, field: at, rule: `value of a "${key}" key` });
        }
        walk(value, at, decoded);
      }
    };
    const payload = (p: { metadata: Record<string, string>; data?: string }, path: string): void => {
      stats.payloads++;
      const encoding = b64(p.metadata.encoding).toString('utf8');
      for (const [key, value] of Object.entries(p.metadata)) report(`${path}.metadata.${key}`, b64(value).toString('utf8'));
      const data = b64(p.data);
      if (encoding === 'binary/encrypted') {
        stats.encrypted++;
        return;
      }
      if (encoding === 'binary/null' || data.length === 0) return;
      if (encoding === 'json/plain' || encoding === 'json/protobuf') {
        let value: unknown;
        try {
          value = JSON.parse(data.toString('utf8'));
        } catch {
          return report(`${path}<data>`, data.toString('utf8'));
        }
        return walk(value, `${path}<json>`, true);
      }
      // binary/plain, binary/protobuf, anything else: read the bytes as text, both ways a secret could show.
      report(`${path}<bytes>`, data.toString('latin1'));
    };
    walk(e, '', false);
  }
  return { findings, stats };
}

/** One line per finding: the workflow, run, event and field, and what leaked (never the value). */
export const describeFinding = (f: Finding): string =>
  `${f.workflowId} (run ${f.runId}) event ${f.eventId} ${f.eventType}: ${f.field}: ${f.rule}`;
