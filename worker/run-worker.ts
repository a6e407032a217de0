import { accessSync, constants, readdirSync, statSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { NativeConnection } from '@temporalio/worker';
import { loadClusterConfig } from '../activities/cluster-config.js';
import { createClusterResolver } from '../activities/host-address.js';
import {
  ConfigError,
  connectionOptions,
  describeConnection,
  redactSecrets,
  UnreachableError,
  type ConnectionSettings,
  type TelemetryConfig,
} from './config.js';
import { createSkewlessWorker, SHUTDOWN_GRACE_SECONDS } from './create-worker.js';
import { currentUnlessSet, deploymentVersion, describeVersion, type DeploymentVersion } from './deployment.js';
import { installRuntime } from './metrics.js';
import { payloadCodec, workerDataConverter } from './payload-codec.js';
import { watchForStalledShutdown } from './shutdown-watch.js';
import { prebuiltBundle } from './workflow-bundle.js';
import { workflowBuildId } from '../tooling/build-info.js';

/**
 * The build this worker registers: the prebuilt bundle's hash (tooling/build-info.ts). A checkout
 * whose bundle is missing or older than its compiled workflows bundles at start and runs unversioned.
 */
function thisBuild(taskQueue: string): DeploymentVersion | undefined {
  const buildId = prebuiltBundle() ? workflowBuildId() : undefined;
  return buildId ? deploymentVersion(taskQueue, buildId) : undefined;
}

/**
 * Checks the clusters directory before anything connects: it exists, holds at least one
 * <cluster>.yaml, every one of them loads, and the local files each names (kubeconfig, SSH key,
 * known hosts) are readable. Returns the cluster names. Errors are one line and name no secret.
 */
export function checkClustersDir(dir: string): string[] {
  let entries: string[];
  try {
    if (!statSync(dir).isDirectory()) throw new ConfigError(`clusters directory ${dir} is not a directory`);
    entries = readdirSync(dir);
  } catch (err) {
    if (err instanceof ConfigError) throw err;
    throw new ConfigError(`cannot read clusters directory ${dir}: ${(err as NodeJS.ErrnoException).code ?? 'unreadable'}`);
  }
  const names = entries
    .filter((f) => f.endsWith('.yaml'))
    .map((f) => f.slice(0, -'.yaml'.length))
    .sort();
  if (names.length === 0) throw new ConfigError(`no cluster configuration (<cluster>.yaml) in ${dir}`);
  for (const name of names) {
    let config;
    try {
      config = loadClusterConfig(dir, name);
    } catch (err) {
      throw new ConfigError(((err as Error).message.split('\n')[0] ?? '').trim() || `${join(dir, `${name}.yaml`)} does not load`);
    }
    for (const [what, path] of [
      ['kubeconfig', config.kubeconfig],
      ['ssh.privateKeyPath', config.ssh.privateKeyPath],
      ['ssh.knownHostsPath', config.ssh.knownHostsPath],
    ] as const) {
      try {
        accessSync(path, constants.R_OK);
      } catch (err) {
        throw new ConfigError(
          `${join(dir, `${name}.yaml`)}: ${what} ${path} is not readable: ${(err as NodeJS.ErrnoException).code ?? 'unreadable'}`,
        );
      }
    }
  }
  return names;
}

/**
 * How long the worker keeps an SSH connection to a host with no command on it: long enough to span a
 * node's steps (the drain between its packages and its kubelet restart takes seconds to minutes under
 * PDBs), short enough that a host is met afresh (a reboot, a rotated key) soon after it was last used.
 */
export const WORKER_SSH_IDLE_MS = 30_000;

/** A shutdown nobody asked for gets the grace of an asked one and this much more before the process gives up on it. */
const STALL_MARGIN_SECONDS = 30;

export interface RunWorkerOptions {
  connection: ConnectionSettings;
  taskQueue: string;
  clustersDir: string;
  /** Prometheus metrics and OpenTelemetry tracing, each off unless set. */
  telemetry?: TelemetryConfig;
  log: (line: string) => void;
}

/**
 * The worker process's life: check, connect, poll until SIGINT/SIGTERM (the SDK's runtime turns
 * them into a graceful shutdown: no new tasks, in-flight ones get SHUTDOWN_GRACE_SECONDS to finish,
 * then are cancelled), close.
 */
export async function runWorker(options: RunWorkerOptions): Promise<void> {
  const clusters = checkClustersDir(options.clustersDir);
  const connect = connectionOptions(options.connection); // reads the TLS files: a bad one fails here
  const codec = payloadCodec(options.connection); // and the payload key file
  const { metricsAddress, otlpEndpoint } = options.telemetry ?? {};
  // The SDK's runtime takes its log and metrics options once, before the first connection of this process.
  installRuntime(metricsAddress);
  // Loaded only when asked for: with tracing off, no interceptor, no exporter, the plain workflow bundle.
  const tracing = otlpEndpoint ? (await import('./tracing.js')).startTracing(otlpEndpoint) : undefined;
  let connection: NativeConnection;
  try {
    connection = await NativeConnection.connect(connect);
  } catch (err) {
    await tracing?.shutdown();
    throw new UnreachableError(
      `cannot reach Temporal at ${options.connection.address}: ${redactSecrets((err as Error).message.split('\n')[0] ?? '', options.connection)}`,
    );
  }
  // SSH connections stay open between a node's steps for WORKER_SSH_IDLE_MS (ssh-shell.ts); closed at the end.
  const resolver = createClusterResolver(options.clustersDir, { sshIdleMs: WORKER_SSH_IDLE_MS });
  const build = thisBuild(options.taskQueue);
  try {
    const worker = await createSkewlessWorker({
      connection,
      namespace: options.connection.namespace,
      taskQueue: options.taskQueue,
      deps: { clusters: resolver },
      dataConverter: workerDataConverter(codec),
      shutdownGraceTime: SHUTDOWN_GRACE_SECONDS * 1000,
      ...(tracing ? { plugins: [tracing.plugin] } : {}),
      ...(build ? { deployment: build } : {}),
    });
    let asked = false;
    const stopping = (signal: string) => {
      asked = true;
      options.log(`skewless worker: ${signal}, finishing the tasks in flight (up to ${SHUTDOWN_GRACE_SECONDS} s, then cancelling them)`);
    };
    process.once('SIGINT', stopping).once('SIGTERM', stopping);
    const graceSeconds = SHUTDOWN_GRACE_SECONDS + STALL_MARGIN_SECONDS;
    const watch = watchForStalledShutdown(worker, { asked: () => asked, graceMs: graceSeconds * 1000 });
    void watch.stalled.then((state) => {
      // The stuck native worker would keep this process alive: exit, so that the supervisor
      // (compose's restart: unless-stopped) starts a fresh worker that replays the upgrades.
      options.log(
        `skewless worker: the SDK shut the worker down on its own and it is still ${state} after ${graceSeconds} s; exiting with status 1`,
      );
      process.exit(1);
    });
    try {
      const running = worker.run();
      void running.catch(() => undefined); // awaited below; a failure before then is not unhandled
      // The version exists on the server once the worker polls: only then can it be made current.
      const versionLine = build
        ? `; ${describeVersion(build, await currentUnlessSet(connection, options.connection.namespace, build, `skewless-worker@${hostname()}`))}`
        : '; unversioned (no prebuilt workflow bundle)';
      const encryption = codec.encrypting ? `; payloads encrypted with key ${codec.encrypting.id}` : '';
      const telemetry = `${metricsAddress ? `; metrics on http://${metricsAddress}/metrics` : ''}${otlpEndpoint ? '; traces to the OTLP endpoint' : ''}`;
      options.log(
        `skewless worker: task queue ${options.taskQueue} on ${describeConnection(options.connection)}${encryption}; clusters ${clusters.join(', ')} from ${options.clustersDir}${telemetry}${versionLine}`,
      );
      await running;
    } finally {
      watch.stop();
      process.off('SIGINT', stopping).off('SIGTERM', stopping);
    }
    options.log('skewless worker: stopped');
  } finally {
    resolver.close();
    await connection.close();
    await tracing?.shutdown(); // the spans still buffered
  }
}
