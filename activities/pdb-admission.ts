import type { KubeApi } from './kube-api.js';
import { sleep } from '../tooling/poll-until.js';

/**
 * When the API server has admitted an eviction under a PodDisruptionBudget, seen from its status.
 *
 * The server admits an eviction by writing the PDB's status (k8s.io/kubernetes
 * pkg/registry/core/pod/storage/eviction.go, checkAndDecrement): disruptionsAllowed minus one and the
 * pod's name in disruptedPods, at the resourceVersion it listed the PDB at; then it marks the pod
 * (DisruptionTarget) and deletes it, and only then answers. Two evictions under one PDB conflict only
 * between that list and that write: the loser sleeps 500 ms and tries again (EvictionsRetry), up to 20
 * times. So the next eviction under the PDB can be sent as soon as the previous one's write is seen,
 * while the server still marks and deletes its pod: evictions overlap, their PDB writes do not.
 */

/** What the gate keeps of a PDB's status between evictions under it. */
export interface PdbSnapshot {
  disruptionsAllowed: number;
  /** status.disruptedPods: pod name → the time the server admitted its eviction. */
  disruptedPods: Record<string, string>;
}

/** When to look, as shares of how long an eviction under the PDB took lately; never sooner than MIN_POLL_MS. */
const LOOKS = [0.5, 0.75];
const MIN_POLL_MS = 20;

/** The PDB's status now; undefined when it is gone (its evictions are no longer gated by it). */
export async function readPdbSnapshot(kube: KubeApi, namespace: string, name: string): Promise<PdbSnapshot | undefined> {
  // A list by name, not a get: the worker's RBAC lists PDBs (deploy/rbac.yaml) and needs nothing more.
  const { items } = await kube.policy.listNamespacedPodDisruptionBudget({ namespace, fieldSelector: `metadata.name=${name}` });
  const status = items[0]?.status;
  if (!status) return undefined;
  const disruptedPods: Record<string, string> = {};
  for (const [pod, at] of Object.entries(status.disruptedPods ?? {})) disruptedPods[pod] = new Date(at as unknown as string).toISOString();
  return { disruptionsAllowed: status.disruptionsAllowed ?? 0, disruptedPods };
}

/**
 * Whether the server has gone past the PDB write of this pod's eviction, seen on the pod: it marks the pod
 * (condition DisruptionTarget) and deletes it only after that write, and a pod gone was past it too. (The
 * PDB's disruptedPods names the pod too, but the disruption controller drops a terminating pod from it
 * within moments: a look at the PDB may come too late to see it.)
 */
async function podPastAdmission(kube: KubeApi, namespace: string, pod: string, uid: string): Promise<boolean> {
  const { items } = await kube.core.listNamespacedPod({ namespace, fieldSelector: `metadata.name=${pod}` });
  const mine = items.find((p) => p.metadata?.uid === uid);
  if (!mine) return true;
  return (
    Boolean(mine.metadata?.deletionTimestamp) ||
    (mine.status?.conditions ?? []).some((c) => c.type === 'DisruptionTarget' && c.status === 'True')
  );
}

/**
 * Resolves with the PDB's status once the server is seen past the eviction's PDB write (the pod marked,
 * deleting or gone; the PDB read after that), or with undefined once `answered` settles first (refused, or
 * answered before a look saw it). Looks twice at most, and only while `wanted()` (another eviction waits for the turn): each
 * is a read of the API server, which on a busy server costs every request there. `typicalMs`: how long an
 * eviction under this PDB took lately, so that the looks come when the write is likely. A read that fails
 * ends the looks: the caller then waits for the answer, as without them.
 */
export async function seenAdmitted(
  kube: KubeApi,
  o: {
    namespace: string;
    pdb: string;
    pod: string;
    uid: string;
    answered: Promise<unknown>;
    typicalMs: number;
    wanted: () => boolean;
  },
): Promise<PdbSnapshot | undefined> {
  let done = false;
  const answered = o.answered.then(
    () => (done = true),
    () => (done = true),
  );
  // Two looks at most, at a half and at three quarters of an eviction's time: each read costs a busy
  // server as much as it can save (measured in bench/), and after them the answer is near anyway.
  let at = 0;
  for (const share of LOOKS) {
    const next = Math.max(MIN_POLL_MS, Math.round(o.typicalMs * share));
    await Promise.race([sleep(next - at), answered]);
    at = next;
    if (done) return undefined;
    if (!o.wanted()) continue;
    try {
      if (!(await podPastAdmission(kube, o.namespace, o.pod, o.uid)) || done) continue;
      // Read after the pod showed it: the status has this eviction's write (and the controller's since).
      return done ? undefined : await readPdbSnapshot(kube, o.namespace, o.pdb);
    } catch {
      return undefined; // the answer still comes; the gate then passes the turn on as it did before
    }
  }
  await answered;
  return undefined;
}
