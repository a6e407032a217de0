import { freePort } from '../../tooling/free-port.js';
import { readFile } from 'node:fs/promises';
import { Connection } from '@temporalio/client';
import { msToTs } from '@temporalio/common/lib/time.js';
import { TestWorkflowEnvironment } from '@temporalio/testing';
import { bundleWorkflowCode, type WorkflowBundle } from '@temporalio/worker';
import { ensureTemporalBinary } from '../../tooling/temporal-binary.js';
import { workflowsPath } from '../../worker/create-worker.js';
import { prebuiltBundle } from '../../worker/workflow-bundle.js';
import { ALL_SEARCH_ATTRIBUTES } from '../../workflows/search-attributes.js';
import { ensureSearchAttributes } from '../../stack/search-attributes.js';
import { archiveHistories, archiveLabel } from './history-archive.js';

/**
 * The real Temporal dev server (the binary built from the Go module proxy) for one test file, with
 * skewless's search attributes registered.
 *
 * Under the tier runner (test/runner/run-tests.ts) one server serves a whole tier: SKEWLESS_TEST_TEMPORAL
 * names its address, and each call here gets a namespace of its own on it, so test files running side by
 * side never see each other's workflow ids, task queues or visibility listings. Run alone (no variable),
 * the file starts and stops a server of its own, as before. `uiPort` always starts an own server.
 *
 * Teardown first archives every history of the namespace (or server) for the run's secret scan (when the run
 * keeps an archive: SKEWLESS_HISTORY_ARCHIVE); `archive: false` is for a test that plants secrets on purpose.
 */
export async function startDevServer(options: { archive?: boolean; uiPort?: number } = {}): Promise<TestWorkflowEnvironment> {
  const shared = process.env[SHARED_TEMPORAL_ENV];
  const env = shared && options.uiPort === undefined ? await namespaceOnSharedServer(shared) : await startOwnServer(options.uiPort);
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

/** The variable through which the tier runner hands its shared dev server's address to test files. */
export const SHARED_TEMPORAL_ENV = 'SKEWLESS_TEST_TEMPORAL';

function startOwnServer(uiPort: number | undefined): Promise<TestWorkflowEnvironment> {
  return TestWorkflowEnvironment.createLocal({
    server: {
      executable: { type: 'existing-path', path: ensureTemporalBinary() },
      ip: '127.0.0.1',
      searchAttributes: ALL_SEARCH_ATTRIBUTES,
      extraArgs: ['--log-level', 'error'],
      ...(uiPort === undefined ? {} : { ui: true, uiPort }),
    },
  });
}

let namespaces = 0;
/**
 * A fresh namespace on the tier's shared server, named after the test file. The dev server makes a
 * registered namespace and its search attributes usable at once (measured: the first start 30 ms after).
 */
async function namespaceOnSharedServer(address: string): Promise<TestWorkflowEnvironment> {
  const namespace = archiveLabel(`ns${++namespaces}`).slice(-200);
  // Patient: four test files start side by side with their simulations, and the shared server may be
  // too busy to accept a connection within the client's default 10 s (seen once in three full runs).
  const connection = await Connection.connect({ address, connectTimeout: '60 seconds' });
  try {
    await connection.workflowService.registerNamespace({ namespace, workflowExecutionRetentionPeriod: msToTs('1 day') });
    await ensureSearchAttributes(connection, namespace);
  } finally {
    await connection.close();
  }
  return TestWorkflowEnvironment.createFromExistingServer({ address, namespace });
}

/**
 * The dev server with its Web UI (the Temporal UI the CLI embeds) on a free port of 127.0.0.1;
 * resolves once the UI answers HTTP, with its base URL (`http://127.0.0.1:PORT`).
 */
export async function startDevServerWithUi(options: { archive?: boolean } = {}): Promise<{ env: TestWorkflowEnvironment; uiUrl: string }> {
  const uiPort = await freePort();
  const env = await startDevServer({ ...options, uiPort });
  const uiUrl = `http://127.0.0.1:${uiPort}`;
  const deadline = Date.now() + 30_000;
  for (;;) {
    try {
      const res = await fetch(uiUrl, { signal: AbortSignal.timeout(2_000) });
      if (res.ok) break;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) {
      await env.teardown();
      throw new Error(`the dev server's UI did not answer on ${uiUrl} within 30 s`);
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  return { env, uiUrl };
}

let bundle: Promise<WorkflowBundle> | undefined;

/**
 * The workflow bundle the build wrote (as `skewless worker` loads it), or one built once per test
 * process when it is stale or missing; shared by the process's workers.
 */
export function workflowBundle(): Promise<WorkflowBundle> {
  const prebuilt = prebuiltBundle();
  bundle ??= prebuilt
    ? readFile(prebuilt.codePath, 'utf8').then((code) => ({ code }))
    : bundleWorkflowCode({ workflowsPath, logger: quietLogger });
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

/** What a spawned `skewless` (the CLI or a worker) needs to reach this environment: its address and namespace. */
export const temporalVars = (env: TestWorkflowEnvironment): { TEMPORAL_ADDRESS: string; TEMPORAL_NAMESPACE: string } => ({
  TEMPORAL_ADDRESS: env.address,
  TEMPORAL_NAMESPACE: env.namespace ?? 'default',
});
