import { patched } from '@temporalio/workflow';
import type { FleetClusterState, FleetStatus } from './fleet-messages.js';
import { activities as a } from './activities-proxy.js';
import { Notifier } from './notifier.js';
import { PATCH } from './patches.js';

/**
 * A fleet's events (issue 39), each to the `notify:` sinks of the cluster it is about: the fleet's
 * own waits (a cluster's approval, a failed or aborted cluster that stops the line) and the fleet's
 * end. Everything inside one cluster's upgrade (its start, gates, drains, hops, end) is that
 * upgrade's own event, sent by it. A cluster's sinks are read when its turn comes (a fleet that
 * predates PATCH.flowNotifications reads none and sends nothing).
 */
export class FleetNotices {
  readonly #of: Record<string, Notifier> = {};
  /** How often each cluster's line stopped: part of the wait's idempotency key. */
  readonly #stops: Record<string, number> = {};

  constructor(private readonly fleet: string) {}

  /** The cluster's sinks, once, when its turn comes. */
  async reached(c: FleetClusterState): Promise<void> {
    if (this.#of[c.cluster] || !patched(PATCH.flowNotifications)) return;
    const notifier = new Notifier(c.cluster);
    notifier.sinks = await a.notifySinks({ cluster: c.cluster });
    this.#of[c.cluster] = notifier;
  }

  waitsForApproval(c: FleetClusterState): void {
    const command = `skewless fleet approve ${this.fleet} --cluster ${c.cluster}`;
    this.#of[c.cluster]?.emit(
      'run.waiting',
      `waiting/approval/${c.cluster}`,
      `fleet ${this.fleet}: ${c.cluster} waits for approval: ${command}`,
      { waitingFor: 'gate', gate: `fleet ${this.fleet}`, fleet: this.fleet, stage: c.stage, to: c.to },
      command,
    );
  }

  approved(c: FleetClusterState): void {
    this.#of[c.cluster]?.emit('run.resumed', `resumed/approval/${c.cluster}`, `fleet ${this.fleet}: ${c.cluster} approved`, {
      waitingFor: 'gate',
      gate: `fleet ${this.fleet}`,
      by: c.approvedBy,
    });
  }

  /** A failed or aborted cluster stops the line until `skewless fleet resolve`. */
  lineStopped(c: FleetClusterState): void {
    const n = (this.#stops[c.cluster] = (this.#stops[c.cluster] ?? 0) + 1);
    const commands = ['retry', 'skip'].map((action) => `skewless fleet resolve ${this.fleet} --cluster ${c.cluster} --action ${action}`);
    this.#of[c.cluster]?.emit(
      'run.waiting',
      `waiting/line/${c.cluster}/${n}`,
      `fleet ${this.fleet}: ${c.cluster} ${c.phase}: ${c.message ?? ''}: the line stops (${commands[0]})`,
      { waitingFor: 'halt', fleet: this.fleet, after: c.cluster, reason: c.message ?? c.phase, commands },
      commands[0],
    );
  }

  resolved(c: FleetClusterState, by: string, action: string): void {
    this.#of[c.cluster]?.emit(
      'run.resumed',
      `resumed/line/${c.cluster}/${this.#stops[c.cluster] ?? 1}`,
      `fleet ${this.fleet}: ${c.cluster} resolved: ${action}`,
      { waitingFor: 'halt', fleet: this.fleet, after: c.cluster, by, action },
    );
  }

  /** The fleet's end, to the sinks of every cluster it reached. */
  ended(status: FleetStatus): void {
    for (const [cluster, notifier] of Object.entries(this.#of)) {
      const summary = `fleet ${this.fleet} ${status.phase === 'aborted' ? 'aborted' : 'done'}: ${status.outcome ?? ''}`;
      const mine = status.clusters.find((c) => c.cluster === cluster)?.phase;
      if (status.phase === 'aborted')
        notifier.emit('run.aborted', `aborted/${cluster}`, summary, {
          reason: status.outcome ?? 'aborted',
          outcome: status.outcome ?? '',
          cluster: mine,
        });
      else {
        const skipped = status.clusters.some((c) => c.phase === 'skipped');
        notifier.emit('run.finished', `finished/${cluster}`, summary, {
          outcome: status.outcome ?? '',
          exit: 0, // `skewless fleet`'s: done, skipped clusters included
          meaning: skipped ? 'done, with clusters skipped' : 'done',
          cluster: mine,
        });
      }
    }
  }

  /** Every event's start (never a delivery), before the fleet returns. */
  async started(): Promise<void> {
    for (const notifier of Object.values(this.#of)) await notifier.started();
  }
}
