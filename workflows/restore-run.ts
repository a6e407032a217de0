import {
  ActivityFailure,
  ApplicationFailure,
  allHandlersFinished,
  condition,
  patched,
  setHandler,
  upsertMemo,
  upsertSearchAttributes,
  workflowInfo,
} from '@temporalio/workflow';
import type { RestorePlan } from '../activities/etcd-restore.js';
import { WORKFLOW_FAILURE } from '../contracts/failure-types.js';
import { activities as a } from './activities-proxy.js';
import { handleApprovals } from './approvals.js';
import { byWhom } from './by-whom.js';
import { restoreStatusQuery, type MemberState, type RestoreInput, type RestorePhase, type RestoreStatus } from './restore-messages.js';
import { SEARCH_ATTRIBUTES } from './search-attributes.js';
import { OperatorControls } from './operator-controls.js';
import type { GateState } from './rollout-messages.js';
import { Notifier } from './notifier.js';
import { PATCH } from './patches.js';
import { waitingEvent } from './run-events.js';

/**
 * One restore's run: its status (the `restoreStatus` query), the operator's controls (pause, resume,
 * abort, approve: registered by the constructor, before the workflow's first await) and the steps, in
 * the order restoreWorkflow calls them. Each step over the members goes one control plane at a time.
 */
export class RestoreRun {
  readonly status: RestoreStatus;
  /** Pause, resume, and abort until the point of no return. */
  private readonly controls: OperatorControls;
  /** Set by plan(), the first step. */
  private restorePlan!: RestorePlan;
  /** The restore's events to the cluster's `notify:` sinks (PATCH.flowNotifications; none before the plan). */
  private readonly notifier: Notifier;

  constructor(private readonly input: RestoreInput) {
    this.status = { cluster: input.cluster, phase: 'planning', paused: false, members: [], gates: [], events: [] };
    this.notifier = new Notifier(input.cluster);
    this.controls = new OperatorControls(this.status, {
      abortRefused: (p) => this.abortRefused(byWhom(p)),
      aborted: () => this.note(this.controls.aborted() as string),
    });
  }

  /** The status query, pause, resume, abort and approve: before the workflow's first await. */
  registerHandlers(): void {
    setHandler(restoreStatusQuery, () => this.status);
    this.controls.registerHandlers();
    handleApprovals(this.status.gates, this.note);
  }

  get aborted(): boolean {
    return this.controls.aborted() !== undefined;
  }

  /** Refuses beside another rollout of the cluster, then reads the snapshot's record and every member. */
  async plan(): Promise<void> {
    const { cluster, hop, snapshotPath, controlPlanes } = this.input;
    upsertSearchAttributes([{ key: SEARCH_ATTRIBUTES.cluster, value: cluster }]);
    this.setPhase('planning');
    const running = await a.findRunningRollout({ cluster, ignore: [workflowInfo().workflowId] });
    if (running.running)
      throw ApplicationFailure.nonRetryable(
        `refusing to restore ${cluster}: ${running.workflowId ?? 'another rollout'} is running (abort it first)`,
        WORKFLOW_FAILURE.RolloutRunning,
      );
    const plan = await a.planRestore({
      cluster,
      ...(hop !== undefined ? { hop } : {}),
      ...(snapshotPath !== undefined ? { snapshotPath } : {}),
      ...(controlPlanes ? { controlPlanes } : {}),
    });
    this.restorePlan = plan;
    this.status.snapshot = plan.snapshot;
    this.status.members = plan.members.map((m): MemberState => ({ ...m, phase: 'pending' }));
    this.status.loses =
      `everything written to ${cluster} after the snapshot${plan.snapshot.takenAt ? ` of ${plan.snapshot.takenAt}` : ''} (etcd revisions above ${plan.snapshot.revision}): ` +
      'objects created, changed or deleted since then are lost; the control plane is down while etcd is restored';
    this.note(
      `restore ${plan.snapshot.remotePath} (revision ${plan.snapshot.revision}, sha256 ${plan.snapshot.sha256}) to ${plan.members.map((m) => `${m.node} as ${m.name}`).join(', ')}`,
    );
    if (!patched(PATCH.flowNotifications)) return;
    this.notifier.sinks = plan.notify ?? [];
    const snapshot = plan.snapshot.hop ? `the snapshot before ${plan.snapshot.hop}` : plan.snapshot.remotePath;
    this.notifier.emit('run.started', 'started', `restore of ${cluster} to ${snapshot} started: ${plan.members.length} control planes`, {
      flow: 'restore',
      from: null,
      to: plan.snapshot.hop ?? plan.snapshot.remotePath,
      hops: [],
      nodes: plan.members.length,
      revision: plan.snapshot.revision,
      loses: this.status.loses,
    });
  }

