// Removed APIs still in use (issue 21), read from the live cluster: what the apiservers counted
// (apiserver_requested_deprecated_apis on /metrics), who asked (the audit log's k8s.io/deprecated
// annotations, when the cluster configuration names the log), and what CRDs still store at versions
// they no longer serve. Read-only: GETs with the worker's identity, and a grep of the audit log.
import type { ApiClient, DeprecatedApiRequest, RemovedApiUsage, UnservedStoredVersion } from '../../rules/readiness/removed-apis.js';
import type { ClusterAccess } from '../cluster-access.js';
import { kubeCall } from '../errors.js';
import { CONTROL_PLANE_LABEL } from '../inventory-facts.js';
import { apiserverGet } from './apiserver-get.js';
import { parsePrometheusText } from './prometheus-text.js';

export interface RemovedApiUsageFacts extends RemovedApiUsage {
  /** Distinct apiservers whose /metrics answered (at most one per control plane, each scrape on a new connection). */
  metricsScrapes: number;
  /** `node:path` of every audit log read. */
  auditLogsRead: string[];
  /** What could not be read, one line each (never a body or credential). */
  problems: string[];
}

/** The metric set on every request to a deprecated API (k8s.io/apiserver pkg/endpoints/metrics/metrics.go, STABLE). */
export const DEPRECATED_METRIC = 'apiserver_requested_deprecated_apis';
const REQUEST_TOTAL = 'apiserver_request_total';
/** Audit annotations set in the same place (metrics.go `deprecatedAnnotationKey`, `removedReleaseAnnotationKey`). */
const DEPRECATED_ANNOTATION = 'k8s.io/deprecated';
const REMOVED_RELEASE_ANNOTATION = 'k8s.io/removed-release';
/** At most this many matching audit lines are read per node: the oldest of the file's current part. */
const AUDIT_LINES = 20_000;

const forbiddenHint = (err: unknown): string =>
  (err as { type?: string }).type === 'Forbidden' ? ' (apply deploy/rbac.yaml: the worker needs this grant)' : '';

const keyOf = (r: { group: string; version: string; resource: string; subresource: string }) =>
  `${r.group}/${r.version}/${r.resource}/${r.subresource}`;

/** How many times per control plane a scrape may meet an apiserver already read before the report makes do. */
const REMEETS_PER_CONTROL_PLANE = 3;

export async function collectRemovedApiUsage(access: ClusterAccess, signal?: AbortSignal): Promise<RemovedApiUsageFacts> {
  const problems: string[] = [];
  const nodes = await kubeCall('list control-plane nodes', () => access.kube.core.listNode({ labelSelector: CONTROL_PLANE_LABEL }));
  const controlPlanes = nodes.items.map((n) => n.metadata?.name ?? '').filter((n) => n !== '');

  // Behind kubeadm's controlPlaneEndpoint each new connection may reach another apiserver, or the
  // same one again: scrapes go on until each control plane's apiserver answered once, or three times
  // as many scrapes as there are control planes met one already read (fewer apiservers than control
  // planes, or a sticky endpoint; a round-robin balancer whose other clients' connections fall between
  // ours in step can hand us the same one a few times running), and an apiserver met again is not
  // counted twice (one call would read "requested 2 times" beside "1 time in the audit log read").
  const requested = new Map<string, DeprecatedApiRequest>();
  const seen = new Set<string>();
  let metricsScrapes = 0;
  let failures = 0;
  let again = 0;
  const wanted = Math.max(1, controlPlanes.length);
  for (let attempt = 0; seen.size < wanted && again < REMEETS_PER_CONTROL_PLANE * wanted && failures < wanted; attempt++) {
    let text: string;
    try {
      text = await apiserverGet(access.config, '/metrics', signal);
    } catch (err) {
      // A worker whose RBAC predates the /metrics grant still plans: the report says what it could not read.
      problems.push(`apiserver /metrics: ${(err as Error).message}${forbiddenHint(err)}`);
      failures++;
      continue;
    }
    const samples = parsePrometheusText(text, [DEPRECATED_METRIC, REQUEST_TOTAL, ...IDENTITY_METRICS]);
    const identity = apiserverIdentity(samples) ?? `scrape ${attempt}`;
    if (seen.has(identity)) {
      again++;
      continue;
    }
    seen.add(identity);
    metricsScrapes++;
    mergeDeprecatedSeries(samples, requested);
  }

  const auditLogsRead: string[] = [];
  const auditPath = access.config.auditLog?.path;
  if (auditPath) {
    for (const node of controlPlanes) {
      const lines = await readDeprecatedAuditLines(access, node, auditPath, problems, signal);
      if (lines === undefined) continue;
      auditLogsRead.push(`${node}:${auditPath}`);
      for (const e of lines) {
        const k = keyOf(e);
        // An apiserver restarted since the request forgot its gauge; its audit log did not.
        const r = requested.get(k) ?? { ...e, clients: [] };
        if (!r.removedRelease) r.removedRelease = e.removedRelease;
        const client = r.clients.find((c) => c.user === e.user && c.userAgent === e.userAgent);
        if (client) client.count++;
        else r.clients.push({ user: e.user, userAgent: e.userAgent, count: 1 });
        requested.set(k, r);
      }
    }
  }

  const storedNotServed = await unservedStoredVersions(access, problems, signal);
  return { requested: [...requested.values()], storedNotServed, metricsScrapes, auditLogsRead, problems };
}

/**
 * Which apiserver answered a scrape: the hash of its identity (apiserver_id_hash, KEP-1965 kube-apiserver
 * identity; in the 1.32-1.34 binaries), else its process's start time (process_start_time_seconds).
 */
