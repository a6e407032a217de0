import { getExternalWorkflowHandle, patched, workflowInfo } from '@temporalio/workflow';
import { clusterReportSignal } from './fleet-messages.js';
import { PATCH } from './patches.js';
import type { UpgradeStatus } from './rollout-messages.js';
import { isFleetWorkflowId } from '../contracts/workflow-ids.js';

/** What a blocked upgrade waits for, one line each: its blocked nodes and a halted rollout. */
export function blockedReasons(status: UpgradeStatus): string[] {
  const reasons = Object.entries(status.nodes)
    .filter(([, n]) => n.phase === 'blocked' && n.blocked)
    .map(([node, n]) => {
      const b = n.blocked as NonNullable<typeof n.blocked>;
      return b.kind === 'StepFailed'
        ? `node ${node}: ${b.summary} failed (${b.failure})`
        : `node ${node}: drain ${b.kind === 'DrainRefused' ? 'refused' : 'blocked'} (${b.message})`;
    });
  if (status.halted) reasons.push(`halted after ${status.halted.after} of ${status.halted.hop}: ${status.halted.message}`);
  return reasons;
}

/**
 * The upgrade's report to the fleet that started it (`fleet/<name>`, its parent): sent when the set of
 * reasons it waits for the operator changes, so the fleet stops the line behind a blocked cluster and
 * lets it move when the cluster does. Without a fleet parent (started by hand or by a schedule) it
 * does nothing and adds no command; with one, behind patched() (CONVENTIONS §12).
 * By workflow id only, so a fleet that continued as new still hears it. A fleet gone (terminated)
 * must not fail the upgrade: the send's failure is swallowed on purpose.
 */
export function fleetReporter(status: UpgradeStatus): () => void {
  const parent = workflowInfo().parent?.workflowId;
  const fleet = parent && isFleetWorkflowId(parent) ? parent : undefined;
  let last = '[]';
  let seq = 0;
  return () => {
    if (!fleet) return;
    const blocked = blockedReasons(status);
    const key = JSON.stringify(blocked);
    if (key === last || !patched(PATCH.fleetReports)) return;
    last = key;
    getExternalWorkflowHandle(fleet)
      .signal(clusterReportSignal, { cluster: status.cluster, blocked, at: Date.now(), seq: ++seq })
      .catch(() => undefined); // deliberate swallow: see above
  };
}
