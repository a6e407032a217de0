import { readFileSync } from 'node:fs';
import { DEFAULT_TASK_QUEUE } from '../contracts/cli-flags.js';

/**
 * Where workers and the CLI find Temporal, and how they authenticate: the one module that reads
 * connection flags and environment, like the `temporal` CLI does (a flag beats its variable).
 * Cluster credentials never pass through here; Temporal's (API key, client key) are read at
 * startup and never printed, not even in errors.
 */

/** Bad connection settings: one line, exit 2, nothing contacted. */
export class ConfigError extends Error {
  override name = 'ConfigError';
}

/** Temporal could not be reached: one line, exit 3, nothing started. */
export class UnreachableError extends Error {
  override name = 'UnreachableError';
}

/** The connection flags every command that talks to Temporal takes (node:util parseArgs shape). */
export const CONNECTION_FLAGS = {
  address: { type: 'string' },
  namespace: { type: 'string' },
  tls: { type: 'boolean' },
  'tls-cert-path': { type: 'string' },
  'tls-key-path': { type: 'string' },
  'tls-ca-path': { type: 'string' },
  'tls-server-name': { type: 'string' },
  'api-key': { type: 'string' },
  'payload-key-file': { type: 'string' },
} as const;

export type ConnectionFlags = { address?: string; namespace?: string; tls?: boolean } & {
  [K in 'tls-cert-path' | 'tls-key-path' | 'tls-ca-path' | 'tls-server-name' | 'api-key' | 'payload-key-file']?: string;
};

export const CONNECTION_HELP = `Connection (flag, else environment variable, as the temporal CLI reads them):
  --address HOST:PORT       TEMPORAL_ADDRESS (default 127.0.0.1:7233)
  --namespace NS            TEMPORAL_NAMESPACE (default "default")
  --tls, --tls=false        TEMPORAL_TLS (true|false); on by default when any option below is set
  --tls-cert-path FILE      TEMPORAL_TLS_CERT or TEMPORAL_TLS_CLIENT_CERT_PATH (client certificate, mTLS)
  --tls-key-path FILE       TEMPORAL_TLS_KEY or TEMPORAL_TLS_CLIENT_KEY_PATH (its private key)
  --tls-ca-path FILE        TEMPORAL_TLS_CA or TEMPORAL_TLS_SERVER_CA_CERT_PATH (server CA)
  --tls-server-name NAME    TEMPORAL_TLS_SERVER_NAME (SNI and name checked on the certificate)
  --api-key KEY             TEMPORAL_API_KEY (prefer the variable: flags show in ps)
  --payload-key-file FILE   SKEWLESS_PAYLOAD_KEY_FILE: encrypt payloads (AES-256-GCM) for a shared
                            server; the worker and the CLI need the same file (docs/security.md)`;

/** Where a setting came from, so an error can say what to fix without echoing the value. */
export interface Setting {
  value: string;
  source: string;
}

export interface TlsSettings {
  cert?: Setting;
  key?: Setting;
  ca?: Setting;
  serverName?: string;
}

export interface ConnectionSettings {
  address: string;
  namespace: string;
  /** false: plaintext. */
  tls: false | TlsSettings;
  apiKey?: string;
  /** The payload encryption keys' file (read by payload-codec.ts); unset: payloads in plain JSON. */
  payloadKeyFile?: Setting;
}

/** What Connection.connect and NativeConnection.connect both take. */
export interface ConnectionOptions {
  address: string;
  tls: false | { serverNameOverride?: string; serverRootCACertificate?: Buffer; clientCertPair?: { crt: Buffer; key: Buffer } };
  apiKey?: string;
}

const ADDRESS = /^(?:[A-Za-z0-9](?:[A-Za-z0-9.-]*[A-Za-z0-9])?|\[[0-9A-Fa-f:.]+\]):(\d{1,5})$/;
const NAMESPACE = /^[A-Za-z0-9][A-Za-z0-9._-]{0,254}$/;
const SERVER_NAME = /^[A-Za-z0-9*]([A-Za-z0-9.*-]*[A-Za-z0-9])?$/;

/** The first of flag, then each variable, that is set and non-empty. */
function pick(flag: string | undefined, flagName: string, env: NodeJS.ProcessEnv, ...vars: string[]): Setting | undefined {
  if (flag !== undefined && flag !== '') return { value: flag, source: `--${flagName}` };
  for (const name of vars) {
    const value = env[name];
    if (value !== undefined && value !== '') return { value, source: name };
  }
  return undefined;
}

function envBoolean(env: NodeJS.ProcessEnv, name: string): boolean | undefined {
  const raw = env[name]?.trim().toLowerCase();
  if (raw === undefined || raw === '') return undefined;
  if (raw === 'true' || raw === '1') return true;
  if (raw === 'false' || raw === '0') return false;
  throw new ConfigError(`${name} must be true or false, got ${JSON.stringify(env[name])}`);
}

