import { ApplicationFailure, CancellationScope, patched, setHandler } from '@temporalio/workflow';
import {
  BLUEGREEN_POLICY_KEYS,
  checkSkew,
  withDefaults,
  clusterVersion,
  compareVersions,
  parseVersion,
  planRollout,
  type BlueGreenPolicy,
  type RolloutPlan,
  type WithDefaults,
} from '../rules/index.js';
import type { BlueGreenPlanFacts } from '../activities/pool-provisioning.js';
import { WORKFLOW_FAILURE, type FailureType } from '../contracts/failure-types.js';
import { activities as a } from './activities-proxy.js';
import {
  bluegreenStatusQuery,
  NO_ROLLBACK,
  REMOVAL_GATE,
  rollbackUpdate,
  type BlueGreenInput,
  type BlueGreenStatus,
  type BlueGreenStep,
} from './bluegreen-messages.js';
import { upgradeControlPlaneFirst } from './bluegreen-control-plane.js';
import { nodeStepPolicy, type NodeStepResult } from './node-step-input.js';
import { Rollout } from './rollout.js';
import { PATCH } from './patches.js';
import { applyRule } from './rule-failure.js';
import { cappedNote, planWithinOpenChildren } from './open-children-cap.js';
import { SEARCH_ATTRIBUTES } from './search-attributes.js';
import { byWhom } from './by-whom.js';
import { failureReason } from './run-events.js';
import type { OperatorAction, UpgradePhase } from './rollout-messages.js';
import { nodeWorkflowId, upgradeWorkflowId } from '../contracts/workflow-ids.js';

const nowIso = () => new Date(Date.now()).toISOString(); // workflow time: deterministic on replay
const refuse = (message: string, type: FailureType = WORKFLOW_FAILURE.PreflightBlocked) =>
  ApplicationFailure.nonRetryable(`refusing to start: ${message}`, type);

/**
 * Replaces a node pool by a new one at a version, workflow id `bluegreen/<cluster>`: the control plane
 * first (when it is below the version: the upgrade `upgrade/<cluster>` as a child, control planes only),
 * then the green pool created at the version (its Nodes joined, Ready, labelled), every blue node
 * cordoned, the blue nodes drained canary first then in batches (each a node child workflow: PDBs
 * honoured, a blocked drain waits for `skewless resolve`), the workloads checked after each phase, and
 * an approval gate (`remove-blue`) before the blue pool's Nodes and machines are deleted.
 *
 * Rollback is the abort: until the removal starts, abort (the signal, or the `rollback` update the CLI
 * sends) uncordons blue, drains green and deletes it; once the removal started it is refused, with the
 * reason. A failure uncordons the blue nodes this run cordoned and leaves the green nodes in place (named).
 */
export async function bluegreenWorkflow(input: BlueGreenInput): Promise<BlueGreenStatus> {
  const run = new BlueGreenRun(input);
  run.registerHandlers();
  const { rollout } = run;
  // One rollout of a cluster at a time (its own control-plane upgrade, later, is its child: not another).
  await rollout.start({
    policy: { given: input.policy, keys: BLUEGREEN_POLICY_KEYS, when: () => patched(PATCH.onePolicy) },
    searchAttributes: [
      { key: SEARCH_ATTRIBUTES.cluster, value: input.cluster },
      { key: SEARCH_ATTRIBUTES.targetVersion, value: input.version },
    ],
    attributesFirst: () => !patched(PATCH.oneStart),
    alone: { then: 'replace the pool after it ends' },
  });
  // Pre-flight, read-only: the pools, the provisioning and the versions judged before anything moves.
  const { bg: first, behind } = await run.preflight();
  run.started(first);
  try {
    const bg = behind ? await run.controlPlaneFirst(first) : first;
    // Green kubelets at the target are never above the control plane.
    if (!rollout.aborted() && compareVersions(parseVersion(input.version), parseVersion(bg.controlPlaneVersion)) > 0) {
      throw ApplicationFailure.nonRetryable(
        `green at ${input.version} would be above the control plane at ${bg.controlPlaneVersion}`,
        WORKFLOW_FAILURE.SkewViolation,
      );
    }
    const plan = run.planDrains(bg);
    await run.provisionGreen(bg);
    await run.cordonBlue(plan);
    await run.drainBlue(plan);
    await run.removalGate();
  } catch (err) {
    await run.failed(err as Error);
    await rollout.failed(failureReason(err));
    throw err;
  }
  if (rollout.aborted()) await run.rollBack();
  else await run.removeBlue();
  return rollout.ended();
}

