import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { Worker } from '@temporalio/worker';
import { createClusterResolver } from '../../activities/host-address.js';
import type { Activities } from '../../activities/index.js';
import { createSkewlessWorker } from '../../worker/create-worker.js';
import { uniqueTaskQueue, workflowBundle } from './temporal-env.js';

/** The real worker, real activities, reaching the clusters configured in `clustersDir`. */
export async function simWorker(env: TestWorkflowEnvironment, clustersDir: string, taskQueue: string): Promise<Worker> {
  return createSkewlessWorker({
    connection: env.nativeConnection,
    namespace: env.namespace ?? 'default',
    taskQueue,
    workflowBundle: await workflowBundle(),
    deps: { clusters: createClusterResolver(clustersDir) },
  });
}

/** Runs `body` while a worker with mocked activities polls a fresh task queue. */
export async function withMockedWorker<T>(
  env: TestWorkflowEnvironment,
  acts: Partial<Activities>,
  prefix: string,
  body: (taskQueue: string) => Promise<T>,
): Promise<T> {
  const taskQueue = uniqueTaskQueue(prefix);
  const worker = await Worker.create({
    connection: env.nativeConnection,
    namespace: env.namespace ?? 'default',
    taskQueue,
    workflowBundle: await workflowBundle(),
    activities: acts,
  });
  return worker.runUntil(body(taskQueue));
}