/** Resolves flags and environment into settings; checks their shape, reads no file. */
export function connectionSettings(flags: ConnectionFlags = {}, env: NodeJS.ProcessEnv = process.env): ConnectionSettings {
  const address = pick(flags.address, 'address', env, 'TEMPORAL_ADDRESS')?.value ?? '127.0.0.1:7233';
  const port = ADDRESS.exec(address)?.[1];
  if (port === undefined || Number(port) < 1 || Number(port) > 65535) {
    throw new ConfigError(`the Temporal address must be HOST:PORT, got ${JSON.stringify(address)}`);
  }
  const namespace = pick(flags.namespace, 'namespace', env, 'TEMPORAL_NAMESPACE')?.value ?? 'default';
  if (!NAMESPACE.test(namespace)) throw new ConfigError(`invalid Temporal namespace ${JSON.stringify(namespace)}`);

  const cert = pick(flags['tls-cert-path'], 'tls-cert-path', env, 'TEMPORAL_TLS_CERT', 'TEMPORAL_TLS_CLIENT_CERT_PATH');
  const key = pick(flags['tls-key-path'], 'tls-key-path', env, 'TEMPORAL_TLS_KEY', 'TEMPORAL_TLS_CLIENT_KEY_PATH');
  const ca = pick(flags['tls-ca-path'], 'tls-ca-path', env, 'TEMPORAL_TLS_CA', 'TEMPORAL_TLS_SERVER_CA_CERT_PATH');
  const serverName = pick(flags['tls-server-name'], 'tls-server-name', env, 'TEMPORAL_TLS_SERVER_NAME');
  const apiKey = pick(flags['api-key'], 'api-key', env, 'TEMPORAL_API_KEY');
  const payloadKeyFile = pick(flags['payload-key-file'], 'payload-key-file', env, 'SKEWLESS_PAYLOAD_KEY_FILE');
  if (serverName && !SERVER_NAME.test(serverName.value))
    throw new ConfigError(`${serverName.source} must be a host name, got ${JSON.stringify(serverName.value)}`);
  if (apiKey && /[\r\n]/.test(apiKey.value)) throw new ConfigError(`${apiKey.source} must be one line`); // the value itself is never shown
  if (cert && !key) throw new ConfigError(`${cert.source} needs the client key too (--tls-key-path or TEMPORAL_TLS_KEY)`);
  if (key && !cert) throw new ConfigError(`${key.source} needs the client certificate too (--tls-cert-path or TEMPORAL_TLS_CERT)`);

  // As the temporal CLI: TLS is on when asked for, or when any TLS option or an API key is given.
  const tlsOptions = [cert, key, ca, serverName].filter((s): s is Setting => s !== undefined);
  const enabled = flags.tls ?? envBoolean(env, 'TEMPORAL_TLS') ?? (tlsOptions.length > 0 || apiKey !== undefined);
  if (!enabled && tlsOptions.length > 0) {
    throw new ConfigError(
      `TLS is off (${flags.tls === false ? '--tls=false' : 'TEMPORAL_TLS=false'}) but ${tlsOptions.map((s) => s.source).join(', ')} is set`,
    );
  }
  return {
    address,
    namespace,
    tls: enabled
      ? {
          ...(cert ? { cert } : {}),
          ...(key ? { key } : {}),
          ...(ca ? { ca } : {}),
          ...(serverName ? { serverName: serverName.value } : {}),
        }
      : false,
    ...(apiKey ? { apiKey: apiKey.value } : {}),
    ...(payloadKeyFile ? { payloadKeyFile } : {}),
  };
}

/** Reads a PEM file; an error names the file and the errno, never the file's content. */
function readPem(setting: Setting, what: string): Buffer {
  let data: Buffer;
  try {
    data = readFileSync(setting.value);
  } catch (err) {
    throw new ConfigError(
      `cannot read the ${what} ${setting.value} (${setting.source}): ${(err as NodeJS.ErrnoException).code ?? 'unreadable'}`,
    );
  }
  if (!data.includes('-----BEGIN ')) throw new ConfigError(`the ${what} ${setting.value} (${setting.source}) is not PEM`);
  return data;
}

/** Reads the TLS files named by the settings (at startup: a bad file fails before any connection). */
export function connectionOptions(settings: ConnectionSettings): ConnectionOptions {
  const { tls } = settings;
  return {
    address: settings.address,
    tls:
      tls === false
        ? false
        : {
            ...(tls.serverName ? { serverNameOverride: tls.serverName } : {}),
            ...(tls.ca ? { serverRootCACertificate: readPem(tls.ca, 'TLS CA certificate') } : {}),
            ...(tls.cert && tls.key
              ? { clientCertPair: { crt: readPem(tls.cert, 'TLS client certificate'), key: readPem(tls.key, 'TLS client key') } }
              : {}),
          },
    ...(settings.apiKey ? { apiKey: settings.apiKey } : {}),
  };
}

