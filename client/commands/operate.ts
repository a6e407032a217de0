import type { Client, WorkflowHandle } from '@temporalio/client';
import { QUERY_WAIT_MS } from '../run-state.js';
import { isClientError } from '../temporal-sdk.js';
import {
  abortSignal,
  approveUpdate,
  pauseSignal,
  resolveDrainUpdate,
  resumeSignal,
  rollbackTrialUpdate,
  statusQuery,
  type HaltState,
  type NodeState,
  type UpgradeResolution,
  type UpgradeStatus,
} from '../../workflows/rollout-messages.js';
import { CONNECTION_HELP } from '../../worker/config.js';
import { type CommandIo, EXIT, helpAsked, outputFormat, parseOptions, requireOption, UsageError } from '../cli-support.js';
import { printJson } from '../output.js';
import {
  clusterName,
  connectClient,
  NODE_ROLLOUTS,
  rolloutKind,
  chooseRollout,
  TEMPORAL_OPTIONS,
  type RolloutKind,
} from '../temporal-connection.js';
import { gateName, namespacedName, nodeName, onlyPositional } from '../input-checks.js';
import { restoreStatusQuery, type RestoreStatus } from '../../workflows/restore-messages.js';
import { rollbackUpdate } from '../../workflows/bluegreen-messages.js';

const WORKFLOW_HELP = `--workflow upgrade|maintain|restore|bluegreen: which of the cluster's runs (upgrade/NAME, the OS
maintenance maintain/NAME, the etcd restore restore/NAME of skewless restore, which has nothing to resolve,
or the pool replacement bluegreen/NAME of skewless bluegreen, whose abort is its rollback, refused once the
blue pool's removal started); default: the one running, else the one started last; approving a gate named
restore-... means the restore, remove-blue or canary-bluegreen the blue/green run.`;
export const withConnection = (help: string) => `${help}\n\n${WORKFLOW_HELP}\n\n${CONNECTION_HELP}`;

const SIGNAL_JSON = "--output json: {cluster, workflowId, action, by, reason, status (the upgrade's status after)}.";

/** The operator's controls on a running upgrade: approve, resolve, pause, resume, abort (status: status.ts). */
export const operateHelp = {
  approve: withConnection(
    "Usage: skewless approve NAME --gate GATE [--by WHO] [--comment TEXT] [--output json|text]\n\nApproves a waiting gate; who and why land in the workflow history.\n--output json: {cluster, workflowId, action, gate (approvedBy, comment), status (the upgrade's status after)}.",
  ),
  resolve:
    withConnection(`Usage: skewless resolve NAME --node NODE --action retry|skip|force|abort [--pod NS/NAME]... [--by WHO] [--comment TEXT] [--output json|text]
       skewless resolve NAME --action retry|abort [--by WHO] [--comment TEXT] [--output json|text]

Answers what an upgrade waits for (skewless status shows it and the answers it takes):
- a blocked drain: retry, skip (the node stays cordoned at its old version until the run ends),
  force (deletes only the pods named with --pod, each one the drain reported in its way), or abort;
- a failed step of a node (a host unreachable or presenting a changed key, a command failing, a node
  not Ready after the kubelet restart): retry runs the step again, abort stops the upgrade; skip only
  while the node is untouched at its old version; never force;
- without --node, a rollout halted because workloads are unhealthy after a phase: retry checks
  again, abort stops the upgrade.
--output json: {cluster, workflowId, action, resolution, answered (the node or halted rollout it answered), status (after)}.`),
  pause: withConnection(
    `Usage: skewless pause NAME [--by WHO] [--comment TEXT] [--output json|text]\n\nNo new node starts; the steps in flight finish.\n${SIGNAL_JSON}`,
  ),
  resume: withConnection(`Usage: skewless resume NAME [--by WHO] [--output json|text]\n\n${SIGNAL_JSON}`),
  rollback: withConnection(
    `Usage: skewless rollback NAME [--by WHO] [--comment TEXT] [--output json|text]\n\nTakes back a reversible hop's trial (skewless upgrade --reversible) while it waits at gate commit-HOP: every control plane, last first, back to its old kube-apiserver, controller-manager and scheduler (kubeadm's backed-up manifests) and its kubeadm package back to the old version, holds as they were; no etcd restore, so nothing written during the trial is lost. The upgrade then ends, aborted. Refused when no trial waits (after a commit the way back is skewless restore).\n${SIGNAL_JSON}`,
  ),
  abort: withConnection(
    `Usage: skewless abort NAME [--by WHO] [--comment TEXT] [--output json|text]\n\nStops after the steps in flight and compensates: uncordons exactly the nodes this run cordoned, clears its stage labels, and puts back the package holds a node had before the run where an unfinished install left them lifted (the outcome names them). Versions are kept (no downgrade).\n${SIGNAL_JSON}`,
  ),
};

