import { execFileSync } from 'node:child_process';
import { ensureTemporalScript } from './build-info.js';

/**
 * Path of the Temporal CLI built from the Go module proxy (scripts/ensure-temporal.sh), building
 * it first if this machine has none yet; the build's progress goes to this process's stderr.
 * SKEWLESS_TEMPORAL_BIN points at another binary instead.
 */
export function ensureTemporalBinary(): string {
  const override = process.env.SKEWLESS_TEMPORAL_BIN;
  if (override) return override;
  return execFileSync('bash', [ensureTemporalScript], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] }).trim();
}
