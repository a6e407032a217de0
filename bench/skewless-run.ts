import { join } from 'node:path';
import { Client } from '@temporalio/client';
import type { RunHistory } from '../client/audit-trail.js';
import { fetchUpgradeRuns } from '../client/commands/history.js';
import type { ProcessRegistry } from '../demo/processes.js';
import type { DemoTemporal } from '../demo/temporal-server.js';
import type { AuditEvent } from '../sim/cluster/audit-log.js';
import type { Simulation } from '../sim/simulation.js';
import { resolveDrainUpdate, statusQuery } from '../workflows/rollout-messages.js';
import { sampleProcess } from './process-stats.js';
import { actionDelta, readActionCounter } from './temporal-actions.js';
import { upgradeWorkflowId } from '../contracts/workflow-ids.js';

/**
 * One skewless upgrade of a simulated cluster, as an operator runs it: a fresh worker process
 * (measured from /proc while the upgrade runs), `skewless upgrade --detach` with the batch layout,
 * then the workflow's result. Wall time runs from the command to the workflow's end.
 */

export interface SkewlessOutcome {
  wallSeconds: number;
  worker: { peakRssMiB: number; cpuSeconds: number; nodeOptions: string };
  events: { parent: number; parentRuns: number; parentLargestRun: number; nodeWorkflows: number; nodeWorkflowEvents: number };
  /** Blocked nodes the bench answered with retry (it has no operator): `node: why`. */
  retries: string[];
  runs: RunHistory[];
  /** The worker's requests to the API server during the run, from its audit log (bench/api-requests.ts). */
  auditEvents: AuditEvent[];
  /** Status queries the bench sent while it waited (as `skewless watch` did before issue 41): each a Temporal action. */
  statusQueries: number;
  /** The dev server's action counter over the run (bench/temporal-actions.ts), when it could be read. */
  serverActions?: { total: number; byType: Record<string, number> };
}

const BENCH_OPERATOR = 'skewless-bench';

/**
 * The bench has no operator: a node that waits for one (a drain past its timeout, a step that failed
 * once its retries were spent, e.g. pods the simulated kubelet was slow to start at 1,000 nodes) is
 * answered with retry, every answer recorded in the result.
 */
async function retryBlocked(client: Client, workflowId: string, until: Promise<unknown>): Promise<{ retries: string[]; queries: number }> {
  const handle = client.workflow.getHandle(workflowId);
  const retries: string[] = [];
  let queries = 0;
  let done = false;
  void until.finally(() => (done = true)).catch(() => undefined);
  while (!done) {
    queries++;
    const s = await handle.query(statusQuery).catch(() => undefined);
    for (const [node, n] of Object.entries(s?.nodes ?? {})) {
      if (n.phase !== 'blocked' || !n.blocked) continue;
      retries.push(`${node}: ${n.blocked.message.split('\n')[0]?.slice(0, 160)}`);
      await handle
        .executeUpdate(resolveDrainUpdate, {
          args: [{ node, action: 'retry', by: BENCH_OPERATOR, comment: 'no operator in the benchmark' }],
        })
        .catch(() => undefined);
    }
    await Promise.race([until.catch(() => undefined), new Promise((r) => setTimeout(r, 2_000))]);
  }
  return { retries, queries };
}

export interface SkewlessRunOptions {
  sim: Simulation;
  temporal: DemoTemporal;
  registry: ProcessRegistry;
  cli: string;
  logsDir: string;
  to: string;
  batchSize: number;
  label: string;
  /** The worker's NODE_OPTIONS exactly (empty: none, not the bench's own): the production image's by default. */
  nodeOptions: string;
  /** --workers-every-hop: the plan before issue 22, for the side-by-side comparison. */
  workersEveryHop?: boolean;
  /** The dev server's /metrics, for its action counter over the run. */
  metricsUrl?: string;
}

/** `skewless upgrade` as an operator runs it: a canary, then batches, detached. */
const upgradeArgs = (o: SkewlessRunOptions, cluster: string) => [
  'upgrade',
  '--cluster',
  cluster,
  '--to',
  o.to,
  '--canary',
  '1',
  '--batch-size',
  String(o.batchSize),
  '--max-unavailable',
  String(o.batchSize),
  ...(o.workersEveryHop ? ['--workers-every-hop'] : []),
  '--detach',
];

export async function runSkewless(o: SkewlessRunOptions): Promise<SkewlessOutcome> {
  const cluster = o.sim.description.name;
  const taskQueue = `bench-${o.label}-${process.pid}`;
  const env = {
    ...process.env,
    TEMPORAL_ADDRESS: o.temporal.address,
    TEMPORAL_NAMESPACE: o.temporal.namespace,
    SKEWLESS_TASK_QUEUE: taskQueue,
    NODE_OPTIONS: o.nodeOptions,
  };
  let ready!: () => void;
  const polling = new Promise<void>((res) => (ready = res));
  const worker = o.registry.spawn(
    `worker-${o.label}`,
    process.execPath,
    [o.cli, 'worker', '--clusters-dir', o.sim.endpoints.clustersDir, '--task-queue', taskQueue],
    {
      env,
      logFile: join(o.logsDir, `${o.label}.worker.log`),
      onErrLine: (line) => line.startsWith('skewless worker: task queue') && ready(),
    },
  );
  const died = worker.exited.then((code) => {
    throw new Error(`the worker exited (status ${code}); see ${join(o.logsDir, `${o.label}.worker.log`)}`);
  });
  died.catch(() => undefined);
  try {
    await Promise.race([polling, died]);
    const stats = sampleProcess(worker.pid);
    const auditFrom = o.sim.auditEvents().length;
    const actionsFrom = o.metricsUrl ? await readActionCounter(o.metricsUrl, o.temporal.namespace) : undefined;
    const started = Date.now();
    const args = upgradeArgs(o, cluster);
    const cli = o.registry.spawn(`upgrade-${o.label}`, process.execPath, [o.cli, ...args], {
      env,
      logFile: join(o.logsDir, `${o.label}.cli.log`),
    });
    const code = await cli.exited;
    if (code !== 0) throw new Error(`skewless ${args.join(' ')} exited ${code}; see ${join(o.logsDir, `${o.label}.cli.log`)}`);
    const client = new Client({ connection: o.temporal.connection, namespace: o.temporal.namespace });
    const result = Promise.race([client.workflow.getHandle(upgradeWorkflowId(cluster)).result(), died]);
    const { retries, queries } = await retryBlocked(client, upgradeWorkflowId(cluster), result);
    await result;
    const wallSeconds = (Date.now() - started) / 1000;
    const usage = stats.stop();
    const actionsTo = o.metricsUrl ? await readActionCounter(o.metricsUrl, o.temporal.namespace) : undefined;
    const history = await fetchUpgradeRuns(client, cluster);
    const count = (runs: RunHistory[]) => runs.reduce((n, r) => n + r.events.length, 0);
    return {
      wallSeconds,
      worker: { ...usage, nodeOptions: o.nodeOptions },
      events: {
        parent: count(history.parent),
        parentRuns: history.parent.length,
        parentLargestRun: Math.max(...history.parent.map((r) => r.events.length)),
        nodeWorkflows: history.children.length,
        nodeWorkflowEvents: count(history.children),
      },
      retries,
      runs: [...history.parent, ...history.children],
      auditEvents: o.sim.auditEvents().slice(auditFrom),
      statusQueries: queries,
      ...(actionsFrom && actionsTo ? { serverActions: actionDelta(actionsFrom, actionsTo) } : {}),
    };
  } finally {
    await o.registry.stop(worker, 10_000);
  }
}
