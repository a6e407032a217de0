import { existsSync, statSync, writeFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import type { Client } from '@temporalio/client';
import { isClientError } from '../temporal-sdk.js';
import { CONNECTION_HELP } from '../../worker/config.js';
import { decodeEncryptedPayloads } from '../../worker/payload-codec.js';
import { auditTrail, trailToText, type RunHistory } from '../audit-trail.js';
import { CommandFailed, type CommandIo, EXIT, helpAsked, outputFormat, parseOptions, UsageError } from '../cli-support.js';
import { clusterName, connectClient, rolloutKind, chooseRollout, TEMPORAL_OPTIONS } from '../temporal-connection.js';
import { notifyWorkflowId, upgradeWorkflowId } from '../../contracts/workflow-ids.js';
import { timelineFromRuns } from '../timeline/timeline-from-runs.js';
import { executionsOf, pickExecution } from '../run-list.js';
import { timelineSpanMs } from '../timeline/timeline-model.js';
import { renderTimelineSvg } from '../timeline/timeline-svg.js';

export const historyHelp = `Usage: skewless history NAME [--run RUN_ID|START] [--workflow upgrade|maintain|restore|bluegreen] [--output json|text] [--timeline FILE] [connection options]

The audit trail of the latest upgrade of cluster NAME (--run: an earlier one, by its run id or the
start of its start time as listed, e.g. 2026-12-04T18:02; the list of the cluster's runs Temporal
still holds comes first, the one shown marked) (workflow upgrade/NAME, every run of it
across continue-as-new, and its node workflows upgrade/NAME/<hop>/<node>), in time order: each
step with its node, what it did, how long it took and its outcome (failures and retries
included); gate approvals, drain resolutions, pause/resume/abort with who did them; the etcd
snapshots taken (path, sha256, revision); and how the upgrade ended. Read-only. With --workflow
maintain (or when it is the cluster's run, running or latest), the same of the OS maintenance
maintain/NAME and its node workflows maintain/NAME/<node>; with --workflow restore, the etcd restore
restore/NAME (each control plane's step, the approval of its gate, how it ended); with --workflow
bluegreen, the blue/green run bluegreen/NAME and its drains bluegreen/NAME/<node> (the control-plane
upgrade it started is upgrade/NAME).

--timeline FILE also draws the run as an SVG picture in FILE (its folder must exist): a row per node
(and one for cluster-wide steps), time across, one bar per step coloured by phase (snapshot,
control-plane, cordon, drain, packages, kubeadm, kubelet, verify, uncordon, blocked, other), a
tooltip on each; it prints "timeline: FILE (N lanes, M bars, D s)" (on stderr with --output json).

${CONNECTION_HELP}

Exit status: 0 printed, 1 the --timeline file could not be written, 2 no upgrade of NAME, no run
--run names, or no folder for the --timeline file, 3 Temporal unreachable.`;

async function fetchRun(client: Client, workflowId: string, runId: string): Promise<RunHistory> {
  const history = await client.workflow.getHandle(workflowId, runId).fetchHistory();
  // Fetched history is raw: encrypted payloads (--payload-key-file) are opened here.
  for (const codec of client.options.loadedDataConverter.payloadCodecs) await decodeEncryptedPayloads(history.events, codec);
  return { workflowId, runId, events: history.events ?? [] };
}

/** A run Temporal no longer has: closed runs are deleted after the namespace's retention period. */
const isNotFound = (err: unknown) => isClientError(err, 'WorkflowNotFoundError') || (err as { code?: number })?.code === 5; // gRPC NOT_FOUND

/**
 * The parent's runs, oldest first: from the latest, back along continuedExecutionRunId. An upgrade
 * that outlives the retention period has lost its oldest runs: the walk stops there and says so.
 */
async function parentRuns(
  client: Client,
  workflowId: string,
  lastRunId?: string,
): Promise<{ runs: RunHistory[]; earlierRunsMissing: boolean }> {
  const latest = lastRunId ?? (await client.workflow.getHandle(workflowId).describe()).runId;
  const runs: RunHistory[] = [];
  const seen = new Set<string>();
  for (let runId: string | undefined = latest; runId && !seen.has(runId);) {
    seen.add(runId);
    let run: RunHistory;
    try {
      run = await fetchRun(client, workflowId, runId);
    } catch (err) {
      if (runs.length > 0 && isNotFound(err)) return { runs, earlierRunsMissing: true };
      throw err;
    }
    runs.unshift(run);
    const started = run.events[0]?.workflowExecutionStartedEventAttributes;
    runId = started?.continuedExecutionRunId || undefined;
  }
  return { runs, earlierRunsMissing: false };
}

/** A child's runs, oldest first: from the run the parent started, forward along continue-as-new. */
async function childRuns(client: Client, workflowId: string, firstRunId: string): Promise<RunHistory[]> {
  const runs: RunHistory[] = [];
  for (let runId: string | undefined = firstRunId; runId && runs.length < 100;) {
    try {
      runs.push(await fetchRun(client, workflowId, runId));
    } catch (err) {
      if (isNotFound(err)) break; // past retention: the parent's record of the node remains
      throw err;
    }
    runId = runs.at(-1)?.events.at(-1)?.workflowExecutionContinuedAsNewEventAttributes?.newExecutionRunId || undefined;
  }
  return runs;
}

/** Every run of upgrade/<cluster> and of its node workflows (a few at a time, for a 1,000-node cluster). */
export async function fetchUpgradeRuns(
  client: Client,
  cluster: string,
  workflowId = upgradeWorkflowId(cluster),
  /** The last run of the execution to read (default: the latest execution's). */
  lastRunId?: string,
): Promise<{ parent: RunHistory[]; children: RunHistory[]; earlierRunsMissing: boolean }> {
  const { runs: parent, earlierRunsMissing } = await parentRuns(client, workflowId, lastRunId);
  const started = parent.flatMap((run) =>
    run.events.flatMap((e) => {
      const x = e.childWorkflowExecutionStartedEventAttributes?.workflowExecution;
      // Its node workflows, and the deliveries of its notifications (notify/<workflowId>/...: their attempts and failures).
      const ours = x?.workflowId?.startsWith(`${workflowId}/`) || x?.workflowId?.startsWith(notifyWorkflowId(`${workflowId}/`));
      return x?.workflowId && x.runId && ours ? [{ workflowId: x.workflowId, runId: x.runId }] : [];
    }),
  );
  const children: RunHistory[][] = new Array(started.length);
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(8, started.length) }, async () => {
      while (next < started.length) {
        const i = next++;
        const child = started[i] as { workflowId: string; runId: string };
        children[i] = await childRuns(client, child.workflowId, child.runId);
      }
    }),
  );
  return { parent, children: children.flat(), earlierRunsMissing };
}