type Verb = keyof typeof operateHelp;

/** What each kind of run is called in "no running ...". */
export const RUN_NOUN: Record<RolloutKind, string> = {
  upgrade: 'upgrade',
  maintain: 'maintenance',
  restore: 'restore',
  bluegreen: 'blue/green run',
};

const who = (by: string | undefined) => by ?? process.env.USER ?? 'operator';

/**
 * The upgrade's status once the operator's message is in (a query after a signal or update sees
 * its effect); null if the query cannot be answered (no worker), since the action itself went through.
 */
const statusAfter = (client: Client, handle: WorkflowHandle, restore = false): Promise<UpgradeStatus | RestoreStatus | null> =>
  // Within the deadline status uses: without a worker the server would hold the query 30 s.
  client
    .withDeadline<UpgradeStatus | RestoreStatus>(Date.now() + QUERY_WAIT_MS, () =>
      restore ? handle.query(restoreStatusQuery) : handle.query(statusQuery),
    )
    .catch(() => null);

const OPERATE_OPTIONS = {
  ...TEMPORAL_OPTIONS,
  output: { type: 'string' },
  gate: { type: 'string' },
  node: { type: 'string' },
  action: { type: 'string' },
  pod: { type: 'string', multiple: true },
  by: { type: 'string' },
  comment: { type: 'string' },
  workflow: { type: 'string' },
} as const;

type OperateValues = ReturnType<typeof parseOptions<typeof OPERATE_OPTIONS>>['values'];

export function operateCommand(verb: Verb) {
  return async (args: string[], io: CommandIo): Promise<number> => {
    const { values, positionals } = parseOptions(args, OPERATE_OPTIONS, true);
    if (helpAsked(values, operateHelp[verb], io)) return EXIT.ok;
    const output = outputFormat(values.output);
    const cluster = clusterName(onlyPositional(positionals));
    const asked = rolloutKind(values.workflow);
    const resolution = verb === 'resolve' ? resolutionOf(values) : undefined;
    const gate = verb === 'approve' ? gateName(requireOption(values.gate, '--gate')) : undefined;
    const kind = kindOf(verb, asked, gate);
    // resolve never picks a restore by itself: only the runs it can answer are looked for.
    const candidates = verb === 'resolve' ? NODE_ROLLOUTS : undefined;

    const { client, close } = await connectClient(values, values.by);
    let run: Awaited<ReturnType<typeof chooseRollout>> = { kind: kind ?? 'upgrade', workflowId: '' };
    try {
      run = await chooseRollout(client, cluster, kind, candidates);
      const sent: Sent = { client, io, cluster, verb, json: output === 'json', handle: client.workflow.getHandle(run.workflowId), values };
      const restore = run.kind === 'restore';
      if (verb === 'approve') await sendApproval(sent, gate as string, restore);
      else if (verb === 'resolve') await sendResolution(sent, resolution as UpgradeResolution);
      else if (verb === 'abort' && run.kind === 'bluegreen') await sendRollback(sent);
      else if (verb === 'rollback') await sendTrialRollback(sent);
      else await sendSignal(sent, restore);
      return EXIT.ok;
    } catch (err) {
      if (isClientError(err, 'WorkflowNotFoundError')) throw new UsageError(`no running ${RUN_NOUN[run.kind]} of ${cluster}`);
      if (isClientError(err, 'WorkflowUpdateFailedError')) throw new UsageError(`refused: ${err.cause?.message ?? err.message}`);
      throw err;
    } finally {
      await close();
    }
  };
}

/** `resolve`'s answer from its flags: a halted rollout's (no --node) or a node's; refused before Temporal is asked. */
function resolutionOf(values: OperateValues): UpgradeResolution {
  const node = values.node;
  const action = requireOption(values.action, '--action');
  const by = who(values.by);
  const comment = values.comment ? { comment: values.comment } : {};
  if (node === undefined) {
    if (action !== 'retry' && action !== 'abort')
      throw new UsageError(`--action ${action} needs --node (without it, resolve answers a halted rollout: retry or abort)`);
    if (values.pod?.length) throw new UsageError('--pod goes with --action force and --node');
    return { action, by, ...comment };
  }
  if (node === '') throw new UsageError('--node is empty');
  if (action === 'force') {
    nodeName(node);
    for (const pod of values.pod ?? []) namespacedName(pod, '--pod', 'NAME');
    if (!values.pod?.length) throw new UsageError('--action force needs the pods to delete, each with --pod NAMESPACE/NAME');
    return { node, action, pods: values.pod, by, ...comment };
  }
  if (action === 'retry' || action === 'skip' || action === 'abort') {
    nodeName(node);
    if (values.pod?.length) throw new UsageError(`--pod names the pods --action force deletes; --action ${action} takes none`);
    return { node, action, by, ...comment };
  }
  throw new UsageError(`--action must be retry, skip, force or abort, got ${JSON.stringify(action)}`);
}

