import {
  allHandlersFinished,
  condition,
  getExternalWorkflowHandle,
  setHandler,
  upsertMemo,
  upsertSearchAttributes,
} from '@temporalio/workflow';
import type { FleetPolicy, FleetSpec, ReversibleRunInput } from '../rules/index.js';
import { failureMessage, planCluster, upgradeCluster } from './fleet-cluster-upgrade.js';
import { checkApproval, checkResolution, fleetMemo, inFlight, mayStart, settleLine } from './fleet-line.js';
import {
  approveClusterUpdate,
  clusterReportSignal,
  fleetStatusQuery,
  resolveClusterUpdate,
  type ClusterApproval,
  type ClusterReport,
  type ClusterResolution,
  type FleetClusterState,
  type FleetStatus,
} from './fleet-messages.js';
import { SEARCH_ATTRIBUTES } from './search-attributes.js';
import { abortSignal, type OperatorAction } from './rollout-messages.js';
import { OperatorControls } from './operator-controls.js';
import { upgradeWorkflowId } from '../contracts/workflow-ids.js';
import { FleetNotices } from './fleet-notices.js';

const nowIso = () => new Date(Date.now()).toISOString(); // workflow time: deterministic on replay

/**
 * One fleet's run: its status (the `fleetStatus` query, memo and phase), the operator's controls
 * (pause, resume, abort, approveCluster, resolveCluster) and the upgrades' reports (clusterReport),
 * all registered by the constructor, before the workflow's first await; and each cluster's turn
 * and upgrade, in the order fleetUpgradeWorkflow calls them.
 */
export class FleetRun {
  readonly status: FleetStatus;
  /** Pause, resume, and the abort after which nothing more starts. */
  private readonly controls: OperatorControls;
  /** The operator's answer to a failed or aborted cluster, by cluster, until its run reads it. */
  private readonly resolutions: Record<string, ClusterResolution | undefined> = {};
  /** The newest report of each running upgrade ([at, seq]): an older one arriving late is dropped. */
  private readonly lastReport: Record<string, [number, number]> = {};
  /** What history holds already: only changes are written. */
  private readonly shown = { memo: '', phase: '' };
  /** The fleet's events to each cluster's `notify:` sinks. */
  private readonly notices: FleetNotices;

