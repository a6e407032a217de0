import { createHash } from 'node:crypto';
import http from 'node:http';
import https from 'node:https';
import {
  AdmissionregistrationV1Api,
  AppsV1Api,
  CoordinationV1Api,
  CoreV1Api,
  KubeConfig,
  PatchStrategy,
  PolicyV1Api,
  type RequestContext,
  setHeaderOptions,
  Watch,
} from '@kubernetes/client-node';

/** The narrow Kubernetes surface activities use: four typed API groups. */
export interface KubeApi {
  core: CoreV1Api;
  apps: AppsV1Api;
  policy: PolicyV1Api;
  /** Leases: the drain's per-PDB eviction gate across workers (pdb-lease.ts). */
  coordination: CoordinationV1Api;
  /** Admission webhook configurations (predictBlockingDrains); optional, so narrow test doubles need not carry it. */
  admission?: AdmissionregistrationV1Api;
  /** Watches (a drain follows its node's pods); optional, so narrow test doubles need not carry it. */
  watch?: KubeWatch;
}

/** The watch surface of @kubernetes/client-node's Watch: a stream of events, `done` once it ends. */
export interface KubeWatch {
  watch(
    path: string,
    query: Record<string, string | number | boolean | undefined>,
    onEvent: (type: string, object: unknown) => void,
    done: (err: unknown) => void,
  ): Promise<AbortController>;
}

/** How long a connection to the API server stays open unused: closed by us before a server or balancer drops it under a request. */
const IDLE_CONNECTION_MS = 15_000;

/**
 * A KubeConfig whose requests share keep-alive connections. @kubernetes/client-node 1.x makes a new Agent
 * for every request (in applySecurityAuthentication), so no connection was ever reused: each call paid a
 * TCP connect and a TLS handshake with the client certificate, on the worker and on the API server, which
 * at 1,000 nodes was busy with a few hundred calls a second. Here every request made with the same TLS
 * material goes through one keep-alive Agent (a rotated client certificate gets its own); a proxy's
 * agent is left as the library made it.
 */
export class PooledKubeConfig extends KubeConfig {
  readonly #agents = new Map<string, http.Agent>();

  override async applySecurityAuthentication(context: RequestContext): Promise<void> {
    await super.applySecurityAuthentication(context);
    const made = context.getAgent();
    if (made === undefined || (made.constructor !== https.Agent && made.constructor !== http.Agent)) return;
    const tlsAgent = made.constructor === https.Agent;
    const options = (made as unknown as { options: https.AgentOptions }).options;
    const key = `${tlsAgent ? 'https' : 'http'}:${identityOf(options)}`;
    let shared = this.#agents.get(key);
    if (!shared) {
      const pooled = { ...options, keepAlive: true, timeout: IDLE_CONNECTION_MS };
      shared = tlsAgent ? new https.Agent(pooled) : new http.Agent(pooled);
      this.#agents.set(key, shared);
    }
    context.setAgent(shared);
  }
}

/** A digest of what makes a TLS connection the one a request asked for: CA, client certificate and key, server name, verification. */
function identityOf(o: https.AgentOptions): string {
  const h = createHash('sha256');
  for (const part of [o.ca, o.cert, o.key, o.pfx, o.passphrase, o.servername, o.rejectUnauthorized])
    h.update(`${part === undefined ? '-' : Buffer.isBuffer(part) ? part.toString('base64') : JSON.stringify(part)}\n`);
  return h.digest('hex');
}

/** Clients for a kubeconfig file (and context); credentials never leave the worker. */
export function kubeApiFromFile(kubeconfigPath: string, context?: string): KubeApi {
  const kc = new PooledKubeConfig();
  kc.loadFromFile(kubeconfigPath);
  if (context) kc.setCurrentContext(context);
  return {
    core: kc.makeApiClient(CoreV1Api),
    apps: kc.makeApiClient(AppsV1Api),
    policy: kc.makeApiClient(PolicyV1Api),
    coordination: kc.makeApiClient(CoordinationV1Api),
    admission: kc.makeApiClient(AdmissionregistrationV1Api),
    watch: new Watch(kc),
  };
}

/** Request options for a JSON merge patch (the generated client defaults to JSON patch). */
export const mergePatch = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);
/** Request options for a strategic merge patch: keyed lists (containers, conditions) merge by key. */
export const strategicMergePatch = setHeaderOptions('Content-Type', PatchStrategy.StrategicMergePatch);
