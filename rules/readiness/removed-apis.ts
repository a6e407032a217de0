import type { ReadinessFinding } from './finding.js';

/**
 * Removed APIs still in use (issue 21): the APIs each Kubernetes minor stops serving, and the check
 * of a hop against what the live cluster shows was requested (apiserver_requested_deprecated_apis,
 * audit annotations) or is still stored (a CRD's status.storedVersions).
 *
 * Acknowledgement names: `removed-api:GROUP/VERSION/RESOURCE`, the core group written `core` (the
 * metric's empty label would give `removed-api:/v1/…`, which reads as a typo); a subresource is not
 * part of the name (acknowledging an API acknowledges all of it).
 */

const GUIDE = 'https://kubernetes.io/docs/reference/using-api/deprecation-guide/';
/** The prerelease-lifecycle data the apiserver itself removes APIs by (docs/research/readiness-sources.md §2). */
const lifecycle = (pkg: string) => `https://github.com/kubernetes/api/blob/v0.32.13/${pkg}/zz_generated.prerelease-lifecycle.go`;

export interface RemovedApi {
  group: string;
  version: string;
  resource: string;
  /** The minor that no longer serves it, `1.33`. */
  removedIn: string;
  /** What to use instead, as the source says. */
  replacement: string;
  source: string;
}

function rows(removedIn: string, group: string, version: string, resources: string[], replacement: string, source: string): RemovedApi[] {
  return resources.map((resource) => ({ group, version, resource, removedIn, replacement, source }));
}

const g = (minor: string) => `${GUIDE}#v1-${minor.split('.')[1]}`;

/**
 * Every row of kubernetes.io's Deprecated API Migration Guide (its newest section is v1.32), plus
 * the removals the guide does not list but the apiserver applies from the prerelease-lifecycle data:
 * betas only ever served with `--runtime-config`, which 1.33 and 1.34 stop serving.
 */