  constructor(private readonly spec: FleetSpec) {
    this.notices = new FleetNotices(spec.name);
    this.status = {
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
        workflowId: upgradeWorkflowId(c.cluster),
        approve: c.approve,
        phase: 'pending',
        attempts: 0,
      })),
    };
    this.controls = new OperatorControls(this.status, {
      pausedMeans: 'no further cluster starts',
      changed: () => this.refresh(),
      aborted: (p, first) => (first ? this.abortRunning(p) : undefined),
    });
  }

  /** The fleet's status query, pause, resume, abort, its clusters' reports, approvals and resolutions: before the first await. */
  registerHandlers(): void {
    setHandler(fleetStatusQuery, () => this.status);
    this.controls.registerHandlers();
    setHandler(clusterReportSignal, (r) => this.report(r));
    setHandler(approveClusterUpdate, (a) => this.approve(a), { validator: (a) => checkApproval(this.knownCluster(a.cluster), a) });
    setHandler(resolveClusterUpdate, (r) => this.resolve(r), {
      validator: (r) => checkResolution(this.knownCluster(r.cluster), r, this.resolutions[r.cluster] !== undefined),
    });
  }

  get aborted(): boolean {
    return this.controls.aborted() !== undefined;
  }

  /** The fleet's name as a search attribute and its first memo, for the UI's list. */
  show(): void {
    upsertSearchAttributes([{ key: SEARCH_ATTRIBUTES.fleet, value: this.spec.name }]);
    this.refresh();
  }

  /** Waits for the cluster's turn and, if the file asks for one, its approval; false once the fleet is aborted. */
  async waitForTurn(c: FleetClusterState): Promise<boolean> {
    await condition(() => this.aborted || mayStart(this.status, c));
    if (this.aborted) return false;
    await this.notices.reached(c);
    if (c.approve && !c.approvedBy) {
      c.phase = 'waiting-approval';
      this.note(`${c.cluster} waits for approval: skewless fleet approve ${this.spec.name} --cluster ${c.cluster}`);
      this.refresh();
      this.notices.waitsForApproval(c);
      await condition(() => this.aborted || c.approvedBy !== undefined);
      if (this.aborted) return false;
      this.notices.approved(c);
      c.phase = 'pending';
      this.refresh();
      // The line may have stopped while the gate waited.
      await condition(() => this.aborted || mayStart(this.status, c));
      if (this.aborted) return false;
    }
    return true;
  }

  /** One cluster's upgrade, again after each retry, until it is done, skipped, or the fleet aborted. */
  async runCluster(c: FleetClusterState, policy: FleetPolicy, reversible?: ReversibleRunInput): Promise<void> {
    for (;;) {
      this.startAttempt(c);
      try {
        const plan = await planCluster(c, policy);
        if ('nothingToDo' in plan) return this.nothingToDo(c, plan.from, plan.nothingToDo);
        const result = await upgradeCluster(c, plan.version, policy, this.spec.name, reversible);
        c.result = { from: result.from, to: result.to, outcome: result.outcome ?? result.phase };
        c.phase = result.phase === 'aborted' ? 'aborted' : 'done';
        if (c.phase === 'aborted') c.message = result.outcome ?? 'aborted';
      } catch (err) {
        c.phase = 'failed';
        c.message = failureMessage(c, err);
      }
      this.endAttempt(c);
      if (c.phase === 'done' || this.aborted) return;
      this.notices.lineStopped(c);
      const answer = await this.resolutionOf(c);
      if (!answer) return; // the fleet was aborted
      this.notices.resolved(c, answer.by, answer.action);
      if (answer.action === 'skip') return this.skip(c, answer);
    }
  }

  /** The fleet's outcome, once every cluster started has ended. */
  async finish(): Promise<FleetStatus> {
    const { status } = this;
    if (this.controls.aborted()) {
      status.phase = 'aborted';
      status.outcome = `${this.controls.aborted()}; ${status.clusters.map((c) => `${c.cluster} ${c.phase}`).join(', ')}`;
    } else {
      status.phase = 'done';
      const skipped = status.clusters.filter((c) => c.phase === 'skipped').map((c) => c.cluster);
      status.outcome = `${status.clusters.length - skipped.length} of ${status.clusters.length} clusters upgraded${skipped.length ? `; skipped: ${skipped.join(', ')}` : ''}`;
    }
    this.note(status.outcome);
    this.refresh();
    this.notices.ended(status);
    await this.notices.started();
    await condition(allHandlersFinished);
    return status;
  }

  private startAttempt(c: FleetClusterState): void {
    Object.assign(c, { phase: 'running', startedAt: nowIso(), attempts: c.attempts + 1 });
    delete c.message;
    delete c.blocked;
    delete c.finishedAt;
    delete this.lastReport[c.cluster];
    this.note(`${c.cluster} started (${c.stage}, to ${c.to}${c.attempts > 1 ? `, attempt ${c.attempts}` : ''})`);
    this.refresh();
  }

  private nothingToDo(c: FleetClusterState, from: string, why: string): void {
    Object.assign(c, { phase: 'done', result: { from, to: from, outcome: `nothing to do: ${why}` }, finishedAt: nowIso() });
    this.note(`${c.cluster} done: nothing to do: ${why}`);
    this.refresh();
  }

  private endAttempt(c: FleetClusterState): void {
    c.finishedAt = nowIso();
    delete c.blocked;
    const resolve = `skewless fleet resolve ${this.spec.name} --cluster ${c.cluster} --action retry|skip`;
    this.note(
      c.phase === 'done'
        ? `${c.cluster} done: ${c.result?.outcome}`
        : `${c.cluster} ${c.phase}: ${c.message}${this.aborted ? '' : `: the line stops (${resolve})`}`,
    );
    this.refresh();
  }

  /** The operator's answer to the failed or aborted cluster (fleet resolve), or undefined once the fleet is aborted. */
  private async resolutionOf(c: FleetClusterState): Promise<ClusterResolution | undefined> {
    this.resolutions[c.cluster] = undefined;
    await condition(() => this.resolutions[c.cluster] !== undefined || this.aborted);
    const answer = this.resolutions[c.cluster];
    this.resolutions[c.cluster] = undefined;
    return answer;
  }

  private skip(c: FleetClusterState, answer: ClusterResolution): void {
    Object.assign(c, { phase: 'skipped', message: `skipped by ${answer.by}${answer.comment ? `: ${answer.comment}` : ''}` });
    this.refresh();
  }

  /** The line and the phase, and what changed of them in the memo and search attribute. */
  private refresh(): void {
    const { status, shown } = this;
    settleLine(status);
    const memo = fleetMemo(status);
    // Only changes reach history: a fleet of hundreds of clusters must not write a memo per report.
    if (JSON.stringify(memo) !== shown.memo) upsertMemo(memo);
    if (status.phase !== shown.phase) upsertSearchAttributes([{ key: SEARCH_ATTRIBUTES.phase, value: status.phase }]);
    Object.assign(shown, { memo: JSON.stringify(memo), phase: status.phase });
  }

  private readonly note = (text: string): void => {
    this.status.events.push(text);
  };

  /** Starts nothing more and asks the running upgrades to abort (and compensate); the first abort counts. */
  private async abortRunning(p: OperatorAction): Promise<void> {
    const reason = this.controls.aborted() as string;
    this.note(`${reason}: no further cluster starts; the running upgrades are asked to abort`);
    for (const c of this.status.clusters.filter(inFlight)) {
      // Deliberate swallow: an upgrade that ended meanwhile (or not started yet) cannot hear it, and must not fail the fleet.
      await getExternalWorkflowHandle(c.workflowId)
        .signal(abortSignal, { by: p.by, reason: `fleet ${this.spec.name} ${reason}` })
        .catch(() => undefined);
    }
  }

  /** A running upgrade is blocked (the line stops) or moving again. */
  private report(r: ClusterReport): void {
    const c = this.stateOf(r.cluster);
    if (!c || !inFlight(c)) return; // a late report of an upgrade that has ended
    const prev = this.lastReport[r.cluster];
    if (prev && (prev[0] > r.at || (prev[0] === r.at && prev[1] >= r.seq))) return; // an older report arriving late
    this.lastReport[r.cluster] = [r.at, r.seq];
    if (r.blocked.length > 0) {
      Object.assign(c, { phase: 'blocked', blocked: r.blocked });
      this.note(`${c.cluster} blocked: ${r.blocked.join('; ')}: the line stops (skewless resolve ${c.cluster})`);
    } else if (c.phase === 'blocked') {
      c.phase = 'running';
      delete c.blocked;
      this.note(`${c.cluster} moving again`);
    }
    this.refresh();
  }

  private approve(a: ClusterApproval): FleetClusterState {
    const c = this.stateOf(a.cluster) as FleetClusterState;
    c.approvedBy = a.by;
    this.note(`start of ${c.cluster} approved by ${a.by}${a.comment ? `: ${a.comment}` : ''}`);
    return c;
  }

  private resolve(r: ClusterResolution): FleetClusterState {
    const c = this.stateOf(r.cluster) as FleetClusterState;
    this.note(`${c.cluster} (${c.phase}) resolved by ${r.by}: ${r.action}${r.comment ? ` (${r.comment})` : ''}`);
    this.resolutions[r.cluster] = r;
    return c;
  }

  private stateOf(cluster: string): FleetClusterState | undefined {
    return this.status.clusters.find((c) => c.cluster === cluster);
  }

  /** The cluster's state; an update naming a cluster outside the fleet is refused. */
  private knownCluster(cluster: string): FleetClusterState {
    const c = this.stateOf(cluster);
    if (!c) throw new Error(`no cluster ${cluster} in fleet ${this.spec.name}`);
    return c;
  }
}