/** One blue/green replacement: its status, the rollback rules and its steps on the rollout core. */
class BlueGreenRun {
  readonly rollout: Rollout<BlueGreenStatus>;
  readonly status: BlueGreenStatus;
  readonly policy: WithDefaults<BlueGreenPolicy>;
  /** Whether green machines were asked for (a failure names them, a rollback drains and deletes them). */
  provisioned = false;
  private readonly abortCommand: string;

  constructor(private readonly input: BlueGreenInput) {
    this.policy = withDefaults(input.policy);
    this.abortCommand = `skewless abort ${input.cluster} --workflow bluegreen`;
    const status: BlueGreenStatus = (this.status = newStatus(input, this.abortCommand));
    const memo = () => ({
      kind: 'bluegreen',
      from: input.from,
      to: input.to,
      version: input.version,
      step: status.step,
      phase: status.phase,
      paused: status.paused,
      progress:
        `${status.blue.nodes.filter((n) => status.nodes[n]?.phase === 'done').length}/${status.blue.nodes.length} blue nodes drained, ` +
        `${status.green.joined.length}/${status.green.nodes.length} green nodes joined`,
      blocked: Object.entries(status.nodes)
        .filter(([, n]) => n.phase === 'blocked')
        .map(([name]) => name),
      rollback: status.rollback.available,
    });
    const childId = (node: string) => nodeWorkflowId(this.rollout.owner, node);
    // Abort is the rollback: refused (noted) once the removal started, rather than half undoing a pool
    // that is being deleted.
    const controls = {
      abortRefused: (p: OperatorAction) => {
        const refused = this.rollbackRefusal();
        return refused ? `abort by ${p.by} refused: ${refused}` : undefined;
      },
      aborted: (p: OperatorAction, first: boolean) => this.requestRollback(p, 'abort', first),
    };
    this.rollout = new Rollout({ status, statusQuery: bluegreenStatusQuery, childId, memo, noun: 'blue/green run', controls });
  }

  /** Every rollout's handlers, and the rollback update: before the workflow's first await. */
  registerHandlers(): void {
    const { status } = this;
    this.rollout.registerHandlers();
    setHandler(
      rollbackUpdate,
      async (p) => {
        await this.requestRollback(p, 'rollback', this.rollout.aborted() === undefined);
        return status;
      },
      {
        validator: (p) => {
          if (!p.by) throw new Error('a rollback needs a "by"');
          const aborted = this.rollout.aborted();
          const refused = this.rollbackRefusal() ?? (aborted ? `a rollback is already under way (${aborted})` : undefined);
          if (refused) throw new Error(refused);
        },
      },
    );
  }

  private rollbackRefusal(): string | undefined {
    const { status, input } = this;
    if (status.removalStartedAt) return `${NO_ROLLBACK}: the removal of blue pool ${input.from} started at ${status.removalStartedAt}`;
    if (['done', 'rolled-back', 'failed'].includes(status.step)) return `the blue/green run has ended (${status.step})`;
    return undefined;
  }

  /** `first`: no abort was recorded before this one (the rollback starts now). */
  private async requestRollback(p: OperatorAction, via: 'abort' | 'rollback', first: boolean): Promise<void> {
    const { rollout } = this;
    const reason = `${via === 'abort' ? 'aborted' : 'rollback asked'} by ${byWhom(p)}`;
    rollout.note(`${reason}${first ? ' (before the removal: rolling back)' : ''}`);
    rollout.abort(reason);
    this.status.rollback.by ??= p.by;
    await rollout.abortBlockedChildren(p);
    rollout.updateMemo();
  }

  private setStep(step: BlueGreenStep, phase: UpgradePhase): void {
    this.status.step = step;
    this.rollout.setPhase(phase);
  }

