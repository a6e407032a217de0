import {
  allHandlersFinished,
  ApplicationFailure,
  CancellationScope,
  condition,
  executeChild,
  getExternalWorkflowHandle,
  patched,
  setHandler,
  sleep,
  upsertMemo,
  upsertSearchAttributes,
  workflowInfo,
  type QueryDefinition,
} from '@temporalio/workflow';
import type { SearchAttributeUpdatePair } from '@temporalio/common';
import { hooksAt, QUARANTINED_LABEL, type HookPoint, type HookSubscription, type PolicyKey, type RolloutPhase } from '../rules/index.js';
import { WORKFLOW_FAILURE } from '../contracts/failure-types.js';
import { activities as a } from './activities-proxy.js';
import { handleApprovals } from './approvals.js';
import { haltOf } from './halt.js';
import { windowWithinCapacity } from './capacity-window.js';
import { recordGateWait, setBlockedNodes } from './metrics.js';
import { drainResolutionSignal, type DrainResolution, type NodePhase } from './node-messages.js';
import { nodeUpgradeWorkflow, type NodeStepInput, type NodeStepResult } from './node-upgrade-workflow.js';
import { PATCH } from './patches.js';
import { SEARCH_ATTRIBUTES } from './search-attributes.js';
import { byWhom } from './by-whom.js';
import { OperatorControls, type ControlHooks } from './operator-controls.js';
import { AlertGate } from './alert-gate.js';
import { refuseBadPolicy } from './rule-failure.js';
import { Notifier } from './notifier.js';
import { hookEvent, waitingEvent } from './run-events.js';
import {
  nodeBlockedSignal,
  resolveDrainUpdate,
  type GateState,
  type HaltResolution,
  type HaltState,
  type NodeState,
  type OperatorAction,
  type RolloutStatus,
  type UpgradePhase,
  type UpgradeResolution,
} from './rollout-messages.js';

/**
 * The rollout core: what every flow that moves nodes in phases through node child workflows shares
 * (the cluster upgrade, OS maintenance, blue/green). It owns the status (query), memo and phase
 * search attribute, the operator's controls (pause, resume, abort, approve, resolve), a node step as a
 * child with its block/skip/abort handling, the window that keeps at most N nodes in flight, the
 * workload check that halts, the one-rollout-per-cluster guard, compensation and the ending. A flow
 * is a plan plus a list of phases on it.
 *
 * Its registerHandlers() runs before the workflow's first await (the flow's own registerHandlers(),
 * called in the workflow function), so signals that arrived with the start are delivered to them.
 */
export interface RolloutOptions<S extends RolloutStatus> {
  status: S;
  /** The workflow's own status query (same wire name `status` for every rollout). */
  statusQuery: QueryDefinition<S>;
  /** The workflow id of a node's child (relayed resolutions and aborts go there). */
  childId: (node: string) => string;
  /** The memo, whole: what the UI shows of the run without a query. */
  memo: () => Record<string, unknown>;
  /** What the run is called in refusals: `upgrade`, `maintenance run`. */
  noun: string;
  /**
   * Called when what the run waits for may have changed (a node blocked or moving again, a rollout
   * halted or answered), after the memo: the upgrade's report to a fleet parent (fleet-report.ts).
   */
  onBlockedChange?: () => void;
  /** How the flow refuses or answers an abort, instead of noting it and relaying it to blocked children. */
  controls?: Pick<ControlHooks, 'abortRefused' | 'aborted'>;
  /** The acknowledgements the run started with (policy.acknowledge): `alert:<name>` lets phases go while it fires. */
  acknowledged?: readonly string[];
}

