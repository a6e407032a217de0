/**
 * Worker Versioning (Temporal Worker Deployments): the deployment a worker registers its build in.
 * One deployment per task queue (per site), so that each site releases on its own: Temporal makes a
 * version current only where it has pollers on every task queue the current version had.
 * A deployment name may not hold a dot (a version reads `<deployment>.<build id>`).
 */
export const workerDeploymentName = (taskQueue: string): string => `skewless-${taskQueue.replace(/\./g, '-')}`;
