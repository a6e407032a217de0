import type { Client, WorkflowHandle } from '@temporalio/client';
import { isDnsLabel } from '../../rules/input-shapes.js';
import { isClientError } from '../temporal-sdk.js';
import { CONNECTION_HELP } from '../../worker/config.js';
import { approveClusterUpdate, fleetStatusQuery, resolveClusterUpdate, type FleetStatus } from '../../workflows/fleet-messages.js';
import { fleetUpgradeWorkflow } from '../../workflows/fleet-upgrade-workflow.js';
import { abortSignal, pauseSignal, resumeSignal } from '../../workflows/rollout-messages.js';
import {
  type CommandIo,
  EXIT,
  helpAsked,
  type Output,
  outputFormat,
  parseOptions,
  requireOption,
  stringOptions,
  UsageError,
} from '../cli-support.js';
import { readFleetFile } from '../fleet-file.js';
import { printJson } from '../output.js';
import { eventPrinter, followRun, startAndFollow } from '../start-and-follow.js';
import { clusterName, connectClient, TEMPORAL_OPTIONS } from '../temporal-connection.js';
import { summarizeWorkflowFailure } from '../workflow-failure.js';
import { fleetWorkflowId as fleetId } from '../../contracts/workflow-ids.js';

const VERBS = ['start', 'status', 'watch', 'approve', 'resolve', 'pause', 'resume', 'abort'] as const;
type Verb = (typeof VERBS)[number];

export const fleetHelp = `Usage: skewless fleet start FILE [--detach] [--task-queue QUEUE]
       skewless fleet status|watch NAME
       skewless fleet approve NAME --cluster CLUSTER [--by WHO] [--comment TEXT]
       skewless fleet resolve NAME --cluster CLUSTER --action retry|skip [--by WHO] [--comment TEXT]
       skewless fleet pause|resume|abort NAME [--by WHO] [--comment TEXT]
Every subcommand takes [--output json|text] and the connection options.

Upgrades a fleet of clusters (workflow id fleet/NAME) in the order FILE gives: stage by stage (admin
or management clusters first, then user clusters), at most maxParallel clusters at once. Each
cluster's upgrade is the usual upgrade/CLUSTER (skewless status, watch, approve, resolve, abort work
on it). Stop the line: while a cluster's upgrade is blocked (a node waits on "skewless resolve CLUSTER",
a rollout halted), failed or aborted, no cluster after it starts. A blocked cluster that moves on
lets the fleet move on; a failed or aborted one waits for "skewless fleet resolve": retry (its upgrade
again) or skip. abort asks the running upgrades to abort (they compensate) and starts no more.

FILE (YAML):
  name: prod                       # the fleet's NAME (a DNS label)
  maxParallel: 2                   # clusters upgrading at once (default 1)
  defaults: {to: latest-patch, approve: false, policy: {canary: 1}}
  stages:                          # in order; a stage starts when every cluster before it is done or skipped
    - name: admin
      clusters: [{name: admin, to: "1.34", approve: true, policy: {approveWorkers: true}}]
    - name: users
      clusters: [user-a, {name: user-b, to: next-minor, policy: {batchSize: 2, maxUnavailable: "25%"}}]
to: an exact version, a minor, latest-patch or next-minor (as "skewless upgrade --to"). policy: the keys
canary, canaryNodes, batchSize, maxUnavailable, order, firstControlPlane, batchBy, batchOrder, rebalance, approveWorkers, approveAfterCanary,
soakSeconds, phaseSoakSeconds, workersEveryHop, acknowledge, drainTimeoutSeconds, onDrainTimeout, hostRetrySeconds, kubeletTimeoutSeconds, verifySeconds,
continueAsNewAfterEvents. approve: wait for "skewless fleet approve NAME --cluster C" before C starts.
reversible: true (defaults or per cluster) runs each hop as a trial (as upgrade --reversible); autoCommit: true
commits a trial whose soak passes (needs policy soakSeconds or phaseSoakSeconds; docs/reversible-hops.md).

start follows the fleet until it ends (--detach: returns at once). --output json: start --detach and
the commands that act print one object; status prints the fleet's status; start and watch print one
object per line (NDJSON), each with "type", "fleet" and "at": "event", "cluster" (a cluster's state
changed), last "result" (exit, outcome, status) or "failed".

${CONNECTION_HELP}

Exit status: 0 done (every cluster upgraded or skipped); 1 aborted or failed; 2 invalid input (the
file, a flag, a fleet already running, an answer the fleet refuses); 3 Temporal unreachable.`;

const who = (by: string | undefined) => by ?? process.env.USER ?? 'operator';

function fleetName(value: string | undefined): string {
  if (!value) throw new UsageError('NAME (the fleet) is required');
  if (!isDnsLabel(value)) throw new UsageError(`invalid fleet name ${JSON.stringify(value)}: a DNS label`);
  return value;
}