/** How every rollout starts, in this order; nothing in the cluster is touched before it returns. */
export interface RolloutStart {
  /** What the UI filters and shows from the first moment, when the flow knows it before its plan (then the memo too). */
  searchAttributes?: SearchAttributeUpdatePair[];
  /** The policy as given and the keys the flow takes; `when`: whether this run checks it (a patch). */
  policy: { given: unknown; keys: readonly PolicyKey[]; when?: () => boolean };
  /** Whether this run writes the search attributes before the policy check: a blue/green run that predates PATCH.oneStart. */
  attributesFirst?: () => boolean;
  /**
   * One rollout of a cluster at a time: what the refusal tells the operator to do instead, the workflow
   * that started this one (not another rollout), whether the refusal names the cluster, and `when` this
   * run asks (a patch).
   */
  alone: { then: string; startedBy?: string; ofCluster?: boolean; when?: () => boolean };
}

/** One node step as a child workflow: what differs between flows; the rest of NodeStepInput is the rollout's. */
export interface NodeStep {
  step: NodeStepInput['step'];
  staticSummary: string;
  /** The node's phase while its child runs. */
  running: NodePhase;
  input: Omit<NodeStepInput, 'cluster' | 'node' | 'owner' | 'step'>;
  /** The note when the operator skips the node (it stays cordoned until the run ends). */
  skippedNote?: string;
  /** The note when the operator skips the node before its cordon (it never was cordoned). */
  skippedUncordonedNote?: string;
  /** Whether an aborted child or a skip counts for the run (a rollback's drains do not). */
  countsForRun?: boolean;
}

/** What a phase loop asks of its flow, around the shared window → workload check → canary gate. */
export interface PhaseHooks {
  /** Before the phase: 'stop' ends the loop (an abort while waiting), 'skip' passes the phase by. */
  before?: (phase: RolloutPhase, index: number) => Promise<'go' | 'stop' | 'skip'>;
  /** The nodes of the phase that move (default: all). */
  nodes?: (phase: RolloutPhase) => string[];
  run: (node: string) => Promise<unknown>;
  /** The hop the workload check reports (empty for a run without versions). */
  hop: string;
  verifySeconds: number;
  /** After the check passed, before the canary gate. */
  afterCheck?: (phase: RolloutPhase) => void;
  canaryGate: { name: string; approve: boolean; soakSeconds?: number };
  /** The soak after every other phase (policy.phaseSoakSeconds, patched by the flow): 0 or absent, none. */
  phaseSoakSeconds?: number;
  /** After the phase (and its gate). */
  after?: (phase: RolloutPhase) => void;
  /** Between two waves of a phase (capacity-window.ts), when no node of it runs: an upgrade's continue-as-new. */
  betweenWaves?: (phase: RolloutPhase, index: number) => Promise<void>;
}

/** The memo's part every node rollout shows: where it is and which nodes wait for the operator. */
export function progressMemo(status: RolloutStatus): Record<string, unknown> {
  const nodes = Object.values(status.nodes);
  return {
    phase: status.phase,
    paused: status.paused,
    progress: `${nodes.filter((n) => n.phase === 'done').length}/${nodes.length} nodes done`,
    blocked: Object.entries(status.nodes)
      .filter(([, n]) => n.phase === 'blocked')
      .map(([name]) => name),
    skipped: status.skipped,
    ...(status.quarantined?.length ? { quarantined: status.quarantined } : {}),
  };
}

const nowIso = () => new Date(Date.now()).toISOString(); // workflow time: deterministic on replay

export class Rollout<S extends RolloutStatus> {
  readonly cluster: string;
  readonly status: S;
  /** The cordon owner and the children's prefix: the workflow id, stable across continue-as-new. */
  readonly owner = workflowInfo().workflowId;
  /** Pause, resume and abort (a flow may refuse an abort, or answer it its own way: blue/green's rollback). */
  readonly controls: OperatorControls;
  /** The operator's alerts around each phase (the cluster configuration's `alerts:`). */
  readonly alerts: AlertGate;
  /** The cluster's change hooks (names, points, failure policy), none until the flow names them. */
  hooks: HookSubscription[] = [];
  /** The run's events to the cluster's `notify:` sinks (none until the flow names them). */
  readonly notifier: Notifier;
  /** The operator's answer to a halted rollout (status.halted). */
  #haltAnswer: HaltResolution | undefined;
  /** How often each wait began in this run: its count is part of the wait's idempotency key. */
  #waits: Record<string, number> = {};

