// The facts of the hop prerequisites (rules/readiness/hop-prerequisites.ts), read without changing
// anything: from the API the nodes' container runtimes, the etcd static pods' image tags and the
// stored kubeadm ClusterConfiguration's apiVersion; over SSH each node's cgroup file system
// (`stat -fc %T /sys/fs/cgroup/`), kubeadm's certificates on control planes
// (`kubeadm certs check-expiration -o json`, as root: the keys are root's) and whether each hop's
// package repository answers (the look ahead of activities/package-repository.ts). Only what the hops
// need is probed (neededChecks).
import { parse as parseYaml } from 'yaml';
import {
  cgroupOfStat,
  checkHopPrerequisites,
  hopMinors,
  neededChecks,
  type CertificateFacts,
  type NodePrerequisiteFacts,
  type PrerequisiteFacts,
} from '../../rules/readiness/hop-prerequisites.js';
import type { ReadinessFinding } from '../../rules/readiness/finding.js';
import { ApplicationFailure } from '@temporalio/activity';
import { compareNatural, RuleError } from '../../rules/index.js';
import type { ClusterAccess, ClusterResolver } from '../cluster-access.js';
import { ErrorType, httpStatus, kubeCall } from '../errors.js';
import { hostActivityScope } from '../host-activity-context.js';
import { checkNode } from '../host-commands.js';
import { CONTROL_PLANE_LABEL } from '../inventory-facts.js';
import { ACTIVITY_FAILURE } from '../../contracts/failure-types.js';
import { availableVersions, readRepository, type RepositoryState } from '../package-repository.js';
import { minorOfVersion } from '../parsers/kubernetes-repository.js';

export interface HopPrerequisitesInput {
  cluster: string;
  /** The run's hops, target minors or versions in order (`['1.33', '1.34']`). */
  hops: string[];
  /** How long the run is expected to take (certificates must outlive it). */
  runSeconds: number;
  /** The moment judged at (ISO 8601); default: now. */
  now?: string;
}

export interface HopPrerequisitesResult {
  findings: ReadinessFinding[];
  /** Which checks were probed, on how many nodes. */
  probed: { checks: string[]; nodes: number };
}

/** SSH sessions open at once across the cluster's nodes. */
const SSH_PARALLEL = 8;
const READ_MS = 30_000;

async function inBatches<T, R>(items: readonly T[], size: number, fn: (item: T) => Promise<R>): Promise<R[]> {
  const out: R[] = [];
  for (let i = 0; i < items.length; i += size) out.push(...(await Promise.all(items.slice(i, i + size).map(fn))));
  return out;
}

/** The tag of an image reference: `registry.k8s.io/etcd:3.5.24-0@sha256:…` → `3.5.24-0`. */
export function imageTag(image: string | undefined): string | undefined {
  const ref = image?.split('@')[0] ?? '';
  const colon = ref.lastIndexOf(':');
  return colon < 0 || colon < ref.lastIndexOf('/') ? undefined : ref.slice(colon + 1);
}

/** `kubeadm certs check-expiration -o json` (output.kubeadm.k8s.io/v1alpha3 CertificateExpirationInfo) → the rule's facts. */
export function parseCertificateExpiration(text: string): CertificateFacts[] {
  const doc = JSON.parse(text) as {
    kind?: string;
    certificates?: { name: string; expirationDate?: string; externallyManaged?: boolean; missing?: boolean }[];
    certificateAuthorities?: { name: string; expirationDate?: string; externallyManaged?: boolean; missing?: boolean }[];
  };
  if (doc.kind !== 'CertificateExpirationInfo') throw new Error(`expected kind CertificateExpirationInfo, got ${JSON.stringify(doc.kind)}`);
  const read = (c: NonNullable<typeof doc.certificates>[number], authority: boolean): CertificateFacts => ({
    name: c.name,
    expirationDate: c.expirationDate ?? '',
    ...(c.externallyManaged ? { externallyManaged: true } : {}),
    ...(c.missing ? { missing: true } : {}),
    ...(authority ? { authority: true } : {}),
  });
  return [...(doc.certificates ?? []).map((c) => read(c, false)), ...(doc.certificateAuthorities ?? []).map((c) => read(c, true))];
}

