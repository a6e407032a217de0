/**
 * Where workers and the CLI find Temporal. One place, read from the environment, so nothing
 * hard-codes an address; credentials for clusters never pass through here.
 */
export interface TemporalConfig {
  address: string;
  namespace: string;
  taskQueue: string;
  /** Where the worker finds <cluster>.yaml files (credentials' paths stay on this side). */
  clustersDir?: string;
}

export function temporalConfig(env: NodeJS.ProcessEnv = process.env): TemporalConfig {
  return {
    address: env.TEMPORAL_ADDRESS ?? '127.0.0.1:7233',
    namespace: env.TEMPORAL_NAMESPACE ?? 'default',
    // One task queue per site, so workers run near the clusters they hold credentials for.
    taskQueue: env.SKEWLESS_TASK_QUEUE ?? 'skewless',
    ...(env.SKEWLESS_CLUSTERS_DIR ? { clustersDir: env.SKEWLESS_CLUSTERS_DIR } : {}),
  };
}
