import { WorkflowFailedError, WorkflowNotFoundError, type Client } from '@temporalio/client';
import { statusQuery, type UpgradeStatus } from '../../workflows/upgrade-messages.js';
import { CONNECTION_HELP } from '../../worker/config.js';
import { blockText, haltLines, resolveHint } from '../block-text.js';
import { EXIT, parseOptions, UsageError, type CommandIo } from '../cli-support.js';
import { clusterName, connectClient, TEMPORAL_OPTIONS, upgradeWorkflowId } from '../temporal-connection.js';
import { onlyPositional } from '../input-checks.js';
import { summarizeWorkflowFailure } from '../workflow-failure.js';

export const watchHelp = `Usage: skewless watch NAME [connection options]

Follows the upgrade of cluster NAME: phase, per-node progress, blocked nodes and what blocks them
(a drain, or a step that failed: the step, the failure and its message), a rollout halted on unhealthy
workloads, gates waiting, each with the command that answers it. Re-attach at any time; exits with the
upgrade's outcome (0 done; 1 failed, aborted or refused by the cluster as it is; 2 refused as an invalid
request: unknown cluster or configuration, a version the cluster cannot go to).

${CONNECTION_HELP}`;

/**
 * Progress in node upgrades (nodes × hops), so the bar only moves forward: a node counts once per
 * hop its kubelet has reached, whatever step it is in now.
 */
function progressLine(s: UpgradeStatus): string {
  const nodes = Object.values(s.nodes);
  const total = nodes.length * s.hops.length;
  const done = nodes.reduce((sum, n) => sum + (n.version ? s.hops.indexOf(n.version) + 1 : 0), 0);
  const width = 20;
  const filled = total ? Math.round((done / total) * width) : 0;
  return `[${'#'.repeat(filled)}${'.'.repeat(width - filled)}] ${done}/${total} node upgrades, hop ${s.hop ?? '-'} of ${s.hops.join(' → ') || '-'}, ${s.phase}${s.paused ? ' (paused)' : ''}`;
}

/** Polls the status query, printing what changed, until the workflow closes; returns its exit code. */
export async function watchUpgrade(client: Client, cluster: string, io: CommandIo, pollMs = 1000): Promise<number> {
  const handle = client.workflow.getHandle(upgradeWorkflowId(cluster));
  let printedEvents = 0;
  let lastLine = '';
  const blockedShown = new Set<string>();
  const gatesShown = new Set<string>();
  let haltShown: string | undefined;
  for (;;) {
    let description;
    try {
      description = await handle.describe();
    } catch (err) {
      if (err instanceof WorkflowNotFoundError) throw new UsageError(`no upgrade of ${cluster} found`);
      throw err;
    }
    const status = await handle.query(statusQuery).catch(() => undefined);
    if (status) {
      for (const e of status.events.slice(printedEvents)) io.out(`  ${e}`);
      printedEvents = status.events.length;
      const line = progressLine(status);
      if (line !== lastLine) io.out((lastLine = line));
      for (const [node, n] of Object.entries(status.nodes)) {
        if (n.phase === 'blocked' && n.blocked && !blockedShown.has(node)) {
          blockedShown.add(node);
          // A failed step's message is in the events printed just above.
          io.out(`  BLOCKED ${node}: ${blockText(n.blocked, false)}`);
          io.out(`    ${resolveHint(cluster, node, n.blocked)}`);
        } else if (n.phase !== 'blocked') blockedShown.delete(node);
      }
      const halt = status.halted ? `${status.halted.hop}/${status.halted.after}` : undefined;
      if (status.halted && halt !== haltShown) for (const line of haltLines(cluster, status.halted, false)) io.out(`  ${line}`);
      haltShown = halt;
      // Once per gate: a gate waiting for hours is not news every second.
      for (const g of status.gates.filter((g) => !g.approvedBy && !gatesShown.has(g.name))) {
        gatesShown.add(g.name);
        io.out(`  gate ${g.name} waits: skewless approve ${cluster} --gate ${g.name}`);
      }
    }
    if (description.status.name !== 'RUNNING') {
      try {
        const result = (await handle.result()) as UpgradeStatus;
        io.out(`${cluster}: ${result.outcome ?? result.phase}`);
        return result.phase === 'done' ? EXIT.ok : EXIT.notCompliant;
      } catch (err) {
        if (!(err instanceof WorkflowFailedError)) throw err;
        // The root cause (not "Activity task failed"), on stderr; exit 2 when the request itself was wrong.
        const failure = summarizeWorkflowFailure(err);
        io.err(`skewless: upgrade of ${cluster} failed: ${failure.message}`);
        return failure.exit;
      }
    }
    await new Promise((r) => setTimeout(r, pollMs));
  }
}

export async function watchCommand(args: string[], io: CommandIo): Promise<number> {
  const { values, positionals } = parseOptions(args, TEMPORAL_OPTIONS, true);
  if (values.help) {
    io.out(watchHelp);
    return EXIT.ok;
  }
  const cluster = clusterName(onlyPositional(positionals));
  const { client, close } = await connectClient(values);
  try {
    return await watchUpgrade(client, cluster, io);
  } finally {
    await close();
  }
}
