import { isBelowHop, type WorkerHops } from './hop-work.js';
import { checkSkew, type SkewInventory } from './skew-policy.js';

/**
 * At which hops each worker's kubelet moves. Control planes move at every hop; a worker by default
 * only when the control plane's next hop would leave it outside the skew policy, and at the last hop:
 * since 1.28 a kubelet may be three minors behind the kube-apiserver (KEP-3935), so 1.32 → 1.34
 * drains each worker once, and 1.30 → 1.34 twice (at 1.33, the latest point before 1.34 would put a
 * 1.30 kubelet four minors behind, then at 1.34). Moving as late as the policy allows gives the fewest
 * moves, since a kubelet never goes above the hop it moves in.
 *
 * The judge is the skew policy itself (checkSkew) on the state the next hop's control plane makes
 * with the worker still where it is; the proof that every state holds is the runbook's step-by-step
 * check (checkRunbook) over the steps buildRunbook makes of these moves.
 *
 * `everyHop` (the policy's workersEveryHop) keeps the older plan: every worker at every hop. A worker
 * whose kubelet version is not known moves at every hop (nothing can be proved about it).
 */
export function planWorkerHops(hops: readonly string[], state: SkewInventory, workers: readonly string[], everyHop = false): WorkerHops {
  const plan: WorkerHops = {};
  for (const worker of workers) {
    let at = state.kubelets?.find((k) => k.node === worker)?.version;
    if (everyHop || at === undefined) {
      plan[worker] = [...hops];
      continue;
    }
    const moves: string[] = [];
    for (const [i, hop] of hops.entries()) {
      const next = hops[i + 1];
      const mustMove = next === undefined || !kubeletHoldsAt(at, next, worker);
      if (mustMove && isBelowHop(at, hop)) {
        moves.push(hop);
        at = hop;
      }
    }
    plan[worker] = moves;
  }
  return plan;
}

/** Whether a kubelet at `kubelet` stays within the policy when the kube-apiservers reach `apiserver`. */
function kubeletHoldsAt(kubelet: string, apiserver: string, node: string): boolean {
  return checkSkew({ apiservers: [{ node: 'control-plane', version: apiserver }], kubelets: [{ node, version: kubelet }] }).compliant;
}

/** What one hop moves, for the plan's display: its control planes, the workers that move, and those that stay (by version). */
export interface HopMoves {
  hop: string;
  controlPlanes: string[];
  workers: string[];
  workersStay: { version: string; nodes: string[] }[];
}
