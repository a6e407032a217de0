import type { Client, WorkflowExecutionDescription, WorkflowHandle } from '@temporalio/client';
import { statusQuery, type UpgradeStatus } from '../../workflows/rollout-messages.js';
import { CONNECTION_HELP } from '../../worker/config.js';
import { blockText, haltLines, resolveHint } from '../block-text.js';
import { type CommandIo, EXIT, helpAsked, parseOptions } from '../cli-support.js';
import { OUTPUT_OPTION, outputFormat, printRecord, spinner, type Output } from '../output.js';
import { nodeUpgradesDone, windowPhaseLabel } from '../../rules/index.js';
import type { MaintenanceStatus } from '../../workflows/maintenance-messages.js';
import type { BlueGreenStatus } from '../../workflows/bluegreen-messages.js';
import { clusterName, connectClient, NODE_ROLLOUTS, rolloutKind, chooseRollout, TEMPORAL_OPTIONS } from '../temporal-connection.js';
import { onlyPositional } from '../input-checks.js';
import { reportRunEnding } from '../workflow-failure.js';
import { eventPrinter, followRun } from '../start-and-follow.js';
import { QueryPace } from '../query-pace.js';
import { queryIfServed } from '../run-state.js';
import { recordedLine } from '../status-text.js';
import { rolloutKindOfWorkflowId, upgradeWorkflowId } from '../../contracts/workflow-ids.js';

export const watchHelp = `Usage: skewless watch NAME [--workflow upgrade|maintain|bluegreen] [--output json|text] [connection options]

Follows the upgrade (or, with --workflow maintain|bluegreen or when that is what runs, the OS maintenance or the blue/green pool replacement) of cluster NAME: phase, per-node progress, blocked nodes and what blocks them
(a drain, or a step that failed: the step, the failure and its message), a rollout halted on unhealthy
workloads, gates waiting, each with the command that answers it. An upgrade still in its inventory and
pre-flight shows nothing but the live line until it passes (or its refusal). When the run has not answered
for a few seconds, one stderr line says why no worker answers (none polls the task queue, or none answered:
a stopped worker stays listed for minutes) and what Temporal holds of the run; the watch goes on.
Re-attach at any time; Ctrl-C stops following (exit 130), the run goes on. Exits with the
upgrade's outcome (0 done; 4 done but nodes left behind: skipped, quarantined, or cordoned by someone else, named in
the outcome; 1 failed, aborted or refused by the cluster as it is; 2 refused as an invalid request:
unknown cluster or configuration, a version the cluster cannot go to).

--output json prints one JSON object per line (NDJSON), each with "type", "cluster" and "at":
"event" (the run's log), "progress" (phase, hop, nodes and node upgrades done of total, what it
waits for), "node" (a node's state changed), "blocked" and "halted" (with the resolve command),
"gate" (waiting or approved), and last "result" (exit, outcome, the final status) or "failed"
(exit, message; also one line on stderr). On a terminal, stderr shows a live progress line.

${CONNECTION_HELP}`;

/**
 * An OS maintenance run's status (maintain/<cluster>) read through the same query: it has no hops or
 * versions, so its progress is nodes done of nodes.
 */
const isMaintenance = (s: UpgradeStatus | MaintenanceStatus): s is UpgradeStatus & MaintenanceStatus =>
  (s as MaintenanceStatus).kind === 'maintenance';
/** A blue/green run's status (bluegreen/<cluster>): its progress is blue nodes drained of the blue pool. */
const isBlueGreen = (s: UpgradeStatus | BlueGreenStatus): s is UpgradeStatus & BlueGreenStatus =>
  (s as BlueGreenStatus).kind === 'bluegreen';
const blueGreenLine = (s: BlueGreenStatus) => {
  const drained = s.blue.nodes.filter((n) => s.nodes[n]?.phase === 'done').length;
  return {
    drained,
    text: `${drained}/${s.blue.nodes.length} blue nodes drained, ${s.green.joined.length}/${s.green.nodes.length} green joined, ${s.step}`,
  };
};

/**
 * Progress in node upgrades, so the bar only moves forward: a node counts once per hop its kubelet
 * has reached, whatever step it is in now. What counts is what the plan does (status.moves: a worker
 * moved once across hops counts once, a node already at a hop not at all); a run that predates it
 * counts every node at every hop.
 */
export function upgradesDone(s: UpgradeStatus): { done: number; total: number } {
  const nodes = Object.values(s.nodes);
  if (isBlueGreen(s)) return { done: blueGreenLine(s).drained, total: s.blue.nodes.length };
  if (isMaintenance(s)) return { done: nodes.filter((n) => n.phase === 'done').length, total: nodes.length };
  return nodeUpgradesDone(s);
}

