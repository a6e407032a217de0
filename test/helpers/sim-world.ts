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
 * A simulated cluster for one file's tests, without Temporal (activities and the simulation against
 * real SSH hosts and a real apiserver): started in the file's `before`, stopped in its `after` however
 * the tests ended, after `cleanup` (the file's own teardown that still needs the cluster). The
 * handle stands for the cluster once `before` ran; touching it earlier is a clear error, not undefined.
 */
export function clusterWorld(description: string, options: { cleanup?: () => unknown } = {}): TestCluster {
  let started: TestCluster | undefined;
  before(async () => {
    started = await startTestCluster(description);
  });
  after(async () => {
    try {
      await options.cleanup?.();
    } finally {
      await started?.stop();
    }
  });
  return new Proxy({} as TestCluster, {
    get: (_, key) => {
      if (!started) throw new Error(`this file's test world is not started yet: read tc.${String(key)} in a test or hook`);
      return Reflect.get(started, key) as unknown;
    },
  });
}

/**
 * A dev server and a simulated cluster started together, the pair every file with a test world
 * starts: when one fails to start the other is stopped (a bare Promise.all left clusters running).
 * `alongside`: what else the file starts at the same time (a workflow bundle, a receiver), stopped
 * too when something fails to start. The caller's `after` stops both (`tc.stop()`, `env.teardown()`).
 */
export function startClusterWorld<A extends unknown[]>(
  description: string,
  ...alongside: { [K in keyof A]: Promise<A[K]> }
): Promise<[TestWorkflowEnvironment, TestCluster, ...A]> {
  return startTogether([startDevServer(), startTestCluster(description), ...alongside]) as Promise<
    [TestWorkflowEnvironment, TestCluster, ...A]
  >;
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
