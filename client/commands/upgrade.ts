import { WorkflowExecutionAlreadyStartedError } from '@temporalio/client';
import { parseTarget } from '../../rules/index.js';
import { CONNECTION_HELP, workerConfig } from '../../worker/config.js';
import { clusterUpgradeWorkflow, type UpgradePolicy } from '../../workflows/cluster-upgrade-workflow.js';
import { EXIT, intOption, parseOptions, requireOption, UsageError, type CommandIo } from '../cli-support.js';
import { maxUnavailable, namespacedName } from '../input-checks.js';
import { OUTPUT_OPTION, outputFormat, printRecord } from '../output.js';
import { clusterName, connectClient, TEMPORAL_OPTIONS, upgradeWorkflowId } from '../temporal-connection.js';
import { watchUpgrade } from './watch.js';

export const upgradeHelp = `Usage: skewless upgrade --cluster NAME --to VERSION_OR_MINOR [--canary N] [--batch-size N]
                        [--max-unavailable N|N%] [--approve-workers] [--approve-canary] [--soak SECONDS]
                        [--drain-timeout SECONDS] [--host-retry SECONDS] [--acknowledge NAMESPACE/PDB]... [--detach]
                        [--task-queue QUEUE] [--output json|text] [connection options]

Starts the durable upgrade of a cluster (workflow id upgrade/NAME) on Temporal and watches it;
with --detach it returns at once (re-attach with "skewless watch NAME"). One upgrade per cluster:
a second one is refused while the first runs. A drain that has not finished after
--drain-timeout (default: the cluster configuration's drain.timeoutSeconds) waits for "skewless resolve", and so
does a node whose step keeps failing: a host unreachable is retried for --host-retry seconds of backoff
(default about 7 minutes), a changed host key or a node not Ready after the kubelet restart not at all. The worker on QUEUE (SKEWLESS_TASK_QUEUE, default
"skewless") resolves NAME to the cluster's credentials.

--output json: with --detach, one object {"type":"started","cluster","workflowId","runId","to","at"};
following the run, that object then one per line (NDJSON) for each change, as "skewless watch --output json".

${CONNECTION_HELP}

Exit status: 0 upgraded (or started, with --detach); 1 failed, aborted, or refused by the cluster
as it is (skew, NotReady node, blocking PDB, nothing to upgrade); 2 invalid input (flags, version,
unknown cluster or configuration, a target the repository does not offer or a downgrade) or an
upgrade of the cluster already running; 3 Temporal unreachable.`;

export async function upgradeCommand(args: string[], io: CommandIo): Promise<number> {
  const { values } = parseOptions(args, {
    cluster: { type: 'string' }, to: { type: 'string' }, canary: { type: 'string' }, 'batch-size': { type: 'string' },
    'max-unavailable': { type: 'string' }, 'approve-workers': { type: 'boolean' }, 'approve-canary': { type: 'boolean' },
    soak: { type: 'string' }, 'drain-timeout': { type: 'string' }, 'host-retry': { type: 'string' }, acknowledge: { type: 'string', multiple: true }, detach: { type: 'boolean' }, 'task-queue': { type: 'string' }, ...TEMPORAL_OPTIONS, ...OUTPUT_OPTION,
  });
  if (values.help) {
    io.out(upgradeHelp);
    return EXIT.ok;
  }
  const output = outputFormat(values.output);
  const cluster = clusterName(values.cluster, '--cluster');
  const to = requireOption(values.to, '--to');
  parseTarget(to); // a bad version is refused here, before Temporal is contacted
  const policy: UpgradePolicy = {};
  const canary = intOption(values.canary, '--canary', 0);
  const batchSize = intOption(values['batch-size'], '--batch-size', 1);
  const soak = intOption(values.soak, '--soak', 0);
  if (canary !== undefined) policy.canary = canary;
  if (batchSize !== undefined) policy.batchSize = batchSize;
  if (soak !== undefined) policy.soakSeconds = soak;
  const drainTimeout = intOption(values['drain-timeout'], '--drain-timeout', 1);
  if (drainTimeout !== undefined) policy.drainTimeoutSeconds = drainTimeout;
  const hostRetry = intOption(values['host-retry'], '--host-retry', 0);
  if (hostRetry !== undefined && hostRetry > 86_400) throw new UsageError(`--host-retry must be at most 86400 seconds (a day), got ${hostRetry}`);
  if (hostRetry !== undefined) policy.hostRetrySeconds = hostRetry;
  const maxOut = maxUnavailable(values['max-unavailable']);
  if (maxOut !== undefined) policy.maxUnavailable = maxOut;
  if (values['approve-workers']) policy.approveWorkers = true;
  if (values['approve-canary']) policy.approveAfterCanary = true;
  // Flags the workflow would silently ignore together: refuse them, so the operator's intent is not lost.
  if (values['approve-canary'] && soak !== undefined) throw new UsageError('--soak waits after the canary when no approval is asked: leave it out with --approve-canary');
  if (canary === 0 && (values['approve-canary'] || soak !== undefined)) throw new UsageError(`--canary 0 means no canary: ${values['approve-canary'] ? '--approve-canary' : '--soak'} would never apply`);
  for (const ack of values.acknowledge ?? []) namespacedName(ack, '--acknowledge', 'PDB');
  if (values.acknowledge) policy.acknowledge = values.acknowledge;

  const taskQueue = workerConfig(values).taskQueue;
  const { client, close } = await connectClient(values);
  try {
    let runId: string;
    try {
      ({ firstExecutionRunId: runId } = await client.workflow.start(clusterUpgradeWorkflow, {
        taskQueue,
        workflowId: upgradeWorkflowId(cluster),
        workflowIdConflictPolicy: 'FAIL',
        args: [{ cluster, to, policy }],
      }));
    } catch (err) {
      if (err instanceof WorkflowExecutionAlreadyStartedError) {
        throw new UsageError(`an upgrade of ${cluster} is already running; watch it with "skewless watch ${cluster}"`);
      }
      throw err;
    }
    // With --detach, JSON is this one object; following, it is the first NDJSON record.
    if (output === 'json') printRecord(io, 'started', cluster, { workflowId: upgradeWorkflowId(cluster), runId, to });
    else io.out(`started upgrade/${cluster} to ${to}`);
    if (values.detach) return EXIT.ok;
    return await watchUpgrade(client, cluster, io, { output });
  } finally {
    await close();
  }
}
