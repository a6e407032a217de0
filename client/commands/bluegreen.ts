import { normalizeVersion } from '../../rules/index.js';
import { isDnsLabel } from '../../rules/input-shapes.js';
import { CONNECTION_HELP } from '../../worker/config.js';
import { NO_ROLLBACK, REMOVAL_GATE, type BlueGreenInput } from '../../workflows/bluegreen-messages.js';
import { bluegreenWorkflow } from '../../workflows/bluegreen-workflow.js';
import { policyFromFlags, BLUEGREEN_FLAG_KEYS } from '../policy-flags.js';
import { type CommandIo, EXIT, helpAsked, intOption, parseOptions, requireOption, UsageError } from '../cli-support.js';
import { outputFormat } from '../output.js';
import { clusterName } from '../temporal-connection.js';
import { announceStart, START_OPTIONS, startAndFollow } from '../start-and-follow.js';
import { watchRollout } from './watch.js';

export const bluegreenHelp = `Usage: skewless bluegreen --cluster NAME --from POOL --to-pool POOL --to VERSION [--count N]
                          [--canary N] [--batch-size N] [--approve-canary] [--soak SECONDS]
                          [--drain-timeout SECONDS] [--host-retry SECONDS] [--acknowledge NAMESPACE/PDB]...
                          [--detach] [--task-queue QUEUE] [--output json|text] [connection options]

Replaces the node pool --from (blue) by a new pool --to-pool (green) at kubelet VERSION (an exact
version such as 1.34.2), workflow id bluegreen/NAME, and follows it; with --detach it returns at once
(re-attach with "skewless watch NAME --workflow bluegreen"). Pools are named in the worker's cluster
configuration (pools: a label selector each; provisioning: how machines are created and deleted).
In order:
1. the control plane: if it is below VERSION it is upgraded first, control planes only, by the
   upgrade upgrade/NAME as a child (status, resolve with --workflow upgrade); a green kubelet is
   never newer than the control plane;
2. green: --count machines (default: as many as blue has nodes) created at VERSION, their Nodes
   joined, Ready and labelled;
3. every blue node cordoned, then drained: a canary (--canary, default 1; --approve-canary waits for
   "skewless approve NAME --gate canary-bluegreen", --soak waits that long instead), then batches of
   --batch-size (default 1), PodDisruptionBudgets honoured: a drain that has not finished after
   --drain-timeout waits for "skewless resolve NAME --workflow bluegreen --node NODE"; the
   workloads are checked after each phase;
4. the removal gate: "skewless approve NAME --gate ${REMOVAL_GATE}" deletes the blue Nodes and has the
   provider tear their machines down. ${NO_ROLLBACK[0]?.toUpperCase()}${NO_ROLLBACK.slice(1)}.

Rollback, until the removal starts: "skewless abort NAME --workflow bluegreen" uncordons blue, drains
green and deletes it (the control plane keeps its new version: no downgrade). Once the removal has
started the abort is refused with the reason. status, approve, resolve, pause and resume take the run
with --workflow bluegreen (or when it is the cluster's run). Refused before anything is touched: an
upgrade, OS maintenance or etcd restore of the cluster running, an unknown pool, a green pool that already has
nodes, a blue node NotReady, green kubelets the skew policy forbids, no provisioning configured.

--output json: with --detach, one object {"type":"started","cluster","workflowId","runId","at"};
following the run, that object then one per line (NDJSON) for each change, as "skewless watch --output json".

${CONNECTION_HELP}

Exit status: 0 replaced (or started, with --detach); 1 failed, rolled back, or refused by the cluster
as it is (a NotReady blue node, green kubelets out of skew); 2 invalid input (flags, an unknown cluster
or pool, a green pool that already has nodes, no provisioning configured) or another rollout of the
cluster (upgrade, maintain, restore, bluegreen) running; 3 Temporal unreachable; 130 interrupted (the run goes on).`;

/** A pool name as the cluster configuration spells it (the worker checks the same). */

function poolName(value: string | undefined, flag: string): string {
  const pool = requireOption(value, flag);
  if (!isDnsLabel(pool) || pool.length > 50)
    throw new UsageError(
      `${flag} must be a pool name of the cluster configuration (lowercase letters, digits and '-'), got ${JSON.stringify(pool)}`,
    );
  return pool;
}

export async function bluegreenCommand(args: string[], io: CommandIo): Promise<number> {
  const { values } = parseOptions(args, {
    cluster: { type: 'string' },
    from: { type: 'string' },
    'to-pool': { type: 'string' },
    to: { type: 'string' },
    count: { type: 'string' },
    canary: { type: 'string' },
    'batch-size': { type: 'string' },
    'approve-canary': { type: 'boolean' },
    soak: { type: 'string' },
    'drain-timeout': { type: 'string' },
    'host-retry': { type: 'string' },
    acknowledge: { type: 'string', multiple: true },
    ...START_OPTIONS,
  });
  if (helpAsked(values, bluegreenHelp, io)) return EXIT.ok;
  const output = outputFormat(values.output);
  const cluster = clusterName(values.cluster, '--cluster');
  const from = poolName(values.from, '--from');
  const to = poolName(values['to-pool'], '--to-pool');
  if (from === to) throw new UsageError(`--from and --to-pool name the same pool ${from}: green must be another pool`);
  const versionText = requireOption(values.to, '--to');
  if (!/^v?\d+\.\d+\.\d+$/.test(versionText))
    throw new UsageError(`--to must be an exact version such as 1.34.2 (the green kubelets' version), got ${JSON.stringify(versionText)}`);
  const version = normalizeVersion(versionText);
  const count = intOption(values.count, '--count', 1);
  if (count !== undefined && count > 200) throw new UsageError(`--count must be at most 200, got ${count}`);
  const input: BlueGreenInput = {
    cluster,
    from,
    to,
    version,
    ...(count === undefined ? {} : { count }),
    policy: policyFromFlags(values, BLUEGREEN_FLAG_KEYS),
  };

  return await startAndFollow(values, bluegreenWorkflow, [input], {
    rollout: { cluster, kind: 'bluegreen', verb: 'replace the pool' },
    alreadyRunning: `a blue/green run of ${cluster} is already running; watch it with "skewless watch ${cluster} --workflow bluegreen"`,
    announce: announceStart(
      io,
      output,
      cluster,
      (id) => `started ${id}: pool ${from} → pool ${to} at ${version}; ${NO_ROLLBACK} (gate ${REMOVAL_GATE})`,
    ),
    follow: (client, workflowId) => watchRollout(client, cluster, io, { output, workflowId }),
  });
}
