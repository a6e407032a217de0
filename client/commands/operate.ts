import type { Client, WorkflowHandle } from '@temporalio/client';
import { QUERY_WAIT_MS } from '../run-state.js';
import { isClientError } from '../temporal-sdk.js';
import {
  abortSignal,
  approveUpdate,
  pauseSignal,
  resolveDrainUpdate,
  resumeSignal,
  statusQuery,
  type HaltState,
  type NodeState,
  type UpgradeResolution,
  type UpgradeStatus,
} from '../../workflows/upgrade-messages.js';
import { CONNECTION_HELP } from '../../worker/config.js';
import { type CommandIo, EXIT, helpAsked, outputFormat, parseOptions, requireOption, UsageError } from '../cli-support.js';
import { printJson } from '../output.js';
import {
  clusterName,
  connectClient,
  NODE_ROLLOUTS,
  rolloutKind,
  rolloutWorkflowId,
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

export function operateCommand(verb: Verb) {
  return async (args: string[], io: CommandIo): Promise<number> => {
    const { values, positionals } = parseOptions(
      args,
      {
        ...TEMPORAL_OPTIONS,
        output: { type: 'string' },
        gate: { type: 'string' },
        node: { type: 'string' },
        action: { type: 'string' },
        pod: { type: 'string', multiple: true },
        by: { type: 'string' },
        comment: { type: 'string' },
        workflow: { type: 'string' },
      },
      true,
    );
    if (helpAsked(values, operateHelp[verb], io)) return EXIT.ok;
    const output = outputFormat(values.output);
    const cluster = clusterName(onlyPositional(positionals));
    let kind = rolloutKind(values.workflow);
    let resolution: UpgradeResolution | undefined;
    if (verb === 'resolve') {
      const node = values.node;
      const action = requireOption(values.action, '--action');
      if (node === undefined) {
        if (action !== 'retry' && action !== 'abort')
          throw new UsageError(`--action ${action} needs --node (without it, resolve answers a halted rollout: retry or abort)`);
        if (values.pod?.length) throw new UsageError('--pod goes with --action force and --node');
        resolution = { action, by: who(values.by), ...(values.comment ? { comment: values.comment } : {}) };
      } else if (node === '') throw new UsageError('--node is empty');
      else if (action === 'force') {
        nodeName(node);
        for (const pod of values.pod ?? []) namespacedName(pod, '--pod', 'NAME');
        if (!values.pod?.length) throw new UsageError('--action force needs the pods to delete, each with --pod NAMESPACE/NAME');
        resolution = { node, action, pods: values.pod, by: who(values.by), ...(values.comment ? { comment: values.comment } : {}) };
      } else if (action === 'retry' || action === 'skip' || action === 'abort') {
        nodeName(node);
        if (values.pod?.length) throw new UsageError(`--pod names the pods --action force deletes; --action ${action} takes none`);
        resolution = { node, action, by: who(values.by), ...(values.comment ? { comment: values.comment } : {}) };
      } else throw new UsageError(`--action must be retry, skip, force or abort, got ${JSON.stringify(action)}`);
    }
    const gate = verb === 'approve' ? gateName(requireOption(values.gate, '--gate')) : undefined;
    // A gate named restore-... is the restore's (skewless restore names its gate so).
    if (kind === undefined && gate?.startsWith('restore-')) kind = 'restore';
    if (kind === undefined && (gate === 'remove-blue' || gate === 'canary-bluegreen')) kind = 'bluegreen';
    if (kind === 'restore' && verb === 'resolve') throw new UsageError('a restore has nothing to resolve: approve its gate, or abort it');
    // resolve never picks a restore by itself: only the runs it can answer are looked for.
    const candidates = verb === 'resolve' ? NODE_ROLLOUTS : undefined;

    const { client, close } = await connectClient(values, values.by);
    let run: Awaited<ReturnType<typeof rolloutWorkflowId>> = { kind: kind ?? 'upgrade', workflowId: '' };
    try {
      run = await rolloutWorkflowId(client, cluster, kind, candidates);
      const restore = run.kind === 'restore';
      const handle = client.workflow.getHandle(run.workflowId);
      if (verb === 'approve') {
        const g = await handle.executeUpdate(approveUpdate, {
          args: [{ gate: gate as string, by: who(values.by), ...(values.comment ? { comment: values.comment } : {}) }],
        });
        if (output === 'json')
          printJson(io, {
            cluster,
            workflowId: handle.workflowId,
            action: verb,
            gate: g,
            status: await statusAfter(client, handle, restore),
          });
        else io.out(`gate ${g.name} approved by ${g.approvedBy}`);
      } else if (verb === 'resolve') {
        const r = resolution as UpgradeResolution;
        const answered = await handle.executeUpdate(resolveDrainUpdate, { args: [r] });
        // `answered` is what was waiting: the node (its block) or the halted rollout.
        if (output === 'json')
          printJson(io, {
            cluster,
            workflowId: handle.workflowId,
            action: verb,
            resolution: r,
            answered,
            status: await statusAfter(client, handle),
          });
        else if (r.node === undefined) io.out(`workload check after ${(answered as HaltState).after}: ${r.action}`);
        else {
          const block = (answered as NodeState).blocked;
          io.out(`${block?.kind === 'StepFailed' ? `${block.step} of ${r.node}` : `drain of ${r.node}`}: ${r.action}`);
        }
      } else if (verb === 'abort' && run.kind === 'bluegreen') {
        // A blue/green run's abort is its rollback: an update, so a refusal (the removal started) comes back as one line.
        const sent = { by: who(values.by), ...(values.comment ? { reason: values.comment } : {}) };
        const s = await handle.executeUpdate(rollbackUpdate, { args: [sent] });
        if (output === 'json') printJson(io, { cluster, workflowId: handle.workflowId, action: verb, ...sent, rollback: true, status: s });
        else io.out(`abort sent to ${handle.workflowId}: rolling back (uncordon blue, drain and delete green)`);
      } else {
        const signal = { pause: pauseSignal, resume: resumeSignal, abort: abortSignal }[verb];
        const sent = { by: who(values.by), ...(values.comment ? { reason: values.comment } : {}) };
        await handle.signal(signal, sent);
        if (output === 'json')
          printJson(io, {
            cluster,
            workflowId: handle.workflowId,
            action: verb,
            ...sent,
            status: await statusAfter(client, handle, restore),
          });
        else io.out(`${verb} sent to ${handle.workflowId}`);
      }
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
