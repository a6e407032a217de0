import type { DataConverter } from '@temporalio/common';
import { type NativeConnection, Worker, type WorkerOptions } from '@temporalio/worker';
import { createActivities, type ActivityDeps } from '../activities/index.js';
import type { DeploymentVersion } from './deployment.js';
import { prebuiltBundle, workflowsPath } from './workflow-bundle.js';

export { workflowsPath };

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
  /** Tracing's interceptors and span sink (worker/tracing.ts), when it is on. */
  plugins?: WorkerOptions['plugins'];
  /** How long a stopping worker lets its activities in flight finish before cancelling them; default 0 (tests). */
  shutdownGraceTime?: WorkerOptions['shutdownGraceTime'];
  /** Worker Versioning: the build this worker registers; unset, an unversioned worker (the tests' in-process workers). */
  deployment?: DeploymentVersion;
}

/**
 * Every workflow type is pinned to the build that started it (docs/deployment.md, "Releasing new
 * workflow code"): a run, its node children and its continue-as-new runs replay only on the code
 * that wrote their history, so a release needs no patched() branch. None is auto-upgrade: each type
 * either ends within a rollout (hours) or, as a fleet or a schedule's run, waits on children of its
 * own build; auto-upgrade would hand a run mid-history to new code and bring the branches back.
 */
export const VERSIONING_BEHAVIOR = 'PINNED';

function versioning(deployment: DeploymentVersion | undefined): Pick<WorkerOptions, 'workerDeploymentOptions'> {
  if (!deployment) return {};
  return { workerDeploymentOptions: { useWorkerVersioning: true, version: deployment, defaultVersioningBehavior: VERSIONING_BEHAVIOR } };
}

/**
 * The `skewless worker` process's shutdown grace: on SIGTERM/SIGINT it polls no more and lets the
 * activities in flight finish (a host command, a snapshot copy, a drain) for up to this long; what is
 * still running then is cancelled (its channel closed) and retried by another worker. Below the
 * compose file's stop_grace_period (1 minute), so Docker does not SIGKILL the worker first.
 */
export const SHUTDOWN_GRACE_SECONDS = 30;

/**
 * Heartbeats leave the worker at least this often. The SDK's default holds them back for 80% of an
 * activity's heartbeat timeout, which leaves a loaded worker a few seconds' margin before Temporal
 * takes it for dead and starts a second attempt beside the first; 5 s keeps the margin wide with
 * the short heartbeat timeouts that let an upgrade resume soon after a worker crash.
 */
const HEARTBEAT_EVERY = '5 seconds';

/**
 * Workflows a worker keeps in memory between their tasks. The SDK's default follows V8's heap limit
 * (about 50 workflows at `--max-old-space-size=256`), and a batch of 100 node workflows then evicted
 * the upgrade's own workflow: a status query that reached it while it was replayed made the SDK shut
 * the worker down ("legacy query response along with other commands", sdk-core issue 390). Set above
 * the largest batch, with room for a fleet's clusters; a running node workflow holds well under 1 MiB.
 */
export const WORKFLOW_CACHE_SIZE = 600;

/** A bundle the caller built, else the build's (when no plugin changes what is bundled), else bundle now. */
function workflowCode(options: SkewlessWorkerOptions): Pick<WorkerOptions, 'workflowBundle' | 'workflowsPath'> {
  if (options.workflowBundle) return { workflowBundle: options.workflowBundle };
  const prebuilt = options.plugins?.length ? undefined : prebuiltBundle();
  return prebuilt ? { workflowBundle: prebuilt } : { workflowsPath };
}

export async function createSkewlessWorker(options: SkewlessWorkerOptions): Promise<Worker> {
  return Worker.create({
    connection: options.connection,
    namespace: options.namespace,
    taskQueue: options.taskQueue,
    maxHeartbeatThrottleInterval: HEARTBEAT_EVERY,
    activities: createActivities(options.deps),
    ...workflowCode(options),
    maxCachedWorkflows: options.maxCachedWorkflows ?? WORKFLOW_CACHE_SIZE,
    ...(options.dataConverter ? { dataConverter: options.dataConverter } : {}),
    ...(options.plugins?.length ? { plugins: options.plugins } : {}),
    ...(options.shutdownGraceTime === undefined ? {} : { shutdownGraceTime: options.shutdownGraceTime }),
    ...versioning(options.deployment),
  });
}
