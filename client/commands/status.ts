import type { Client, WorkflowExecutionDescription, WorkflowHandle } from '@temporalio/client';
import { decodeVersioningBehavior } from '@temporalio/common';
import { isClientError } from '../temporal-sdk.js';
import { statusQuery, type NodeState, type UpgradeStatus } from '../../workflows/rollout-messages.js';
import { nodeStatusQuery, type NodePhase } from '../../workflows/node-messages.js';
import { restoreStatusQuery, type RestoreStatus } from '../../workflows/restore-messages.js';
import type { MaintenanceStatus } from '../../workflows/maintenance-messages.js';
import type { BlueGreenStatus } from '../../workflows/bluegreen-messages.js';
import { type CommandIo, EXIT, helpAsked, outputFormat, parseOptions, UsageError } from '../cli-support.js';
import { OUTPUT_OPTION, printJson } from '../output.js';
import { clusterName, connectClient, rolloutKind, chooseRollout, TEMPORAL_OPTIONS, type RolloutKind } from '../temporal-connection.js';
import { onlyPositional } from '../input-checks.js';
import { apiNoteOf, drainRoundOf, heartbeatReader, type HeartbeatReader } from '../node-heartbeats.js';
import { queryIfServed, runEnding } from '../run-state.js';
import { executionsOf, refusedBeforeStart } from '../run-list.js';
import { outcomeExit, type FailureSummary } from '../workflow-failure.js';
import { printBlueGreen, printMaintenance, printRecorded, printRestore, printUpgrade } from '../status-text.js';
import { RUN_NOUN, withConnection } from './operate.js';

export const statusHelp = withConnection(`Usage: skewless status NAME [--output json|text]

The run's phase, hop, every node's state (a node in flight as its own node workflow reports it),
blocked nodes, gates and snapshots; how it ended once it has (the failure's message, or the outcome).
Without a worker answering within a few seconds, what Temporal holds of the run (its state, and the
phase, hop, progress and blocked nodes it last recorded) and one line saying why no worker answered.
A run refused before its first hop (a no-op start) hides nothing: the last run that started is named
with its outcome and its "skewless history NAME --run RUN_ID".
The build the run is on (Worker Versioning): its build id, pinned to it, and its deployment.
--output json: the status, plus "run" {workflowId, runId, state, taskQueue, build {id, behavior,
deployment} once a versioned worker ran it}; "failure" {message, type}
when the run failed; "noWorker" (why: no worker polls, none answered within 5 s, or none has answered
the run yet) and "recorded" (the memo) whenever no worker answered; "lastRunThatStarted" {runId,
started, state, outcome} after a refused start.

Exit status, the same as watch and upgrade give for the same outcome: 0 the run is running or done;
4 done but nodes left behind; 1 it failed, was refused by the cluster, aborted or ended otherwise;
2 no run of NAME, or refused as an invalid request; 3 Temporal unreachable.`);

type AnyStatus = UpgradeStatus | MaintenanceStatus | BlueGreenStatus | RestoreStatus;

interface Reading {
  run: { workflowId: string; runId: string; state: string; taskQueue: string; build?: RunBuild };
  /** The run's status: its result once completed, else its worker's answer to the status query. */
  status?: AnyStatus;
  failure?: FailureSummary;
  noWorker?: string;
  memo: Record<string, unknown>;
  /** Nodes whose running activity waits on the API server (throttled, away), from their heartbeats. */
  apiNotes?: Record<string, string>;
}

/** The phases in which the parent only knows that a node's workflow started; the node knows its step. */
const IN_FLIGHT: readonly NodePhase[] = ['upgrading-control-plane', 'preparing', 'cordoned', 'draining', 'upgrading', 'verifying'];
const CHILD_WAIT_MS = 2_000;

/**
 * The parent records a node's phase when its node workflow starts and ends: in between, the node
 * workflow (`upgrade/<cluster>/<hop>/<node>`) knows whether it drains, upgrades or verifies. Asked
 * for each node in flight; a node that does not answer keeps the parent's phase.
 */
