import { Runtime } from '@temporalio/worker';
import { METRICS, SECONDS_BUCKETS } from '../contracts/metric-names.js';
import { ConfigError } from './config.js';

/**
 * The worker's Prometheus endpoint: `GET http://<address>/metrics` serves the Temporal SDK's runtime
 * metrics (`temporal_*`: workflow and activity tasks, polls, latencies) and skewless's own
 * (`skewless_*`, workflows/metrics.ts), both recorded through the SDK's metric meter.
 *
 * The SDK's runtime is one per process and takes its telemetry options once, before any connection
 * or worker exists: call this first, at most once.
 */
export function installMetrics(address: string): void {
  try {
    Runtime.install({
      telemetryOptions: {
        metrics: {
          prometheus: {
            bindAddress: address,
            histogramBucketOverrides: { [METRICS.drainSeconds]: SECONDS_BUCKETS, [METRICS.gateWaitSeconds]: SECONDS_BUCKETS },
          },
        },
      },
    });
  } catch (err) {
    // A port in use, or a runtime someone already created: one line, exit 2 (nothing connected yet).
    throw new ConfigError(
      `cannot serve metrics on ${address}: ${((err as Error).message.split('\n')[0] ?? '').replace(/^Failed to start prometheus metrics exporter: /, '')}`,
    );
  }
}