export function progressLine(s: UpgradeStatus): string {
  const { done, total } = upgradesDone(s);
  const width = 20;
  const filled = total ? Math.round((done / total) * width) : 0;
  if (isMaintenance(s))
    return `[${'#'.repeat(filled)}${'.'.repeat(width - filled)}] ${done}/${total} nodes maintained, ${s.phase}${s.paused ? ' (paused)' : ''}`;
  if (isBlueGreen(s)) return `[${'#'.repeat(filled)}${'.'.repeat(width - filled)}] ${blueGreenLine(s).text}${s.paused ? ' (paused)' : ''}`;
  return `[${'#'.repeat(filled)}${'.'.repeat(width - filled)}] ${done}/${total} node upgrades, hop ${s.hop ?? '-'} of ${s.hops.join(' → ') || '-'}, ${s.phase}${s.paused ? ' (paused)' : ''}`;
}

/** Nodes at the last hop's version, of all nodes: the "n/m nodes" of the progress line. */
function nodesDone(s: UpgradeStatus): { done: number; total: number } {
  const nodes = Object.values(s.nodes);
  if (isMaintenance(s) || isBlueGreen(s)) return upgradesDone(s);
  const last = s.hops.at(-1);
  return { done: last ? nodes.filter((n) => n.version === last).length : 0, total: nodes.length };
}

/** What the upgrade waits for now, if anything: the operator (gate, blocked node, halt) or a pause. */
export function waitingReasons(cluster: string, s: UpgradeStatus): string[] {
  const reasons: string[] = [];
  if (s.paused) reasons.push(`paused (skewless resume ${cluster})`);
  for (const g of s.gates.filter((g) => !g.approvedBy)) {
    reasons.push(g.opensAt ? `soak ${g.name} until ${g.opensAt}` : `approval of gate ${g.name}`);
  }
  const blocked = Object.entries(s.nodes)
    .filter(([, n]) => n.phase === 'blocked')
    .map(([node]) => node);
  if (blocked.length) reasons.push(`resolve of ${blocked.join(', ')}`);
  if (s.halted) reasons.push(`resolve of the workload check after ${s.halted.after}`);
  if (s.waiting) reasons.push(`the maintenance window (${windowPhaseLabel(s.waiting.phase, s.waiting.hop)}; opens ${s.waiting.opensAt})`);
  return reasons;
}

/** The transient progress line (stderr, terminals only): nodes, phase, and what the upgrade waits for. */
function spinnerText(cluster: string, s: UpgradeStatus): string {
  const { done, total } = nodesDone(s);
  const waiting = waitingReasons(cluster, s);
  if (isMaintenance(s))
    return `${cluster}: ${done}/${total} nodes maintained, ${s.phase}${waiting.length ? `, waiting for ${waiting.join('; ')}` : ''}`;
  if (isBlueGreen(s)) return `${cluster}: ${blueGreenLine(s).text}${waiting.length ? `, waiting for ${waiting.join('; ')}` : ''}`;
  return `${cluster}: ${done}/${total} nodes at ${s.hops.at(-1) ?? s.to}, ${s.phase}${s.hop ? ` ${s.hop}` : ''}${waiting.length ? `, waiting for ${waiting.join('; ')}` : ''}`;
}

export interface WatchOptions {
  output?: Output;
  pollMs?: number;
  /** Which run to follow: default the upgrade, upgrade/<cluster>. */
  workflowId?: string;
  /** Called once, before anything else is printed of the run, when it is first seen past its inventory and pre-flight. */
  onStarted?: () => void;
}

/**
 * How long a watch goes without its run answering before it says no worker answers: a live worker
 * answers in milliseconds; one slow answer (under QUERY_WAIT_MS) is no news.
 */
const SILENCE_BEFORE_SAYING_MS = 4_000;

/** The run a watch follows, as its lines name it. */
interface Followed {
  cluster: string;
  workflowId: string;
  kind: 'upgrade' | 'maintain' | 'bluegreen';
  /** What the run is called: `upgrade`, `maintenance`, `blue/green run`. */
  what: string;
  /** What the commands watch prints take to answer this run: the cluster, with `--workflow` when not the upgrade. */
  target: string;
}

function followed(cluster: string, workflowId: string): Followed {
  const ofId = rolloutKindOfWorkflowId(workflowId);
  const kind = ofId === 'maintain' || ofId === 'bluegreen' ? ofId : 'upgrade';
  const what = { maintain: 'maintenance', bluegreen: 'blue/green run', upgrade: 'upgrade' }[kind];
  return { cluster, workflowId, kind, what, target: kind === 'upgrade' ? cluster : `${cluster} --workflow ${kind}` };
}

