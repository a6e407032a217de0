import { after, before } from 'node:test';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import type { Worker } from '@temporalio/worker';
import { startTestCluster, type TestCluster } from './sim-cluster.js';
import { startTogether } from './start-together.js';
import { startDevServer, temporalVars, uniqueTaskQueue } from './temporal-env.js';
import { simWorker } from './workers.js';

/** What an e2e file's tests share: set once the file's `before` hook ran. */
export interface SimWorld {
  env: TestWorkflowEnvironment;
  tc: TestCluster;
  taskQueue: string;
  /** The environment of a CLI child that talks to this world's Temporal and worker, as `user`. */
  cliEnv(user?: string): NodeJS.ProcessEnv;
}

/**
 * A dev server and a simulated cluster started together, the pair every file with a test world
 * starts: when one fails to start the other is stopped (a bare Promise.all left clusters running).
 * The caller's `after` stops both (`tc.stop()`, `env.teardown()`).
 */
export function startClusterWorld(description: string): Promise<[TestWorkflowEnvironment, TestCluster]> {
  return startTogether([startDevServer(), startTestCluster(description)]);
}

/**
 * The world most e2e files build: a dev server and a simulated cluster started together, and a
 * worker of this process on a task queue of its own, registered as the file's before and after
 * hooks (everything stopped however the tests end). `beforeWorker` edits the cluster's
 * configuration before the worker first reads it.
 */
export function simWorld(description: string, queue: string, beforeWorker?: (tc: TestCluster) => void | Promise<void>): SimWorld {
  let worker: Worker | undefined;
  let running: Promise<void> | undefined;
  const world: Partial<SimWorld> & Pick<SimWorld, 'taskQueue' | 'cliEnv'> = {
    taskQueue: uniqueTaskQueue(queue),
    cliEnv: (user = 'dana') => ({
      ...process.env,
      ...temporalVars(world.env as TestWorkflowEnvironment),
      SKEWLESS_TASK_QUEUE: world.taskQueue,
      USER: user,
    }),
  };
  before(async () => {
    [world.env, world.tc] = await startClusterWorld(description);
    await beforeWorker?.(world.tc);
    worker = await simWorker(world.env, world.tc.clustersDir, world.taskQueue);
    running = worker.run();
  });
  after(async () => {
    worker?.shutdown();
    await running?.catch(() => undefined);
    await world.tc?.stop();
    await world.env?.teardown();
  });
  return world as SimWorld; // env and tc are set before the first test runs
}
