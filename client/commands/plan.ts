import { randomUUID } from 'node:crypto';
import type { Client } from '@temporalio/client';
import { isClientError } from '../temporal-sdk.js';
import { parseTarget, planUpgrade, type ClusterInventory, type UpgradePlan } from '../../rules/index.js';
import { CONNECTION_HELP, workerConfig } from '../../worker/config.js';
import { planClusterWorkflow, type PlanClusterResult } from '../../workflows/plan-cluster-workflow.js';
import { describeResources } from '../../rules/index.js';
import {
  CommandFailed,
  type CommandIo,
  EXIT,
  helpAsked,
  stringOptions,
  outputFormat,
  parseOptions,
  readJsonFile,
  requireOption,
  UsageError,
} from '../cli-support.js';
import { whileShowing } from '../output.js';
import { barePodLines, planToJson, planToText } from '../render-plan.js';
import { readinessLines, readinessToJson, readinessView } from '../render-readiness.js';
import { removedApisByRelease } from '../../rules/readiness/removed-apis.js';
import { clusterName, connectClient, TEMPORAL_OPTIONS } from '../temporal-connection.js';
import { untilAWorkerPolls } from '../run-state.js';
import { PLAN_FLAG_KEYS, PLAN_POLICY_OPTIONS, policyFromFlags, TARGET_HELP } from '../policy-flags.js';
import { judgeReversibility, reversibilityLines, splitReversibleAcks } from '../reversible-flag.js';
import { summarizeWorkflowFailure } from '../workflow-failure.js';
import { planWorkflowId } from '../../contracts/workflow-ids.js';

/** The removed APIs the readiness section checks, wrapped as the help's other paragraphs. */
const REMOVED_APIS_HELP = ((): string => {
  const groups = removedApisByRelease();
  const recent = groups.filter((g) => Number(g.removedIn.split('.')[1]) >= 33);
  const older = groups.filter((g) => !recent.includes(g));
  const text =
    'Removed APIs checked: any the apiservers report (apiserver_requested_deprecated_apis) with a removed_release in a hop, ' +
    `else by table: ${recent.map((g) => `removed in ${g.removedIn}: ${g.apis.join(', ')}`).join('; ')}; ` +
    `and ${older.reduce((n, g) => n + g.apis.length, 0)} removed in ${older[0]?.removedIn ?? ''}-${older[older.length - 1]?.removedIn ?? ''} ` +
    '(docs/real-cluster.md lists every one).';
  const lines: string[] = [];
  for (const word of text.split(' ')) {
    const last = lines[lines.length - 1];
    if (last !== undefined && last.length + word.length < 100) lines[lines.length - 1] = `${last} ${word}`;
    else lines.push(word);
  }
  return lines.join('\n');
})();

export const planHelp = `Usage: skewless plan --inventory FILE --available FILE --to TARGET [policy] [--output json|text]
       skewless plan --cluster NAME --to TARGET [policy] [--acknowledge NS/PDB|CHECK:SUBJECT]...
                     [--task-queue QUEUE] [connection options] [--output json|text]
Policy: [--canary N] [--batch-size N] [--max-unavailable N|N%] [--first-control-plane NODE] [--workers-every-hop]
        [--batch-by LABEL [--batch-order VALUE,...]]
        [--reversible [--acknowledge reversible:HOP]...]

${TARGET_HELP}

Prints the whole upgrade runbook without touching anything: per hop, the etcd backup, the
control planes one at a time, the canary, the batches, and uncordon last on every node; and
checks the skew policy on the state after every step. Each hop says what moves: the control planes
move at every hop, a worker only where the skew policy would otherwise break and at the last hop
("workers stay at 1.32.4"), so 1.32 → 1.34 drains each worker once; --workers-every-hop moves every
worker at every hop. Last, whether each hop can be reversible (a trial of the new control plane
emulating the old minor, rolled back without an etcd restore) and, when not, why (with --cluster also
the cluster's oldest etcd and the alpha feature gates its control planes turn on); with --reversible a
hop that cannot be is refused (exit 2) unless acknowledged with --acknowledge reversible:HOP.

With --cluster, the inventory and the package repository's versions are read from the live
cluster through the worker (workflow plan/NAME/…; start one with "skewless worker"), and the
pre-flight refusals an upgrade would make now (a broken skew policy, blocking PDBs, NotReady
nodes) are listed, then the drains that will block on pods no controller manages (bare pods), by
node: not a refusal, the upgrade waits at each such node for "skewless resolve" (skip the node, or
force the pod). Last, the readiness section: what would hold each hop (an API the hop removes that
clients still call, from the apiservers' /metrics and audit log, or a CRD version stored but no
longer served), each with what to do and the name that acknowledges it; "readiness: nothing found"
when there is none. The package repository of each hop is asked on every node, over SSH.
${REMOVED_APIS_HELP}

From files, the inventory is the skew-check format plus optional "nodes":
  {"apiservers":[{"node":"cp1","version":"1.32.4"}], "kubelets":[{"node":"w1","version":"1.32.4"}], …,
   "nodes":[{"name":"cp1","role":"control-plane","labels":{}}, {"name":"w1","role":"worker"}]}
Without "nodes", apiserver nodes are control planes and other kubelet nodes are workers.
--available is a JSON array of the versions the package repository offers.

${CONNECTION_HELP}

Exit status: 0 plan is skew-safe, 1 some step would break the skew policy or an upgrade would
refuse to start (named, a broken skew policy among the refusals), a readiness finding holds a hop,
or the plan failed on the worker, 2 invalid input or unknown cluster,
3 Temporal unreachable.`;