  /** With the control plane behind, green is judged at its version for now, and again at the target once it is there. */
  async preflight(): Promise<{ bg: BlueGreenPlanFacts; behind: boolean }> {
    const { input, status } = this;
    const { cluster, version } = input;
    const inventory = await a.takeInventory({ cluster });
    if (patched(PATCH.flowNotifications)) this.rollout.notifier.sinks = inventory.notify ?? [];
    const cpFrom = applyRule(() => clusterVersion(inventory.skew));
    const behind = compareVersions(parseVersion(cpFrom), parseVersion(version)) < 0;
    status.controlPlane = { from: cpFrom };
    const bg = await this.planBlueGreen(behind ? cpFrom : version);
    const blueNames = bg.blue.map((b) => b.name);
    const notReady = inventory.nodes.filter((n) => blueNames.includes(n.name) && !n.ready).map((n) => n.name);
    if (notReady.length > 0) throw refuse(`blue node ${notReady.join(', ')} is NotReady: its drain would wait on pods that cannot move`);
    if (!behind) {
      const greenKubelets = bg.green.names.map((node) => ({ node, version }));
      const withGreen = { ...inventory.skew, kubelets: [...(inventory.skew.kubelets ?? []), ...greenKubelets] };
      const skew = applyRule(() => checkSkew(withGreen, { topology: 'kubeadm' }));
      if (!skew.compliant)
        throw refuse(
          `green kubelets at ${version} break the skew policy: ${skew.violations.map((v) => `${v.node}: ${v.rule}`).join('; ')}`,
          WORKFLOW_FAILURE.SkewViolation,
        );
    }
    return { bg, behind };
  }

  /** The run's first event, to the cluster's `notify:` sinks (read by preflight, behind PATCH.flowNotifications). */
  started(bg: BlueGreenPlanFacts): void {
    const { input, status } = this;
    this.rollout.notifier.emit(
      'run.started',
      'started',
      `blue/green of ${input.cluster} started: pool ${input.from} → ${input.to} at ${input.version} (${bg.blue.length} blue nodes)`,
      {
        flow: 'bluegreen',
        from: status.controlPlane?.from ?? null,
        to: input.version,
        hops: [],
        nodes: bg.blue.length,
        blue: input.from,
        green: input.to,
        greenNodes: bg.green.names.length,
      },
    );
  }

  private planBlueGreen(version: string): Promise<BlueGreenPlanFacts> {
    const { cluster, from, to, count } = this.input;
    return a.planBlueGreen({ cluster, from, to, version, ...(count === undefined ? {} : { count }) });
  }

  /** The upgrade `upgrade/<cluster>` as a child, control planes only; green is planned again at the target. */
  async controlPlaneFirst(bg: BlueGreenPlanFacts): Promise<BlueGreenPlanFacts> {
    const { input, status, rollout, policy } = this;
    const { cluster, version } = input;
    this.setStep('control-plane', 'control-plane');
    const id = upgradeWorkflowId(cluster);
    const cp = status.controlPlane as NonNullable<BlueGreenStatus['controlPlane']>;
    cp.upgrade = id;
    rollout.note(
      `the control plane is at ${cp.from}, below ${version}: ${id} moves it first, control planes only ` +
        `(skewless status ${cluster} --workflow upgrade); the workers keep their version`,
    );
    const result = await upgradeControlPlaneFirst({
      cluster,
      version,
      policy,
      verifySeconds: policy.verifySeconds,
      owner: rollout.owner,
      rolledBackBy: () => status.rollback.by,
      aborted: () => rollout.aborted(),
    });
    if (result.phase !== 'done') {
      const why = `the control-plane upgrade ${id} ended ${result.phase}: ${result.outcome ?? ''}`;
      rollout.note(why);
      rollout.abort(why);
    } else rollout.note(`control plane at ${version} (${id})`);
    return rollout.aborted() ? bg : await this.planBlueGreen(version);
  }

