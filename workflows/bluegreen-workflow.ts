import {
  ApplicationFailure,
  CancellationScope,
  allHandlersFinished,
  condition,
  executeChild,
  getExternalWorkflowHandle,
  patched,
  setHandler,
  upsertSearchAttributes,
  workflowInfo,
} from '@temporalio/workflow';
import {
  BLUEGREEN_POLICY_KEYS,
  checkSkew,
  withDefaults,
  clusterVersion,
  compareVersions,
  parseVersion,
  planRollout,
  type RolloutPlan,
} from '../rules/index.js';
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
import { drainResolutionSignal } from './node-messages.js';
import { nodeUpgradeWorkflow, type NodeUpgradeResult } from './node-upgrade-workflow.js';
import { rolloutControls } from './rollout-controls.js';
import { PATCH } from './patches.js';
import { applyRule, refuseBadPolicy } from './rule-failure.js';
import { SEARCH_ATTRIBUTES } from './search-attributes.js';
import { compensate } from './upgrade-ending.js';
import { abortSignal, type OperatorAction, type UpgradePhase } from './upgrade-messages.js';

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
  const { cluster, version } = input;
  const policy = withDefaults(input.policy);
  const owner = workflowInfo().workflowId;
  const { verifySeconds } = policy;
  const abortCommand = `skewless abort ${cluster} --workflow bluegreen`;
  const status: BlueGreenStatus = {
    kind: 'bluegreen',
    cluster,
    step: 'preflight',
    phase: 'inventory',
    paused: false,
    version,
    nodes: {},
    gates: [],
    events: [],
    skipped: [],
    blue: { pool: input.from, nodes: [] },
    green: { pool: input.to, nodes: [], joined: [] },
    rollback: { available: true, how: `${abortCommand}: uncordon blue, drain and delete green (until the removal of blue starts)` },
  };
  const memo = () => ({
    kind: 'bluegreen',
    from: input.from,
    to: input.to,
    version,
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
  const childId = (node: string) => `${owner}/${node}`;
  const c = rolloutControls({ cluster, status, statusQuery: bluegreenStatusQuery, childId, memo, noun: 'blue/green run' });
  const { note, setPhase } = c;
  /** Between steps a pause holds the run (a window of drains honours it by itself); an abort ends the wait. */
  const unpaused = () => condition(() => !status.paused || c.aborted() !== undefined);
  const setStep = (step: BlueGreenStep, phase: UpgradePhase) => {
    status.step = step;
    setPhase(phase);
  };

  // Abort is the rollback; it replaces the controls' own abort handler, so that after the removal
  // started it is refused (noted) rather than half undoing a pool that is being deleted.
  const rollbackRefusal = (): string | undefined => {
    if (status.removalStartedAt) return `${NO_ROLLBACK}: the removal of blue pool ${input.from} started at ${status.removalStartedAt}`;
    if (['done', 'rolled-back', 'failed'].includes(status.step)) return `the blue/green run has ended (${status.step})`;
    return undefined;
  };
  const requestRollback = async (p: OperatorAction, via: 'abort' | 'rollback') => {
    const reason = `${via === 'abort' ? 'aborted' : 'rollback asked'} by ${p.by}${p.reason ? `: ${p.reason}` : ''}`;
    note(`${reason}${c.aborted() ? '' : ' (before the removal: rolling back)'}`);
    c.abort(reason);
    status.rollback.by ??= p.by;
    // A node waiting on a blocked drain would wait forever: it is told to abort too.
    for (const [node, state] of Object.entries(status.nodes)) {
      if (state.phase === 'blocked') {
        await getExternalWorkflowHandle(childId(node)).signal(drainResolutionSignal, {
          action: 'abort',
          by: p.by,
          ...(p.reason ? { comment: p.reason } : {}),
        });
      }
    }
    c.updateMemo();
  };
  setHandler(abortSignal, async (p) => {
    const refused = rollbackRefusal();
    if (refused) note(`abort by ${p.by} refused: ${refused}`);
    else await requestRollback(p, 'abort');
  });
  setHandler(
    rollbackUpdate,
    async (p) => {
      await requestRollback(p, 'rollback');
      return status;
    },
    {
      validator: (p) => {
        if (!p.by) throw new Error('a rollback needs a "by"');
        const refused = rollbackRefusal() ?? (c.aborted() ? `a rollback is already under way (${c.aborted()})` : undefined);
        if (refused) throw new Error(refused);
      },
    },
  );
  upsertSearchAttributes([
    { key: SEARCH_ATTRIBUTES.cluster, value: cluster },
    { key: SEARCH_ATTRIBUTES.targetVersion, value: version },
  ]);
  c.updateMemo();
  if (patched(PATCH.onePolicy)) refuseBadPolicy(input.policy, BLUEGREEN_POLICY_KEYS);

  // Pre-flight, read-only: the pools, the provisioning and the versions judged before anything moves.
  // One rollout of a cluster at a time (its own control-plane upgrade, later, is its child: not another).
  const other = await a.findRunningRollout({ cluster, ignore: [owner] });
  if (other.running)
    throw refuse(
      `${other.workflowId ?? 'another rollout'} is running (since ${other.startedAt ?? '?'}): replace the pool after it ends`,
      WORKFLOW_FAILURE.RolloutRunning,
    );
  const inventory = await a.takeInventory({ cluster });
  const cpFrom = applyRule(() => clusterVersion(inventory.skew));
  const behind = compareVersions(parseVersion(cpFrom), parseVersion(version)) < 0;
  status.controlPlane = { from: cpFrom };
  // With the control plane behind, green is judged at the control plane's version for now (the pools,
  // the provisioning, an empty green pool), and again at the target once the control plane is there.
  let bg = await a.planBlueGreen({
    cluster,
    from: input.from,
    to: input.to,
    version: behind ? cpFrom : version,
    ...(input.count === undefined ? {} : { count: input.count }),
  });
  const blueNames = bg.blue.map((b) => b.name);
  const notReady = inventory.nodes.filter((n) => blueNames.includes(n.name) && !n.ready).map((n) => n.name);
  if (notReady.length > 0) throw refuse(`blue node ${notReady.join(', ')} is NotReady: its drain would wait on pods that cannot move`);
  if (!behind) {
    const withGreen = {
      ...inventory.skew,
      kubelets: [...(inventory.skew.kubelets ?? []), ...bg.green.names.map((node) => ({ node, version }))],
    };
    const skew = applyRule(() => checkSkew(withGreen, { topology: 'kubeadm' }));
    if (!skew.compliant)
      throw refuse(
        `green kubelets at ${version} break the skew policy: ${skew.violations.map((v) => `${v.node}: ${v.rule}`).join('; ')}`,
        WORKFLOW_FAILURE.SkewViolation,
      );
  }

  let rollout: RolloutPlan | undefined;
  let provisioned = false;
  try {
    if (behind) {
      setStep('control-plane', 'control-plane');
      const id = `upgrade/${cluster}`;
      status.controlPlane.upgrade = id;
      note(
        `the control plane is at ${cpFrom}, below ${version}: ${id} moves it first, control planes only ` +
          `(skewless status ${cluster} --workflow upgrade); the workers keep their version`,
      );
      const result = await upgradeControlPlaneFirst({
        cluster,
        version,
        policy,
        verifySeconds,
        owner,
        rolledBackBy: () => status.rollback.by,
        aborted: c.aborted,
      });
      if (result.phase !== 'done') {
        const why = `the control-plane upgrade ${id} ended ${result.phase}: ${result.outcome ?? ''}`;
        note(why);
        c.abort(why);
      } else note(`control plane at ${version} (${id})`);
      if (!c.aborted()) {
        bg = await a.planBlueGreen({
          cluster,
          from: input.from,
          to: input.to,
          version,
          ...(input.count === undefined ? {} : { count: input.count }),
        });
      }
    }
    // Green kubelets at the target are never above the control plane.
    if (!c.aborted() && compareVersions(parseVersion(version), parseVersion(bg.controlPlaneVersion)) > 0) {
      throw ApplicationFailure.nonRetryable(
        `green at ${version} would be above the control plane at ${bg.controlPlaneVersion}`,
        WORKFLOW_FAILURE.SkewViolation,
      );
    }
    status.blue.nodes = bg.blue.map((b) => b.name);
    status.green.nodes = bg.green.names;
    rollout = applyRule(() =>
      planRollout(
        bg.blue.map((b) => ({ name: b.name, role: 'worker' as const })),
        { canary: policy.canary ?? 1, batchSize: policy.batchSize ?? 1, maxUnavailable: policy.batchSize ?? 1 },
        { requireControlPlane: false },
      ),
    );
    for (const b of bg.blue)
      status.nodes[b.name] = { phase: 'pending', stage: rollout.stageLabels[b.name] as string, from: b.kubelet, version: b.kubelet };
    note(
      `blue pool ${input.from} (${status.blue.nodes.join(', ')}) → green pool ${input.to} (${bg.green.names.join(', ')}) at ${version} through ${bg.provider}; ` +
        `drains: ${rollout.phases.map((p) => `${p.stage} ${p.nodes.join(',')}`).join('; ')}`,
    );

    await unpaused();
    if (!c.aborted()) {
      setStep('provisioning', 'provisioning');
      provisioned = true;
      const created = await a.createPoolMachines({
        cluster,
        pool: input.to,
        names: bg.green.names,
        version: bg.green.version,
        labels: bg.green.labels,
      });
      status.green.joined = created.joined;
      note(`green nodes ${created.joined.join(', ')} joined, Ready at ${version}`);
    }
    await unpaused();
    if (!c.aborted()) {
      setStep('cordoning', 'workers');
      await a.setStageLabels({ cluster, labels: rollout.stageLabels, owner });
      for (const node of status.blue.nodes) {
        const r = await a.cordonNode({ cluster, node, owner });
        (status.nodes[node] as { phase: string }).phase = 'cordoned';
        if (!r.ownedByUs) note(`${node} was already cordoned by ${r.cordonedBy ?? 'someone else'}: their cordon stays theirs`);
      }
      note(`blue nodes cordoned: ${status.blue.nodes.join(', ')}`);
    }
    const drainBlue = (node: string) => drainNode(node, input.from);
    for (const phase of rollout.phases) {
      if (c.aborted()) break;
      setStep('draining', 'workers');
      await c.window(phase.nodes, phase.maxUnavailable, drainBlue);
      if (c.aborted()) break;
      await c.verifyWorkloads(phase.stage, version, verifySeconds);
      if (c.aborted()) break;
      if (phase.kind === 'canary') await c.gate('canary-bluegreen', policy.approveAfterCanary ?? false, policy.soakSeconds);
    }
    if (!c.aborted()) {
      status.step = 'removal-gate';
      const remove = status.blue.nodes.filter((n) => !status.skipped.includes(n));
      note(
        `gate ${REMOVAL_GATE}: approve to delete blue nodes ${remove.join(', ')} and their machines; ${NO_ROLLBACK} ` +
          `(until then ${abortCommand} rolls back): skewless approve ${cluster} --workflow bluegreen --gate ${REMOVAL_GATE}`,
      );
      await c.gate(REMOVAL_GATE, true);
      await unpaused();
    }
  } catch (err) {
    // Not rolled back by itself: the blue nodes this run cordoned go back into service; green stays, named.
    await compensate(cluster, owner, status.blue.nodes, status);
    if (provisioned) note(`green nodes left in place: ${status.green.nodes.join(', ')} (pool ${input.to})`);
    status.rollback = { ...status.rollback, available: false, how: `the run failed: ${(err as Error).message}` };
    setStep('failed', 'failed');
    throw err;
  }

  if (c.aborted()) return await rollBack();
  // The point of no return: from here on abort and rollback are refused.
  status.removalStartedAt = nowIso();
  status.rollback = {
    available: false,
    how: `${NO_ROLLBACK}: the removal of blue pool ${input.from} started at ${status.removalStartedAt}`,
  };
  setStep('removing', 'removing');
  const remove = status.blue.nodes.filter((n) => !status.skipped.includes(n));
  // A skipped node was not drained: it stays, back in service, in the blue pool.
  for (const node of status.skipped) {
    const r = await a.uncordonNode({ cluster, node, owner });
    if (r.changed) note(`${node} (skipped, not drained) uncordoned: it stays in pool ${input.from}`);
  }
  await a.clearStageLabels({ cluster, owner });
  const deleted = remove.length ? await a.deletePoolMachines({ cluster, pool: input.from, names: remove }) : { deleted: [] };
  note(`blue nodes deleted, machines torn down: ${deleted.deleted.join(', ') || 'none'}`);
  setStep('done', 'done');
  status.outcome =
    `replaced pool ${input.from} (${remove.join(', ')}) by pool ${input.to} (${status.green.joined.join(', ')}) at ${version}` +
    `${status.skipped.length ? `; skipped, kept in ${input.from}: ${status.skipped.join(', ')}` : ''}`;
  await condition(allHandlersFinished);
  return status;

  /** A blue node's (or, rolling back, a green node's) cordon and drain, as a node child: a blocked drain waits for the operator. */
  async function drainNode(node: string, pool: string): Promise<NodeUpgradeResult> {
    const state = (status.nodes[node] ??= { phase: 'pending' });
    state.phase = 'draining';
    state.startedAt ??= nowIso();
    const result = await executeChild(nodeUpgradeWorkflow, {
      workflowId: childId(node),
      staticSummary: `${node}: cordon and drain (pool ${pool})`,
      args: [
        {
          cluster,
          node,
          role: 'worker',
          version: '',
          step: 'drain',
          owner,
          kubeletTimeoutSeconds: 300,
          verifySeconds,
          ...(policy.drainTimeoutSeconds ? { drainTimeoutSeconds: policy.drainTimeoutSeconds } : {}),
          ...(policy.hostRetrySeconds === undefined ? {} : { hostRetrySeconds: policy.hostRetrySeconds }),
        },
      ],
    });
    state.phase = result.outcome;
    state.finishedAt = nowIso();
    if (result.drainSeconds !== undefined) state.drainSeconds = (state.drainSeconds ?? 0) + result.drainSeconds;
    delete state.blocked;
    if (pool === input.from && result.outcome === 'aborted') c.abort(`aborted at node ${node}`);
    if (pool === input.from && result.outcome === 'skipped') {
      status.skipped.push(node);
      note(`${node} skipped by the operator: not drained, stays in pool ${input.from} (uncordoned at the end, never deleted)`);
    }
    return result;
  }

  /** Before the removal: blue back in service first (the pods leaving green need room), then green drained and deleted. */
  async function rollBack(): Promise<BlueGreenStatus> {
    setStep('rolling-back', 'compensating');
    const drained: string[] = [];
    const left: string[] = [];
    await CancellationScope.nonCancellable(async () => {
      await compensate(cluster, owner, status.blue.nodes, status);
      setPhase('compensating');
      const green = provisioned ? status.green.nodes : [];
      for (const node of green) {
        status.nodes[node] = { phase: 'pending', stage: 'green', version };
        const r = await drainNode(node, input.to);
        (r.outcome === 'done' ? drained : left).push(node);
        if (r.outcome !== 'done') note(`green node ${node} not drained (${r.outcome}): left cordoned, not deleted`);
      }
      if (drained.length) {
        try {
          const d = await a.deletePoolMachines({ cluster, pool: input.to, names: drained });
          note(`green nodes deleted, machines torn down: ${d.deleted.join(', ') || 'none'}`);
        } catch (err) {
          // Best effort, like every compensation: the run ends rolled back and says what is left.
          left.push(...drained.splice(0));
          note(`deleting green ${left.join(', ')} failed: ${(err as Error).message}`);
        }
      }
    });
    status.rollback = { ...status.rollback, available: false, how: 'this run has rolled back' };
    setStep('rolled-back', 'aborted');
    status.outcome =
      `rolled back (${c.aborted() ?? ''}): blue pool ${input.from} back in service (${status.blue.nodes.join(', ') || 'nothing cordoned'})` +
      `${drained.length ? `; green ${drained.join(', ')} drained and deleted` : left.length ? '' : '; no green node to remove'}` +
      `${left.length ? `; LEFT CORDONED in pool ${input.to} (not deleted): ${left.join(', ')}` : ''}`;
    await condition(allHandlersFinished);
    return status;
  }
}
