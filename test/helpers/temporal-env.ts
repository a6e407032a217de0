import { TestWorkflowEnvironment } from '@temporalio/testing';
import { bundleWorkflowCode, type WorkflowBundle } from '@temporalio/worker';
import { ensureTemporalBinary } from '../../tooling/temporal-binary.js';
import { workflowsPath } from '../../worker/create-worker.js';
import { ALL_SEARCH_ATTRIBUTES } from '../../workflows/search-attributes.js';
import { archiveHistories, archiveLabel } from './history-archive.js';

/**
 * The real Temporal dev server (the binary built from the Go module proxy), started by the test
 * that needs it and stopped by that test. It registers skewless's search attributes.
 * Its teardown first archives every history it holds for the run's secret scan (when the run keeps
 * an archive: SKEWLESS_HISTORY_ARCHIVE); `archive: false` is for a test that plants secrets on purpose.
 */
export async function startDevServer(options: { archive?: boolean } = {}): Promise<TestWorkflowEnvironment> {
  const env = await TestWorkflowEnvironment.createLocal({
    server: {
      executable: { type: 'existing-path', path: ensureTemporalBinary() },
      ip: '127.0.0.1',
      searchAttributes: ALL_SEARCH_ATTRIBUTES,
      extraArgs: ['--log-level', 'error'],
    },
  });
  if (options.archive === false) return env;
  const label = archiveLabel('dev-server');
  const teardown = env.teardown.bind(env);
  let archived = false;
  env.teardown = async () => {
    try {
      // Once: a second teardown (an after() hook after a failed test's own) finds the server gone.
      if (!archived) {
        archived = true;
        await archiveHistories(env.client, label, { namespace: env.namespace ?? 'default' });
      }
    } finally {
      await teardown();
    }
  };
  return env;
}

let bundle: Promise<WorkflowBundle> | undefined;

/** The workflow bundle, built once per test process and shared by its workers. */
export function workflowBundle(): Promise<WorkflowBundle> {
  bundle ??= bundleWorkflowCode({ workflowsPath, logger: quietLogger });
  return bundle;
}

const quietLogger = {
  log: () => undefined,
  trace: () => undefined,
  debug: () => undefined,
  info: () => undefined,
  warn: (message: string) => console.warn(message),
  error: (message: string) => console.error(message),
};

let queue = 0;
/** A task queue no other test uses. */
export const uniqueTaskQueue = (name: string) => `test-${name}-${process.pid}-${++queue}`;