/**
 * Polls the status query until the workflow closes; returns its exit code. Text: what changed, as
 * lines. JSON: one record per change (NDJSON): `event` (the run's own log), `progress` (phase, hop,
 * paused, counts), `node` (a node's phase, stage, version or block changed), `blocked`, `halted`,
 * `gate` (waiting, approved), then `result` (the final status) or `failed`.
 */
export async function watchRollout(client: Client, cluster: string, io: CommandIo, options: WatchOptions = {}): Promise<number> {
  const json = options.output === 'json';
  const live = spinner(io);
  const handle = client.workflow.getHandle(options.workflowId ?? upgradeWorkflowId(cluster));
  const run = followed(cluster, handle.workflowId);
  const printer = new ChangePrinter(io, run, json);
  let started = false;
  // Ctrl-C ends the watch, not the run: say so, and how to come back (exit 130, as for any SIGINT).
  const onInterrupt = () => {
    live.clear();
    io.err(
      `skewless: stopped following ${handle.workflowId}; the ${run.what} goes on in Temporal: re-attach with "skewless watch ${run.target}"`,
    );
    process.exit(EXIT.interrupted);
  };
  process.once('SIGINT', onInterrupt);
  try {
    return await followRun({
      io,
      handle,
      live,
      notFound: `no ${run.what} of ${cluster} found`,
      pollMs: options.pollMs ?? 1000,
      status: statusReader(client, handle, io, live, run.what),
      ending: () => reportRunEnding(handle, cluster, run.what, io, json),
      show: (status, closed) => {
        // Until its pre-flight passes, an upgrade has started nothing: no "started", no progress; its log
        // only once it ended there (refused).
        const checking = run.kind === 'upgrade' && status.phase === 'inventory';
        if (!checking && !started) {
          started = true;
          options.onStarted?.();
        }
        if (!checking || closed) printer.events(status.events);
        if (!checking) printer.changes(status);
        return checking ? `${run.target}: checking (inventory, skew, pre-flight)` : spinnerText(run.target, status);
      },
    });
  } finally {
    process.off('SIGINT', onInterrupt);
  }
}

/**
 * The status query as a watch asks it: undefined while no worker answers, and once per silence (not
 * the poller list: a stopped worker stays listed for minutes) a line that says what Temporal holds.
 */
function statusReader(client: Client, handle: WorkflowHandle, io: CommandIo, live: ReturnType<typeof spinner>, what: string) {
  let answeredAt = Date.now();
  let saidMissing = false;
  const pace = new QueryPace();
  let last: UpgradeStatus | undefined;
  return async (description: WorkflowExecutionDescription): Promise<UpgradeStatus | undefined> => {
    const length = description.historyLength;
    // Nothing happened since the last answer (or it came moments ago): that answer still holds, and the
    // worker is not asked (query-pace.ts). A closed run is asked once more, for its last events.
    if (last !== undefined && description.status.name === 'RUNNING' && !pace.due(length, Date.now())) return last;
    let answer: Awaited<ReturnType<typeof queryIfServed<UpgradeStatus>>> | undefined;
    let why: string | undefined;
    try {
      answer = await queryIfServed(client, handle, description.taskQueue, statusQuery);
    } catch (err) {
      why = `the status query failed: ${(err as Error).message}`;
    }
    pace.asked(length, Date.now(), answer?.value !== undefined);
    if (answer?.value !== undefined) {
      answeredAt = Date.now();
      saidMissing = false;
      return (last = answer.value);
    }
    if (!saidMissing && Date.now() - answeredAt >= SILENCE_BEFORE_SAYING_MS) {
      saidMissing = true;
      live.clear();
      const held = recordedLine({ workflowId: handle.workflowId, state: description.status.name }, description.memo ?? {});
      io.err(
        `skewless: ${answer?.noWorker ?? why}; the ${what} waits for a worker ("skewless worker --clusters-dir DIR"); Temporal holds: ${held}`,
      );
    }
    return undefined;
  };
}

/** What a watch prints of each status: only what changed since the last one (lines, or JSON records). */
class ChangePrinter {
  private lastLine = '';
  private lastProgress = '';
  private readonly nodeShown = new Map<string, string>();
  private readonly blockedShown = new Set<string>();
  private readonly gatesShown = new Map<string, string>();
  private haltShown: string | undefined;
  readonly events: (events: string[]) => void;
  private readonly record: (type: string, fields: Record<string, unknown>) => void;

  constructor(
    private readonly io: CommandIo,
    private readonly run: Followed,
    private readonly json: boolean,
  ) {
    this.record = (type, fields) => printRecord(io, type, run.cluster, fields);
    this.events = eventPrinter(io, json ? this.record : undefined);
  }