  /** The snapshot in place and intact on every control plane. */
  async checkSnapshot(): Promise<void> {
    const { cluster } = this.input;
    const { snapshot } = this.restorePlan;
    await this.eachMember('checking', true, async (m) => {
      // The upgrade's snapshot is on the first control plane only: the others get the worker's copy.
      if (snapshot.hop !== undefined && snapshot.localPath !== undefined && this.input.snapshotPath === undefined) {
        const placed = await a.placeSnapshot({ cluster, node: m.node, hop: snapshot.hop });
        if (placed.placed) this.note(`${m.node}: snapshot copied to ${placed.remotePath}`);
      }
      const { remotePath, sha256, revision } = snapshot;
      await a.checkRestoreSnapshot({ cluster, node: m.node, remotePath, sha256, revision });
      m.phase = 'checked';
    });
  }

  /** The gate: everything written since the snapshot is lost, so the operator approves it (or aborts). */
  async waitForApproval(): Promise<void> {
    const gate: GateState = { name: `restore-${this.restorePlan.tag}` };
    this.status.gates.push(gate);
    this.setPhase('gate');
    this.note(`waiting for approval of gate ${gate.name}: ${this.status.loses}`);
    const { cluster } = this.input;
    const wait = waitingEvent('gate', { gate: gate.name }, cluster, workflowInfo().workflowId);
    this.notifier.emit('run.waiting', `waiting/gate/${gate.name}/1`, `${wait.summary} (${this.status.loses})`, wait.details, wait.command);
    await condition(() => gate.approvedBy !== undefined || this.aborted);
    if (gate.approvedBy !== undefined)
      this.notifier.emit('run.resumed', `resumed/gate/${gate.name}/1`, `${cluster} moves again: gate ${gate.name}`, {
        waitingFor: 'gate',
        gate: gate.name,
        by: gate.approvedBy,
      });
  }

  /** Every control plane's static pods stopped before any member is restored (etcd's disaster-recovery order). */
  async stopControlPlanes(): Promise<void> {
    const { cluster, stopTimeoutSeconds } = this.input;
    await this.eachMember('stopping', true, async (m) => {
      await a.stopStaticPods({ cluster, node: m.node, ...(stopTimeoutSeconds ? { timeoutSeconds: stopTimeoutSeconds } : {}) });
      m.phase = 'stopped';
    });
  }

  /** An abort before the point of no return: what was stopped starts again on its old data. */
  async endAborted(): Promise<RestoreStatus> {
    await this.startStoppedAgain(false);
    this.setPhase('aborted');
    this.status.outcome = `${this.controls.aborted()}; nothing was restored, the control planes run on their old data`;
    this.notifier.emit('run.aborted', 'aborted', `restore of ${this.input.cluster} aborted: ${this.status.outcome}`, {
      reason: this.controls.aborted() ?? 'aborted',
      outcome: this.status.outcome,
    });
    await this.notifier.started();
    await condition(allHandlersFinished);
    return this.status;
  }

  /** Each member restored into a fresh data dir and swapped in: from the first, no way back but forward. */
  async restoreMembers(): Promise<void> {
    const { cluster } = this.input;
    const { snapshot, initialCluster, bumpRevision, tag } = this.restorePlan;
    await this.eachMember('restoring', false, async (m) => {
      const r = await a.restoreEtcdMember({
        cluster,
        node: m.node,
        member: { node: m.node, name: m.name, peerUrl: m.peerUrl, dataDir: m.dataDir },
        remotePath: snapshot.remotePath,
        initialCluster,
        bumpRevision,
        tag,
      });
      Object.assign(m, { phase: 'restored', previousDataDir: r.previousDataDir });
      this.note(`${m.node}: ${m.dataDir} restored (the old one kept as ${r.previousDataDir})`);
    });
  }

  async startControlPlanes(): Promise<void> {
    await this.eachMember('starting', false, async (m) => {
      await a.startStaticPods({ cluster: this.input.cluster, node: m.node });
      m.phase = 'started';
    });
  }

  /** Every member answers on its control plane at the restored revision (or above: writes since the start), then the apiserver. */
  async verify(): Promise<void> {
    const { cluster, verifyTimeoutSeconds } = this.input;
    const timeout = verifyTimeoutSeconds ? { timeoutSeconds: verifyTimeoutSeconds } : {};
    const minRevision = this.restorePlan.snapshot.revision + this.restorePlan.bumpRevision;
    await this.eachMember('verifying', false, async (m) => {
      const verified = await a.verifyEtcdRestore({ cluster, node: m.node, minRevision, ...timeout });
      this.status.revision = Math.max(this.status.revision ?? 0, verified.revision);
    });
    await a.verifyRestoredApiserver({ cluster, ...timeout });
  }

