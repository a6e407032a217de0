import { ActivityFailure, ApplicationFailure, proxyActivities } from '@temporalio/workflow';
import type { Activities } from '../activities/index.js';
import type { DeliveryAnswer } from '../activities/notify-delivery.js';
import type { NotificationEvent } from '../contracts/notification-event.js';
import { activities as a } from './activities-proxy.js';
import { notificationOnce } from './activity-options.js';
import { SUMMARY_OF } from './step-summary.js';

export interface NotifyInput {
  cluster: string;
  event: NotificationEvent;
  /** The sinks that want this event; absent: every sink of the cluster (`skewless notify test`). */
  sinks?: string[];
  /** One attempt per sink (`skewless notify test`): its answer now, not after minutes of retries. */
  once?: boolean;
}

// The test's single attempt: the named profile, with the same summary as every other call.
const once = proxyActivities<Activities>(notificationOnce).deliverNotification;
const deliverOnce: Activities['deliverNotification'] = (input) =>
  once.executeWithOptions({ ...notificationOnce, summary: SUMMARY_OF.deliverNotification(input) }, [input]);

export interface NotifyResult {
  delivered: DeliveryAnswer[];
  /** Sinks that never took the event, with the last failure's one line (no URL: the sink's name). */
  failed: { sink: string; error: string }[];
}

/**
 * One event delivered to its sinks, workflow id `notify/<idempotency key>` (contracts/workflow-ids.ts):
 * started by a run at a transition and abandoned by it (the run never awaits delivery), so a sink
 * that is down delays nothing; Temporal refuses a second start under the same key, so no transition
 * is sent twice, across worker crashes and continue-as-new alike. Each sink's attempts are this
 * workflow's activity (the notification profile), and `skewless history` shows them with the run.
 */
export async function notifyWorkflow(input: NotifyInput): Promise<NotifyResult> {
  const { cluster, event } = input;
  const sinks = input.sinks ?? (await a.notifySinks({ cluster })).map((s) => s.name);
  const results = await Promise.all(
    sinks.map(async (sink) => {
      try {
        return await (input.once ? deliverOnce : a.deliverNotification)({ cluster, sink, event });
      } catch (err) {
        // A delivery's failure is this workflow's result, not an error: nothing waits on it to fail.
        const cause = err instanceof ActivityFailure ? err.cause : err;
        const message = cause instanceof ApplicationFailure || cause instanceof Error ? cause.message : String(cause);
        return { sink, error: message };
      }
    }),
  );
  return {
    delivered: results.filter((r): r is DeliveryAnswer => 'status' in r),
    failed: results.filter((r): r is { sink: string; error: string } => 'error' in r),
  };
}
