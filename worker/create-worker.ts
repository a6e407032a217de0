import { fileURLToPath } from 'node:url';
import type { DataConverter } from '@temporalio/common';
import { type NativeConnection, Worker, type WorkerOptions } from '@temporalio/worker';
import { createActivities, type ActivityDeps } from '../activities/index.js';

/** The workflows' entry point, compiled next to this file. */
export const workflowsPath = fileURLToPath(new URL('../workflows/index.js', import.meta.url));

export interface SkewlessWorkerOptions {
  connection: NativeConnection;
  namespace: string;
  taskQueue: string;
  deps?: ActivityDeps;
  /** Tests pass a pre-built bundle (built once per run) and their own cache size. */
  workflowBundle?: WorkerOptions['workflowBundle'];
  maxCachedWorkflows?: number;
  /** The payload codec (worker/payload-codec.ts workerDataConverter); default: plain JSON. */
  dataConverter?: DataConverter;
}

export async function createSkewlessWorker(options: SkewlessWorkerOptions): Promise<Worker> {
  return Worker.create({
    connection: options.connection,
    namespace: options.namespace,
    taskQueue: options.taskQueue,
    activities: createActivities(options.deps),
    ...(options.workflowBundle ? { workflowBundle: options.workflowBundle } : { workflowsPath }),
    ...(options.maxCachedWorkflows === undefined ? {} : { maxCachedWorkflows: options.maxCachedWorkflows }),
    ...(options.dataConverter ? { dataConverter: options.dataConverter } : {}),
  });
}
