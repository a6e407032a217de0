import type { Client } from '@temporalio/client';
import { tsToMs } from '@temporalio/common/lib/time.js';
import { upgradeWorkflowId } from '../../contracts/workflow-ids.js';

/**
 * Which worker ran each drain of an upgrade, and when: from the node workflows' histories
 * (ActivityTaskStarted names the worker's identity, `pid@host`). Evidence that two workers drained side by
 * side, the case the per-PDB Lease is for. A retried activity's Started event is written when it closes,
 * with the last attempt's worker and number: a drain whose worker died shows the one that finished it.
 */

export interface DrainAttempt {
  workflowId: string;
  worker: string;
  attempt: number;
  startMs: number;
  /** The attempt's end (completed, failed, timed out). */
  endMs?: number;
}

/** Every drainNode attempt of the node workflows under `upgrade/<cluster>/`. */
export async function drainAttempts(client: Client, cluster: string): Promise<DrainAttempt[]> {
  const out: DrainAttempt[] = [];
  for await (const wf of client.workflow.list({ query: `WorkflowId STARTS_WITH "${upgradeWorkflowId(cluster)}/"` })) {
    const { events } = await client.workflow.getHandle(wf.workflowId, wf.runId).fetchHistory();
    const drains = new Set<string>();
    const open = new Map<string, DrainAttempt>();
    for (const e of events ?? []) {
      const id = String(e.eventId);
      if (e.activityTaskScheduledEventAttributes?.activityType?.name === 'drainNode') drains.add(id);
      const started = e.activityTaskStartedEventAttributes;
      if (started && drains.has(String(started.scheduledEventId))) {
        const attempt: DrainAttempt = {
          workflowId: wf.workflowId,
          worker: started.identity ?? '?',
          attempt: started.attempt ?? 1,
          startMs: tsToMs(e.eventTime),
        };
        out.push(attempt);
        open.set(String(started.scheduledEventId), attempt);
      }
      const ended = e.activityTaskCompletedEventAttributes ?? e.activityTaskFailedEventAttributes ?? e.activityTaskTimedOutEventAttributes;
      const attempt = ended ? open.get(String(ended.scheduledEventId)) : undefined;
      if (attempt) attempt.endMs = tsToMs(e.eventTime);
    }
  }
  return out.sort((a, b) => a.startMs - b.startMs);
}

/** Pairs of drains by two different workers that ran at the same time. */
export function overlappingAcrossWorkers(attempts: DrainAttempt[]): [DrainAttempt, DrainAttempt][] {
  const pairs: [DrainAttempt, DrainAttempt][] = [];
  for (const [i, a] of attempts.entries()) {
    for (const b of attempts.slice(i + 1)) {
      if (a.worker !== b.worker && b.startMs < (a.endMs ?? Infinity) && a.startMs < (b.endMs ?? Infinity)) pairs.push([a, b]);
    }
  }
  return pairs;
}
