import {
  condition,
  getExternalWorkflowHandle,
  setHandler,
  sleep,
  upsertMemo,
  upsertSearchAttributes,
  type QueryDefinition,
} from '@temporalio/workflow';
import { activities as a } from './activities-proxy.js';
import { handleApprovals } from './approvals.js';
import { haltOf } from './halt.js';
import { recordGateWait, setBlockedNodes } from './metrics.js';
import { drainResolutionSignal } from './node-messages.js';
import { SEARCH_ATTRIBUTES } from './search-attributes.js';
import {
  abortSignal,
  nodeBlockedSignal,
  pauseSignal,
  resolveDrainUpdate,
  resumeSignal,
  type GateState,
  type HaltResolution,
  type HaltState,
  type NodeState,
  type RolloutStatus,
  type UpgradePhase,
} from './upgrade-messages.js';

/**
 * The operator's controls over a rollout of nodes, shared by every workflow that moves nodes in
 * phases through per-node child workflows (the cluster upgrade, OS maintenance): the status query,
 * pause/resume/abort, the children's nodeBlocked signal, approve and its gates, resolveDrain (a
 * blocked node, relayed to its child, or a halted rollout), the window that keeps at most N nodes
 * in flight, the workload check that halts, and the phase (search attribute and memo).
 *
 * Registers its handlers when created: call it before the workflow's first await, so signals that
 * arrived with the start are delivered to them.
 */
export interface RolloutControlsOptions<S extends RolloutStatus> {
  cluster: string;
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
}

export interface RolloutControls {
  note: (text: string) => void;
  /** Why the run stops (abort signal, an abort resolution, a child aborted), or undefined. */
  aborted: () => string | undefined;
  /** Records an abort unless one is recorded already. */
  abort: (reason: string) => void;
  setPhase: (phase: UpgradePhase) => void;
  updateMemo: () => void;
  /** An approval gate (needsApproval) or a soak; returns at once when neither is asked. */
  gate: (name: string, needsApproval: boolean, soakSeconds?: number) => Promise<void>;
  /** Whether a node waits on a failed step (no other node starts then). */
  stepBlocked: () => boolean;
  /**
   * Runs `run` for each node with at most `width` in flight, never starting one while paused,
   * aborted or while a node waits on a failed step.
   */
  window: (nodes: string[], width: number, run: (node: string) => Promise<unknown>) => Promise<void>;
  /** Checks the workloads after a phase; a failed check halts until the operator retries or aborts. */
  verifyWorkloads: (after: string, hop: string, verifySeconds: number) => Promise<void>;
}