  constructor(private readonly options: RolloutOptions<S>) {
    this.status = options.status;
    this.cluster = options.status.cluster;
    this.notifier = new Notifier(this.cluster);
    this.controls = new OperatorControls(this.status, {
      changed: () => this.updateMemo(),
      aborted: async (p) => {
        this.note(`aborted by ${byWhom(p)}`);
        await this.abortBlockedChildren(p);
      },
      ...options.controls,
    });
    this.alerts = new AlertGate({
      cluster: this.cluster,
      status: this.status,
      note: (text) => this.note(text),
      aborted: () => this.aborted(),
      updateMemo: () => this.updateMemo(),
      acknowledged: options.acknowledged ?? [],
    });
  }

  /** Whether the run started with this acknowledgement (`capacity:worker-1`), or the check's wildcard (`capacity:*`). */
  acknowledges(name: string): boolean {
    const all = `${name.slice(0, name.indexOf(':'))}:*`;
    return (this.options.acknowledged ?? []).some((a) => a === name || a === all);
  }

  /** The status query, pause, resume, abort, a node's block, approve and resolve: before the workflow's first await. */
  registerHandlers(): void {
    setHandler(this.options.statusQuery, () => this.status);
    this.controls.registerHandlers();
    setHandler(nodeBlockedSignal, (b) => this.nodeBlocked(b));
    handleApprovals(this.status.gates, (e) => this.note(e));
    setHandler(resolveDrainUpdate, (r) => this.resolve(r), { validator: (r) => this.refuseResolution(r) });
  }

  /**
   * The start every rollout shares: the search attributes and memo (when given), the policy checked,
   * then the refusal while another rollout of the cluster runs. A command order changed here changes
   * every flow's history: behind a patch.
   */
  async start(o: RolloutStart): Promise<void> {
    const show = () => {
      if (!o.searchAttributes) return;
      upsertSearchAttributes(o.searchAttributes);
      this.updateMemo();
    };
    const attributesFirst = o.attributesFirst?.() ?? false;
    if (attributesFirst) show();
    if (o.policy.when?.() ?? true) refuseBadPolicy(o.policy.given, o.policy.keys);
    if (!attributesFirst) show();
    const { then, startedBy, ofCluster, when } = o.alone;
    if (when?.() ?? true) await this.refuseWhileAnotherRuns([this.owner, ...(startedBy ? [startedBy] : [])], then, ofCluster);
  }

  note(text: string): void {
    this.status.events.push(text);
  }

  /** Why the run stops (abort signal, an abort resolution, a child aborted), or undefined. */
  aborted(): string | undefined {
    return this.controls.aborted();
  }

  /** Records an abort unless one is recorded already. */
  abort(reason: string): void {
    this.controls.abort(reason);
  }

  updateMemo(): void {
    upsertMemo(this.options.memo());
  }

  setPhase(phase: UpgradePhase): void {
    this.status.phase = phase;
    upsertSearchAttributes([{ key: SEARCH_ATTRIBUTES.phase, value: phase }]);
    this.updateMemo();
  }

  /** Resolves once the run is not paused, or is aborted. */
  async unpaused(): Promise<void> {
    await condition(() => !this.status.paused || this.aborted() !== undefined);
  }

  /** Refuses to start while another rollout of the cluster runs; `ignore`: this run and the flow that started it. */
  async refuseWhileAnotherRuns(ignore: string[], then: string, ofCluster = false): Promise<void> {
    const other = await a.findRunningRollout({ cluster: this.cluster, ignore });
    if (!other.running) return;
    const which = `${other.workflowId ?? 'another rollout'}${ofCluster ? ` of ${this.cluster}` : ''}`;
    throw ApplicationFailure.nonRetryable(
      `refusing to start: ${which} is running (since ${other.startedAt ?? '?'}): ${then}`,
      WORKFLOW_FAILURE.RolloutRunning,
    );
  }

