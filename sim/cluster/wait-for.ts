import { request } from 'node:https';
import { request as httpRequest } from 'node:http';

/** Polls `check` until it returns true, failing with `what` and the time waited. */
export async function waitFor(what: string, check: () => Promise<boolean> | boolean, timeoutMs = 60_000, intervalMs = 200): Promise<void> {
  const start = Date.now();
  let lastError: unknown;
  for (;;) {
    try {
      if (await check()) return;
    } catch (err) {
      lastError = err;
    }
    if (Date.now() - start > timeoutMs) {
      const why = lastError instanceof Error ? `: ${lastError.message}` : '';
      throw new Error(`timed out after ${Math.round((Date.now() - start) / 1000)} s waiting for ${what}${why}`);
    }
    await new Promise((r) => setTimeout(r, intervalMs));
  }
}

export interface TlsOptions {
  ca?: Buffer;
  cert?: Buffer;
  key?: Buffer;
  rejectUnauthorized?: boolean;
}

/** GET a URL; resolves with status and body (never rejects on HTTP status). */
export function httpGet(url: string, tls: TlsOptions = {}): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const get = url.startsWith('https:') ? request : httpRequest;
    const req = get(url, { method: 'GET', timeout: 5000, ...tls }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c) => (body += c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('timeout', () => req.destroy(new Error(`GET ${url} timed out`)));
    req.on('error', reject);
    req.end();
  });
}