  /** The blue nodes' drains: canary first, then batches. */
  planDrains(bg: BlueGreenPlanFacts): RolloutPlan {
    const { status, policy, input, rollout } = this;
    status.blue.nodes = bg.blue.map((b) => b.name);
    status.green.nodes = bg.green.names;
    const plan = planWithinOpenChildren(
      (maxOpenChildren) =>
        applyRule(() =>
          planRollout(
            bg.blue.map((b) => ({ name: b.name, role: 'worker' as const })),
            { canary: policy.canary ?? 1, batchSize: policy.batchSize ?? 1, maxUnavailable: policy.batchSize ?? 1 },
            { requireControlPlane: false, maxOpenChildren },
          ),
        ),
      (made) => made,
    );
    const capped = cappedNote(plan, `batchSize ${policy.batchSize ?? 1}`);
    if (capped) rollout.note(capped);
    for (const b of bg.blue)
      status.nodes[b.name] = { phase: 'pending', stage: plan.stageLabels[b.name] as string, from: b.kubelet, version: b.kubelet };
    rollout.note(
      `blue pool ${input.from} (${status.blue.nodes.join(', ')}) → green pool ${input.to} (${bg.green.names.join(', ')}) at ${input.version} through ${bg.provider}; ` +
        `drains: ${plan.phases.map((p) => `${p.stage} ${p.nodes.join(',')}`).join('; ')}`,
    );
    return plan;
  }

  async provisionGreen(bg: BlueGreenPlanFacts): Promise<void> {
    const { rollout, input } = this;
    await rollout.unpaused();
    if (rollout.aborted()) return;
    this.setStep('provisioning', 'provisioning');
    this.provisioned = true;
    const { names, version, labels } = bg.green;
    const created = await a.createPoolMachines({ cluster: input.cluster, pool: input.to, names, version, labels });
    this.status.green.joined = created.joined;
    rollout.note(`green nodes ${created.joined.join(', ')} joined, Ready at ${input.version}`);
  }

  async cordonBlue(plan: RolloutPlan): Promise<void> {
    const { rollout, status } = this;
    const { cluster } = this.input;
    await rollout.unpaused();
    if (rollout.aborted()) return;
    this.setStep('cordoning', 'workers');
    await a.setStageLabels({ cluster, labels: plan.stageLabels, owner: rollout.owner });
    for (const node of status.blue.nodes) {
      const r = await a.cordonNode({ cluster, node, owner: rollout.owner });
      (status.nodes[node] as { phase: string }).phase = 'cordoned';
      if (!r.ownedByUs) rollout.note(`${node} was already cordoned by ${r.cordonedBy ?? 'someone else'}: their cordon stays theirs`);
    }
    rollout.note(`blue nodes cordoned: ${status.blue.nodes.join(', ')}`);
  }

  async drainBlue(plan: RolloutPlan): Promise<void> {
    const { policy, input } = this;
    await this.rollout.runPhases(plan.phases, {
      before: async () => {
        this.setStep('draining', 'workers');
        return 'go';
      },
      run: (node) => this.drainNode(node, input.from),
      hop: input.version,
      verifySeconds: policy.verifySeconds,
      canaryGate: { name: 'canary-bluegreen', approve: policy.approveAfterCanary ?? false, soakSeconds: policy.soakSeconds },
    });
  }

  async removalGate(): Promise<void> {
    const { rollout, status, input } = this;
    if (rollout.aborted()) return;
    status.step = 'removal-gate';
    const remove = status.blue.nodes.filter((n) => !status.skipped.includes(n));
    rollout.note(
      `gate ${REMOVAL_GATE}: approve to delete blue nodes ${remove.join(', ')} and their machines; ${NO_ROLLBACK} ` +
        `(until then ${this.abortCommand} rolls back): skewless approve ${input.cluster} --workflow bluegreen --gate ${REMOVAL_GATE}`,
    );
    await rollout.gate(REMOVAL_GATE, true);
    await rollout.unpaused();
  }

  /** Not rolled back by itself: the blue nodes this run cordoned go back into service; green stays, named. */
  async failed(err: Error): Promise<void> {
    const { rollout, status, input } = this;
    await rollout.compensate(status.blue.nodes);
    if (this.provisioned) rollout.note(`green nodes left in place: ${status.green.nodes.join(', ')} (pool ${input.to})`);
    status.rollback = { ...status.rollback, available: false, how: `the run failed: ${err.message}` };
    this.setStep('failed', 'failed');
  }