/** The kind of run meant: --workflow, else what the gate's name says, else undefined (chooseRollout looks). */
function kindOf(verb: Verb, kind: RolloutKind | undefined, gate: string | undefined): RolloutKind | undefined {
  // A trial is an upgrade's (skewless upgrade --reversible).
  let chosen = verb === 'rollback' ? 'upgrade' : kind;
  // A gate named restore-... is the restore's (skewless restore names its gate so).
  if (chosen === undefined && gate?.startsWith('restore-')) chosen = 'restore';
  if (chosen === undefined && (gate === 'remove-blue' || gate === 'canary-bluegreen')) chosen = 'bluegreen';
  if (chosen === 'restore' && verb === 'resolve') throw new UsageError('a restore has nothing to resolve: approve its gate, or abort it');
  return chosen;
}

/** What every operator message is sent with. */
interface Sent {
  client: Client;
  io: CommandIo;
  cluster: string;
  verb: Verb;
  json: boolean;
  handle: WorkflowHandle;
  values: OperateValues;
}

/** A reversible hop's trial taken back (the upgrade's rollbackTrial update; its validator refuses when no trial waits). */
async function sendTrialRollback(o: Sent): Promise<void> {
  const { handle, values } = o;
  const trial = await handle.executeUpdate(rollbackTrialUpdate, {
    args: [{ by: who(values.by), ...(values.comment ? { reason: values.comment } : {}) }],
  });
  if (o.json)
    printJson(o.io, {
      cluster: o.cluster,
      workflowId: handle.workflowId,
      action: o.verb,
      trial,
      status: await statusAfter(o.client, handle),
    });
  else o.io.out(`rollback of the trial of ${trial.hop} asked by ${trial.rollbackBy}: the control planes go back to ${trial.from}`);
}

async function sendApproval(o: Sent, gate: string, restore: boolean): Promise<void> {
  const { handle, values } = o;
  const g = await handle.executeUpdate(approveUpdate, {
    args: [{ gate, by: who(values.by), ...(values.comment ? { comment: values.comment } : {}) }],
  });
  if (o.json)
    printJson(o.io, {
      cluster: o.cluster,
      workflowId: handle.workflowId,
      action: o.verb,
      gate: g,
      status: await statusAfter(o.client, handle, restore),
    });
  else o.io.out(`gate ${g.name} approved by ${g.approvedBy}`);
}

async function sendResolution(o: Sent, r: UpgradeResolution): Promise<void> {
  const { handle } = o;
  const answered = await handle.executeUpdate(resolveDrainUpdate, { args: [r] });
  // `answered` is what was waiting: the node (its block) or the halted rollout.
  if (o.json)
    printJson(o.io, {
      cluster: o.cluster,
      workflowId: handle.workflowId,
      action: o.verb,
      resolution: r,
      answered,
      status: await statusAfter(o.client, handle),
    });
  else if (r.node === undefined) o.io.out(`workload check after ${(answered as HaltState).after}: ${r.action}`);
  else {
    const block = (answered as NodeState).blocked;
    o.io.out(`${block?.kind === 'StepFailed' ? `${block.step} of ${r.node}` : `drain of ${r.node}`}: ${r.action}`);
  }
}

/** A blue/green run's abort is its rollback: an update, so a refusal (the removal started) comes back as one line. */
async function sendRollback(o: Sent): Promise<void> {
  const { handle, values } = o;
  const sent = { by: who(values.by), ...(values.comment ? { reason: values.comment } : {}) };
  const s = await handle.executeUpdate(rollbackUpdate, { args: [sent] });
  if (o.json) printJson(o.io, { cluster: o.cluster, workflowId: handle.workflowId, action: o.verb, ...sent, rollback: true, status: s });
  else o.io.out(`abort sent to ${handle.workflowId}: rolling back (uncordon blue, drain and delete green)`);
}

async function sendSignal(o: Sent, restore: boolean): Promise<void> {
  const { handle, values, verb } = o;
  const signal = { pause: pauseSignal, resume: resumeSignal, abort: abortSignal }[verb as 'pause' | 'resume' | 'abort'];
  const sent = { by: who(values.by), ...(values.comment ? { reason: values.comment } : {}) };
  await handle.signal(signal, sent);
  if (o.json)
    printJson(o.io, {
      cluster: o.cluster,
      workflowId: handle.workflowId,
      action: verb,
      ...sent,
      status: await statusAfter(o.client, handle, restore),
    });
  else o.io.out(`${verb} sent to ${handle.workflowId}`);
}
