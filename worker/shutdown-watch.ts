import type { State } from '@temporalio/worker';

/** The part of the SDK's Worker this watch reads. */
export interface WorkerState {
  getState(): State;
}

export interface StallWatch {
  /** Resolves with the state the worker is stuck in; never when it stops or when the process asked it to. */
  stalled: Promise<State>;
  stop(): void;
}

/**
 * Watches for a shutdown nobody asked for that does not finish. The SDK shuts a worker down when its
 * core refuses a workflow completion (seen at 1,000 nodes: "legacy query response along with other
 * commands"); that worker then sat in DRAINING with no poller and no CPU, and the upgrade waited for
 * a worker that looked alive to its supervisor. A shutdown the process asked for (SIGINT/SIGTERM) is
 * left alone: it has its own grace.
 */
export function watchForStalledShutdown(
  worker: WorkerState,
  options: { asked: () => boolean; graceMs: number; pollMs?: number; now?: () => number },
): StallWatch {
  const now = options.now ?? Date.now;
  let leftRunningAt: number | undefined;
  let timer: NodeJS.Timeout | undefined;
  const stalled = new Promise<State>((resolve) => {
    timer = setInterval(() => {
      const state = worker.getState();
      if (options.asked() || state === 'STOPPED') return stopWatching();
      if (state === 'INITIALIZED' || state === 'RUNNING') return;
      leftRunningAt ??= now();
      if (now() - leftRunningAt >= options.graceMs) {
        stopWatching();
        resolve(state);
      }
    }, options.pollMs ?? 1000);
    timer.unref(); // the watch never keeps the process alive on its own
  });
  function stopWatching(): void {
    if (timer) clearInterval(timer);
    timer = undefined;
  }
  return { stalled, stop: stopWatching };
}