async function withNodePhases(client: Client, beats: HeartbeatReader, workflowId: string, s: UpgradeStatus): Promise<UpgradeStatus> {
  const inFlight = Object.entries(s.nodes).filter(([, n]) => IN_FLIGHT.includes(n.phase));
  if (!s.hop || inFlight.length === 0) return s;
  const fresh = await Promise.all(
    inFlight.map(async ([node, n]): Promise<[string, NodeState]> => {
      try {
        const child = await client.withDeadline(Date.now() + CHILD_WAIT_MS, () =>
          client.workflow.getHandle(`${workflowId}/${s.hop}/${node}`).query(nodeStatusQuery),
        );
        if (child.phase === 'pending') return [node, n];
        const round = child.phase === 'draining' ? await drainRoundOf(beats, `${workflowId}/${s.hop}/${node}`) : undefined;
        return [
          node,
          { ...n, phase: child.phase, ...(child.blocked ? { blocked: child.blocked } : {}), ...(round ? { drainRound: round } : {}) },
        ];
      } catch {
        return [node, n]; // the parent's phase: older, never wrong about the node being in flight
      }
    }),
  );
  return { ...s, nodes: { ...s.nodes, ...Object.fromEntries(fresh) } };
}

/** The worker build a run is on (Worker Versioning): its build id and whether it is pinned to it. */
interface RunBuild {
  id: string;
  deployment: string;
  behavior: 'pinned' | 'auto-upgrade' | 'unspecified';
}

const BEHAVIOR: Record<string, RunBuild['behavior']> = { PINNED: 'pinned', AUTO_UPGRADE: 'auto-upgrade' };

function runBuild(d: WorkflowExecutionDescription): RunBuild | undefined {
  const info = d.raw.workflowExecutionInfo?.versioningInfo;
  const version = info?.deploymentVersion;
  if (!version?.buildId) return undefined; // an unversioned worker ran it, or no worker has yet
  return {
    id: version.buildId,
    deployment: version.deploymentName ?? '',
    behavior: BEHAVIOR[decodeVersioningBehavior(info?.behavior) ?? 'none'] ?? 'unspecified',
  };
}

/** The API server's throttling (or absence) as the nodes in flight met it, from their heartbeats. */
async function apiNotesOf(beats: HeartbeatReader, workflowId: string, s: UpgradeStatus): Promise<Record<string, string>> {
  const inFlight = Object.entries(s.nodes).filter(([, n]) => IN_FLIGHT.includes(n.phase));
  if (!s.hop) return {};
  const notes = await Promise.all(
    inFlight.map(async ([node]) => [node, await apiNoteOf(beats, `${workflowId}/${s.hop}/${node}`)] as const),
  );
  return Object.fromEntries(notes.filter((n): n is readonly [string, string] => n[1] !== undefined));
}

async function readRun(client: Client, handle: WorkflowHandle, d: WorkflowExecutionDescription, kind: RolloutKind): Promise<Reading> {
  const build = runBuild(d);
  const reading: Reading = {
    run: { workflowId: handle.workflowId, runId: d.runId, state: d.status.name, taskQueue: d.taskQueue, ...(build ? { build } : {}) },
    memo: d.memo ?? {},
  };
  if (d.status.name !== 'RUNNING') {
    const ending = await runEnding<AnyStatus>(handle);
    if (ending.result) return { ...reading, status: ending.result }; // completed: its result is its final status
    reading.failure = ending.failure;
  }
  const answer = await queryIfServed<AnyStatus>(client, handle, d.taskQueue, kind === 'restore' ? restoreStatusQuery : statusQuery);
  if (answer.noWorker !== undefined) return { ...reading, noWorker: answer.noWorker };
  let status = answer.value;
  if (kind === 'upgrade' && d.status.name === 'RUNNING') {
    const beats = heartbeatReader(client);
    status = await withNodePhases(client, beats, handle.workflowId, status as UpgradeStatus);
    const apiNotes = await apiNotesOf(beats, handle.workflowId, status as UpgradeStatus);
    if (Object.keys(apiNotes).length > 0) reading.apiNotes = apiNotes;
  }
  return { ...reading, status };
}

/** A run that failed still shows the phase it was in when it failed (`inventory` for a refusal): it says failed. */
const ENDED = new Set(['done', 'failed', 'aborted']);
const shownPhase = (r: Reading): string | undefined => {
  const phase = r.status?.phase ?? (typeof r.memo.phase === 'string' ? r.memo.phase : undefined);
  return r.failure && !ENDED.has(phase ?? '') ? 'failed' : phase;
};

