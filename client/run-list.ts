import type { Client } from '@temporalio/client';
import { UsageError } from './cli-support.js';

/**
 * Every execution Temporal still holds under one workflow id (`upgrade/lab` is reused by each upgrade
 * of lab), oldest first: a run and the runs it continued as new form one execution. Read from
 * visibility, so `history` can reach an aborted run after a later refused or finishing one.
 */
export interface Execution {
  /** The run the operator started (its first run); `lastRunId` the one that ended it or runs now. */
  firstRunId: string;
  lastRunId: string;
  runIds: string[];
  started: string;
  /** The last run's state: RUNNING, COMPLETED, FAILED, TERMINATED… */
  state: string;
  closed?: string;
  /** The hop its memo last recorded: none when it never got past its inventory and pre-flight. */
  hop?: string;
}

export async function executionsOf(client: Client, workflowId: string): Promise<Execution[]> {
  const runs: { runId: string; start: Date; close?: Date; state: string; hop?: string }[] = [];
  for await (const w of client.workflow.list({ query: `WorkflowId = '${workflowId.replace(/'/g, "\\'")}'` })) {
    const hop = typeof w.memo?.hop === 'string' && w.memo.hop !== '' ? w.memo.hop : undefined;
    runs.push({
      runId: w.runId,
      start: w.startTime,
      ...(w.closeTime ? { close: w.closeTime } : {}),
      state: w.status.name,
      ...(hop ? { hop } : {}),
    });
  }
  runs.sort((a, b) => a.start.getTime() - b.start.getTime());
  const executions: Execution[] = [];
  let continuing = false;
  for (const r of runs) {
    const last = executions.at(-1);
    if (continuing && last) {
      Object.assign(last, { lastRunId: r.runId, state: r.state, runIds: [...last.runIds, r.runId], ...(r.hop ? { hop: r.hop } : {}) });
      if (r.close) last.closed = r.close.toISOString();
    } else
      executions.push({
        firstRunId: r.runId,
        lastRunId: r.runId,
        runIds: [r.runId],
        started: r.start.toISOString(),
        state: r.state,
        ...(r.close ? { closed: r.close.toISOString() } : {}),
        ...(r.hop ? { hop: r.hop } : {}),
      });
    continuing = r.state === 'CONTINUED_AS_NEW';
  }
  return executions;
}

/** Failed before its first hop: refused by its inventory and pre-flight (a no-op start, a skew refusal), it touched nothing. */
export const refusedBeforeStart = (e: Pick<Execution, 'state' | 'hop'>) => e.state === 'FAILED' && e.hop === undefined;

/**
 * The execution `--run` names: one of its run ids (or the start of one), or the start of its start
 * time as listed (`2026-12-04T18:02`). No match, or more than one, is a UsageError naming the flag.
 */
export function pickExecution(executions: readonly Execution[], run: string): Execution {
  const matches = executions.filter((e) => e.runIds.some((id) => id.startsWith(run)) || e.started.startsWith(run));
  if (matches.length === 1) return matches[0]!;
  const listed = executions.map((e) => `${e.started} ${e.firstRunId}`).join(', ');
  throw new UsageError(
    matches.length === 0
      ? `--run ${run}: no run of this id or start time (${listed || 'none'})`
      : `--run ${run}: ${matches.length} runs match; give more of the run id or the start time`,
  );
}