/** The --timeline file, checked before Temporal is contacted: its folder exists and it is no folder itself. */
function timelinePath(value: string | undefined): string | undefined {
  if (value === undefined) return undefined;
  if (value === '') throw new UsageError('--timeline needs a file name');
  const path = resolve(value);
  if (!existsSync(dirname(path)) || !statSync(dirname(path)).isDirectory()) throw new UsageError(`--timeline: no folder ${dirname(path)}`);
  if (existsSync(path) && statSync(path).isDirectory()) throw new UsageError(`--timeline: ${path} is a folder, not a file`);
  return path;
}

export async function historyCommand(args: string[], io: CommandIo): Promise<number> {
  const options = {
    ...TEMPORAL_OPTIONS,
    output: { type: 'string' },
    workflow: { type: 'string' },
    timeline: { type: 'string' },
    run: { type: 'string' },
  } as const;
  const { values, positionals } = parseOptions(args, options, true);
  if (helpAsked(values, historyHelp, io)) return EXIT.ok;
  const output = outputFormat(values.output);
  const cluster = clusterName(positionals[0]);
  if (positionals.length > 1) throw new UsageError(`unexpected argument ${JSON.stringify(positionals[1])}`);
  const kind = rolloutKind(values.workflow);
  const timelineFile = timelinePath(values.timeline);
  const { client, close } = await connectClient(values);
  try {
    let runs;
    const { kind: found, workflowId } = await chooseRollout(client, cluster, kind);
    const executions = await executionsOf(client, workflowId);
    const shown = values.run !== undefined ? pickExecution(executions, values.run) : executions.at(-1);
    try {
      runs = await fetchUpgradeRuns(client, cluster, workflowId, shown?.lastRunId);
    } catch (err) {
      if (isClientError(err, 'WorkflowNotFoundError'))
        throw new UsageError(
          `no ${({ upgrade: 'upgrade', maintain: 'maintenance', restore: 'restore', bluegreen: 'blue/green run' } as const)[found]} of ${cluster} found`,
        );
      throw err;
    }
    const entries = auditTrail([...runs.parent, ...runs.children]);
    if (output === 'json') {
      io.out(
        JSON.stringify(
          {
            cluster,
            workflowId,
            runs: runs.parent.map((r) => r.runId),
            executions: executions.map((e) => ({ ...e, shown: e === shown })),
            earlierRunsMissing: runs.earlierRunsMissing,
            nodeWorkflows: runs.children.length,
            entries,
          },
          null,
          2,
        ),
      );
    } else {
      const missing = runs.earlierRunsMissing ? " (earlier runs are past Temporal's retention)" : '';
      // Earlier executions of the same id (an aborted upgrade before a refused or finishing one): each reachable with --run.
      if (executions.length > 1) {
        io.out(
          `${workflowId}: ${executions.length} executions Temporal still holds (another: skewless history ${cluster} --run RUN_ID|START)`,
        );
        for (const e of executions)
          io.out(`  ${e === shown ? '*' : ' '} ${e.started}  ${e.firstRunId}  ${e.state.toLowerCase()}${e.closed ? ` ${e.closed}` : ''}`);
      }
      io.out(
        `${workflowId}: ${runs.parent.length} run${runs.parent.length === 1 ? '' : 's'}${missing}, ${runs.children.length} node workflow${runs.children.length === 1 ? '' : 's'}`,
      );
      io.out(trailToText(entries));
    }
    if (timelineFile !== undefined) {
      const title = entries[0] ? `${workflowId} from ${entries[0].time}` : workflowId;
      const line = writeTimeline(timelineFile, values.timeline as string, [...runs.parent, ...runs.children], title);
      // JSON on stdout stays one document.
      if (output === 'json') io.err(line);
      else io.out(line);
    }
    return EXIT.ok;
  } finally {
    await close();
  }
}

/** `--timeline FILE`: the runs drawn as an SVG; returns the line that says what was written. */
function writeTimeline(file: string, asGiven: string, runs: Parameters<typeof timelineFromRuns>[0], title: string): string {
  const timeline = timelineFromRuns(runs, title);
  try {
    writeFileSync(file, renderTimelineSvg(timeline));
  } catch (err) {
    throw new CommandFailed(`cannot write --timeline ${file}: ${(err as Error).message}`);
  }
  const { startMs, endMs } = timelineSpanMs(timeline.bars);
  return `timeline: ${asGiven} (${timeline.lanes.length} lanes, ${timeline.bars.length} bars, ${((endMs - startMs) / 1000).toFixed(1)} s)`;
}