  // ---- the operator's controls ----

  /** A node waiting on a blocked drain would wait forever: it is told to abort too. */
  async abortBlockedChildren(p: OperatorAction): Promise<void> {
    for (const [node, state] of Object.entries(this.status.nodes)) {
      if (state.phase === 'blocked') {
        await getExternalWorkflowHandle(this.options.childId(node)).signal(drainResolutionSignal, {
          action: 'abort',
          by: p.by,
          ...(p.reason ? { comment: p.reason } : {}),
        });
      }
    }
  }

  private nodeBlocked({ node, block, phase }: { node: string; block?: NodeState['blocked']; phase?: NodePhase }): void {
    const state = (this.status.nodes[node] ??= { phase: 'pending' });
    const was = state.blocked;
    if (block && !was) this.waiting('node', node, { node, block });
    if (!block && was) this.resumed('node', node, { node });
    if (block) {
      Object.assign(state, { phase: 'blocked', blocked: block });
      if (block.kind === 'StepFailed')
        this.note(`${node} blocked: ${block.summary} failed (${block.failure}, ${block.gaveUp}): ${block.message}`);
    } else Object.assign(state, { phase: phase ?? 'draining', blocked: undefined });
    this.updateMemo();
    setBlockedNodes(this.cluster, this.status.nodes);
    this.options.onBlockedChange?.();
  }

  private async resolve(r: UpgradeResolution): Promise<NodeState | HaltState> {
    const comment = r.comment ? ` (${r.comment})` : '';
    if (r.node === undefined) {
      // A halted rollout: the loop after the phase checks again, or aborts.
      const halt = this.status.halted as HaltState;
      const what =
        halt.step === 'quarantineSkew'
          ? `skew check of the quarantined nodes before ${halt.hop}`
          : halt.step === 'hook'
            ? `hook at ${halt.after}`
            : halt.step === 'capacity'
              ? `capacity check before ${halt.after}`
              : `workload check after ${halt.after}`;
      this.note(`${what} resolved by ${r.by}: ${r.action}${comment}`);
      this.#haltAnswer = r;
      return halt;
    }
    const block = this.status.nodes[r.node]?.blocked;
    const what = block?.kind === 'StepFailed' ? `${block.step} of ${r.node}` : `drain of ${r.node}`;
    this.note(`${what} resolved by ${r.by}: ${r.action}${r.action === 'force' ? ` ${r.pods.join(',')}` : ''}${comment}`);
    const { node, ...resolution } = r;
    await getExternalWorkflowHandle(this.options.childId(node)).signal(drainResolutionSignal, resolution as DrainResolution);
    return this.status.nodes[node] as NodeState;
  }

  /** The update's validator: a refusal is never written to history. */
  private refuseResolution(r: UpgradeResolution): void {
    const { status, options } = this;
    if (!['retry', 'skip', 'force', 'abort'].includes(r.action)) throw new Error(`unknown action ${String(r.action)}`);
    if (r.node === undefined) {
      if (!status.halted) throw new Error(`the ${options.noun} is not halted: name the blocked node`);
      if (!status.halted.actions.includes(r.action)) throw new Error(`a halted rollout is retried or aborted, not ${r.action}`);
      return;
    }
    if (!status.nodes[r.node]) throw new Error(`no node ${r.node} in this ${options.noun}`);
    const block = status.nodes[r.node]?.blocked;
    if (status.nodes[r.node]?.phase !== 'blocked' || !block) throw new Error(`node ${r.node} is not blocked`);
    if (block.kind === 'StepFailed' && !(block.actions as string[]).includes(r.action)) {
      const moving = options.noun === 'upgrade' ? 'move to the new version' : 'change';
      throw new Error(
        r.action === 'force'
          ? `force is for blocked drains; ${r.node} is blocked on a failed step (${block.step}): retry or abort`
          : `skip is not offered once ${r.node} has started to ${moving} (${block.step} failed): retry or abort`,
      );
    }
    if (r.action === 'force') refuseForeignPods(r.node, r.pods, block.pods);
  }

