import { DefaultLogger, Runtime, type TelemetryOptions } from '@temporalio/worker';
import { METRICS, SECONDS_BUCKETS } from '../contracts/metric-names.js';
import { ConfigError } from './config.js';

/**
 * The SDK runtime's telemetry. Core's own log lines (a poll retried while Temporal is away...) are
 * forwarded to the SDK's DefaultLogger, which colours only a terminal: core printing them itself
 * writes ANSI colour codes into journald and collected logs. With an address, `GET
 * http://<address>/metrics` serves the SDK's runtime metrics (`temporal_*`) and skewless's own
 * (`skewless_*`, workflows/metrics.ts), both recorded through the SDK's metric meter.
 */
export function runtimeTelemetry(metricsAddress: string | undefined): TelemetryOptions {
  return {
    logging: { filter: { core: 'WARN', other: 'ERROR' }, forward: {} },
    ...(metricsAddress
      ? {
          metrics: {
            prometheus: {
              bindAddress: metricsAddress,
              histogramBucketOverrides: { [METRICS.drainSeconds]: SECONDS_BUCKETS, [METRICS.gateWaitSeconds]: SECONDS_BUCKETS },
            },
          },
        }
      : {}),
  };
}

/**
 * The SDK's runtime is one per process and takes its telemetry options once, before any connection
 * or worker exists: the worker process calls this first, once.
 */
export function installRuntime(metricsAddress: string | undefined): void {
  try {
    Runtime.install({ logger: new DefaultLogger('INFO'), telemetryOptions: runtimeTelemetry(metricsAddress) });
  } catch (err) {
    // A port in use, or a runtime someone already created: one line, exit 2 (nothing connected yet).
    const reason = ((err as Error).message.split('\n')[0] ?? '').replace(/^Failed to start prometheus metrics exporter: /, '');
    throw new ConfigError(
      metricsAddress ? `cannot serve metrics on ${metricsAddress}: ${reason}` : `cannot start the SDK runtime: ${reason}`,
    );
  }
}