  /** The point of no return: from here on abort and rollback are refused. */
  async removeBlue(): Promise<void> {
    const { rollout, status, input } = this;
    const { cluster } = input;
    status.removalStartedAt = nowIso();
    status.rollback = {
      available: false,
      how: `${NO_ROLLBACK}: the removal of blue pool ${input.from} started at ${status.removalStartedAt}`,
    };
    this.setStep('removing', 'removing');
    const remove = status.blue.nodes.filter((n) => !status.skipped.includes(n));
    // A skipped node was not drained: it stays, back in service, in the blue pool.
    await rollout.handBack(status.skipped, (node) => `${node} (skipped, not drained) uncordoned: it stays in pool ${input.from}`);
    await a.clearStageLabels({ cluster, owner: rollout.owner });
    const deleted = remove.length ? await a.deletePoolMachines({ cluster, pool: input.from, names: remove }) : { deleted: [] };
    rollout.note(`blue nodes deleted, machines torn down: ${deleted.deleted.join(', ') || 'none'}`);
    this.setStep('done', 'done');
    status.outcome =
      `replaced pool ${input.from} (${remove.join(', ')}) by pool ${input.to} (${status.green.joined.join(', ')}) at ${input.version}` +
      `${status.skipped.length ? `; skipped, kept in ${input.from}: ${status.skipped.join(', ')}` : ''}`;
  }

  /** A blue node's (or, rolling back, a green node's) cordon and drain, as a node child: a blocked drain waits for the operator. */
  private drainNode(node: string, pool: string): Promise<NodeStepResult> {
    const { policy, input } = this;
    return this.rollout.runNodeStep(node, {
      step: 'drain',
      running: 'draining',
      staticSummary: `${node}: cordon and drain (pool ${pool})`,
      skippedNote: `skipped by the operator: not drained, stays in pool ${input.from} (uncordoned at the end, never deleted)`,
      countsForRun: pool === input.from,
      input: {
        role: 'worker',
        version: '',
        kubeletTimeoutSeconds: 300,
        ...nodeStepPolicy(policy),
      },
    });
  }

  /** Before the removal: blue back in service first (the pods leaving green need room), then green drained and deleted. */
  async rollBack(): Promise<void> {
    const { rollout, status, input } = this;
    this.setStep('rolling-back', 'compensating');
    const drained: string[] = [];
    const left: string[] = [];
    await CancellationScope.nonCancellable(async () => {
      await rollout.compensate(status.blue.nodes);
      rollout.setPhase('compensating');
      for (const node of this.provisioned ? status.green.nodes : []) {
        status.nodes[node] = { phase: 'pending', stage: 'green', version: input.version };
        const r = await this.drainNode(node, input.to);
        (r.outcome === 'done' ? drained : left).push(node);
        if (r.outcome !== 'done') rollout.note(`green node ${node} not drained (${r.outcome}): left cordoned, not deleted`);
      }
      if (drained.length) await this.deleteGreen(drained, left);
    });
    status.rollback = { ...status.rollback, available: false, how: 'this run has rolled back' };
    this.setStep('rolled-back', 'aborted');
    status.outcome =
      `rolled back (${rollout.aborted() ?? ''}): blue pool ${input.from} back in service (${status.blue.nodes.join(', ') || 'nothing cordoned'})` +
      `${drained.length ? `; green ${drained.join(', ')} drained and deleted` : left.length ? '' : '; no green node to remove'}` +
      `${left.length ? `; LEFT CORDONED in pool ${input.to} (not deleted): ${left.join(', ')}` : ''}`;
  }

  /** Best effort, like every compensation: a failure moves the drained nodes to `left`, and the run says so. */
  private async deleteGreen(drained: string[], left: string[]): Promise<void> {
    try {
      const d = await a.deletePoolMachines({ cluster: this.input.cluster, pool: this.input.to, names: drained });
      this.rollout.note(`green nodes deleted, machines torn down: ${d.deleted.join(', ') || 'none'}`);
    } catch (err) {
      left.push(...drained.splice(0));
      this.rollout.note(`deleting green ${left.join(', ')} failed: ${(err as Error).message}`);
    }
  }
}

function newStatus(input: BlueGreenInput, abortCommand: string): BlueGreenStatus {
  return {
    kind: 'bluegreen',
    cluster: input.cluster,
    step: 'preflight',
    phase: 'inventory',
    paused: false,
    version: input.version,
    nodes: {},
    gates: [],
    events: [],
    skipped: [],
    blue: { pool: input.from, nodes: [] },
    green: { pool: input.to, nodes: [], joined: [] },
    rollback: { available: true, how: `${abortCommand}: uncordon blue, drain and delete green (until the removal of blue starts)` },
  };
}
