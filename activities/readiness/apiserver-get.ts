import http from 'node:http';
import https from 'node:https';
import { KubeConfig } from '@kubernetes/client-node';
import type { ClusterConfig } from '../cluster-config.js';
import { kubeFailure } from '../errors.js';

const TIMEOUT_MS = 15_000;
const MAX_BODY = 64 * 1024 * 1024;

/**
 * GET `path` of the kubeconfig's server with its own credentials and TLS settings, like `kubectl get
 * --raw PATH`, on a connection of its own (no keep-alive): behind a load balancer each call may reach
 * another apiserver. 401/403 are typed (Forbidden: RBAC, errors.ts); other statuses and network
 * errors are plain errors naming the path and the status, never the body or a credential.
 */
export async function apiserverGet(config: ClusterConfig, path: string, signal?: AbortSignal): Promise<string> {
  const kc = new KubeConfig();
  kc.loadFromFile(config.kubeconfig);
  if (config.context) kc.setCurrentContext(config.context);
  const server = kc.getCurrentCluster()?.server;
  if (!server) throw new Error('the kubeconfig names no cluster server');
  const url = new URL(path, server);
  const options: https.RequestOptions = {};
  await kc.applyToHTTPSOptions(options);
  const client = url.protocol === 'http:' ? http : https;
  return new Promise<string>((resolve, reject) => {
    const req = client.request(
      url,
      { ...options, agent: false, method: 'GET', timeout: TIMEOUT_MS, ...(signal ? { signal } : {}) },
      (res) => {
        const chunks: Buffer[] = [];
        let size = 0;
        res.on('data', (chunk: Buffer) => {
          size += chunk.length;
          if (size <= MAX_BODY) chunks.push(chunk);
        });
        res.on('end', () => {
          const body = Buffer.concat(chunks).toString('utf8');
          const status = res.statusCode ?? 0;
          if (status === 401 || status === 403) return reject(kubeFailure({ code: status, body }, `GET ${path}`));
          if (status !== 200) return reject(new Error(`GET ${path} answered HTTP ${status}`));
          if (size > MAX_BODY) return reject(new Error(`GET ${path}: the answer is over ${MAX_BODY / 1024 / 1024} MiB`));
          resolve(body);
        });
        res.on('error', reject);
      },
    );
    req.on('timeout', () => req.destroy(new Error(`GET ${path}: no answer within ${TIMEOUT_MS / 1000} s`)));
    req.on('error', reject);
    req.end();
  });
}