const oneLine = (text: string) => text.trim().split('\n').at(-1)?.slice(0, 200) ?? '';

/** Reads every fact the hops need. Read-only: the only files written are the repository probes' own, under /tmp, removed. */
/** Whether the node's package repository offers each hop's minor. */
async function repositoriesOf(
  access: ClusterAccess,
  node: string,
  minors: string[],
  signal: AbortSignal | undefined,
): Promise<NonNullable<NodePrerequisiteFacts['repositories']>> {
  const repositories: NonNullable<NodePrerequisiteFacts['repositories']> = {};
  try {
    const offered = await availableVersions(access, { node });
    // A minor not offered by a file skewless cannot switch (not the install guide's one line) is
    // what the run will refuse at that node: said as the run says it, with the file.
    const missing = minors.filter((m) => !offered.some((v) => minorOfVersion(v) === m));
    const unswitchable = missing.length > 0 ? unswitchableRepository(await readRepository(access, node, signal)) : undefined;
    for (const m of minors) {
      repositories[m] = !missing.includes(m)
        ? { reachable: true }
        : unswitchable
          ? { reachable: false, notRewritten: unswitchable }
          : { reachable: false, detail: `its repository offers no ${m} kubeadm` };
    }
  } catch (err) {
    // A host that does not answer SSH (or presents another key) says nothing of its repository: the
    // upgrade waits at that node for the operator anyway, so this is a warning, not a hold.
    const type = (err as { type?: string }).type;
    const unknown = type === ACTIVITY_FAILURE.HostUnreachable || type === ACTIVITY_FAILURE.HostKeyMismatch;
    for (const m of minors)
      repositories[m] = { reachable: false, detail: oneLine((err as Error).message), ...(unknown ? { unknown } : {}) };
  }
  return repositories;
}

/** The apiVersion of kubeadm-config's ClusterConfiguration; undefined when absent or unreadable (the inventory reports it as a problem already). */
function kubeadmConfigApiVersion(clusterConfiguration: string | undefined): string | undefined {
  if (clusterConfiguration === undefined) return undefined;
  try {
    const doc = parseYaml(clusterConfiguration) as { apiVersion?: unknown } | null;
    return typeof doc?.apiVersion === 'string' ? doc.apiVersion : undefined;
  } catch {
    return undefined;
  }
}

