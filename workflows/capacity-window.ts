import { describeResources, type RolloutPhase } from '../rules/index.js';
import { activities as a } from './activities-proxy.js';
import type { HaltState } from './rollout-messages.js';

/** What the capacity window asks of the rollout (Rollout in rollout.ts, which calls it). */
export interface CapacityRollout {
  readonly cluster: string;
  aborted(): string | undefined;
  acknowledges(name: string): boolean;
  note(text: string): void;
  holdUntilAnswered(halt: HaltState): Promise<void>;
  window(nodes: string[], width: number, run: (node: string) => Promise<unknown>): Promise<void>;
}

/** The most pods a halt or a note names; the rest are counted. */
const NAMED = 10;
const named = (pods: string[]) => pods.slice(0, NAMED).join(', ') + (pods.length > NAMED ? ` and ${pods.length - NAMED} more` : '');

/**
 * A phase's nodes run in parts of at most its maxUnavailable, each checked just before it starts
 * (checkBatchCapacity: the pods their drains evict against what stays allocatable on the schedulable
 * nodes): a part that would not fit is shrunk to the nodes whose pods do; when even one node's pods
 * would not, the rollout halts before that node is cordoned, naming the pods that would stay Pending,
 * until the operator retries (after making room) or aborts; a run started with `--acknowledge capacity:NODE`
 * (or `capacity:*`: a one-worker cluster) drains that node anyway. Nothing is evicted to find out.
 * Each part is a wave: at most maxUnavailable (never more than MAX_OPEN_CHILDREN) node workflows open,
 * and `betweenWaves` runs after one wave and before the next.
 */
export async function windowWithinCapacity(
  r: CapacityRollout,
  phase: RolloutPhase,
  nodes: string[],
  hop: string,
  run: (node: string) => Promise<unknown>,
  betweenWaves?: () => Promise<void>,
): Promise<void> {
  let rest = nodes;
  let waves = 0;
  while (rest.length > 0 && !r.aborted()) {
    // Between two waves no node of the phase runs: the flow's safe point (an upgrade may continue as new).
    if (waves > 0 && betweenWaves) {
      await betweenWaves();
      if (r.aborted()) return;
    }
    const asked = rest.slice(0, Math.max(1, phase.maxUnavailable));
    const { batches } = await a.checkBatchCapacity({ cluster: r.cluster, batches: [asked] });
    const check = batches[0];
    if (!check) return; // the activity answers one result per batch asked
    const pending = check.fit.pending;
    if (check.size === 0 && r.acknowledges(`capacity:${asked[0]}`)) {
      r.note(`${asked[0]}: capacity acknowledged, drained although ${named(pending)} will wait Pending`);
      await r.window(asked.slice(0, 1), 1, run);
      rest = rest.slice(1);
      waves++;
      continue;
    }
    if (check.size === 0) {
      await r.holdUntilAnswered({
        after: phase.stage,
        hop,
        step: 'capacity',
        failure: 'InsufficientCapacity',
        message:
          `${pending.length} pod(s) of ${asked[0]} would stay Pending: their requests (${describeResources(check.fit.requests)}) ` +
          `do not fit on the nodes that stay schedulable (${describeResources(check.fit.headroom)} free besides): ${named(pending)}`,
        workloads: pending,
        actions: ['retry', 'abort'],
      });
      continue; // retried: check again (the operator made room), or aborted
    }
    if (check.size < asked.length)
      r.note(
        `${phase.stage}: ${check.size} of ${asked.length} nodes out at once (${asked.slice(0, check.size).join(', ')}): ` +
          `the pods of all ${asked.length} would not fit on the nodes that stay schedulable`,
      );
    const part = rest.slice(0, check.size);
    await r.window(part, part.length, run);
    rest = rest.slice(check.size);
    waves++;
  }
}