  // ---- phases of nodes ----

  /** An approval gate (needsApproval) or a soak; returns at once when neither is asked. */
  async gate(name: string, needsApproval: boolean, soakSeconds = 0, orUntil: () => boolean = () => false): Promise<void> {
    if (!needsApproval && soakSeconds <= 0) return;
    const g: GateState = { name };
    this.status.gates.push(g);
    this.setPhase('gate');
    const since = Date.now();
    if (needsApproval) {
      this.waiting('gate', name, { gate: name });
      // orUntil: what else ends the wait (a reversible hop's rollback), left to the caller to read.
      await condition(() => g.approvedBy !== undefined || this.aborted() !== undefined || orUntil());
      if (g.approvedBy !== undefined) this.resumed('gate', name, { gate: name, by: g.approvedBy });
    } else {
      g.opensAt = new Date(Date.now() + soakSeconds * 1000).toISOString();
      this.note(`soak ${soakSeconds} s after ${name}`);
      await Promise.race([sleep(soakSeconds * 1000), condition(() => this.aborted() !== undefined)]);
      g.approvedBy = 'soak';
    }
    recordGateWait(this.cluster, name, needsApproval ? 'approval' : 'soak', (Date.now() - since) / 1000);
  }

  /** A node waiting on a failed step: something is wrong with hosts or nodes, so no other node starts. */
  stepBlocked(): boolean {
    return Object.values(this.status.nodes).some((n) => n.phase === 'blocked' && n.blocked?.kind === 'StepFailed');
  }

  /**
   * Runs `run` for each node with at most `width` in flight, never starting one while paused, aborted
   * or while a node waits on a failed step. (A drain blocked by a PDB holds only its own slot: its node
   * is cordoned and untouched, and the next node's drain asks the same PDB, which protects itself.)
   */
  async window(nodes: string[], width: number, run: (node: string) => Promise<unknown>): Promise<void> {
    let inFlight = 0;
    const running: Promise<unknown>[] = [];
    for (const node of nodes) {
      await condition(() => this.aborted() !== undefined || (!this.status.paused && inFlight < width && !this.stepBlocked()));
      if (this.aborted()) break;
      inFlight++;
      running.push(run(node).finally(() => inFlight--));
    }
    await Promise.all(running);
  }

  /**
   * After a phase of nodes, "Ready is not working" until the workloads say so, and then the operator's
   * own probes (the cluster configuration's `probes[]`): a failed check halts the rollout
   * (status.halted names it) until the operator retries it or aborts.
   */
  async verifyWorkloads(after: string, hop: string, verifySeconds: number): Promise<void> {
    const input = { cluster: this.cluster, waitSeconds: verifySeconds, require: true };
    await this.untilPasses(after, hop, 'checkWorkloads', () => a.checkWorkloads(input));
    await this.checkProbes(after, hop, verifySeconds);
  }

  /** The operator's probes alone (after an upgrade's control plane, whose workloads are the workers'). */
  async checkProbes(after: string, hop: string, verifySeconds: number): Promise<void> {
    if (this.aborted() || !patched(PATCH.operatorProbes)) return;
    await this.untilPasses(after, hop, 'runProbes', () =>
      a.runProbes({ cluster: this.cluster, waitSeconds: verifySeconds, require: true }),
    );
  }

  /** Runs a check again each time the operator retries its halt; returns when it passes or the run is aborted. */
  private async untilPasses(after: string, hop: string, step: HaltState['step'], check: () => Promise<unknown>): Promise<void> {
    for (;;) {
      try {
        await check();
        return;
      } catch (err) {
        const halt = haltOf(err, after, hop, step);
        if (!halt) throw err;
        const answer = await this.haltUntilAnswered(halt);
        if (answer?.action === 'abort') this.abort(`aborted by ${answer.by}${answer.comment ? `: ${answer.comment}` : ''}`);
        if (this.aborted()) return;
      }
    }
  }