  changes(status: UpgradeStatus): void {
    if (this.json) this.progressRecords(status);
    else {
      const line = progressLine(status);
      if (line !== this.lastLine) this.io.out((this.lastLine = line));
    }
    this.blocks(status);
    this.halt(status);
    this.gates(status);
  }

  private progressRecords(status: UpgradeStatus): void {
    const progress = progressOf(this.run, status);
    const key = JSON.stringify(progress);
    if (key !== this.lastProgress) this.record('progress', progress);
    this.lastProgress = key;
    for (const [node, n] of Object.entries(status.nodes)) {
      const key = JSON.stringify(n);
      if (this.nodeShown.get(node) !== key) this.record('node', { node, ...n });
      this.nodeShown.set(node, key);
    }
  }

  private blocks(status: UpgradeStatus): void {
    const { target } = this.run;
    for (const [node, n] of Object.entries(status.nodes)) {
      if (n.phase === 'blocked' && n.blocked && !this.blockedShown.has(node)) {
        this.blockedShown.add(node);
        if (this.json)
          this.record('blocked', { node, ...n.blocked, command: resolveHint(target, node, n.blocked).replace(/^resolve with: /, '') });
        else {
          // A failed step's message is in the events printed just above.
          this.io.out(`  BLOCKED ${node}: ${blockText(n.blocked, false)}`);
          this.io.out(`    ${resolveHint(target, node, n.blocked)}`);
        }
      } else if (n.phase !== 'blocked') this.blockedShown.delete(node);
    }
  }

  private halt(status: UpgradeStatus): void {
    const { target } = this.run;
    const halt = status.halted ? `${status.halted.hop}/${status.halted.after}` : undefined;
    if (status.halted && halt !== this.haltShown) {
      if (this.json)
        this.record('halted', { ...status.halted, command: `skewless resolve ${target} --action ${status.halted.actions.join('|')}` });
      else for (const line of haltLines(target, status.halted, false)) this.io.out(`  ${line}`);
    }
    this.haltShown = halt;
  }

  /** Once per gate and state: a gate waiting for hours is not news every second. */
  private gates(status: UpgradeStatus): void {
    const { target } = this.run;
    for (const g of status.gates) {
      const state = g.approvedBy ? 'approved' : 'waiting';
      if (this.gatesShown.get(g.name) === state) continue;
      this.gatesShown.set(g.name, state);
      const { name: _name, ...gate } = g;
      if (this.json)
        this.record('gate', {
          gate: g.name,
          state,
          ...gate,
          ...(state === 'waiting' && !g.opensAt ? { command: `skewless approve ${target} --gate ${g.name}` } : {}),
        });
      else if (state === 'waiting') this.io.out(`  gate ${g.name} waits: skewless approve ${target} --gate ${g.name}`);
    }
  }
}

/** The `progress` record of a status: each kind of run says what it counts. */
function progressOf({ workflowId, target, cluster }: Followed, status: UpgradeStatus): Record<string, unknown> {
  if (isBlueGreen(status))
    return {
      workflowId,
      phase: status.phase,
      step: status.step,
      paused: status.paused,
      blueDrained: nodesDone(status),
      greenJoined: { done: status.green.joined.length, total: status.green.nodes.length },
      rollback: status.rollback.available,
      waitingFor: waitingReasons(target, status),
    };
  if (isMaintenance(status))
    return { workflowId, phase: status.phase, paused: status.paused, nodes: nodesDone(status), waitingFor: waitingReasons(target, status) };
  return {
    phase: status.phase,
    hop: status.hop ?? null,
    hops: status.hops,
    from: status.from,
    to: status.to,
    paused: status.paused,
    nodes: nodesDone(status),
    nodeUpgrades: upgradesDone(status),
    waitingFor: waitingReasons(cluster, status),
    window: status.waiting ?? null,
  };
}

export async function watchCommand(args: string[], io: CommandIo): Promise<number> {
  const { values, positionals } = parseOptions(args, { ...TEMPORAL_OPTIONS, ...OUTPUT_OPTION, workflow: { type: 'string' } }, true);
  if (helpAsked(values, watchHelp, io)) return EXIT.ok;
  const output = outputFormat(values.output);
  const cluster = clusterName(onlyPositional(positionals));
  const kind = rolloutKind(values.workflow, NODE_ROLLOUTS);
  const { client, close } = await connectClient(values);
  try {
    const { workflowId } = await chooseRollout(client, cluster, kind, NODE_ROLLOUTS);
    return await watchRollout(client, cluster, io, { output, workflowId });
  } finally {
    await close();
  }
}
