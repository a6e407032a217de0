import type { FleetSpec } from '../rules/index.js';
import type { FleetStatus } from './fleet-messages.js';
import { FleetRun } from './fleet-run.js';

export interface FleetInput {
  /** The fleet file as rules/parseFleetSpec judged it. */
  fleet: FleetSpec;
}

/**
 * The upgrade of a fleet of clusters, workflow id `fleet/<name>`: each cluster's upgrade runs as a
 * child `clusterUpgradeWorkflow` with its usual id `upgrade/<cluster>` (so status, watch, approve and
 * resolve work on it as on any upgrade), stage by stage, in the file's order, at most maxParallel at once.
 * Stop the line: while a cluster is blocked (its upgrade waits on `skewless resolve`, reported by the
 * upgrade itself: fleet-report.ts), failed or aborted, no cluster after it starts. A blocked cluster
 * that moves again lets the line move; a failed or aborted one waits for `skewless fleet resolve`
 * (retry: its upgrade again; skip: the fleet goes on without it). Children are abandoned, never
 * cancelled, with the fleet: ending a fleet never stops an upgrade half way; `abort` asks the running
 * upgrades to abort (and compensate) and starts nothing more.
 */
export async function fleetUpgradeWorkflow(input: FleetInput): Promise<FleetStatus> {
  const spec = input.fleet;
  const fleet = new FleetRun(spec);
  fleet.registerHandlers();
  fleet.show();
  const running: Promise<void>[] = [];
  for (const [i, c] of fleet.status.clusters.entries()) {
    if (!(await fleet.waitForTurn(c))) break;
    const entry = spec.clusters[i] as FleetSpec['clusters'][number];
    running.push(fleet.runCluster(c, entry.policy, entry.reversible));
  }
  await Promise.all(running);
  return fleet.finish();
}
