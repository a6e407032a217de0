import { CONNECTION_HELP, ConfigError, connectionSettings, telemetryConfig, workerConfig } from '../../worker/config.js';
import { type CommandIo, EXIT, helpAsked, parseOptions, registerSecret } from '../cli-support.js';
import { TEMPORAL_OPTIONS } from '../temporal-connection.js';

export const workerHelp = `Usage: skewless worker --clusters-dir DIR [--task-queue QUEUE] [--metrics-address IP:PORT]
                       [--otlp-endpoint URL] [connection options]

Runs the skewless worker: the one process that holds cluster credentials. It reads one
<cluster>.yaml per cluster from DIR (SKEWLESS_CLUSTERS_DIR), checks that every one loads, then
polls QUEUE (SKEWLESS_TASK_QUEUE, default "skewless") until SIGINT or SIGTERM, when it finishes
gracefully. A service: it prints no data on stdout (no --output); its log lines go to stderr.
Worker Versioning: it registers its build (the workflow bundle's id, "skewless version") in the
deployment skewless-QUEUE, and makes it current when the deployment has none; runs stay pinned to
the build that started them (docs/deployment.md, "Releasing new workflow code").

Observability (each off unless set):
  --metrics-address IP:PORT SKEWLESS_METRICS_ADDRESS: serve Prometheus metrics at
                            http://IP:PORT/metrics (temporal_* from the SDK, skewless_* of upgrades)
  --otlp-endpoint URL       SKEWLESS_OTLP_ENDPOINT: send OpenTelemetry traces of workflows and
                            activities as OTLP/HTTP JSON (http://collector:4318/v1/traces)

${CONNECTION_HELP}

Exit status: 0 stopped by a signal, 1 failure, 2 invalid directory, configuration or TLS file,
3 Temporal unreachable.`;

export async function workerCommand(args: string[], io: CommandIo): Promise<number> {
  const { values } = parseOptions(args, {
    ...TEMPORAL_OPTIONS,
    'clusters-dir': { type: 'string' },
    'task-queue': { type: 'string' },
    'metrics-address': { type: 'string' },
    'otlp-endpoint': { type: 'string' },
  });
  if (helpAsked(values, workerHelp, io)) return EXIT.ok;
  const config = workerConfig(values);
  if (!config.clustersDir) throw new ConfigError('--clusters-dir DIR (or SKEWLESS_CLUSTERS_DIR) is required');
  const telemetry = telemetryConfig(values);
  const connection = connectionSettings(values);
  if (connection.apiKey) registerSecret(connection.apiKey);
  // Loaded only here: the other commands never load the worker's native runtime or activities.
  const { runWorker } = await import('../../worker/run-worker.js');
  await runWorker({ connection, taskQueue: config.taskQueue, clustersDir: config.clustersDir, telemetry, log: io.err });
  return EXIT.ok;
}
