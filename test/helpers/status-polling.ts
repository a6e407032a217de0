import type { WorkflowHandle } from '@temporalio/client';
import { waitFor } from '../../sim/cluster/wait-for.js';
import { statusQuery, type UpgradeStatus } from '../../workflows/rollout-messages.js';

/**
 * Polls the upgrade's `status` query until `check` holds and returns that status; on timeout the
 * error carries the last status's nodes and events, which say where the run stood.
 */
export async function untilStatus(
  handle: WorkflowHandle,
  what: string,
  check: (s: UpgradeStatus) => boolean,
  timeoutMs = 120_000,
): Promise<UpgradeStatus> {
  let last: UpgradeStatus | undefined;
  await waitFor(what, async () => check((last = await handle.query(statusQuery))), timeoutMs, 250).catch((err: Error) => {
    throw new Error(`${err.message}\nstatus: ${JSON.stringify(last?.nodes)}\n${last?.events.join('\n')}`);
  });
  return last as UpgradeStatus;
}
