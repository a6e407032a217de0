import type * as TemporalClient from '@temporalio/client';

/**
 * `@temporalio/client`, loaded the first time a command reaches Temporal. It is 0.3 s of the CLI's
 * start (measured: 320 ms of 600 ms on 2 cores), which the commands that never connect (skew-check,
 * path, plan from files, every --help and every refused flag) skip. The lint allows only type imports
 * of the package elsewhere in client/.
 */
let sdk: typeof TemporalClient | undefined;

export async function loadTemporalClient(): Promise<typeof TemporalClient> {
  sdk ??= await import('@temporalio/client');
  return sdk;
}

type ClientErrorName =
  'WorkflowNotFoundError' | 'WorkflowFailedError' | 'WorkflowUpdateFailedError' | 'ScheduleAlreadyRunning' | 'ScheduleNotFoundError';

/**
 * `err instanceof <the SDK's class>`. Sound before the SDK is loaded: no such error can exist until
 * something loaded it, and everything here loads it through loadTemporalClient.
 */
export function isClientError<K extends ClientErrorName>(err: unknown, name: K): err is InstanceType<(typeof TemporalClient)[K]> {
  return sdk !== undefined && err instanceof sdk[name];
}
