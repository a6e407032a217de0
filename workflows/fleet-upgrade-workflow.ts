import {
  ActivityFailure,
  allHandlersFinished,
  ChildWorkflowCancellationType,
  ChildWorkflowFailure,
  condition,
  executeChild,
  getExternalWorkflowHandle,
  ParentClosePolicy,
  setHandler,
  upsertMemo,
  upsertSearchAttributes,
} from '@temporalio/workflow';
import { WorkflowExecutionAlreadyStartedError } from '@temporalio/common';
import { describeTarget, planUpgrade, type FleetPolicy, type FleetSpec } from '../rules/index.js';
import { activities as a } from './activities-proxy.js';
import { clusterUpgradeWorkflow, type UpgradePolicy } from './cluster-upgrade-workflow.js';
import {
  approveClusterUpdate,
  clusterReportSignal,
  fleetStatusQuery,
  resolveClusterUpdate,
  type ClusterResolution,
  type FleetClusterState,
  type FleetStatus,
} from './fleet-messages.js';
import { applyRule } from './rule-failure.js';
import { SEARCH_ATTRIBUTES } from './search-attributes.js';
import { abortSignal, pauseSignal, resumeSignal } from './upgrade-messages.js';

export interface FleetInput {
  /** The fleet file as rules/parseFleetSpec judged it. */
  fleet: FleetSpec;
}

const nowIso = () => new Date(Date.now()).toISOString(); // workflow time: deterministic on replay
/** Phases that stop the line: no cluster after it starts until it moves or the operator answers. */
const STOPS_LINE = new Set(['blocked', 'failed', 'aborted']);
const ENDED = new Set(['done', 'skipped']);

/** The root cause of a child's failure on one line (not "Child Workflow execution failed"). */
function rootMessage(err: unknown): string {
  let cause: unknown = err;
  while ((cause instanceof ChildWorkflowFailure || cause instanceof ActivityFailure) && cause.cause) cause = cause.cause;
  if (cause instanceof ActivityFailure) return `${cause.activityType} failed: ${cause.message}`;
  const e = cause as { message?: string; type?: string };
  return `${e.type ? `${e.type}: ` : ''}${(e.message ?? String(cause)).replace(/\s*\n\s*/g, ' ')}`;
}

/**
 * The upgrade of a fleet of clusters, workflow id `fleet/<name>`: each cluster's upgrade runs as a
 * child `clusterUpgradeWorkflow` with its usual id `upgrade/<cluster>` (so status, watch, approve and
 * resolve work on it as on any upgrade), stage by stage, in the file's order, at most maxParallel at once.
 * Stop the line: while a cluster is blocked (its upgrade waits on `skewless resolve`, reported by the
 * upgrade itself: fleet-report.ts), failed or aborted, no cluster after it starts. A blocked cluster
 * that moves again lets the line move; a failed or aborted one waits for `skewless fleet resolve`
 * (retry: its upgrade again; skip: the fleet goes on without it). Children are abandoned, never
 * cancelled, with the fleet: ending a fleet never stops an upgrade half way; `abort` asks the running
 * upgrades to abort (and compensate) and starts nothing more.
 */