export async function gatherPrerequisiteFacts(access: ClusterAccess, input: HopPrerequisitesInput): Promise<PrerequisiteFacts> {
  const needed = neededChecks(input.hops);
  const { kube } = access;
  const scope = hostActivityScope();
  const [nodeList, etcdPods, clusterConfig] = await Promise.all([
    kubeCall('list nodes', () => kube.core.listNode()),
    needed.has('etcd-version')
      ? kubeCall('list etcd pods', () => kube.core.listNamespacedPod({ namespace: 'kube-system', labelSelector: 'component=etcd' }))
      : undefined,
    needed.has('kubeadm-config-api')
      ? kubeCall('read kube-system/kubeadm-config', async () => {
          try {
            return await kube.core.readNamespacedConfigMap({ name: 'kubeadm-config', namespace: 'kube-system' });
          } catch (err) {
            if (httpStatus(err) === 404) return undefined;
            throw err;
          }
        })
      : undefined,
  ]);
  const etcdTagOf = new Map<string, string>();
  for (const p of etcdPods?.items ?? []) {
    const tag = imageTag(p.spec?.containers.find((c) => c.name === 'etcd')?.image ?? p.spec?.containers[0]?.image);
    if (p.spec?.nodeName && !p.metadata?.deletionTimestamp) etcdTagOf.set(p.spec.nodeName, tag ?? p.spec.containers[0]?.image ?? '');
  }
  const minors = hopMinors(input.hops);
  const nodes = nodeList.items
    .map((n) => ({
      name: n.metadata?.name ?? '',
      role: CONTROL_PLANE_LABEL in (n.metadata?.labels ?? {}) ? ('control-plane' as const) : ('worker' as const),
      runtime: n.status?.nodeInfo?.containerRuntimeVersion,
    }))
    .sort((a, b) => compareNatural(a.name, b.name));

  const facts = await inBatches(nodes, SSH_PARALLEL, async (n): Promise<NodePrerequisiteFacts> => {
    scope.heartbeat({ node: n.name });
    const node = checkNode(n.name);
    const f: NodePrerequisiteFacts = { name: node, role: n.role };
    if (needed.has('containerd-1') && n.runtime) f.containerRuntimeVersion = n.runtime;
    const tag = etcdTagOf.get(node);
    if (needed.has('etcd-version') && n.role === 'control-plane' && tag !== undefined) f.etcdImageTag = tag;
    if (needed.has('cgroup-v1')) {
      const r = await access.shell.exec(node, ['stat', '-fc', '%T', '/sys/fs/cgroup/'], { timeoutMs: READ_MS, signal: scope.signal });
      f.cgroup = r.exitCode === 0 ? cgroupOfStat(r.stdout) : { version: 'unknown', raw: `exit ${r.exitCode}: ${oneLine(r.stderr)}` };
    }
    if (needed.has('cert-expiry') && n.role === 'control-plane') {
      const argv = ['kubeadm', 'certs', 'check-expiration', '-o', 'json'];
      const r = await access.shell.exec(node, argv, { timeoutMs: READ_MS, sudo: true, signal: scope.signal });
      try {
        f.certificates = r.exitCode === 0 ? parseCertificateExpiration(r.stdout) : { error: `exit ${r.exitCode}: ${oneLine(r.stderr)}` };
      } catch (err) {
        f.certificates = { error: `unreadable output: ${(err as Error).message}` };
      }
    }
    if (needed.has('repository') && minors.length > 0) f.repositories = await repositoriesOf(access, node, minors, scope.signal);
    return f;
  });
  const apiVersion = kubeadmConfigApiVersion(clusterConfig?.data?.ClusterConfiguration);
  return {
    nodes: facts,
    ...(apiVersion === undefined ? {} : { kubeadmConfigApiVersion: apiVersion }),
    now: input.now ?? new Date().toISOString(),
    runSeconds: input.runSeconds,
  };
}

/** Bad hops, time or run length: a one-line failure before anything is probed, never retried. */
function checkInput(input: HopPrerequisitesInput): void {
  try {
    if (!Array.isArray(input.hops)) throw new RuleError('InvalidPolicy', 'hops must be a list of target minors such as 1.34');
    checkHopPrerequisites(input.hops, { nodes: [], now: input.now ?? new Date().toISOString(), runSeconds: input.runSeconds });
  } catch (err) {
    if (!(err instanceof RuleError)) throw err;
    throw ApplicationFailure.create({ type: ErrorType.Invalid, message: err.message, nonRetryable: true });
  }
}

/** Every prerequisite finding of the run's hops. */
export async function findHopPrerequisites(access: ClusterAccess, input: HopPrerequisitesInput): Promise<HopPrerequisitesResult> {
  checkInput(input);
  const facts = await gatherPrerequisiteFacts(access, input);
  return {
    findings: checkHopPrerequisites(input.hops, facts),
    probed: { checks: [...neededChecks(input.hops)], nodes: facts.nodes.length },
  };
}

export function createHopPrerequisiteActivities(deps: { clusters: ClusterResolver }) {
  return {
    /** Read-only: the hop prerequisites' findings for `hops` (SSH to every node; sudo only for kubeadm's certificates). */
    async probeHopPrerequisites(input: HopPrerequisitesInput): Promise<HopPrerequisitesResult> {
      return findHopPrerequisites(deps.clusters(input.cluster), input);
    },
  };
}

/** The repository file skewless will not rewrite (absent, or not the install guide's layout), and why; undefined: it switches it. */
function unswitchableRepository(repo: RepositoryState): { file: string; why: string } | undefined {
  if (repo.text === undefined) return { file: repo.file, why: 'there is no such file' };
  if (repo.parsed?.layout === 'unrecognised') return { file: repo.file, why: repo.parsed.why };
  return undefined;
}
