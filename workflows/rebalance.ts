import { workflowInfo } from '@temporalio/workflow';
import { activities as a } from './activities-proxy.js';
import type { Rollout } from './rollout.js';
import type { RolloutStatus } from './rollout-messages.js';

/**
 * After a hop: the Deployments left with every running replica on one node (often the canary's, every
 * other node drained after it) are named in the run's events and `status.concentrated`; with
 * policy.rebalance each is restarted through its own rollout, one at a time, only while its
 * PodDisruptionBudgets allow a disruption (activities/workload-spread.ts), so the scheduler spreads it
 * again. Nothing else is touched: a restart that cannot go is said, never forced.
 */
export async function reportConcentration<S extends RolloutStatus>(
  r: Rollout<S>,
  o: { hop: string; rebalance: boolean; waitSeconds: number },
): Promise<void> {
  const { concentrated } = await a.findConcentratedWorkloads({ cluster: r.cluster });
  const names = concentrated.map((w) => `Deployment ${w.namespace}/${w.name} (${w.replicas} on ${w.node})`);
  r.status.concentrated = names;
  if (names.length === 0) return;
  r.note(`after ${o.hop}, every replica on one node: ${names.join(', ')}${o.rebalance ? '' : ' (--rebalance restarts them)'}`);
  if (!o.rebalance) return;
  // The first run of the chain and the hop: the same across continue-as-new and retries, new for a later run.
  const restartKey = `${workflowInfo().firstExecutionRunId}/${o.hop}`;
  const left: string[] = [];
  for (const w of concentrated) {
    if (r.aborted()) return;
    const done = await a.rebalanceWorkload({
      cluster: r.cluster,
      namespace: w.namespace,
      name: w.name,
      restartKey,
      waitSeconds: o.waitSeconds,
    });
    const what = `Deployment ${w.namespace}/${w.name}`;
    if (!done.restarted) left.push(`${what} (${done.reason ?? 'not restarted'})`);
    else r.note(`rebalanced ${what}: now on ${done.nodes?.join(', ') ?? '?'}${done.reason ? `; ${done.reason}` : ''}`);
    if (done.restarted && (done.nodes?.length ?? 0) < 2) left.push(`${what} (still on ${done.nodes?.join(', ') ?? 'one node'})`);
  }
  r.status.concentrated = left;
  if (left.length > 0) r.note(`left on one node: ${left.join(', ')}`);
}