/** For logs: where and how, never the key. */
export function describeConnection(settings: ConnectionSettings): string {
  const tls = settings.tls;
  const parts = [`${settings.address}, namespace ${settings.namespace}`];
  if (tls === false) parts.push('no TLS');
  else
    parts.push(
      `TLS${tls.cert ? ' with client certificate' : ''}${tls.ca ? ', own CA' : ''}${tls.serverName ? `, server name ${tls.serverName}` : ''}`,
    );
  if (settings.apiKey) parts.push('API key set');
  if (settings.payloadKeyFile) parts.push(`payloads encrypted with the keys in ${settings.payloadKeyFile.value}`);
  return parts.join(', ');
}

/** Removes secrets from a message that came back from the SDK or the server before it is shown. */
export function redactSecrets(message: string, settings: Pick<ConnectionSettings, 'apiKey'>): string {
  return settings.apiKey ? message.split(settings.apiKey).join('<api key>') : message;
}

export interface WorkerConfig {
  taskQueue: string;
  /** Where the worker finds <cluster>.yaml files (credentials' paths stay on this side). */
  clustersDir?: string;
}

/** The worker's own settings: flag, else SKEWLESS_TASK_QUEUE / SKEWLESS_CLUSTERS_DIR. */
export function workerConfig(
  flags: { 'task-queue'?: string; 'clusters-dir'?: string } = {},
  env: NodeJS.ProcessEnv = process.env,
): WorkerConfig {
  // One task queue per site, so workers run near the clusters they hold credentials for.
  const taskQueue = pick(flags['task-queue'], 'task-queue', env, 'SKEWLESS_TASK_QUEUE')?.value ?? DEFAULT_TASK_QUEUE;
  if (!/^[A-Za-z0-9][A-Za-z0-9._/-]{0,199}$/.test(taskQueue)) throw new ConfigError(`invalid task queue ${JSON.stringify(taskQueue)}`);
  const clustersDir = pick(flags['clusters-dir'], 'clusters-dir', env, 'SKEWLESS_CLUSTERS_DIR')?.value;
  return { taskQueue, ...(clustersDir ? { clustersDir } : {}) };
}

/** The worker's observability settings; both off unless set. */
export interface TelemetryConfig {
  /** IP:PORT to serve Prometheus metrics on (worker/metrics.ts). */
  metricsAddress?: string;
  /** OTLP/HTTP traces URL (worker/tracing.ts). */
  otlpEndpoint?: string;
}

/** IP:PORT (the SDK binds to an address, not a host name): `0.0.0.0:9464`, `127.0.0.1:9464`, `[::]:9464`. */
const BIND_ADDRESS = /^(?:(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})|\[[0-9A-Fa-f:.]+\]):(\d{1,5})$/;

function checkBindAddress(setting: Setting): string {
  const m = BIND_ADDRESS.exec(setting.value);
  const octets =
    m
      ?.slice(1, 5)
      .filter((o) => o !== undefined)
      .map(Number) ?? [];
  const port = Number(m?.[5]);
  if (!m || octets.some((o) => o > 255) || !(port >= 1 && port <= 65535)) {
    throw new ConfigError(
      `${setting.source} must be IP:PORT to listen on (0.0.0.0:9464, 127.0.0.1:9464, [::]:9464), got ${JSON.stringify(setting.value)}`,
    );
  }
  return setting.value;
}

function checkTracesUrl(setting: Setting): string {
  let url: URL | undefined;
  try {
    url = new URL(setting.value);
  } catch {
    url = undefined;
  }
  if (!url || !['http:', 'https:'].includes(url.protocol) || url.username || url.password) {
    // Not echoed: a URL may carry credentials.
    throw new ConfigError(
      `${setting.source} must be the http(s) URL of an OTLP/HTTP traces endpoint (http://collector:4318/v1/traces), without credentials`,
    );
  }
  return setting.value;
}

/** Metrics and tracing: flag, else SKEWLESS_METRICS_ADDRESS / SKEWLESS_OTLP_ENDPOINT; checked, nothing started. */
export function telemetryConfig(
  flags: { 'metrics-address'?: string; 'otlp-endpoint'?: string } = {},
  env: NodeJS.ProcessEnv = process.env,
): TelemetryConfig {
  const metrics = pick(flags['metrics-address'], 'metrics-address', env, 'SKEWLESS_METRICS_ADDRESS');
  const otlp = pick(flags['otlp-endpoint'], 'otlp-endpoint', env, 'SKEWLESS_OTLP_ENDPOINT');
  return {
    ...(metrics ? { metricsAddress: checkBindAddress(metrics) } : {}),
    ...(otlp ? { otlpEndpoint: checkTracesUrl(otlp) } : {}),
  };
}

/**
 * The plain settings from the environment alone (no TLS files read), for code that only needs
 * where Temporal is and which queue to use.
 * @deprecated use connectionSettings() and workerConfig(), which also take flags and TLS.
 */
export function temporalConfig(env: NodeJS.ProcessEnv = process.env): { address: string; namespace: string } & WorkerConfig {
  const { address, namespace } = connectionSettings({}, env);
  return { address, namespace, ...workerConfig({}, env) };
}