export async function planCommand(args: string[], io: CommandIo): Promise<number> {
  const { values } = parseOptions(args, {
    ...stringOptions('inventory', 'to', 'available', 'cluster', 'output', 'task-queue'),
    ...PLAN_POLICY_OPTIONS,
    reversible: { type: 'boolean' },
    ...TEMPORAL_OPTIONS,
  });
  if (helpAsked(values, planHelp, io)) return EXIT.ok;
  const output = outputFormat(values.output);
  const to = requireOption(values.to, '--to');
  // The one policy parser (rules/policy.ts through client/policy-flags.ts): the flags a plan takes.
  // `reversible:<hop>` acknowledges a hop that cannot be reversible (issue 36): not a policy key.
  const acks = splitReversibleAcks(values.acknowledge);
  values.acknowledge = acks.rest;
  const { acknowledge, ...policy } = policyFromFlags(values, PLAN_FLAG_KEYS);

  let plan: UpgradePlan;
  let live: (PlanClusterResult & { cluster: string }) | undefined;
  if (values.cluster !== undefined) {
    if (values.inventory !== undefined || values.available !== undefined)
      throw new UsageError('--cluster reads the live cluster: leave out --inventory and --available');
    const cluster = clusterName(values.cluster, '--cluster');
    parseTarget(to); // a bad version is refused here, before Temporal is contacted
    const taskQueue = workerConfig(values).taskQueue;
    const { client, close } = await connectClient(values);
    try {
      live = {
        cluster,
        ...(await planThroughWorker(client, io, taskQueue, {
          cluster,
          to,
          policy: { ...policy, ...(acknowledge ? { acknowledge } : {}) },
        })),
      };
    } finally {
      await close();
    }
    plan = live.plan;
  } else {
    if (values.acknowledge !== undefined && values.acknowledge.length > 0) throw new UsageError('--acknowledge needs --cluster');
    const inventory = readJsonFile(requireOption(values.inventory, '--inventory'), 'inventory') as ClusterInventory;
    const available = readJsonFile(requireOption(values.available, '--available'), 'available versions') as string[];
    plan = planUpgrade({ inventory, to, available, policy });
  }

  // With --cluster the verdict reads the cluster's own facts too (its oldest etcd, the alpha gates its control planes turn on).
  const facts = live?.readiness?.reversibility;
  const reversibility = judgeReversibility(plan.from, plan.hops, values.reversible === true, acks.reversible, facts);
  // One verdict: the upgrade refuses to start on a broken skew policy as on any pre-flight finding.
  // The alert gate fails closed: a Prometheus the worker cannot ask refuses the upgrade's start too.
  const unreachable = live?.readiness?.alerts?.unreachable;
  const refusals = live
    ? [...(plan.skew.compliant ? [] : [skewRefusal(plan)]), ...live.refusals, ...(unreachable ? [`alerts: ${unreachable}`] : [])]
    : [];
  // What would hold a hop (issue 21): shown in full; any held finding makes the plan exit 1.
  const readiness = live ? readinessView(live.readiness, plan.hops, [], policy.fixPrerequisites === true) : undefined;
  if (output === 'json') {
    const found = live
      ? {
          refusals,
          problems: live.problems,
          barePods: live.barePods ?? [],
          barePodCount: live.barePodCount ?? 0,
          ...(live.capacity ? { capacity: live.capacity } : {}),
          ...(readiness ? { readiness: readinessToJson(readiness) } : {}),
        }
      : {};
    io.out(JSON.stringify({ ...(live ? { cluster: live.cluster } : {}), ...planToJson(plan, to), reversibility, ...found }, null, 2));
  } else {
    io.out(planToText(plan, to));
    for (const line of reversibilityLines(reversibility)) io.out(line);
    if (live) {
      for (const p of live.problems) io.out(`Inventory: ${p}`);
      io.out(
        refusals.length === 0
          ? `Pre-flight (${live.cluster}): nothing would stop the upgrade from starting.`
          : `Pre-flight (${live.cluster}): the upgrade would refuse to start:`,
      );
      for (const r of refusals) io.out(`  ${r}`);
      for (const line of capacityLines(live.capacity)) io.out(line);
      // A worker older than this CLI reports no bare pods.
      for (const line of barePodLines(live.cluster, live.barePods ?? [], live.barePodCount ?? 0)) io.out(line);
      if (readiness) for (const line of readinessLines(live.cluster, readiness)) io.out(line);
    }
  }
  const held = (readiness?.held.length ?? 0) > 0;
  return plan.skew.compliant && refusals.length === 0 && !held ? EXIT.ok : EXIT.notCompliant;
}

