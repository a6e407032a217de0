import type { Client, WorkflowHandle } from '@temporalio/client';
import { isClientError } from '../temporal-sdk.js';
import { clusterUpgradeWorkflow, type UpgradePolicy } from '../../workflows/cluster-upgrade-workflow.js';
import { approveUpdate, resolveDrainUpdate, statusQuery, type UpgradeStatus } from '../../workflows/rollout-messages.js';
import { summarizeWorkflowFailure } from '../workflow-failure.js';
import { upgradeWorkflowId } from '../../contracts/workflow-ids.js';
import { pollUntil } from '../../tooling/poll-until.js';

/**
 * The rehearsal's operator, on the twin only: approves every gate as soon as it waits, and for a node
 * that waits on it records what blocked it, then answers so that the rollout goes on:
 * - a drain blocked by a PodDisruptionBudget, or refused (a bare pod): `skip`. The node stays at its
 *   old version on the twin, as it would in production until someone acts; the report says so. It
 *   does not relax the budget nor delete the pod: that would be the operator's decision to rehearse.
 * - a failed step (the twin's hosts have no faults, so this is a real finding) or a halted rollout
 *   (workloads unhealthy after a phase): `abort`, and the rehearsal reports the upgrade failed.
 */

export const REHEARSAL_OPERATOR = 'skewless-rehearse';

export interface RecordedBlock {
  /** The twin's node name. */
  node: string;
  kind: 'DrainBlocked' | 'DrainRefused' | 'StepFailed' | 'Halted';
  message: string;
  /** `namespace/name` of the pods in the way, and of the PDBs that refused their eviction (twin names). */
  pods: string[];
  pdbs: string[];
  /** What the operator answered. */
  action: 'skip' | 'abort';
  /** Twin workflow time (ISO) the block was seen. */
  at: string;
  hop?: string;
}

export interface RehearsalOutcome {
  status: UpgradeStatus;
  /** Set when the twin's upgrade did not end `done`: its failure, in one line. */
  failure?: string;
  blocks: RecordedBlock[];
  approvals: string[];
  workflowId: string;
  startedAt: number;
  endedAt: number;
}

export async function rehearseUpgrade(
  client: Client,
  taskQueue: string,
  input: { cluster: string; to: string; policy: UpgradePolicy },
  o: { signal: AbortSignal; say: (line: string) => void },
): Promise<RehearsalOutcome> {
  const workflowId = upgradeWorkflowId(input.cluster);
  const startedAt = Date.now();
  const handle = await client.workflow.start(clusterUpgradeWorkflow, {
    taskQueue,
    workflowId,
    args: [input],
    workflowExecutionTimeout: '24h',
  });
  const operator = new AutoOperator(handle, o.say);
  let done = false;
  const result = handle.result().finally(() => (done = true));
  result.catch(() => undefined);

  /** One look at the run: every gate approved, every blocked node and halt answered once. */
  const answerWhatWaits = async (): Promise<boolean> => {
    const s = await handle.query(statusQuery).catch(() => undefined);
    if (!s) return done;
    await operator.approveGates(s);
    await operator.answerBlocks(s);
    await operator.answerHalt(s);
    return done;
  };
  await pollUntil(
    answerWhatWaits,
    (ended) => ended,
    () => undefined,
    { timeoutMs: Infinity, intervalMs: 500, signal: o.signal },
  );

  let status: UpgradeStatus;
  let failure: string | undefined;
  try {
    status = await result;
    if (status.phase !== 'done') failure = status.outcome ?? status.phase;
  } catch (err) {
    failure = isClientError(err, 'WorkflowFailedError') ? summarizeWorkflowFailure(err).message : (err as Error).message;
    status = await handle.query(statusQuery);
  }
  const { blocks, approvals } = operator;
  return { status, ...(failure ? { failure } : {}), blocks, approvals, workflowId, startedAt, endedAt: Date.now() };
}

/** The rehearsal's operator: approves every gate, skips a blocked drain, aborts a failed step or a halt, each once, and records it. */
class AutoOperator {
  readonly blocks: RecordedBlock[] = [];
  readonly approvals: string[] = [];
  private readonly answered = new Set<string>();

  constructor(
    private readonly handle: WorkflowHandle,
    private readonly say: (line: string) => void,
  ) {}

  async approveGates(s: UpgradeStatus): Promise<void> {
    for (const g of s.gates) {
      if (g.approvedBy || g.opensAt || this.answered.has(`gate ${g.name}`)) continue;
      this.answered.add(`gate ${g.name}`);
      await this.handle
        .executeUpdate(approveUpdate, { args: [{ gate: g.name, by: REHEARSAL_OPERATOR, comment: 'rehearsal: approved automatically' }] })
        .then(() => {
          this.approvals.push(g.name);
          this.say(`approved gate ${g.name}`);
        })
        .catch(() => this.answered.delete(`gate ${g.name}`));
    }
  }

  async answerBlocks(s: UpgradeStatus): Promise<void> {
    for (const [node, n] of Object.entries(s.nodes)) {
      if (n.phase !== 'blocked' || !n.blocked) continue;
      // Skip and abort end the node's part in the run: one answer per node and hop.
      const key = `node ${node} ${s.hop ?? ''}`;
      if (this.answered.has(key)) continue;
      this.answered.add(key);
      const b = n.blocked;
      const action = b.kind === 'StepFailed' ? 'abort' : 'skip';
      const pods = b.pods.map((p) => `${p.namespace}/${p.name}`);
      const pdbs = [...new Set(b.pods.flatMap((p) => (p.pdbs ?? []).map((x) => `${p.namespace}/${x}`)))];
      this.blocks.push({
        node,
        kind: b.kind,
        message: b.message,
        pods,
        pdbs,
        action,
        at: new Date().toISOString(),
        ...(s.hop ? { hop: s.hop } : {}),
      });
      this.say(`${node}: ${b.kind} (${b.message}); answering ${action}`);
      await this.handle
        .executeUpdate(resolveDrainUpdate, {
          args: [{ node, action, by: REHEARSAL_OPERATOR, comment: 'rehearsal: recorded, the rollout goes on' }],
        })
        .catch((err: Error) => this.say(`could not resolve ${node}: ${err.message}`));
    }
  }

  async answerHalt(s: UpgradeStatus): Promise<void> {
    if (!s.halted || this.answered.has(`halt ${s.halted.after} ${s.halted.hop}`)) return;
    this.answered.add(`halt ${s.halted.after} ${s.halted.hop}`);
    this.blocks.push({
      node: '',
      kind: 'Halted',
      message: `${s.halted.message}: ${s.halted.workloads.join('; ')}`,
      pods: [],
      pdbs: [],
      action: 'abort',
      at: new Date().toISOString(),
      hop: s.halted.hop,
    });
    await this.handle
      .executeUpdate(resolveDrainUpdate, {
        args: [{ action: 'abort', by: REHEARSAL_OPERATOR, comment: 'rehearsal: workloads unhealthy' }],
      })
      .catch(() => undefined);
  }
}