export async function fleetUpgradeWorkflow(input: FleetInput): Promise<FleetStatus> {
  const spec = input.fleet;
  const status: FleetStatus = {
    fleet: spec.name,
    phase: 'running',
    paused: false,
    maxParallel: spec.maxParallel,
    events: [],
    clusters: spec.clusters.map((c) => ({
      cluster: c.cluster,
      stage: c.stage,
      stageIndex: c.stageIndex,
      to: c.to,
      workflowId: `upgrade/${c.cluster}`,
      approve: c.approve,
      phase: 'pending',
      attempts: 0,
    })),
  };
  const note = (text: string) => status.events.push(text);
  let aborted: string | undefined;
  const resolutions: Record<string, ClusterResolution | undefined> = {};
  const lastReport: Record<string, [number, number]> = {};
  const stateOf = (cluster: string) => status.clusters.find((c) => c.cluster === cluster);

  const stoppedBy = () => status.clusters.find((c) => STOPS_LINE.has(c.phase));
  const inFlight = () => status.clusters.filter((c) => c.phase === 'running' || c.phase === 'blocked').length;
  const refresh = () => {
    const stop = stoppedBy();
    if (stop)
      status.line = `${stop.cluster} ${stop.phase}: ${stop.phase === 'blocked' ? (stop.blocked ?? []).join('; ') : (stop.message ?? '')}`;
    else delete status.line;
    if (status.phase !== 'done' && status.phase !== 'aborted') status.phase = stop ? 'line-stopped' : status.paused ? 'paused' : 'running';
    const names = (phase: string) => status.clusters.filter((c) => c.phase === phase).map((c) => c.cluster);
    const memo = {
      progress: `${status.clusters.filter((c) => ENDED.has(c.phase)).length}/${status.clusters.length} clusters done`,
      running: names('running'),
      blocked: names('blocked'),
      failed: [...names('failed'), ...names('aborted')],
      skipped: names('skipped'),
      line: status.line ?? null,
    };
    // Only changes reach history: a fleet of hundreds of clusters must not write a memo per report.
    if (JSON.stringify(memo) !== shown.memo) upsertMemo(memo);
    if (status.phase !== shown.phase) upsertSearchAttributes([{ key: SEARCH_ATTRIBUTES.phase, value: status.phase }]);
    Object.assign(shown, { memo: JSON.stringify(memo), phase: status.phase });
  };
  const shown = { memo: '', phase: '' };

  setHandler(fleetStatusQuery, () => status);
  setHandler(pauseSignal, (p) => {
    status.paused = true;
    note(`paused by ${p.by}${p.reason ? `: ${p.reason}` : ''}: no further cluster starts`);
    refresh();
  });
  setHandler(resumeSignal, (p) => {
    status.paused = false;
    note(`resumed by ${p.by}`);
    refresh();
  });
  setHandler(abortSignal, async (p) => {
    if (aborted) return;
    aborted = `aborted by ${p.by}${p.reason ? `: ${p.reason}` : ''}`;
    note(`${aborted}: no further cluster starts; the running upgrades are asked to abort`);
    for (const c of status.clusters.filter((c) => c.phase === 'running' || c.phase === 'blocked')) {
      // Deliberate swallow: an upgrade that ended meanwhile (or not started yet) cannot hear it, and must not fail the fleet.
      await getExternalWorkflowHandle(c.workflowId)
        .signal(abortSignal, { by: p.by, reason: `fleet ${spec.name} ${aborted}` })
        .catch(() => undefined);
    }
  });
  setHandler(clusterReportSignal, (r) => {
    const c = stateOf(r.cluster);
    if (!c || (c.phase !== 'running' && c.phase !== 'blocked')) return; // a late report of an upgrade that has ended
    const prev = lastReport[r.cluster];
    if (prev && (prev[0] > r.at || (prev[0] === r.at && prev[1] >= r.seq))) return; // an older report arriving late
    lastReport[r.cluster] = [r.at, r.seq];
    if (r.blocked.length > 0) {
      Object.assign(c, { phase: 'blocked', blocked: r.blocked });
      note(`${c.cluster} blocked: ${r.blocked.join('; ')}: the line stops (skewless resolve ${c.cluster})`);
    } else if (c.phase === 'blocked') {
      c.phase = 'running';
      delete c.blocked;
      note(`${c.cluster} moving again`);
    }
    refresh();
  });
  setHandler(
    approveClusterUpdate,
    (a) => {
      const c = stateOf(a.cluster) as FleetClusterState;
      c.approvedBy = a.by;
      note(`start of ${c.cluster} approved by ${a.by}${a.comment ? `: ${a.comment}` : ''}`);
      return c;
    },
    {
      validator: (a) => {
        const c = stateOf(a.cluster);
        if (!c) throw new Error(`no cluster ${a.cluster} in fleet ${spec.name}`);
        if (!c.approve) throw new Error(`${a.cluster} has no approval gate`);
        if (c.approvedBy || (c.phase !== 'pending' && c.phase !== 'waiting-approval')) throw new Error(`${a.cluster} is already approved`);
        if (!a.by) throw new Error('an approval needs a "by"');
      },
    },
  );
  setHandler(
    resolveClusterUpdate,
    (r) => {
      const c = stateOf(r.cluster) as FleetClusterState;
      note(`${c.cluster} (${c.phase}) resolved by ${r.by}: ${r.action}${r.comment ? ` (${r.comment})` : ''}`);
      resolutions[r.cluster] = r;
      return c;
    },
    {
      validator: (r) => {
        const c = stateOf(r.cluster);
        if (!c) throw new Error(`no cluster ${r.cluster} in fleet ${spec.name}`);
        if (r.action !== 'retry' && r.action !== 'skip') throw new Error(`a cluster is retried or skipped, not ${String(r.action)}`);
        if (c.phase === 'blocked')
          throw new Error(`${r.cluster}'s upgrade is blocked, not failed: answer it with "skewless resolve ${r.cluster}"`);
        if (c.phase !== 'failed' && c.phase !== 'aborted')
          throw new Error(`${r.cluster} is ${c.phase}: only a failed or aborted cluster is retried or skipped`);
        if (resolutions[r.cluster]) throw new Error(`${r.cluster} is already resolved`);
        if (!r.by) throw new Error('a resolution needs a "by"');
      },
    },
  );

  upsertSearchAttributes([{ key: SEARCH_ATTRIBUTES.fleet, value: spec.name }]);
  refresh();

  /** One cluster's upgrade, again after each retry, until it is done, skipped, or the fleet aborted. */
  const runCluster = async (c: FleetClusterState, policy: FleetPolicy) => {
    for (;;) {
      Object.assign(c, { phase: 'running', startedAt: nowIso(), attempts: c.attempts + 1 });
      delete c.message;
      delete c.blocked;
      delete c.finishedAt;
      delete lastReport[c.cluster];
      note(`${c.cluster} started (${c.stage}, to ${c.to}${c.attempts > 1 ? `, attempt ${c.attempts}` : ''})`);
      refresh();
      try {
        // Planned here first, as a schedule does: a cluster already where its target points is done
        // (nothing to do), not a failed upgrade; and the upgrade goes to the exact version planned now.
        const inventory = await a.takeInventory({ cluster: c.cluster });
        const available = await a.availableVersions({ cluster: c.cluster, node: inventory.skew.apiservers[0]?.node ?? '', to: c.to });
        const plan = applyRule(() =>
          planUpgrade({ inventory: inventory.skew, to: c.to, available, policy, packageManager: inventory.packageManager }),
        );
        const version = plan.hops.at(-1);
        if (version === undefined) {
          const why = plan.target.nothingToDo ? describeTarget(plan.target) : `already at ${plan.from} (target ${c.to})`;
          Object.assign(c, {
            phase: 'done',
            result: { from: plan.from, to: plan.from, outcome: `nothing to do: ${why}` },
            finishedAt: nowIso(),
          });
          note(`${c.cluster} done: nothing to do: ${why}`);
          refresh();
          return;
        }
        const result = await executeChild(clusterUpgradeWorkflow, {
          workflowId: c.workflowId,
          args: [{ cluster: c.cluster, to: version, policy: policy as UpgradePolicy }],
          parentClosePolicy: ParentClosePolicy.ABANDON,
          cancellationType: ChildWorkflowCancellationType.ABANDON,
          typedSearchAttributes: [{ key: SEARCH_ATTRIBUTES.fleet, value: spec.name }],
          staticSummary: `fleet ${spec.name}: ${c.stage} cluster ${c.cluster} to ${c.to}`,
        });
        c.result = { from: result.from, to: result.to, outcome: result.outcome ?? result.phase };
        c.phase = result.phase === 'aborted' ? 'aborted' : 'done';
        if (c.phase === 'aborted') c.message = result.outcome ?? 'aborted';
      } catch (err) {
        c.phase = 'failed';
        c.message =
          err instanceof WorkflowExecutionAlreadyStartedError
            ? `${c.workflowId} is already running (started outside this fleet): retry once it has ended, or skip`
            : rootMessage(err);
      }
      c.finishedAt = nowIso();
      delete c.blocked;
      note(
        c.phase === 'done'
          ? `${c.cluster} done: ${c.result?.outcome}`
          : `${c.cluster} ${c.phase}: ${c.message}${aborted ? '' : `: the line stops (skewless fleet resolve ${spec.name} --cluster ${c.cluster} --action retry|skip)`}`,
      );
      refresh();
      if (c.phase === 'done' || aborted) return;
      resolutions[c.cluster] = undefined;
      await condition(() => resolutions[c.cluster] !== undefined || aborted !== undefined);
      const answer = resolutions[c.cluster];
      resolutions[c.cluster] = undefined;
      if (!answer) return; // the fleet was aborted
      if (answer.action === 'skip') {
        Object.assign(c, { phase: 'skipped', message: `skipped by ${answer.by}${answer.comment ? `: ${answer.comment}` : ''}` });
        refresh();
        return;
      }
    }
  };

  const running: Promise<void>[] = [];
  for (const [i, c] of status.clusters.entries()) {
    const policy = (spec.clusters[i] as FleetSpec['clusters'][number]).policy;
    // Its stage's turn (every cluster of earlier stages done or skipped), the line moving, a free slot.
    const ready = () =>
      !status.paused &&
      !stoppedBy() &&
      inFlight() < spec.maxParallel &&
      status.clusters.every((o) => o.stageIndex >= c.stageIndex || ENDED.has(o.phase));
    await condition(() => aborted !== undefined || ready());
    if (aborted) break;
    if (c.approve && !c.approvedBy) {
      c.phase = 'waiting-approval';
      note(`${c.cluster} waits for approval: skewless fleet approve ${spec.name} --cluster ${c.cluster}`);
      refresh();
      await condition(() => aborted !== undefined || c.approvedBy !== undefined);
      if (aborted) break;
      c.phase = 'pending';
      refresh();
      // The line may have stopped while the gate waited.
      await condition(() => aborted !== undefined || ready());
      if (aborted) break;
    }
    running.push(runCluster(c, policy));
  }
  await Promise.all(running);
  if (aborted) {
    status.phase = 'aborted';
    status.outcome = `${aborted}; ${status.clusters.map((c) => `${c.cluster} ${c.phase}`).join(', ')}`;
  } else {
    status.phase = 'done';
    const skipped = status.clusters.filter((c) => c.phase === 'skipped').map((c) => c.cluster);
    status.outcome = `${status.clusters.length - skipped.length} of ${status.clusters.length} clusters upgraded${skipped.length ? `; skipped: ${skipped.join(', ')}` : ''}`;
  }
  note(status.outcome);
  refresh();
  await condition(allHandlersFinished);
  return status;
}
