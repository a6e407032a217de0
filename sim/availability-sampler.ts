import type { V1OwnerReference, V1Pod, V1PodDisruptionBudget } from '@kubernetes/client-node';
import { selectorMatches } from '../rules/label-selector.js';
import { statusOf, type KubeClients } from './cluster/kube-clients.js';

/**
 * Watches workload availability against every PodDisruptionBudget while something (an upgrade)
 * runs: each sample counts the Ready, non-terminating pods a PDB selects and compares them with
 * the floor its budget guarantees. The evidence for "no PDB violated"; tests and the demo use it.
 */

export interface AvailabilityViolation {
  /** ISO time of the sample. */
  at: string;
  ready: number;
  floor: number;
  expected: number;
}

export interface PdbAvailability {
  namespace: string;
  name: string;
  /** Samples in which this PDB existed. */
  samples: number;
  /** The floor (pods that must stay Ready) at the last sample. */
  floor: number;
  /** The fewest Ready pods seen. */
  minReady: number;
  violations: AvailabilityViolation[];
}

export interface AvailabilityReport {
  samples: number;
  /** Samples that failed to read the API (counted, not judged), and the last such failure. */
  errors: number;
  lastError?: string;
  pdbs: PdbAvailability[];
  violated: boolean;
}

export interface AvailabilitySampler {
  /** Stops sampling after the sample in flight, and reports. */
  stop(): Promise<AvailabilityReport>;
}

/** How many pods a budget (count or percent) means out of `expected`; percentages round up, as the disruption controller does. */
function scaled(value: number | string, expected: number): number {
  if (typeof value === 'number') return value;
  const pct = /^(\d+)%$/.exec(value);
  if (pct) return Math.ceil((Number(pct[1]) * expected) / 100);
  return Number.isFinite(Number(value)) ? Number(value) : 0;
}

/** The Ready pods a PDB must keep, given the pods its controllers want. */
export function pdbFloor(spec: { minAvailable?: number | string; maxUnavailable?: number | string }, expected: number): number {
  if (spec.minAvailable !== undefined) return scaled(spec.minAvailable, expected);
  if (spec.maxUnavailable !== undefined) return Math.max(0, expected - scaled(spec.maxUnavailable, expected));
  return 0;
}

const isReady = (pod: V1Pod) =>
  !pod.metadata?.deletionTimestamp && (pod.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? false);

interface Controller {
  kind: string;
  namespace: string;
  name: string;
}

/** The top-level controller of a pod: a ReplicaSet's Deployment (remembered in `replicaSetOwners`), else the owner itself. */
async function controllerOf(
  kube: KubeClients,
  replicaSetOwners: Map<string, Controller>,
  namespace: string,
  ref: V1OwnerReference,
): Promise<Controller> {
  if (ref.kind !== 'ReplicaSet') return { kind: ref.kind, namespace, name: ref.name };
  const known = replicaSetOwners.get(ref.uid);
  if (known) return known;
  const rs = await kube.apps.readNamespacedReplicaSet({ name: ref.name, namespace });
  const up = rs.metadata?.ownerReferences?.find((o) => o.controller);
  const c =
    up?.kind === 'Deployment' ? { kind: 'Deployment', namespace, name: up.name } : { kind: 'ReplicaSet', namespace, name: ref.name };
  replicaSetOwners.set(ref.uid, c);
  return c;
}

/** The pods a controller wants; undefined when it is gone or of a kind without a scale. */
async function wanted(kube: KubeClients, c: Controller): Promise<number | undefined> {
  try {
    const args = { name: c.name, namespace: c.namespace };
    switch (c.kind) {
      case 'Deployment':
        return (await kube.apps.readNamespacedDeployment(args)).spec?.replicas ?? 1;
      case 'StatefulSet':
        return (await kube.apps.readNamespacedStatefulSet(args)).spec?.replicas ?? 1;
      case 'ReplicaSet':
        return (await kube.apps.readNamespacedReplicaSet(args)).spec?.replicas ?? 1;
      case 'DaemonSet':
        return (await kube.apps.readNamespacedDaemonSet(args)).status?.desiredNumberScheduled ?? 0;
      default:
        return undefined;
    }
  } catch (err) {
    if (statusOf(err) === 404) return undefined;
    throw err;
  }
}