export function rolloutControls<S extends RolloutStatus>(options: RolloutControlsOptions<S>): RolloutControls {
  const { cluster, status, childId, noun } = options;
  const blockedChanged = () => options.onBlockedChange?.();
  const note = (text: string) => status.events.push(text);
  let aborted: string | undefined;
  /** The operator's answer to a halted rollout (status.halted). */
  let haltAnswer: HaltResolution | undefined;
  const updateMemo = () => upsertMemo(options.memo());

  setHandler(options.statusQuery, () => status);
  setHandler(pauseSignal, (p) => {
    status.paused = true;
    note(`paused by ${p.by}${p.reason ? `: ${p.reason}` : ''}`);
    updateMemo();
  });
  setHandler(resumeSignal, (p) => {
    status.paused = false;
    note(`resumed by ${p.by}`);
    updateMemo();
  });
  setHandler(abortSignal, async (p) => {
    aborted = `aborted by ${p.by}${p.reason ? `: ${p.reason}` : ''}`;
    note(aborted);
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
  });
  setHandler(nodeBlockedSignal, ({ node, block, phase }) => {
    const state = (status.nodes[node] ??= { phase: 'pending' });
    if (block) {
      Object.assign(state, { phase: 'blocked', blocked: block });
      if (block.kind === 'StepFailed')
        note(`${node} blocked: ${block.summary} failed (${block.failure}, ${block.gaveUp}): ${block.message}`);
    } else Object.assign(state, { phase: phase ?? 'draining', blocked: undefined });
    updateMemo();
    setBlockedNodes(cluster, status.nodes);
    blockedChanged();
  });
  handleApprovals(status.gates, note);
  setHandler(
    resolveDrainUpdate,
    async (r) => {
      const comment = r.comment ? ` (${r.comment})` : '';
      if (r.node === undefined) {
        // A halted rollout: the loop after the phase checks again, or aborts.
        const halt = status.halted as HaltState;
        note(`workload check after ${halt.after} resolved by ${r.by}: ${r.action}${comment}`);
        haltAnswer = r;
        return halt;
      }
      const block = status.nodes[r.node]?.blocked;
      const what = block?.kind === 'StepFailed' ? `${block.step} of ${r.node}` : `drain of ${r.node}`;
      note(`${what} resolved by ${r.by}: ${r.action}${r.action === 'force' ? ` ${r.pods.join(',')}` : ''}${comment}`);
      const { node, ...resolution } = r;
      await getExternalWorkflowHandle(childId(node)).signal(drainResolutionSignal, resolution);
      return status.nodes[node] as NodeState;
    },
    {
      validator: (r) => {
        if (!['retry', 'skip', 'force', 'abort'].includes(r.action)) throw new Error(`unknown action ${String(r.action)}`);
        if (r.node === undefined) {
          if (!status.halted) throw new Error(`the ${noun} is not halted: name the blocked node`);
          if (!status.halted.actions.includes(r.action)) throw new Error(`a halted rollout is retried or aborted, not ${r.action}`);
          return;
        }
        if (!status.nodes[r.node]) throw new Error(`no node ${r.node} in this ${noun}`);
        const block = status.nodes[r.node]?.blocked;
        if (status.nodes[r.node]?.phase !== 'blocked' || !block) throw new Error(`node ${r.node} is not blocked`);
        if (block.kind === 'StepFailed' && !block.actions.includes(r.action)) {
          throw new Error(
            r.action === 'force'
              ? `force is for blocked drains; ${r.node} is blocked on a failed step (${block.step}): retry or abort`
              : `skip is not offered once ${r.node} has started to ${noun === 'upgrade' ? 'move to the new version' : 'change'} (${block.step} failed): retry or abort`,
          );
        }
        if (r.action === 'force') refuseForeignPods(r.node, r.pods, block.pods);
      },
    },
  );

  const setPhase = (phase: UpgradePhase) => {
    status.phase = phase;
    upsertSearchAttributes([{ key: SEARCH_ATTRIBUTES.phase, value: phase }]);
    updateMemo();
  };
  const gate = async (name: string, needsApproval: boolean, soakSeconds = 0) => {
    if (!needsApproval && soakSeconds <= 0) return;
    const g: GateState = { name };
    status.gates.push(g);
    setPhase('gate');
    const since = Date.now();
    if (needsApproval) await condition(() => g.approvedBy !== undefined || aborted !== undefined);
    else {
      g.opensAt = new Date(Date.now() + soakSeconds * 1000).toISOString();
      note(`soak ${soakSeconds} s after ${name}`);
      await Promise.race([sleep(soakSeconds * 1000), condition(() => aborted !== undefined)]);
      g.approvedBy = 'soak';
    }
    recordGateWait(cluster, name, needsApproval ? 'approval' : 'soak', (Date.now() - since) / 1000);
  };
  /** A node waiting on a failed step: something is wrong with hosts or nodes, so no other node starts. */
  const stepBlocked = () => Object.values(status.nodes).some((n) => n.phase === 'blocked' && n.blocked?.kind === 'StepFailed');
  /**
   * (A drain blocked by a PDB holds only its own slot: its node is cordoned and untouched, and the
   * next node's drain asks the same PDB, which protects itself.)
   */
  const window = async (nodes: string[], width: number, run: (node: string) => Promise<unknown>) => {
    let inFlight = 0;
    const running: Promise<unknown>[] = [];
    for (const node of nodes) {
      await condition(() => aborted !== undefined || (!status.paused && inFlight < width && !stepBlocked()));
      if (aborted) break;
      inFlight++;
      running.push(run(node).finally(() => inFlight--));
    }
    await Promise.all(running);
  };
  /**
   * After a phase of nodes, "Ready is not working" until the workloads say so: a failed check
   * halts the rollout (status.halted names the workloads) until the operator retries it or aborts.
   */
  const verifyWorkloads = async (after: string, hop: string, verifySeconds: number) => {
    for (;;) {
      try {
        await a.checkWorkloads({ cluster, waitSeconds: verifySeconds, require: true });
        return;
      } catch (err) {
        const halt = haltOf(err, after, hop);
        if (!halt) throw err;
        status.halted = halt;
        haltAnswer = undefined;
        note(`halted after ${after}: ${halt.message}`);
        upsertMemo({ halted: after });
        blockedChanged();
        await condition(() => haltAnswer !== undefined || aborted !== undefined);
        delete status.halted;
        upsertMemo({ halted: null });
        blockedChanged();
        const answer = haltAnswer as HaltResolution | undefined;
        if (answer?.action === 'abort') aborted ??= `aborted by ${answer.by}${answer.comment ? `: ${answer.comment}` : ''}`;
        if (aborted) return;
      }
    }
  };

  return {
    note,
    aborted: () => aborted,
    abort: (reason) => {
      aborted ??= reason;
    },
    setPhase,
    updateMemo,
    gate,
    stepBlocked,
    window,
    verifyWorkloads,
  };
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
