import { ApplicationFailure } from '@temporalio/workflow';
import type { UnhealthyWorkload } from '../activities/health-workloads.js';
import { stepBlockOf } from './step-block.js';
import type { HaltState } from './rollout-messages.js';

/** The halt a failed workload check puts the rollout in, or undefined if `err` is not the check's failure. */
export function haltOf(err: unknown, after: string, hop: string, step: HaltState['step'] = 'checkWorkloads'): HaltState | undefined {
  const block = stepBlockOf(err, step, step === 'runProbes' ? 'run probes' : 'check workloads', false);
  if (!block) return undefined;
  const cause = (err as { cause?: unknown }).cause;
  const details = cause instanceof ApplicationFailure ? (cause.details?.[0] as { unhealthy?: UnhealthyWorkload[] } | undefined) : undefined;
  const workloads = (details?.unhealthy ?? []).map((w) => `${w.kind} ${w.namespace}/${w.name}: ${w.reason}`);
  return { after, hop, step, failure: block.failure, message: block.message, workloads, actions: ['retry', 'abort'] };
}
