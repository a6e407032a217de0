import type { Client } from '@temporalio/client';
import type { Simulation } from '../../sim/simulation.js';
import type { WorkerProcess } from './fault-processes.js';
import type { FaultTemporal } from './fault-temporal.js';
import type { CommandTracker } from './in-flight.js';

/** What every loop of a fault run (fault-loops.ts, temporal-loops.ts) and the moments it waits for (moments.ts) share. */
export interface LoopContext {
  sim: Simulation;
  client: Client;
  worker: WorkerProcess;
  temporal: FaultTemporal;
  /** Serialises the Temporal server's and PostgreSQL's outages. */
  outage: { run<T>(act: () => Promise<T>): Promise<T> };
  tracker: CommandTracker;
  log: (line: string) => void;
  /** When the upgrade started: times in the report are relative to it. */
  t0: number;
  /** Fires when the upgrade has ended: the loops stop. */
  finished: AbortSignal;
  /** How long a later targeted kill waits for its moment before it kills anyway. */
  targetWaitMs: number;
}