export const REMOVED_APIS: readonly RemovedApi[] = [
  ...rows('1.16', 'extensions', 'v1beta1', ['networkpolicies'], 'networking.k8s.io/v1', g('1.16')),
  ...rows('1.16', 'extensions', 'v1beta1', ['daemonsets', 'deployments', 'replicasets'], 'apps/v1', g('1.16')),
  ...rows('1.16', 'apps', 'v1beta1', ['deployments', 'statefulsets', 'replicasets'], 'apps/v1', g('1.16')),
  ...rows('1.16', 'apps', 'v1beta2', ['daemonsets', 'deployments', 'statefulsets', 'replicasets'], 'apps/v1', g('1.16')),
  ...rows('1.16', 'extensions', 'v1beta1', ['podsecuritypolicies'], 'policy/v1beta1', g('1.16')),
  ...rows(
    '1.22',
    'admissionregistration.k8s.io',
    'v1beta1',
    ['mutatingwebhookconfigurations', 'validatingwebhookconfigurations'],
    'admissionregistration.k8s.io/v1',
    g('1.22'),
  ),
  ...rows('1.22', 'apiextensions.k8s.io', 'v1beta1', ['customresourcedefinitions'], 'apiextensions.k8s.io/v1', g('1.22')),
  ...rows('1.22', 'apiregistration.k8s.io', 'v1beta1', ['apiservices'], 'apiregistration.k8s.io/v1', g('1.22')),
  ...rows('1.22', 'authentication.k8s.io', 'v1beta1', ['tokenreviews'], 'authentication.k8s.io/v1', g('1.22')),
  ...rows(
    '1.22',
    'authorization.k8s.io',
    'v1beta1',
    ['localsubjectaccessreviews', 'selfsubjectaccessreviews', 'subjectaccessreviews', 'selfsubjectrulesreviews'],
    'authorization.k8s.io/v1',
    g('1.22'),
  ),
  ...rows('1.22', 'certificates.k8s.io', 'v1beta1', ['certificatesigningrequests'], 'certificates.k8s.io/v1', g('1.22')),
  ...rows('1.22', 'coordination.k8s.io', 'v1beta1', ['leases'], 'coordination.k8s.io/v1', g('1.22')),
  ...rows('1.22', 'extensions', 'v1beta1', ['ingresses'], 'networking.k8s.io/v1', g('1.22')),
  ...rows('1.22', 'networking.k8s.io', 'v1beta1', ['ingresses', 'ingressclasses'], 'networking.k8s.io/v1', g('1.22')),
  ...rows(
    '1.22',
    'rbac.authorization.k8s.io',
    'v1beta1',
    ['clusterroles', 'clusterrolebindings', 'roles', 'rolebindings'],
    'rbac.authorization.k8s.io/v1',
    g('1.22'),
  ),
  ...rows('1.22', 'scheduling.k8s.io', 'v1beta1', ['priorityclasses'], 'scheduling.k8s.io/v1', g('1.22')),
  ...rows(
    '1.22',
    'storage.k8s.io',
    'v1beta1',
    ['csidrivers', 'csinodes', 'storageclasses', 'volumeattachments'],
    'storage.k8s.io/v1',
    g('1.22'),
  ),
  ...rows('1.25', 'batch', 'v1beta1', ['cronjobs'], 'batch/v1', g('1.25')),
  ...rows('1.25', 'discovery.k8s.io', 'v1beta1', ['endpointslices'], 'discovery.k8s.io/v1', g('1.25')),
  ...rows('1.25', 'events.k8s.io', 'v1beta1', ['events'], 'events.k8s.io/v1', g('1.25')),
  ...rows('1.25', 'autoscaling', 'v2beta1', ['horizontalpodautoscalers'], 'autoscaling/v2', g('1.25')),
  ...rows('1.25', 'policy', 'v1beta1', ['poddisruptionbudgets'], 'policy/v1', g('1.25')),
  ...rows('1.25', 'policy', 'v1beta1', ['podsecuritypolicies'], 'Pod Security Admission or a webhook', g('1.25')),
  ...rows('1.25', 'node.k8s.io', 'v1beta1', ['runtimeclasses'], 'node.k8s.io/v1', g('1.25')),
  ...rows(
    '1.26',
    'flowcontrol.apiserver.k8s.io',
    'v1beta1',
    ['flowschemas', 'prioritylevelconfigurations'],
    'flowcontrol.apiserver.k8s.io/v1',
    g('1.26'),
  ),
  ...rows('1.26', 'autoscaling', 'v2beta2', ['horizontalpodautoscalers'], 'autoscaling/v2', g('1.26')),
  ...rows('1.27', 'storage.k8s.io', 'v1beta1', ['csistoragecapacities'], 'storage.k8s.io/v1', g('1.27')),
  ...rows(
    '1.29',
    'flowcontrol.apiserver.k8s.io',
    'v1beta2',
    ['flowschemas', 'prioritylevelconfigurations'],
    'flowcontrol.apiserver.k8s.io/v1',
    g('1.29'),
  ),
  ...rows(
    '1.32',
    'flowcontrol.apiserver.k8s.io',
    'v1beta3',
    ['flowschemas', 'prioritylevelconfigurations'],
    'flowcontrol.apiserver.k8s.io/v1',
    g('1.32'),
  ),
  // Not in the guide: served only with --runtime-config, removed by the prerelease-lifecycle data
  // (k8s.io/apiserver pkg/server/deleted_kinds.go ShouldServeForVersion drops them at that minor).
  ...rows(
    '1.33',
    'authentication.k8s.io',
    'v1beta1',
    ['selfsubjectreviews'],
    'authentication.k8s.io/v1',
    lifecycle('authentication/v1beta1'),
  ),
  ...rows(
    '1.34',
    'admissionregistration.k8s.io',
    'v1beta1',
    ['validatingadmissionpolicies', 'validatingadmissionpolicybindings'],
    'admissionregistration.k8s.io/v1',
    lifecycle('admissionregistration/v1beta1'),
  ),
  // The v1alpha3 DRA types are deleted from k8s.io/api v0.34 (only DeviceTaintRule is left).
  ...rows(
    '1.34',
    'resource.k8s.io',
    'v1alpha3',
    ['deviceclasses', 'resourceclaims', 'resourceclaimtemplates', 'resourceslices'],
    'resource.k8s.io/v1beta1 (v1 from 1.34)',
    'https://github.com/kubernetes/kubernetes/blob/v1.34.4/pkg/registry/resource/rest/storage_resource.go',
  ),
];

/** The table by the release that removes each API (oldest first), as docs/real-cluster.md and `plan --help` list it. */
export function removedApisByRelease(): { removedIn: string; apis: string[] }[] {
  const out: { removedIn: string; apis: string[] }[] = [];
  for (const a of REMOVED_APIS) {
    const gvr = `${groupName(a.group)}/${a.version}/${a.resource}`;
    const last = out[out.length - 1];
    if (last?.removedIn === a.removedIn) last.apis.push(gvr);
    else out.push({ removedIn: a.removedIn, apis: [gvr] });
  }
  return out;
}

/** `1.33` or `1.33.7` as [major, minor]; undefined when it is neither. */
function minorOf(version: string): [number, number] | undefined {
  const m = /^v?(\d+)\.(\d+)(?:\.\d+)?$/.exec(version.trim());
  return m ? [Number(m[1]), Number(m[2])] : undefined;
}
const below = (a: [number, number], b: [number, number]) => a[0] < b[0] || (a[0] === b[0] && a[1] < b[1]);

/** Whether `removedIn` falls in the hop: served at `from`, no longer at `to` (from < removedIn ≤ to). */
export function hopRemoves(from: string, to: string, removedIn: string): boolean {
  const [f, t, r] = [minorOf(from), minorOf(to), minorOf(removedIn)];
  if (!f || !t || !r) return false;
  return below(f, r) && !below(t, r);
}

