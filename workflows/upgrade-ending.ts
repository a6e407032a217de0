import { ApplicationFailure, CancellationScope } from '@temporalio/workflow';
import type { UpgradePlan } from '../rules/index.js';
import { activities as a } from './activities-proxy.js';
import type { RolloutStatus, UpgradeStatus } from './upgrade-messages.js';

// How a cluster upgrade ends: the refusal it names, the sentence it leaves, and what it undoes.

export function skewFailure(what: string, failure: UpgradePlan['skew']['failure']): ApplicationFailure {
  const where = failure?.step ? `step "${failure.step.detail}" of ${failure.step.hop}` : 'the cluster as it is';
  const why = failure?.violations.map((v) => `${v.component} on ${v.node} at ${v.version}: ${v.rule}`).join('; ');
  return ApplicationFailure.nonRetryable(`${what}: ${where} breaks the skew policy: ${why}`, 'SkewViolation');
}

/** One sentence on the state the run leaves: which nodes are where. */
export function leftAs(status: UpgradeStatus): string {
  const byVersion = new Map<string, string[]>();
  for (const [node, s] of Object.entries(status.nodes)) {
    const key = s.version ?? s.from ?? 'unknown';
    byVersion.set(key, [...(byVersion.get(key) ?? []), node]);
  }
  const versions = [...byVersion.entries()].map(([v, nodes]) => `${nodes.join(', ')} at ${v}`).join('; ');
  const stuck = status.events.filter((e) => e.startsWith('compensation: uncordon ')).map((e) => e.split(' ')[2]);
  return `${versions}${status.skipped.length ? `; skipped: ${status.skipped.join(', ')}` : ''}; ${
    stuck.length ? `STILL CORDONED (uncordon failed): ${stuck.join(', ')}` : 'no node left cordoned by this run'}`;
}

export async function handBack(cluster: string, owner: string, nodes: string[], status: RolloutStatus): Promise<void> {
  for (const node of nodes) {
    const r = await a.uncordonNode({ cluster, node, owner });
    if (r.changed) status.events.push(`${node} uncordoned at ${status.nodes[node]?.version ?? 'its old version'} (skipped)`);
  }
}

/** Undoes what this run did to scheduling, never versions: uncordon only our cordons, clear our labels. */
export async function compensate(cluster: string, owner: string, nodes: string[], status: RolloutStatus): Promise<void> {
  status.phase = 'compensating';
  await CancellationScope.nonCancellable(async () => {
    for (const node of nodes) {
      try {
        const r = await a.uncordonNode({ cluster, node, owner });
        if (r.changed) status.events.push(`compensation: uncordoned ${node}`);
      } catch (err) {
        status.events.push(`compensation: uncordon ${node} failed: ${(err as Error).message}`); // keep going: best effort
      }
    }
    await a.clearStageLabels({ cluster, owner }).catch((err: Error) => status.events.push(`compensation: clear labels failed: ${err.message}`));
  });
}