/** One line per cluster, for status and watch. */
function clusterLines(s: FleetStatus): string[] {
  return s.clusters.map((c) => {
    const detail =
      c.phase === 'blocked'
        ? `: ${(c.blocked ?? []).join('; ')} (skewless resolve ${c.cluster})`
        : c.phase === 'failed' || c.phase === 'aborted'
          ? `: ${c.message ?? ''} (skewless fleet resolve ${s.fleet} --cluster ${c.cluster} --action retry|skip)`
          : c.phase === 'waiting-approval'
            ? ` (skewless fleet approve ${s.fleet} --cluster ${c.cluster})`
            : c.result
              ? `: ${c.result.outcome}`
              : c.message
                ? `: ${c.message}`
                : '';
    return `  ${c.cluster.padEnd(16)} ${c.stage.padEnd(10)} ${c.to.padEnd(12)} ${c.phase}${detail}`;
  });
}

/** Follows the fleet: its events and clusters' changes as they come, then its outcome as the exit code. */
async function watchFleet(client: Client, name: string, io: CommandIo, output: Output, pollMs = 1000): Promise<number> {
  const json = output === 'json';
  const record = (type: string, fields: Record<string, unknown>) =>
    io.out(JSON.stringify({ type, fleet: name, at: new Date().toISOString(), ...fields }));
  const handle = client.workflow.getHandle(fleetId(name));
  const printEvents = eventPrinter(io, json ? record : undefined);
  const shown = new Map<string, string>();
  const ending = async () => {
    try {
      const result = (await handle.result()) as FleetStatus;
      const exit = result.phase === 'done' ? EXIT.ok : EXIT.notCompliant;
      if (json) record('result', { exit, outcome: result.outcome ?? result.phase, status: result });
      else io.out(`fleet ${name}: ${result.outcome ?? result.phase}`);
      return exit;
    } catch (err) {
      if (!isClientError(err, 'WorkflowFailedError')) throw err;
      const failure = summarizeWorkflowFailure(err);
      if (json) record('failed', { exit: failure.exit, message: failure.message });
      io.err(`skewless: fleet ${name} failed: ${failure.message}`);
      return failure.exit;
    }
  };
  return await followRun({
    io,
    handle,
    notFound: `no fleet ${name} found`,
    pollMs,
    status: () => handle.query(fleetStatusQuery).catch(() => undefined),
    ending,
    show: (s) => {
      printEvents(s.events);
      for (const c of s.clusters) {
        const key = JSON.stringify(c);
        if (json && shown.get(c.cluster) !== key) record('cluster', { ...c });
        shown.set(c.cluster, key);
      }
      const done = s.clusters.filter((c) => c.phase === 'done' || c.phase === 'skipped').length;
      return `fleet ${name}: ${done}/${s.clusters.length} clusters done, ${s.phase}${s.line ? `: ${s.line}` : ''}`;
    },
  });
}

const FLEET_OPTIONS = {
  ...stringOptions('cluster', 'action', 'by', 'comment', 'task-queue', 'output'),
  detach: { type: 'boolean' },
  ...TEMPORAL_OPTIONS,
} as const;

type FleetValues = ReturnType<typeof parseOptions<typeof FLEET_OPTIONS>>['values'];

export async function fleetCommand(args: string[], io: CommandIo): Promise<number> {
  const { values, positionals } = parseOptions(args, FLEET_OPTIONS, true);
  if (helpAsked(values, fleetHelp, io)) return EXIT.ok;
  const output = outputFormat(values.output);
  const [verbText, target, ...extra] = positionals;
  if (verbText === undefined) throw new UsageError(`a subcommand is required: ${VERBS.join(', ')}`);
  if (!(VERBS as readonly string[]).includes(verbText))
    throw new UsageError(`unknown subcommand ${JSON.stringify(verbText)}: ${VERBS.join(', ')}`);
  const verb = verbText as Verb;
  if (extra.length > 0) throw new UsageError(`unexpected argument ${JSON.stringify(extra[0])}`);
  const only = (flags: string[]) => {
    for (const flag of ['cluster', 'action', 'detach', 'task-queue'] as const) {
      if (values[flag] !== undefined && !flags.includes(flag)) throw new UsageError(`--${flag} does not go with fleet ${verb}`);
    }
  };

  // Every check of what was typed (and the whole file) before Temporal is contacted.
  if (verb === 'start') {
    only(['detach', 'task-queue']);
    return startFleet(values, readFleetFile(requireOption(target, 'FILE (the fleet file)')), output, io);
  }
  const name = fleetName(target);
  let cluster: string | undefined;
  let action: 'retry' | 'skip' | undefined;
  if (verb === 'approve' || verb === 'resolve') {
    only(verb === 'resolve' ? ['cluster', 'action'] : ['cluster']);
    cluster = clusterName(values.cluster, '--cluster');
    if (verb === 'resolve') action = clusterAction(values.action, cluster);
  } else only([]);

  const { client, close } = await connectClient(values, values.by);
  const handle = client.workflow.getHandle(fleetId(name));
  const o: FleetMessage = { io, name, handle, values, json: output === 'json' };
  try {
    if (verb === 'watch') return await watchFleet(client, name, io, output);
    if (verb === 'status') await printFleetStatus(o);
    else if (verb === 'approve' || verb === 'resolve') await answerCluster(o, verb, cluster as string, action);
    else await signalFleet(o, verb);
    return EXIT.ok;
  } catch (err) {
    if (isClientError(err, 'WorkflowNotFoundError')) throw new UsageError(`no running fleet ${name}`);
    if (isClientError(err, 'WorkflowUpdateFailedError')) throw new UsageError(`refused: ${err.cause?.message ?? err.message}`);
    throw err;
  } finally {
    await close();
  }
}