/** The table's rows a hop crosses: what `from` still serves and `to` no longer does. */
export const removalsCrossed = (from: string, to: string): RemovedApi[] => REMOVED_APIS.filter((r) => hopRemoves(from, to, r.removedIn));

/** The group as acknowledgement names and messages write it: the core group is `core`. */
export const groupName = (group: string): string => (group === '' ? 'core' : group);
export const removedApiAck = (group: string, version: string, resource: string): string =>
  `removed-api:${groupName(group)}/${version}/${resource}`;

/** Who requested a deprecated API, as the apiserver's audit log names them. */
export interface ApiClient {
  user: string;
  userAgent: string;
  /** Requests of this client in the part of the audit log that was read. */
  count: number;
}

/** One series of apiserver_requested_deprecated_apis, merged over the apiservers that reported it. */
export interface DeprecatedApiRequest {
  group: string;
  version: string;
  resource: string;
  subresource: string;
  /** The metric's removed_release label (`1.33`), empty when the API has no planned removal. */
  removedRelease: string;
  /** Requests counted by apiserver_request_total for this group/version/resource, when it has them. */
  count?: number;
  /** Whose requests they were, when an audit log was read; empty otherwise. */
  clients: ApiClient[];
}

/** A CRD version still named in status.storedVersions that the CRD no longer serves. */
export interface UnservedStoredVersion {
  crd: string;
  group: string;
  resource: string;
  version: string;
}

export interface RemovedApiUsage {
  requested: DeprecatedApiRequest[];
  storedNotServed: UnservedStoredVersion[];
}

function clientsText(clients: readonly ApiClient[]): string {
  if (clients.length === 0) return 'clients unknown (no audit log read)';
  return `by ${clients.map((c) => `${c.user} (${c.userAgent || 'no user agent'}, ${times(c.count)} in the audit log read)`).join(', ')}`;
}

/** One wording for a count of requests, wherever it is said: `1 time`, `3 times`. */
const times = (n: number): string => `${n} time${n === 1 ? '' : 's'}`;

/**
 * The findings of a hop `from` → `to` (one minor): every requested API the hop removes (by the
 * metric's removed_release, which the apiserver takes from the same lifecycle data, or else by the
 * table), and every CRD version stored but no longer served (each hop's business until migrated).
 */
export function removedApiFindings(hop: { from: string; to: string }, usage: RemovedApiUsage): ReadinessFinding[] {
  const target = minorOf(hop.to);
  const hopName = target ? `${target[0]}.${target[1]}` : hop.to;
  const findings: ReadinessFinding[] = [];
  for (const r of usage.requested) {
    const row = REMOVED_APIS.find((a) => a.group === r.group && a.version === r.version && a.resource === r.resource);
    const removedIn = r.removedRelease || row?.removedIn || '';
    if (!hopRemoves(hop.from, hop.to, removedIn)) continue;
    const gvr = `${groupName(r.group)}/${r.version}/${r.resource}${r.subresource ? `/${r.subresource}` : ''}`;
    const count = r.count === undefined ? 'requested' : `requested ${times(r.count)} since the apiservers started`;
    findings.push({
      check: 'removed-api',
      severity: 'hold',
      hop: hopName,
      what: `${gvr} ${count}, removed in ${removedIn}; ${clientsText(r.clients)}`,
      todo: `move its clients to ${row?.replacement ?? 'a served version'} before the hop (the metric stays set until the apiserver restarts)`,
      source:
        row?.source ??
        'https://kubernetes.io/docs/reference/using-api/deprecation-policy/ (apiserver_requested_deprecated_apis removed_release)',
      ack: removedApiAck(r.group, r.version, r.resource),
    });
  }
  for (const s of usage.storedNotServed) {
    findings.push({
      check: 'removed-api',
      severity: 'hold',
      hop: hopName,
      what: `CRD ${s.crd} still lists ${s.version} in status.storedVersions, but no longer serves it`,
      todo: `rewrite its objects at a served version (storage version migration), then remove ${s.version} from status.storedVersions`,
      source:
        'https://kubernetes.io/docs/tasks/extend-kubernetes/custom-resources/custom-resource-definition-versioning/#upgrade-existing-objects-to-a-new-stored-version',
      ack: removedApiAck(s.group, s.version, s.resource),
    });
  }
  return findings;
}

/** The findings of every hop of a plan (`hops` as its minors' targets, `1.33`, `1.34`), from `from`. */
export function removedApiFindingsForHops(from: string, hops: readonly string[], usage: RemovedApiUsage): ReadinessFinding[] {
  const out: ReadinessFinding[] = [];
  let prev = from;
  for (const [i, to] of hops.entries()) {
    // A stored-but-unserved CRD version is reported once, against the first hop: it holds the run from its start.
    out.push(...removedApiFindings({ from: prev, to }, i === 0 ? usage : { ...usage, storedNotServed: [] }));
    prev = to;
  }
  return out;
}
