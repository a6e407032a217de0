import { condition, patched, startChild, workflowInfo } from '@temporalio/workflow';
import {
  NOTIFICATION_SCHEMA_VERSION,
  notificationKey,
  type NotificationEvent,
  type NotificationEventKind,
} from '../contracts/notification-event.js';
import { notifyWorkflowId } from '../contracts/workflow-ids.js';
import { sinksFor, type SinkSubscription } from '../rules/index.js';
import { notifyWorkflow } from './notify-workflow.js';
import { PATCH } from './patches.js';

/**
 * A run's events to the cluster's `notify:` sinks: `emit` starts one notifyWorkflow per transition and
 * never waits for its delivery. Only the sinks' names and events are known here (the inventory reads
 * them from the configuration); no sink wanting the kind: no command at all, so runs without sinks
 * keep their command sequence. `started()` waits for the starts alone (a server round trip, not a
 * delivery), before the run returns or continues as new, so no start is lost with the run.
 */
export class Notifier {
  #sinks: SinkSubscription[] = [];
  #starting = 0;

  constructor(private readonly cluster: string) {}

  /** The sinks as the configuration named them when the run began (carried across continue-as-new). */
  get sinks(): SinkSubscription[] {
    return this.#sinks;
  }

  set sinks(sinks: SinkSubscription[]) {
    this.#sinks = sinks;
  }

  /**
   * One transition's event. `transition` makes the idempotency key, so it must name the transition
   * uniquely within the run (`waiting/gate/canary-1.33`), the same on replay and after a crash.
   */
  emit(kind: NotificationEventKind, transition: string, summary: string, details: Record<string, unknown>, command?: string): void {
    const sinks = sinksFor(this.#sinks, kind);
    if (sinks.length === 0 || !patched(PATCH.notifications)) return;
    const event = this.eventOf(kind, transition, summary, details, command);
    this.#starting++;
    startChild(notifyWorkflow, {
      workflowId: notifyWorkflowId(event.id),
      args: [{ cluster: this.cluster, event, sinks }],
      parentClosePolicy: 'ABANDON',
      workflowIdReusePolicy: 'REJECT_DUPLICATE',
      staticSummary: `notify ${sinks.join(', ')}: ${kind}`,
    })
      // Already started under this key (a transition seen twice): the event went once, deliberately swallowed.
      .catch(() => undefined)
      .finally(() => this.#starting--);
  }

  /** The event document of a transition (a change hook receives it too). */
  eventOf(
    kind: NotificationEventKind,
    transition: string,
    summary: string,
    details: Record<string, unknown>,
    command?: string,
  ): NotificationEvent {
    const info = workflowInfo();
    return {
      schemaVersion: NOTIFICATION_SCHEMA_VERSION,
      kind,
      id: notificationKey(info.workflowId, info.firstExecutionRunId, transition),
      at: new Date(Date.now()).toISOString(), // workflow time: the same on replay
      cluster: this.cluster,
      workflowId: info.workflowId,
      summary,
      ...(command ? { command } : {}),
      details,
    };
  }

  /** Resolves once every emitted event's workflow has started (never waits for a delivery). */
  async started(): Promise<void> {
    await condition(() => this.#starting === 0);
  }
}