export function startAvailabilitySampler(kube: KubeClients, options: { intervalMs?: number } = {}): AvailabilitySampler {
  const intervalMs = options.intervalMs ?? 250;
  const byPdb = new Map<string, PdbAvailability>();
  // The controllers seen behind each PDB's pods, remembered so that a PDB whose pods all vanished
  // is still judged against the replicas its controller wants (not against zero pods).
  const owners = new Map<string, Map<string, Controller>>();
  let samples = 0;
  let errors = 0;
  let lastError: string | undefined;
  let stopped = false;
  let wake: (() => void) | undefined;

  // A ReplicaSet's owner never changes: looked up once per ReplicaSet (by UID), not on every sample.
  const replicaSetOwners = new Map<string, Controller>();

  const judge = async (pdb: V1PodDisruptionBudget, pods: V1Pod[], at: string) => {
    const namespace = pdb.metadata?.namespace ?? 'default';
    const name = pdb.metadata?.name ?? '';
    const key = `${namespace}/${name}`;
    const selected = pods.filter((p) => p.metadata?.namespace === namespace && selectorMatches(pdb.spec?.selector, p.metadata?.labels));
    const known = owners.get(key) ?? new Map<string, Controller>();
    owners.set(key, known);
    let unowned = 0;
    for (const pod of selected) {
      const ref = pod.metadata?.ownerReferences?.find((o) => o.controller);
      if (!ref) {
        unowned++;
        continue;
      }
      const c = await controllerOf(kube, replicaSetOwners, namespace, ref);
      known.set(`${c.kind}/${c.name}`, c);
    }
    let expected = unowned;
    for (const c of known.values()) expected += (await wanted(kube, c)) ?? 0;
    if (known.size === 0) expected = selected.length;
    const floor = pdbFloor(pdb.spec ?? {}, expected);
    const ready = selected.filter(isReady).length;
    const entry = byPdb.get(key) ?? { namespace, name, samples: 0, floor, minReady: ready, violations: [] };
    byPdb.set(key, entry);
    entry.samples++;
    entry.floor = floor;
    entry.minReady = Math.min(entry.minReady, ready);
    if (ready < floor) entry.violations.push({ at, ready, floor, expected });
  };

  const sample = async () => {
    const at = new Date().toISOString();
    const [pdbs, pods] = await Promise.all([kube.policy.listPodDisruptionBudgetForAllNamespaces(), kube.core.listPodForAllNamespaces()]);
    for (const pdb of pdbs.items) await judge(pdb, pods.items, at);
    samples++;
  };

  const loop = (async () => {
    while (!stopped) {
      const started = Date.now();
      try {
        await sample();
      } catch (err) {
        errors++; // an API hiccup is not evidence either way; the next sample tries again
        lastError = err instanceof Error ? err.message : String(err);
      }
      const wait = Math.max(0, intervalMs - (Date.now() - started));
      if (!stopped) {
        await new Promise<void>((r) => {
          const timer = setTimeout(r, wait);
          wake = () => {
            clearTimeout(timer);
            r();
          };
        });
      }
    }
  })();

  return {
    async stop() {
      stopped = true;
      wake?.();
      await loop;
      const pdbs = [...byPdb.values()].sort((a, b) => `${a.namespace}/${a.name}`.localeCompare(`${b.namespace}/${b.name}`));
      return { samples, errors, ...(lastError ? { lastError } : {}), pdbs, violated: pdbs.some((p) => p.violations.length > 0) };
    },
  };
}

/** One line per PDB, for a test's failure message or the demo's summary. */
export function formatAvailability(report: AvailabilityReport): string {
  const lines = report.pdbs.map((p) => {
    const verdict =
      p.violations.length === 0
        ? 'ok'
        : `VIOLATED ${p.violations.length}× (first ${p.violations[0]?.at}: ${p.violations[0]?.ready} ready < ${p.violations[0]?.floor})`;
    return `${p.namespace}/${p.name}: min ready ${p.minReady}, floor ${p.floor}, ${p.samples} samples, ${verdict}`;
  });
  if (lines.length === 0) lines.push(`no PodDisruptionBudget seen in ${report.samples} samples`);
  if (report.errors > 0) lines.push(`${report.errors} samples failed to read the API (last: ${report.lastError})`);
  return lines.join('\n');
}