const IDENTITY_METRICS = ['apiserver_id_hash', 'process_start_time_seconds'];

function apiserverIdentity(samples: readonly { name: string; labels: Record<string, string>; value: number }[]): string | undefined {
  const hash = samples.find((s) => s.name === 'apiserver_id_hash');
  if (hash) return `id ${Object.values(hash.labels).join(',')}`;
  const started = samples.find((s) => s.name === 'process_start_time_seconds');
  return started ? `started ${started.value}` : undefined;
}

/** One apiserver's deprecated-API series into `requested`, each with that apiserver's request count added. */
function mergeDeprecatedSeries(
  samples: readonly { name: string; labels: Record<string, string>; value: number }[],
  requested: Map<string, DeprecatedApiRequest>,
): void {
  const totals = new Map<string, number>();
  for (const s of samples) {
    if (s.name !== REQUEST_TOTAL) continue;
    const k = keyOf(seriesOf(s.labels));
    totals.set(k, (totals.get(k) ?? 0) + s.value);
  }
  for (const s of samples) {
    if (s.name !== DEPRECATED_METRIC || s.value === 0) continue;
    const series = seriesOf(s.labels);
    const k = keyOf(series);
    const seen = requested.get(k) ?? { ...series, removedRelease: s.labels.removed_release ?? '', clients: [] };
    const total = totals.get(k);
    if (total !== undefined) seen.count = (seen.count ?? 0) + total;
    requested.set(k, seen);
  }
}

const seriesOf = (l: Record<string, string>) => ({
  group: l.group ?? '',
  version: l.version ?? '',
  resource: l.resource ?? '',
  subresource: l.subresource ?? '',
});

interface AuditUse extends ApiClient {
  group: string;
  version: string;
  resource: string;
  subresource: string;
  removedRelease: string;
}

/** The deprecated requests in one node's audit log; undefined (and a problem) when it cannot be read. */
async function readDeprecatedAuditLines(
  access: ClusterAccess,
  node: string,
  path: string,
  problems: string[],
  signal?: AbortSignal,
): Promise<Omit<AuditUse, 'count'>[] | undefined> {
  // The apiserver writes its audit log 0600 as root: read as root where the cluster says so.
  const argv = ['grep', '-F', '-m', String(AUDIT_LINES), `"${DEPRECATED_ANNOTATION}":"true"`, path];
  let result;
  try {
    result = await access.shell.exec(node, argv, {
      timeoutMs: access.config.timeouts.commandSeconds * 1000,
      sudo: true,
      ...(signal ? { signal } : {}),
    });
  } catch (err) {
    problems.push(`audit log on ${node}: ${(err as Error).message.split('\n')[0]}`);
    return undefined;
  }
  if (result.exitCode === 1) return []; // grep: no line matched
  if (result.exitCode !== 0) {
    problems.push(`audit log ${path} on ${node}: grep exited ${result.exitCode}: ${result.stderr.trim().split('\n')[0] ?? ''}`);
    return undefined;
  }
  return parseDeprecatedAuditLines(result.stdout);
}

/** The deprecated requests among JSON audit events, one per line (lines that are not one are skipped). */
export function parseDeprecatedAuditLines(text: string): Omit<AuditUse, 'count'>[] {
  const out: Omit<AuditUse, 'count'>[] = [];
  for (const line of text.split('\n')) {
    if (!line.trim()) continue;
    let e: {
      annotations?: Record<string, string>;
      user?: { username?: string };
      userAgent?: string;
      objectRef?: { apiGroup?: string; apiVersion?: string; resource?: string; subresource?: string };
    };
    try {
      e = JSON.parse(line);
    } catch {
      continue; // a line half-written while the apiserver runs
    }
    if (e.annotations?.[DEPRECATED_ANNOTATION] !== 'true' || !e.objectRef?.resource) continue;
    out.push({
      group: e.objectRef.apiGroup ?? '',
      version: e.objectRef.apiVersion ?? '',
      resource: e.objectRef.resource,
      subresource: e.objectRef.subresource ?? '',
      removedRelease: e.annotations[REMOVED_RELEASE_ANNOTATION] ?? '',
      user: e.user?.username ?? '',
      userAgent: e.userAgent ?? '',
    });
  }
  return out;
}

interface CrdList {
  items?: {
    metadata?: { name?: string };
    spec?: { group?: string; names?: { plural?: string }; versions?: { name?: string; served?: boolean }[] };
    status?: { storedVersions?: string[] };
  }[];
}

/** CRD versions named in status.storedVersions that the CRD does not serve (or no longer lists). */
async function unservedStoredVersions(access: ClusterAccess, problems: string[], signal?: AbortSignal): Promise<UnservedStoredVersion[]> {
  let list: CrdList;
  try {
    list = JSON.parse(await apiserverGet(access.config, '/apis/apiextensions.k8s.io/v1/customresourcedefinitions', signal)) as CrdList;
  } catch (err) {
    problems.push(`CustomResourceDefinitions: ${(err as Error).message}${forbiddenHint(err)}`);
    return [];
  }
  const out: UnservedStoredVersion[] = [];
  for (const crd of list.items ?? []) {
    const served = new Set((crd.spec?.versions ?? []).filter((v) => v.served).map((v) => v.name));
    for (const version of crd.status?.storedVersions ?? []) {
      if (served.has(version)) continue;
      out.push({ crd: crd.metadata?.name ?? '', group: crd.spec?.group ?? '', resource: crd.spec?.names?.plural ?? '', version });
    }
  }
  return out;
}
