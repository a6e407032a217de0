import { WorkflowExecutionAlreadyStartedError } from '@temporalio/common';
import {
  ChildWorkflowCancellationType,
  ParentClosePolicy,
  patched,
  startChild,
  upsertMemo,
  upsertSearchAttributes,
  workflowInfo,
} from '@temporalio/workflow';
import { changesMinor, describeExclusion, describeTarget, exclusionAt, type Exclusion } from '../rules/index.js';
import { activities as a } from './activities-proxy.js';
import { clusterUpgradeWorkflow, type UpgradeInput, type UpgradePolicy } from './cluster-upgrade-workflow.js';
import { PATCH } from './patches.js';
import { planLive } from './plan-live.js';
import { SEARCH_ATTRIBUTES } from './search-attributes.js';
import { upgradeWorkflowId } from '../contracts/workflow-ids.js';

export interface ScheduledUpgradeInput {
  cluster: string;
  /** A version, a minor, `latest-patch` or `next-minor`, resolved when the run fires. */
  to: string;
  policy?: UpgradePolicy;
  /** The schedule that started this run (`upgrade-schedule/<cluster>`), for the UI and the result. */
  schedule?: string;
  /** The schedule's own blackout dates (`--exclusion`); the cluster configuration's `exclusions:` count too. */
  exclusions?: Exclusion[];
  /** `--reversible` (issue 36): the upgrade's own `reversible` input, handed on as it is. Absent: no trial. */
  reversible?: UpgradeInput['reversible'];
}

export type ScheduledOutcome = 'upgraded' | 'aborted' | 'skipped' | 'nothing-to-do';

export interface ScheduledUpgradeResult {
  cluster: string;
  schedule?: string;
  /** What the schedule asks for (`latest-patch`) and, when an upgrade started, the version it went to. */
  target: string;
  outcome: ScheduledOutcome;
  /** One line for the list view and `schedule describe`: "skipped: upgrade/prod already running". */
  message: string;
  upgrade?: { workflowId: string; runId: string; from: string; to: string; phase: string };
}

/**
 * What a Temporal Schedule starts (workflow id `scheduled-upgrade/<cluster>-<time>`: Temporal
 * appends the time, so a schedule cannot start `upgrade/<cluster>` itself). It starts the real
 * upgrade as a child with the fixed id `upgrade/<cluster>`, so status, watch and approve work as for
 * an upgrade started by hand, and waits for it. The child is abandoned, never cancelled, with this
 * run: terminating or cancelling a scheduled run never stops an upgrade half way.
 * One upgrade per cluster: if `upgrade/<cluster>` already runs (started by hand), this run ends as
 * skipped and starts nothing; if the cluster is already where the target points, it ends as nothing
 * to do. Both are successes: the schedule did its job.
 */
export async function scheduledUpgradeWorkflow(input: ScheduledUpgradeInput): Promise<ScheduledUpgradeResult> {
  const { cluster, to } = input;
  const policy = input.policy ?? {};
  const upgradeId = upgradeWorkflowId(cluster);
  const base = { cluster, ...(input.schedule ? { schedule: input.schedule } : {}), target: to };
  const phase = (value: string) => upsertSearchAttributes([{ key: SEARCH_ATTRIBUTES.phase, value }]);
  const end = (outcome: ScheduledOutcome, message: string, more: Partial<ScheduledUpgradeResult> = {}): ScheduledUpgradeResult => {
    phase(outcome);
    upsertMemo({ outcome, message });
    return { ...base, outcome, message, ...more };
  };
  upsertSearchAttributes([
    { key: SEARCH_ATTRIBUTES.cluster, value: cluster },
    { key: SEARCH_ATTRIBUTES.phase, value: 'scheduled' },
  ]);
  upsertMemo({ schedule: input.schedule ?? null, target: to });

  // Asked before the cluster is read: mid-upgrade, a plan would look like work of its own, or like none.
  // Any rollout of the cluster (an OS maintenance, a restore, a blue/green run) is as busy as an upgrade.
  const running = patched(PATCH.exclusiveRollouts)
    ? await a.findRunningRollout({ cluster, ignore: [workflowInfo().workflowId] })
    : { ...(await a.findRunningUpgrade({ cluster })), workflowId: upgradeId };
  if (running.running) return end('skipped', `skipped: ${running.workflowId ?? upgradeId} already running`);

  const { inventory, plan } = await planLive({ cluster, to, policy, batchBy: policy?.batchBy });
  upsertSearchAttributes([{ key: SEARCH_ATTRIBUTES.fromVersion, value: plan.from }]);
  const version = plan.hops.at(-1);
  if (version === undefined) {
    const why = plan.target.nothingToDo ? describeTarget(plan.target) : `the control plane is already at ${plan.from} (target ${to})`;
    return end('nothing-to-do', `nothing to do: ${why}`);
  }
  // A firing inside a blackout date (the schedule's or the cluster's) starts nothing and says which, until when.
  const exclusions = [...(input.exclusions ?? []), ...(inventory.exclusions ?? [])];
  if (exclusions.length > 0 && patched(PATCH.exclusions)) {
    const held = exclusionAt(
      exclusions,
      Date.now(),
      plan.hops.some((h) => changesMinor(plan.from, h)),
    );
    if (held)
      return end(
        'skipped',
        `skipped: inside the exclusion ${describeExclusion(held.exclusion)} until ${new Date(held.until).toISOString()}`,
      );
  }
  upsertSearchAttributes([{ key: SEARCH_ATTRIBUTES.targetVersion, value: version }]);
  upsertMemo({ from: plan.from, to: version, hops: plan.hops.join(' → ') });

  let child;
  try {
    child = await startChild(clusterUpgradeWorkflow, {
      workflowId: upgradeId,
      // The exact version this run decided on: the upgrade does what the schedule's run planned.
      args: [{ cluster, to: version, policy, ...(input.reversible ? { reversible: input.reversible } : {}) }],
      parentClosePolicy: ParentClosePolicy.ABANDON,
      cancellationType: ChildWorkflowCancellationType.ABANDON,
      staticSummary: `scheduled upgrade of ${cluster} ${plan.from} → ${version}${input.schedule ? ` (${input.schedule})` : ''}`,
    });
  } catch (err) {
    // Started by hand between the check above and now.
    if (err instanceof WorkflowExecutionAlreadyStartedError) return end('skipped', `skipped: ${upgradeId} already running`);
    throw err;
  }
  phase('upgrading');
  upsertMemo({ upgrade: upgradeId, upgradeRunId: child.firstExecutionRunId });
  let status;
  try {
    status = await child.result();
  } catch (err) {
    // A failed upgrade fails this run too, with its cause; the list view says so.
    phase('failed');
    upsertMemo({ outcome: 'failed' });
    throw err;
  }
  const upgrade = { workflowId: upgradeId, runId: child.firstExecutionRunId, from: status.from, to: status.to, phase: status.phase };
  if (status.phase === 'aborted') return end('aborted', `${upgradeId}: ${status.outcome ?? 'aborted'}`, { upgrade });
  return end('upgraded', `${upgradeId}: ${status.outcome ?? `upgraded to ${version}`}`, { upgrade });
}
