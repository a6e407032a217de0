import type { Client, WorkflowExecutionDescription, WorkflowHandle, WorkflowStartOptions } from '@temporalio/client';
import { WorkflowExecutionAlreadyStartedError, type Workflow } from '@temporalio/common';
import { rolloutWorkflowId, type RolloutKind } from '../contracts/workflow-ids.js';
import { workerConfig } from '../worker/config.js';
import { EXIT, UsageError, type CommandIo } from './cli-support.js';
import { OUTPUT_OPTION, printRecord, spinner, type Output, type Spinner } from './output.js';
import { connectClient, refuseWhileAnotherRolloutRuns, TEMPORAL_OPTIONS } from './temporal-connection.js';
import { isClientError } from './temporal-sdk.js';
import { pollUntil } from '../tooling/poll-until.js';

/**
 * What `upgrade`, `maintain`, `bluegreen`, `restore` and `fleet start` share: start one run under its
 * fixed id (refused while another rollout of the cluster runs, and while this one already does), say so,
 * and follow it until it ends unless detached. The caller's `follow` is its own view of the run
 * (`watchRollout`, `watchRestore`, `watchFleet`), each a `followRun` loop.
 */
/** The flags every command that starts a run takes: --detach, --task-queue, the connection and --output. */
export const START_OPTIONS = {
  detach: { type: 'boolean' },
  'task-queue': { type: 'string' },
  ...TEMPORAL_OPTIONS,
  ...OUTPUT_OPTION,
} as const;

export interface StartAndFollow {
  /** A rollout of a cluster: run under its fixed id, refused (exit 2, before the start) while another rollout of the cluster runs; `verb` says what to do later. */
  rollout?: { cluster: string; kind: RolloutKind; verb: string };
  /** The id of a run that is no rollout (a fleet). */
  workflowId?: string;
  /** The one line (exit 2) when a run under this id is already running: how to follow that one. */
  alreadyRunning: string;
  /** Says that the run started (or, for an upgrade followed, that it is being checked). */
  announce: (runId: string, workflowId: string) => void;
  /** Follows the run until it ends (not with --detach): the exit code. */
  follow: (client: Client, workflowId: string) => Promise<number>;
}

export async function startAndFollow<W extends Workflow>(
  /** `by`: the operator, Temporal's identity of the start (default user@host). */
  values: Parameters<typeof connectClient>[0] & { 'task-queue'?: string; detach?: boolean; by?: string },
  workflow: W,
  args: Parameters<W>,
  o: StartAndFollow,
): Promise<number> {
  const workflowId = o.rollout ? rolloutWorkflowId(o.rollout.kind, o.rollout.cluster) : o.workflowId;
  if (workflowId === undefined) throw new Error('startAndFollow: a rollout or a workflowId');
  const taskQueue = workerConfig(values).taskQueue;
  const { client, close } = await connectClient(values, values.by);
  try {
    if (o.rollout) await refuseWhileAnotherRolloutRuns(client, o.rollout.cluster, o.rollout.kind, o.rollout.verb);
    let runId: string;
    try {
      ({ firstExecutionRunId: runId } = await client.workflow.start(workflow, {
        taskQueue,
        workflowId,
        workflowIdConflictPolicy: 'FAIL',
        args,
      } as unknown as WorkflowStartOptions<W>));
    } catch (err) {
      if (err instanceof WorkflowExecutionAlreadyStartedError) throw new UsageError(o.alreadyRunning);
      throw err;
    }
    o.announce(runId, workflowId);
    if (values.detach) return EXIT.ok;
    return await o.follow(client, workflowId);
  } finally {
    await close();
  }
}

/** The usual `announce`: a `started` record (the run's id and `fields`) with --output json, else the line `text` makes of the id. */
export function announceStart(io: CommandIo, output: Output, cluster: string, text: (workflowId: string) => string, fields = {}) {
  return (runId: string, workflowId: string) =>
    output === 'json' ? printRecord(io, 'started', cluster, { workflowId, runId, ...fields }) : io.out(text(workflowId));
}

export interface FollowRun<S> {
  io: CommandIo;
  handle: WorkflowHandle;
  /** The one line (exit 2) when there is no such run. */
  notFound: string;
  /** The run's status at this poll, or undefined when it gives none (no worker yet, a query that failed). */
  status: (description: WorkflowExecutionDescription) => Promise<S | undefined>;
  /** Prints what changed since the last poll (`closed`: the run has ended); returns the live line to show on a terminal. */
  show: (status: S, closed: boolean) => string | undefined;
  /** Once the run has closed: its ending printed, and the exit code. */
  ending: () => Promise<number>;
  pollMs: number;
  /** The live line, when the caller clears it too (on Ctrl-C). */
  live?: Spinner;
}

/** Polls a run (describe, then its status) until it closes; returns the exit code of its ending. */
export async function followRun<S>(o: FollowRun<S>): Promise<number> {
  const live = o.live ?? spinner(o.io);
  /** One poll: what changed is shown; true once the run has closed. */
  const closedAfterShowing = async (): Promise<boolean> => {
    let description;
    try {
      description = await o.handle.describe();
    } catch (err) {
      if (isClientError(err, 'WorkflowNotFoundError')) throw new UsageError(o.notFound);
      throw err;
    }
    const status = await o.status(description);
    const closed = description.status.name !== 'RUNNING';
    if (status !== undefined) {
      const line = o.show(status, closed);
      if (line !== undefined) live.show(line);
    }
    return closed;
  };
  try {
    await pollUntil(
      closedAfterShowing,
      (closed) => closed,
      () => undefined,
      { timeoutMs: Infinity, intervalMs: o.pollMs },
    );
    live.clear();
    return await o.ending();
  } finally {
    live.clear();
  }
}

/** A run's log, each line once: as text (indented) or as NDJSON `event` records. */
export function eventPrinter(io: CommandIo, record: ((type: string, fields: Record<string, unknown>) => void) | undefined) {
  let printed = 0;
  return (events: readonly string[]) => {
    for (const e of events.slice(printed)) {
      if (record) record('event', { message: e });
      else io.out(`  ${e}`);
    }
    printed = events.length;
  };
}