  async done(): Promise<RestoreStatus> {
    const { snapshot } = this.restorePlan;
    this.setPhase('done');
    this.status.outcome = `restored ${this.input.cluster} to the snapshot ${snapshot.hop ? `before ${snapshot.hop}` : snapshot.remotePath} (revision ${snapshot.revision}; etcd now at ${this.status.revision ?? '?'})`;
    this.note(this.status.outcome);
    this.notifier.emit('run.finished', 'finished', `restore of ${this.input.cluster} done: ${this.status.outcome}`, {
      outcome: this.status.outcome,
      exit: 0,
      meaning: 'done',
    });
    await this.notifier.started();
    await condition(allHandlersFinished);
    return this.status;
  }

  /** Failure after retries: where each control plane was left, and the type the caller can branch on. */
  async fail(err: unknown): Promise<never> {
    const cause = err instanceof ActivityFailure && err.cause instanceof ApplicationFailure ? err.cause : undefined;
    const during = this.status.phase;
    // Nothing restored yet: what was stopped starts again on its old data.
    if (!this.swapped()) await this.startStoppedAgain(true);
    const where = this.status.members.map((m) => `${m.node} ${m.phase}`).join(', ');
    this.setPhase('failed');
    this.status.outcome = `restore failed while ${during}: ${cause?.message ?? (err as Error).message}; control planes: ${where}`;
    // Finished by hand once a data dir was swapped (docs/restore.md), else by the same restore again.
    const again = this.swapped() ? undefined : this.againCommand();
    this.notifier.emit(
      'run.failed',
      'failed',
      `restore of ${this.input.cluster} failed: ${this.status.outcome}`,
      { reason: this.status.outcome, members: this.status.members.map((m) => `${m.node} ${m.phase}`) },
      again,
    );
    await this.notifier.started();
    throw ApplicationFailure.create({
      message: this.status.outcome,
      type: this.swapped() ? 'RestoreIncomplete' : 'RestoreFailed',
      nonRetryable: true,
      details: [{ members: this.status.members, snapshot: this.status.snapshot }],
      ...(cause ? { cause } : {}),
    });
  }

  /** The same restore again: nothing was swapped, so it starts from its checks. */
  private againCommand(): string {
    const { cluster, hop, snapshotPath, controlPlanes } = this.input;
    const named = (controlPlanes ?? []).map((n) => ` --control-plane ${n}`).join('');
    return `skewless restore --cluster ${cluster}${hop !== undefined ? ` --hop ${hop}` : ''}${snapshotPath !== undefined ? ` --snapshot ${snapshotPath}` : ''}${named}`;
  }

  private readonly note = (text: string): void => {
    this.status.events.push(text);
  };

  private setPhase(phase: RestorePhase): void {
    const { status } = this;
    status.phase = phase;
    upsertSearchAttributes([{ key: SEARCH_ATTRIBUTES.phase, value: phase }]);
    upsertMemo({ flow: 'restore', phase, snapshot: status.snapshot?.hop ?? status.snapshot?.remotePath ?? null, paused: status.paused });
  }

  /** Refused once a data dir has been swapped (the restore completes); the first reason is kept. */
  private abortRefused(who: string): string | undefined {
    if (!this.swapped()) return undefined;
    const restoredOn = this.status.members.filter((m) => m.phase !== 'stopped').map((m) => m.node);
    return `abort by ${who} refused: etcd data has been restored on ${restoredOn.join(', ')}; the restore completes`;
  }

  /** The point of no return: a member's data dir has been swapped. */
  private swapped(): boolean {
    return this.status.members.some((m) => m.phase === 'restored' || m.phase === 'started');
  }

  /** Runs `step` on each control plane in turn, paused between them; stops early on an abort if `abortable`. */
  private async eachMember(phase: RestorePhase, abortable: boolean, step: (m: MemberState) => Promise<void>): Promise<void> {
    this.setPhase(phase);
    for (const m of this.status.members) {
      await condition(() => !this.status.paused || (abortable && this.aborted));
      if (abortable && this.aborted) return;
      await step(m);
    }
  }

  /** Starts the static pods stopped so far again; best effort on the way to a failure (noted, the others still tried). */
  private async startStoppedAgain(bestEffort: boolean): Promise<void> {
    for (const m of this.status.members.filter((x) => x.phase === 'stopped')) {
      try {
        await a.startStaticPods({ cluster: this.input.cluster, node: m.node });
        m.phase = 'checked';
      } catch (err) {
        if (!bestEffort) throw err;
        this.note(`could not start the static pods on ${m.node} again`);
      }
    }
  }
}
