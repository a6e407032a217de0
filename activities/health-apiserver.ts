import http from 'node:http';
import https from 'node:https';
import { KubeConfig } from '@kubernetes/client-node';
import type { ClusterConfig } from './cluster-config.js';
import { kubeFailure } from './errors.js';

export interface ReadyzResult {
  cluster: string;
  checked: 'GET /readyz?verbose';
  healthy: boolean;
  /** HTTP status, when the apiserver answered. */
  status?: number;
  /** Names of the readyz checks reported failing (`[-]etcd failed` → `etcd`). */
  failedChecks: string[];
  /** Why it is not healthy, in one line (no response body, no credentials). */
  error?: string;
}

const TIMEOUT_MS = 10_000;

/**
 * GET /readyz?verbose with the kubeconfig's own credentials and TLS settings, like `kubectl get
 * --raw /readyz?verbose`. The body only names checks, so the failing ones are safe to report.
 */
export async function readyz(config: ClusterConfig, signal?: AbortSignal): Promise<ReadyzResult> {
  const base: ReadyzResult = { cluster: config.name, checked: 'GET /readyz?verbose', healthy: false, failedChecks: [] };
  const kc = new KubeConfig();
  kc.loadFromFile(config.kubeconfig);
  if (config.context) kc.setCurrentContext(config.context);
  const server = kc.getCurrentCluster()?.server;
  if (!server) return { ...base, error: 'the kubeconfig names no cluster server' };
  const url = new URL('/readyz?verbose', server);
  const options: https.RequestOptions = {};
  await kc.applyToHTTPSOptions(options);
  const client = url.protocol === 'http:' ? http : https;
  return new Promise<ReadyzResult>((resolve, reject) => {
    const req = client.request(url, { ...options, method: 'GET', timeout: TIMEOUT_MS, ...(signal ? { signal } : {}) }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        if (body.length < 64_000) body += chunk;
      });
      res.on('end', () => {
        const failedChecks = [...body.matchAll(/^\[-\]([\w:./-]+) failed/gm)].map((m) => m[1] as string);
        const status = res.statusCode ?? 0;
        // Refused credentials or RBAC are not a health verdict: polling cannot help (Forbidden, errors.ts).
        if (status === 401 || status === 403) return reject(kubeFailure({ code: status, body }, 'GET /readyz?verbose'));
        const healthy = status === 200;
        resolve({
          ...base,
          healthy,
          status,
          failedChecks,
          ...(healthy
            ? {}
            : { error: `readyz answered HTTP ${status}${failedChecks.length ? `; failing: ${failedChecks.join(', ')}` : ''}` }),
        });
      });
      res.on('error', (err) => resolve({ ...base, error: `reading the readyz response: ${errorText(err)}` }));
    });
    req.on('timeout', () => req.destroy(new Error(`no answer within ${TIMEOUT_MS / 1000} s`)));
    req.on('error', (err) => {
      if (signal?.aborted)
        reject(signal.reason); // cancelled: not a health verdict
      else resolve({ ...base, error: `readyz request to ${url.host} failed: ${errorText(err)}` });
    });
    req.end();
  });
}

/** The error's code and first line: enough to act on, never a certificate or token. */
function errorText(err: Error & { code?: string }): string {
  const line = err.message.split('\n')[0] ?? '';
  return err.code && !line.includes(err.code) ? `${err.code}: ${line}` : line;
}