function startFleet(values: FleetValues, spec: ReturnType<typeof readFleetFile>, output: Output, io: CommandIo): Promise<number> {
  return startAndFollow(values, fleetUpgradeWorkflow, [{ fleet: spec }], {
    workflowId: fleetId(spec.name),
    alreadyRunning: `fleet ${spec.name} is already running; follow it with "skewless fleet watch ${spec.name}"`,
    announce: (runId, workflowId) => {
      const started = { workflowId, runId, clusters: spec.clusters.map((c) => c.cluster), maxParallel: spec.maxParallel };
      if (output === 'json') io.out(JSON.stringify({ type: 'started', fleet: spec.name, at: new Date().toISOString(), ...started }));
      else
        io.out(
          `started ${workflowId}: ${spec.clusters.map((c) => `${c.cluster} (${c.stage})`).join(', ')}, at most ${spec.maxParallel} at once`,
        );
    },
    follow: (client) => watchFleet(client, spec.name, io, output),
  });
}

/** `fleet resolve`'s --action: a cluster's failed attempt is retried or skipped. */
function clusterAction(value: string | undefined, cluster: string): 'retry' | 'skip' {
  const a = requireOption(value, '--action');
  if (a !== 'retry' && a !== 'skip')
    throw new UsageError(
      `--action must be retry or skip, got ${JSON.stringify(a)} (a blocked node is answered with "skewless resolve ${cluster}")`,
    );
  return a;
}

/** What every message to a running fleet is sent with. */
interface FleetMessage {
  io: CommandIo;
  name: string;
  handle: WorkflowHandle;
  values: FleetValues;
  json: boolean;
}

async function printFleetStatus({ io, name, handle, json }: FleetMessage): Promise<void> {
  const s = await handle.query(fleetStatusQuery);
  if (json) printJson(io, s, true);
  else {
    io.out(
      `fleet ${name}: ${s.phase}${s.paused ? ' (paused)' : ''}, at most ${s.maxParallel} at once${s.line ? `; line stopped by ${s.line}` : ''}`,
    );
    for (const line of clusterLines(s)) io.out(line);
  }
}

async function answerCluster(o: FleetMessage, verb: 'approve' | 'resolve', cluster: string, action: 'retry' | 'skip' | undefined) {
  const { handle, values } = o;
  const comment = values.comment ? { comment: values.comment } : {};
  const answered =
    verb === 'approve'
      ? await handle.executeUpdate(approveClusterUpdate, { args: [{ cluster, by: who(values.by), ...comment }] })
      : await handle.executeUpdate(resolveClusterUpdate, {
          args: [{ cluster, action: action as 'retry' | 'skip', by: who(values.by), ...comment }],
        });
  if (o.json)
    printJson(o.io, {
      fleet: o.name,
      workflowId: handle.workflowId,
      action: verb === 'approve' ? 'approve' : action,
      cluster: answered,
      status: await handle.query(fleetStatusQuery).catch(() => null),
    });
  else o.io.out(verb === 'approve' ? `start of ${cluster} approved` : `${cluster}: ${action}`);
}

async function signalFleet(o: FleetMessage, verb: 'pause' | 'resume' | 'abort'): Promise<void> {
  const { handle, values } = o;
  const signal = { pause: pauseSignal, resume: resumeSignal, abort: abortSignal }[verb];
  const sent = { by: who(values.by), ...(values.comment ? { reason: values.comment } : {}) };
  await handle.signal(signal, sent);
  if (o.json)
    printJson(o.io, {
      fleet: o.name,
      workflowId: handle.workflowId,
      action: verb,
      ...sent,
      status: await handle.query(fleetStatusQuery).catch(() => null),
    });
  else o.io.out(`${verb} sent to fleet/${o.name}`);
}
