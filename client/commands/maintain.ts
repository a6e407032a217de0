import { POLICY_DEFAULTS } from '../../rules/index.js';
import { SETTING_LIMITS } from '../../contracts/time-limits.js';
import { CONNECTION_HELP } from '../../worker/config.js';
import { maintainWorkflow, type MaintainInput } from '../../workflows/maintain-workflow.js';
import { policyFromFlags, MAINTAIN_FLAG_KEYS } from '../policy-flags.js';
import { type CommandIo, EXIT, helpAsked, parseOptions, UsageError } from '../cli-support.js';
import { nodeName } from '../input-checks.js';
import { outputFormat } from '../output.js';
import { clusterName } from '../temporal-connection.js';
import { announceStart, START_OPTIONS, startAndFollow } from '../start-and-follow.js';
import { watchRollout } from './watch.js';

export const maintainHelp = `Usage: skewless maintain --cluster NAME (--selector SELECTOR | --node NODE...)
                         [--canary N] [--batch-size N] [--max-unavailable N|N%] [--approve-canary] [--soak SECONDS]
                         [--batch-by LABEL [--batch-order VALUE,...]]
                         [--drain-timeout SECONDS] [--host-retry SECONDS] [--reboot-timeout SECONDS]
                         [--force-pod NAMESPACE/NAME]... [--detach] [--task-queue QUEUE] [--output json|text]
                         [connection options]

Starts the OS maintenance of some nodes of a cluster (workflow id maintain/NAME) and follows it; with
--detach it returns at once (re-attach with "skewless watch NAME --workflow maintain"). The nodes are
those the label selector matches (--selector 'pool=blue') or those named (--node, repeated). Control
planes go one at a time, then a canary of workers (--canary, default 1; --approve-canary waits for
"skewless approve NAME --gate canary-maintenance", --soak waits that long instead), then batches of
--batch-size with at most --max-unavailable nodes out of service at once (default 1), each batch inside
one value of --batch-by's node label when given (as upgrade's). Each node:
cordon → drain (PodDisruptionBudgets honoured; a drain that has not finished after --drain-timeout
waits for "skewless resolve") → the cluster configuration's maintenance.command over SSH → reboot →
back over SSH and Ready (within --reboot-timeout, default ${POLICY_DEFAULTS.rebootTimeoutSeconds} s, at most ${SETTING_LIMITS.rebootTimeoutSeconds.max}) → its pods back → uncordon; the
workloads are checked after each phase. status, approve, resolve, pause, resume and abort take the
run as they take an upgrade (with --workflow maintain when an upgrade of the cluster exists too).

Before anything is touched the run refuses pods that no controller manages on those nodes (they would
not come back after the drain), naming them, unless each is let go with --force-pod NAMESPACE/NAME;
it also refuses while upgrade/NAME runs, with a node NotReady or unknown, or when the cluster's
configuration has no maintenance.command. Abort or failure uncordons exactly the nodes this run
cordoned and clears its stage labels.

--output json: with --detach, one object {"type":"started","cluster","workflowId","runId","at"};
following the run, that object then one per line (NDJSON) for each change, as "skewless watch --output json".

${CONNECTION_HELP}

Exit status: 0 maintained (or started, with --detach); 1 failed, aborted, or refused by the cluster as
it is (a bare pod, a NotReady node); 2 invalid input (flags, an unknown node or cluster, no
maintenance.command) or another rollout of the cluster (an upgrade, a maintenance) already running;
3 Temporal unreachable; 130 interrupted (the run goes on).`;

/** What a selector can hold (the API's syntax: key=value, key!=value, key in (a,b), !key); the API judges the rest. */
const SELECTOR = /^[A-Za-z0-9_./=!,()\- ]{1,1024}$/;

export async function maintainCommand(args: string[], io: CommandIo): Promise<number> {
  const { values } = parseOptions(args, {
    cluster: { type: 'string' },
    selector: { type: 'string' },
    node: { type: 'string', multiple: true },
    canary: { type: 'string' },
    'batch-size': { type: 'string' },
    'max-unavailable': { type: 'string' },
    'batch-by': { type: 'string' },
    'batch-order': { type: 'string' },
    'approve-canary': { type: 'boolean' },
    soak: { type: 'string' },
    'drain-timeout': { type: 'string' },
    'host-retry': { type: 'string' },
    'reboot-timeout': { type: 'string' },
    'force-pod': { type: 'string', multiple: true },
    ...START_OPTIONS,
  });
  if (helpAsked(values, maintainHelp, io)) return EXIT.ok;
  const output = outputFormat(values.output);
  const cluster = clusterName(values.cluster, '--cluster');
  const input: MaintainInput = { cluster, policy: policyFromFlags(values, MAINTAIN_FLAG_KEYS) };
  if ((values.selector === undefined) === (values.node === undefined))
    throw new UsageError('name the nodes with --selector SELECTOR or with --node NODE (repeated), one of the two');
  if (values.selector !== undefined) {
    if (!SELECTOR.test(values.selector) || values.selector.trim() === '')
      throw new UsageError(
        `--selector must be a label selector such as 'pool=blue' or 'pool in (a,b)', got ${JSON.stringify(values.selector)}`,
      );
    input.selector = values.selector;
  } else {
    const nodes = (values.node ?? []).map((n) => nodeName(n));
    const twice = nodes.find((n, i) => nodes.indexOf(n) !== i);
    if (twice) throw new UsageError(`--node ${twice} is given twice`);
    input.nodes = nodes;
  }

  return await startAndFollow(values, maintainWorkflow, [input], {
    rollout: { cluster, kind: 'maintain', verb: 'maintain' },
    alreadyRunning: `a maintenance of ${cluster} is already running; watch it with "skewless watch ${cluster} --workflow maintain"`,
    announce: announceStart(io, output, cluster, (id) => `started ${id}`),
    follow: (client, workflowId) => watchRollout(client, cluster, io, { output, workflowId }),
  });
}