function printText(io: CommandIo, cluster: string, r: Reading): void {
  const s = r.status ? ({ ...r.status, phase: shownPhase(r) } as AnyStatus) : undefined;
  if (!s) printRecorded(io, cluster, r.run, { ...r.memo, phase: shownPhase(r) });
  else if ((s as MaintenanceStatus).kind === 'maintenance') printMaintenance(io, cluster, s as MaintenanceStatus);
  else if ((s as BlueGreenStatus).kind === 'bluegreen') printBlueGreen(io, cluster, s as BlueGreenStatus);
  else if ('members' in s) printRestore(io, cluster, s);
  else printUpgrade(io, cluster, s as UpgradeStatus);
  if (r.run.build) io.out(`  build: ${r.run.build.id} (${r.run.build.behavior}, deployment ${r.run.build.deployment})`);
  for (const [node, note] of Object.entries(r.apiNotes ?? {})) io.out(`  ${node}: ${note}`);
  if (r.noWorker) io.out(`  ${r.noWorker}: nodes and gates need one ("skewless worker --clusters-dir DIR")`);
  if (r.failure) io.out(`  failed: ${r.failure.message}`);
}

/**
 * The latest run was refused before its first hop (a no-op start, a skew refusal): the cluster is as
 * the run before it left it, so that run is named, with its outcome, rather than hidden.
 */
async function lastRunBefore(
  client: Client,
  r: Reading,
): Promise<{ runId: string; started: string; state: string; outcome?: string } | undefined> {
  if (!refusedBeforeStart({ state: r.run.state, ...(typeof r.memo.hop === 'string' ? { hop: r.memo.hop } : {}) })) return undefined;
  const earlier = (await executionsOf(client, r.run.workflowId)).filter((e) => !e.runIds.includes(r.run.runId) && !refusedBeforeStart(e));
  const last = earlier.at(-1);
  if (!last) return undefined;
  let outcome: string | undefined;
  if (last.state !== 'RUNNING') {
    const ending = await runEnding<AnyStatus>(client.workflow.getHandle(r.run.workflowId, last.lastRunId));
    outcome = ending.result?.outcome ?? ending.failure?.message;
  }
  return { runId: last.firstRunId, started: last.started, state: last.state, ...(outcome ? { outcome } : {}) };
}

export async function statusCommand(args: string[], io: CommandIo): Promise<number> {
  const { values, positionals } = parseOptions(args, { ...TEMPORAL_OPTIONS, ...OUTPUT_OPTION, workflow: { type: 'string' } }, true);
  if (helpAsked(values, statusHelp, io)) return EXIT.ok;
  const output = outputFormat(values.output);
  const cluster = clusterName(onlyPositional(positionals));
  const kind = rolloutKind(values.workflow);
  const { client, close } = await connectClient(values);
  let found: RolloutKind = kind ?? 'upgrade';
  try {
    const run = await chooseRollout(client, cluster, kind);
    found = run.kind;
    const handle = client.workflow.getHandle(run.workflowId);
    const r = await readRun(client, handle, await handle.describe(), run.kind);
    const before = await lastRunBefore(client, r);
    if (output === 'json') {
      printJson(
        io,
        {
          ...(r.status ?? { cluster }),
          phase: shownPhase(r) ?? null,
          run: r.run,
          ...(r.failure ? { failure: { message: r.failure.message, type: r.failure.type ?? null } } : {}),
          ...(r.noWorker ? { noWorker: r.noWorker, recorded: r.memo } : {}),
          ...(before ? { lastRunThatStarted: before } : {}),
        },
        true,
      );
    } else {
      printText(io, cluster, r);
      if (before)
        io.out(
          `  refused before touching anything; the last run that started: ${before.started}, ${before.state.toLowerCase()}` +
            `${before.outcome ? `: ${before.outcome}` : ''} (skewless history ${cluster} --run ${before.runId})`,
        );
    }
    if (r.run.state === 'RUNNING') return EXIT.ok;
    // The same status for the same outcome as watch and upgrade give.
    if (r.failure) return r.failure.exit;
    return r.status ? outcomeExit({ ...r.status, phase: shownPhase(r) }) : EXIT.notCompliant;
  } catch (err) {
    if (isClientError(err, 'WorkflowNotFoundError')) throw new UsageError(`no running ${RUN_NOUN[found]} of ${cluster}`);
    throw err;
  } finally {
    await close();
  }
}
