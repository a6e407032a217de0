import type { ClusterConfig } from './cluster-config.js';

export interface ProbeResult {
  name: string;
  /** Scheme, host and path only: credentials and query strings stay in the worker's config. */
  target: string;
  expectStatus: number;
  status?: number;
  ok: boolean;
  /** Why it failed, in one line. */
  error?: string;
  elapsedMs: number;
}

/** Where a probe goes, without user info or query (they may hold a token). */
export function probeTarget(url: string): string {
  const u = new URL(url);
  return `${u.protocol}//${u.host}${u.pathname}`;
}

/**
 * A URL as fetch can send it: user info becomes a basic Authorization header (fetch refuses a URL
 * with credentials, and its error quotes the whole URL, password included).
 */
export function withBasicAuth(url: string): { url: string; headers: Record<string, string> } {
  const u = new URL(url);
  if (!u.username && !u.password) return { url: u.href, headers: {} };
  const credentials = `${decodeURIComponent(u.username)}:${decodeURIComponent(u.password)}`;
  u.username = '';
  u.password = '';
  return { url: u.href, headers: { authorization: `Basic ${Buffer.from(credentials).toString('base64')}` } };
}

/**
 * One user probe: GET with its own timeout, redirects not followed (the status asked for is the
 * probe's own), the body discarded.
 */
export async function runProbe(probe: ClusterConfig['probes'][number], signal?: AbortSignal): Promise<ProbeResult> {
  const started = Date.now();
  const base = { name: probe.name, target: probeTarget(probe.url), expectStatus: probe.expectStatus };
  const timeout = AbortSignal.timeout(probe.timeoutSeconds * 1000);
  try {
    const request = withBasicAuth(probe.url);
    const res = await fetch(request.url, {
      method: 'GET',
      headers: request.headers,
      redirect: 'manual',
      signal: signal ? AbortSignal.any([signal, timeout]) : timeout,
    });
    await res.body?.cancel();
    const ok = res.status === probe.expectStatus;
    return {
      ...base,
      status: res.status,
      ok,
      ...(ok ? {} : { error: `HTTP ${res.status}, expected ${probe.expectStatus}` }),
      elapsedMs: Date.now() - started,
    };
  } catch (err) {
    if (signal?.aborted) throw signal.reason; // cancelled: not a probe verdict
    const e = err as Error & { cause?: { code?: string; message?: string } };
    const error = timeout.aborted
      ? `no answer within ${probe.timeoutSeconds} s`
      : ((e.cause?.code ?? e.cause?.message ?? e.message).split('\n')[0] ?? 'request failed').replaceAll(probe.url, base.target);
    return { ...base, ok: false, error, elapsedMs: Date.now() - started };
  }
}
