import { describeWorker } from './describe-worker.js';

/**
 * What activities need from the outside world, injected by the worker (real clients) or by tests.
 * Kubernetes and SSH clients join here as narrow interfaces; no module-level singletons.
 */
export interface ActivityDeps {
  log?: (message: string) => void;
}

/** Builds the activity implementations; workflows proxy `ReturnType<typeof createActivities>`. */
export function createActivities(_deps: ActivityDeps = {}) {
  return { describeWorker };
}

export type Activities = ReturnType<typeof createActivities>;
