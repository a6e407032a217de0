import { rolloutKindOfWorkflowId } from '../contracts/workflow-ids.js';
import type { NodeBlock } from './node-messages.js';
import type { NotificationEvent } from '../contracts/notification-event.js';
import type { HookPoint } from '../rules/index.js';
import type { Notifier } from './notifier.js';
import type { HaltState } from './rollout-messages.js';

/**
 * What a `run.waiting` event says (contracts/notification-event.ts): what the run waits for, and the
 * exact `skewless` command that answers it (the first of `details.commands`, every answer offered).
 */
export interface WaitingFacts {
  gate?: string;
  node?: string;
  block?: NodeBlock;
  halt?: HaltState;
}

export function waitingEvent(
  kind: 'gate' | 'node' | 'halt',
  facts: WaitingFacts,
  cluster: string,
  owner: string,
): { summary: string; details: Record<string, unknown>; command: string } {
  const rollout = rolloutKindOfWorkflowId(owner) ?? 'upgrade';
  const workflow = rollout === 'upgrade' ? '' : ` --workflow ${rollout}`;
  if (kind === 'gate') {
    const command = `skewless approve ${cluster}${workflow} --gate ${facts.gate}`;
    return { summary: `${cluster} waits at gate ${facts.gate}: ${command}`, details: { waitingFor: 'gate', gate: facts.gate }, command };
  }
  if (kind === 'halt') {
    const h = facts.halt as HaltState;
    const commands = h.actions.map((action) => `skewless resolve ${cluster}${workflow} --action ${action}`);
    return {
      summary: `${cluster} halted after ${h.after}${h.hop ? ` (${h.hop})` : ''}: ${h.message}`,
      details: { waitingFor: 'halt', after: h.after, hop: h.hop, step: h.step, reason: h.message, workloads: h.workloads, commands },
      command: commands[0] as string,
    };
  }
  const node = facts.node as string;
  const b = facts.block as NodeBlock;
  const actions = b.kind === 'StepFailed' ? b.actions : (['retry', 'skip', 'force', 'abort'] as const);
  const pods = b.pods.map((p) => `${p.namespace}/${p.name}`);
  const commands = actions.map(
    (action) =>
      `skewless resolve ${cluster}${workflow} --node ${node} --action ${action}${action === 'force' ? pods.map((p) => ` --pod ${p}`).join('') : ''}`,
  );
  const why = b.kind === 'StepFailed' ? `${b.summary} failed (${b.failure}): ${b.message}` : b.message;
  return {
    summary: `${cluster}: ${node} waits for the operator: ${why}`,
    details: {
      waitingFor: 'node',
      node,
      block: b.kind,
      reason: why,
      pods: b.pods.map((p) => ({ namespace: p.namespace, name: p.name, pdbs: p.pdbs ?? [] })),
      pdbs: [...new Set(b.pods.flatMap((p) => p.pdbs ?? []))],
      commands,
    },
    command: commands[0] as string,
  };
}

/** Why a run failed, in the words of the failure at the bottom of its chain (not "Activity task failed"). */
export function failureReason(err: unknown): string {
  let e = err as { message?: string; cause?: unknown } | undefined;
  while (e?.cause) e = e.cause as typeof e;
  return e?.message ?? String(err);
}

/** The event document a change hook receives at `point` (kind `hook`): the same shape as a sink's. */
export function hookEvent(
  r: { notifier: Notifier; cluster: string },
  point: HookPoint,
  where: { hop?: string; node?: string },
): NotificationEvent {
  const at = [point, where.hop, where.node].filter(Boolean).join(' ');
  return r.notifier.eventOf('hook', `hook/${[point, where.hop, where.node].filter(Boolean).join('/')}`, `${r.cluster}: ${at}`, {
    point,
    ...(where.hop ? { hop: where.hop } : {}),
    ...(where.node ? { node: where.node } : {}),
  });
}