/** The upgrade's own refusal of a plan whose skew check fails (workflows/upgrade-ending.ts skewFailure), in a line. */
function skewRefusal(plan: UpgradePlan): string {
  const f = plan.skew.failure;
  const where = f?.step && f.stepIndex >= 0 ? `step "${f.step.detail}" of ${f.step.hop}` : 'the cluster as it is';
  return `the skew policy: ${where} breaks it (see "Skew policy" above)`;
}

/** Runs planClusterWorkflow; a missing worker, an unknown cluster or a refused version is one line. */
export async function planThroughWorker(
  client: Client,
  io: CommandIo,
  taskQueue: string,
  input: Parameters<typeof planClusterWorkflow>[0],
): Promise<PlanClusterResult> {
  // Without a worker the workflow would wait forever: say so instead (a worker may be starting, so wait a little).
  // What it waits for is shown on stderr while it waits, on a terminal only (never in a log).
  await whileShowing(io, `waiting for a worker on task queue ${taskQueue}`, () => untilAWorkerPolls(client, taskQueue));
  const workflowId = planWorkflowId(input.cluster, new Date().toISOString(), randomUUID().slice(0, 8));
  try {
    return await whileShowing(
      io,
      `reading cluster ${input.cluster} through the worker on ${taskQueue} (inventory, package versions, PDBs; workflow ${workflowId})`,
      () =>
        client.workflow.execute(planClusterWorkflow, {
          taskQueue,
          workflowId,
          workflowExecutionTimeout: '15m', // a backstop: a plan that lost its worker does not linger
          args: [input],
        }),
    );
  } catch (err) {
    if (!isClientError(err, 'WorkflowFailedError')) throw err;
    const failure = summarizeWorkflowFailure(err);
    const message = `plan of ${input.cluster} failed: ${failure.message}`;
    if (failure.exit === EXIT.invalid) throw new UsageError(message);
    throw new CommandFailed(message);
  }
}

/** Each worker phase's capacity now (issue 40): fits, shrunk, or would halt naming the pods left Pending. */
function capacityLines(capacity: PlanClusterResult['capacity']): string[] {
  if (!capacity?.length) return [];
  const lines = ['Capacity (the cluster as it is now, each phase alone; the upgrade checks again before each):'];
  for (const c of capacity) {
    const headroom = `headroom ${describeResources(c.fit.headroom)}`;
    const evicted = `${c.fit.evicted} pods (${describeResources(c.fit.requests)})`;
    lines.push(
      c.size === 0
        ? `  ${c.stage.padEnd(14)} WOULD HALT: ${c.fit.pending.length} pod(s) of ${c.fit.nodes[0]} fit nowhere else: ${c.fit.pending.slice(0, 5).join(', ')}${c.fit.pending.length > 5 ? ', …' : ''}`
        : c.size < c.asked
          ? `  ${c.stage.padEnd(14)} ${c.size} of ${c.asked} nodes out at once: ${evicted}, ${headroom}`
          : `  ${c.stage.padEnd(14)} fits: ${evicted}, ${headroom}`,
    );
  }
  return lines;
}