  /** A halt that is no failed check (a hop that would break the skew policy for a quarantined node): answered by retry, or abort. */
  async holdUntilAnswered(halt: HaltState): Promise<void> {
    const answer = await this.haltUntilAnswered(halt);
    if (answer?.action === 'abort') this.abort(`aborted by ${answer.by}${answer.comment ? `: ${answer.comment}` : ''}`);
  }

  private async haltUntilAnswered(halt: HaltState): Promise<HaltResolution | undefined> {
    // One halt at a time (two nodes' hooks may say no together): the second waits for the first's answer.
    await condition(() => this.status.halted === undefined || this.aborted() !== undefined);
    this.status.halted = halt;
    this.#haltAnswer = undefined;
    this.note(`halted ${halt.step === 'capacity' ? 'before' : 'after'} ${halt.after}: ${halt.message}`);
    upsertMemo({ halted: halt.after });
    this.options.onBlockedChange?.();
    const which = `${halt.hop}/${halt.after}`;
    this.waiting('halt', which, { halt });
    await condition(() => this.#haltAnswer !== undefined || this.aborted() !== undefined);
    const answer = this.#haltAnswer as HaltResolution | undefined; // set by the update handler while we waited
    if (answer) this.resumed('halt', which, { after: halt.after, hop: halt.hop, by: answer.by });
    delete this.status.halted;
    upsertMemo({ halted: null });
    this.options.onBlockedChange?.();
    return this.#haltAnswer;
  }

  /**
   * The phases of a plan, each: the flow's `before` (a maintenance window, a continue-as-new), the
   * alert gate, the window of nodes, the workload check and probes, the alert gate again (halts), and
   * after the canary its gate (approval or soak), after any other phase the soak of every phase.
   */
  async runPhases(phases: readonly RolloutPhase[], hooks: PhaseHooks, from = 0): Promise<void> {
    for (let k = from; k < phases.length && !this.aborted(); k++) {
      const phase = phases[k] as RolloutPhase;
      const go = hooks.before ? await hooks.before(phase, k) : 'go';
      if (go === 'stop') break;
      if (go === 'skip') continue;
      const nodes = hooks.nodes ? hooks.nodes(phase) : phase.nodes;
      if (nodes.length === 0) continue; // every node of the phase is already there: no check, no gate
      await this.alerts.beforePhase(phase.stage, hooks.hop);
      if (this.aborted()) break;
      // Capacity before each batch (issue 40): only as many nodes out at once as their pods fit elsewhere.
      const between = hooks.betweenWaves;
      if (patched(PATCH.batchCapacity))
        await windowWithinCapacity(this, phase, nodes, hooks.hop, hooks.run, between && (() => between(phase, k)));
      else await this.window(nodes, phase.maxUnavailable, hooks.run);
      if (this.aborted()) break;
      await this.verifyWorkloads(phase.stage, hooks.hop, hooks.verifySeconds);
      if (this.aborted()) break;
      await this.alerts.afterPhase(phase.stage, hooks.hop);
      if (this.aborted()) break;
      hooks.afterCheck?.(phase);
      const { canaryGate: g } = hooks;
      if (phase.kind === 'canary') await this.gate(g.name, g.approve, g.soakSeconds);
      else await this.gate(`soak-${phase.stage}${hooks.hop ? `-${hooks.hop}` : ''}`, false, hooks.phaseSoakSeconds);
      hooks.after?.(phase);
    }
  }

  /** One node step as its child workflow, with the node's state kept and a skip or an abort taken in. */
  async runNodeStep(node: string, s: NodeStep): Promise<NodeStepResult> {
    const state = (this.status.nodes[node] ??= { phase: 'pending' });
    state.phase = s.running;
    state.startedAt ??= nowIso();
    const args = { cluster: this.cluster, node, ...s.input, step: s.step, owner: this.owner };
    const result = await executeChild(nodeUpgradeWorkflow, {
      workflowId: this.options.childId(node),
      staticSummary: s.staticSummary,
      args: [args],
    });
    state.phase = result.outcome;
    state.finishedAt = nowIso();
    if (result.drainSeconds !== undefined) state.drainSeconds = (state.drainSeconds ?? 0) + result.drainSeconds;
    delete state.blocked;
    if (result.packages) {
      state.packages = { ...state.packages, ...result.packages };
      if (result.packages.putBack?.length) this.note(`${node}: holds put back: ${result.packages.putBack.join(' ')}`);
      if (result.packages.notPutBack?.length) this.note(`${node}: HOLDS NOT PUT BACK: ${result.packages.notPutBack.join(' ')}`);
      if (result.packages.unchecked) this.note(`${node}: holds not checked: ${result.packages.unchecked}`);
    }
    if (s.countsForRun === false) return result;
    if (result.outcome === 'aborted') this.abort(`aborted at node ${node}`);
    if (result.outcome === 'skipped') {
      this.status.skipped.push(node);
      // Skipped before its cordon (a step of a worker's that comes first failed): it never left service.
      const note =
        result.cordoned === false
          ? (s.skippedUncordonedNote ?? 'skipped by the operator before its cordon: never cordoned, stays in service at its old version')
          : (s.skippedNote ?? 'skipped by the operator: stays cordoned until the run ends');
      this.note(`${node} ${note}`);
    }
    if (result.outcome === 'quarantined') {
      (this.status.quarantined ??= []).push(node);
      const hop = (this.status as { hop?: string }).hop ?? '';
      this.notifier.emit('node.quarantined', `quarantined/${hop}/${node}`, `${node} quarantined at its old version (hop ${hop})`, {
        node,
        hop,
        reason: result.quarantine?.message ?? 'its drain did not finish',
      });
      this.note(
        `${node} quarantined: ${result.quarantine?.message ?? 'its drain did not finish'}; stays cordoned at its old version (label ${QUARANTINED_LABEL}), the run goes on without it`,
      );
    }
    return result;
  }

  // ---- the ending ----

  /** Skipped nodes go back into service at their old version: no node stays cordoned by this run. */
  async handBack(nodes: string[], noteOf: (node: string) => string): Promise<void> {
    for (const node of nodes) {
      const r = await a.uncordonNode({ cluster: this.cluster, node, owner: this.owner });
      if (r.changed) this.note(noteOf(node));
    }
  }

  /**
   * The cluster's change hooks at `point` (workflows/change-hooks.ts), one after the other: a hook that
   * says no halts the rollout (onFailure fail) until the operator retries it or aborts, or is noted
   * (ignore). beforeRun is the flow's own: it refuses the start instead.
   */
  async hooksAt(point: HookPoint, where: { hop?: string; node?: string }): Promise<void> {
    for (const hook of hooksAt(this.hooks, point)) {
      if ((this.aborted() && point !== 'afterRun') || !patched(PATCH.changeHooks)) return;
      const event = hookEvent(this, point, where);
      for (;;) {
        try {
          const r = await a.runChangeHook({ cluster: this.cluster, hook: hook.name, point, event });
          this.note(`hook ${hook.name} at ${point}${where.node ? ` of ${where.node}` : ''}: yes${r.answer ? ` (${r.answer})` : ''}`);
          break;
        } catch (err) {
          const halt = haltOf(err, where.node ? `${where.node} (${point})` : point, where.hop ?? '', 'hook');
          if (!halt) throw err;
          // After the run the rollout has nothing left to hold: an afterRun hook's no is recorded.
          if (hook.onFailure === 'ignore' || point === 'afterRun') {
            this.note(`${halt.message} (${point === 'afterRun' ? 'the run is over' : 'ignored: onFailure ignore'})`);
            break;
          }
          await this.holdUntilAnswered(halt);
          if (this.aborted()) return;
        }
      }
    }
  }

  /** Undoes what this run did to scheduling, never versions: uncordon only our cordons, clear our labels. */
  async compensate(nodes: string[]): Promise<void> {
    const { cluster, owner } = this;
    this.status.phase = 'compensating';
    await CancellationScope.nonCancellable(async () => {
      for (const node of nodes) {
        // A quarantined node stays as its quarantine left it (cordoned, labelled) for the operator, abort or not.
        if (this.status.quarantined?.includes(node)) continue;
        try {
          const r = await a.uncordonNode({ cluster, node, owner });
          if (r.changed) this.note(`compensation: uncordoned ${node}`);
        } catch (err) {
          this.note(`compensation: uncordon ${node} failed: ${(err as Error).message}`); // keep going: best effort
          (this.status.uncordonFailed ??= []).push(node);
        }
      }
      await a.clearStageLabels({ cluster, owner }).catch((err: Error) => this.note(`compensation: clear labels failed: ${err.message}`));
    });
  }

  /** The run's last step: its handlers (an update in flight) finish before the result is returned. */
  async ended(): Promise<S> {
    const { status } = this;
    if (status.phase === 'aborted')
      this.notifier.emit('run.aborted', 'aborted', `${this.options.noun} of ${this.cluster} aborted: ${status.outcome ?? ''}`, {
        reason: this.aborted() ?? 'aborted',
        outcome: status.outcome ?? '',
      });
    else {
      const exit = (status as { leftBehind?: unknown[] }).leftBehind?.length ? 4 : 0;
      this.notifier.emit('run.finished', 'finished', `${this.options.noun} of ${this.cluster} done: ${status.outcome ?? ''}`, {
        outcome: status.outcome ?? '',
        exit,
        meaning: exit === 4 ? 'done, with nodes left behind' : 'done',
      });
    }
    await this.notifier.started();
    await condition(allHandlersFinished);
    return this.status;
  }

  /** The run failed: its event (with the command that finishes it, when there is one) goes before the failure. */
  async failed(reason: string, command?: string): Promise<void> {
    this.notifier.emit('run.failed', 'failed', `${this.options.noun} of ${this.cluster} failed: ${reason}`, { reason }, command);
    await this.notifier.started();
  }

  // ---- events of waits (workflows/run-events.ts) ----

  private waiting(kind: 'gate' | 'node' | 'halt', which: string, facts: Parameters<typeof waitingEvent>[1]): void {
    const n = (this.#waits[`${kind}/${which}`] = (this.#waits[`${kind}/${which}`] ?? 0) + 1);
    const e = waitingEvent(kind, facts, this.cluster, this.owner);
    this.notifier.emit('run.waiting', `waiting/${kind}/${which}/${n}`, e.summary, e.details, e.command);
  }

  private resumed(kind: 'gate' | 'node' | 'halt', which: string, details: Record<string, unknown>): void {
    const n = this.#waits[`${kind}/${which}`] ?? 1;
    this.notifier.emit('run.resumed', `resumed/${kind}/${which}/${n}`, `${this.cluster} moves again: ${kind} ${which}`, {
      waitingFor: kind,
      ...details,
    });
  }
}

/**
 * Force deletes pods that would be lost for good, so it takes only pods the node's drain reported
 * in its way: a typo or a pod elsewhere must not grow the forced list (a validator: nothing recorded).
 */
function refuseForeignPods(node: string, pods: unknown, blocking: readonly { namespace: string; name: string }[]): void {
  if (!Array.isArray(pods) || pods.length === 0) throw new Error('force names the pods to delete');
  const allowed = blocking.map((p) => `${p.namespace}/${p.name}`);
  const foreign = pods.filter((p) => !allowed.includes(p as string));
  if (foreign.length === 0) return;
  const named = allowed.length > 0 ? `the pods blocking it: ${allowed.join(', ')}` : 'no pod blocks it';
  throw new Error(
    `force takes only pods that block the drain of ${node}; ${foreign.map(String).join(', ')} ${foreign.length === 1 ? 'does' : 'do'} not (${named})`,
  );
}
