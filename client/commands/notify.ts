import { randomUUID } from 'node:crypto';
import { isClientError } from '../temporal-sdk.js';
import { NOTIFICATION_SCHEMA_VERSION, type NotificationEvent } from '../../contracts/notification-event.js';
import { notifyTestWorkflowId } from '../../contracts/workflow-ids.js';
import { CONNECTION_HELP, workerConfig } from '../../worker/config.js';
import { notifyWorkflow, type NotifyResult } from '../../workflows/notify-workflow.js';
import {
  CommandFailed,
  type CommandIo,
  EXIT,
  helpAsked,
  outputFormat,
  parseOptions,
  requireOption,
  stringOptions,
  UsageError,
} from '../cli-support.js';
import { whileShowing } from '../output.js';
import { untilAWorkerPolls } from '../run-state.js';
import { clusterName, connectClient, TEMPORAL_OPTIONS } from '../temporal-connection.js';
import { summarizeWorkflowFailure } from '../workflow-failure.js';

export const notifyHelp = `Usage: skewless notify test --cluster NAME [--task-queue Q] [--output json|text] [connection options]

Sends a test event (kind "test", docs/notifications.md) to every sink of the cluster configuration's
notify: list, through the worker (which alone reads the sinks' URLs and secrets), one attempt each,
and prints each sink's answer: "<sink>: HTTP <status> <body>" or "<sink>: not delivered: <why>".

${CONNECTION_HELP}

Exit status: 0 every sink took the event, 1 some sink did not (or there is none), 2 invalid input,
unknown cluster or a configuration the worker refuses, 3 Temporal unreachable.`;

export async function notifyCommand(args: string[], io: CommandIo): Promise<number> {
  const { values, positionals } = parseOptions(args, { ...stringOptions('cluster', 'output', 'task-queue'), ...TEMPORAL_OPTIONS }, true);
  if (helpAsked(values, notifyHelp, io)) return EXIT.ok;
  const output = outputFormat(values.output);
  const [verb, ...extra] = positionals;
  if (verb !== 'test') throw new UsageError(`notify takes one verb, test, got ${JSON.stringify(verb ?? '')}`);
  if (extra.length > 0) throw new UsageError(`notify test takes no argument, got ${JSON.stringify(extra[0])}`);
  const cluster = clusterName(requireOption(values.cluster, '--cluster'), '--cluster');
  const taskQueue = workerConfig(values).taskQueue;
  const at = new Date().toISOString();
  const workflowId = notifyTestWorkflowId(cluster, at, randomUUID().slice(0, 8));
  const event: NotificationEvent = {
    schemaVersion: NOTIFICATION_SCHEMA_VERSION,
    kind: 'test',
    id: workflowId,
    at,
    cluster,
    workflowId,
    summary: `test event for ${cluster} from skewless notify test`,
    details: {},
  };
  const { client, close } = await connectClient(values);
  let result: NotifyResult;
  try {
    await whileShowing(io, `waiting for a worker on task queue ${taskQueue}`, () => untilAWorkerPolls(client, taskQueue));
    result = await client.workflow.execute(notifyWorkflow, {
      taskQueue,
      workflowId,
      workflowExecutionTimeout: '5m', // a backstop: one attempt per sink, each at most 30 s
      args: [{ cluster, event, once: true }],
    });
  } catch (err) {
    if (!isClientError(err, 'WorkflowFailedError')) throw err;
    const failure = summarizeWorkflowFailure(err);
    const message = `notify test of ${cluster} failed: ${failure.message}`;
    if (failure.exit === EXIT.invalid) throw new UsageError(message);
    throw new CommandFailed(message);
  } finally {
    await close();
  }
  if (output === 'json') io.out(JSON.stringify({ cluster, workflowId, ...result }, null, 2));
  else {
    for (const d of result.delivered) io.out(`${d.sink}: HTTP ${d.status}${d.answer ? ` ${d.answer}` : ''}`);
    for (const f of result.failed) io.out(`${f.sink}: not delivered: ${f.error}`);
    if (result.delivered.length + result.failed.length === 0) io.out(`${cluster} has no notify: sinks in its configuration`);
  }
  return result.failed.length === 0 && result.delivered.length > 0 ? EXIT.ok : EXIT.notCompliant;
}
