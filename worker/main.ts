import { ConfigError, connectionSettings, redactSecrets, telemetryConfig, workerConfig } from './config.js';
import { runWorker } from './run-worker.js';

/**
 * `npm run worker`: the worker from the environment alone (TEMPORAL_*, SKEWLESS_CLUSTERS_DIR,
 * SKEWLESS_TASK_QUEUE, SKEWLESS_METRICS_ADDRESS, SKEWLESS_OTLP_ENDPOINT). `skewless worker` is the
 * same with flags. Exit 2 on bad settings, 3 when Temporal is unreachable, 0 after a graceful shutdown.
 */
async function run(): Promise<number> {
  const config = workerConfig();
  if (!config.clustersDir) throw new ConfigError('SKEWLESS_CLUSTERS_DIR (the directory of <cluster>.yaml files) is required');
  await runWorker({
    connection: connectionSettings(),
    taskQueue: config.taskQueue,
    clustersDir: config.clustersDir,
    telemetry: telemetryConfig(),
    log: (line) => console.log(line),
  });
  return 0;
}

run().then(
  (code) => (process.exitCode = code),
  (err: Error) => {
    const known = err.name === 'ConfigError' ? 2 : err.name === 'UnreachableError' ? 3 : undefined;
    const text = known ? `skewless worker: ${err.message}` : String(err.stack ?? err);
    console.error(redactSecrets(text, { apiKey: process.env.TEMPORAL_API_KEY })); // the key never reaches a log
    process.exitCode = known ?? 1;
  },
);
