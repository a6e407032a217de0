import { hostname } from 'node:os';

export interface WorkerDescription {
  hostname: string;
  nodeVersion: string;
  pid: number;
}

/** Names the worker process that ran the activity: proves activities run on a real worker. */
export async function describeWorker(): Promise<WorkerDescription> {
  return { hostname: hostname(), nodeVersion: process.version, pid: process.pid };
}
