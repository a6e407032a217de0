import { EXIT, processIo, runCommand, UsageError, type CommandIo } from './cli-support.js';
import { bluegreenCommand, bluegreenHelp } from './commands/bluegreen.js';
import { devServerCommand, devServerHelp } from './commands/dev-server.js';
import { fleetCommand, fleetHelp } from './commands/fleet.js';
import { historyCommand, historyHelp } from './commands/history.js';
import { maintainCommand, maintainHelp } from './commands/maintain.js';
import { operateCommand, operateHelp } from './commands/operate.js';
import { rehearseCommand, rehearseHelp } from './commands/rehearse.js';
import { restoreCommand, restoreHelp } from './commands/restore.js';
import { upgradeCommand, upgradeHelp } from './commands/upgrade.js';
import { watchCommand, watchHelp } from './commands/watch.js';
import { pathCommand, pathHelp } from './commands/path.js';
import { planCommand, planHelp } from './commands/plan.js';
import { scheduleCommand, scheduleHelp } from './commands/schedule.js';
import { skewCheckCommand, skewCheckHelp } from './commands/skew-check.js';
import { workerCommand, workerHelp } from './commands/worker.js';

/**
 * A command. Every command that prints data takes --output json|text (tests hold every entry to it);
 * `service` marks the long-running services (worker, dev-server): they print no data, only a log on stderr.
 */
type Command = { run: (args: string[], io: CommandIo) => Promise<number>; help: string; summary: string; service?: true };

export const COMMANDS: Record<string, Command> = {
  'skew-check': { run: skewCheckCommand, help: skewCheckHelp, summary: 'judge component versions against the skew policy' },
  path: { run: pathCommand, help: pathHelp, summary: 'the upgrade hops from one version to another' },
  plan: { run: planCommand, help: planHelp, summary: 'the whole upgrade runbook, checked step by step (from files or a live cluster)' },
  upgrade: { run: upgradeCommand, help: upgradeHelp, summary: 'start the durable upgrade of a cluster and watch it' },
  maintain: { run: maintainCommand, help: maintainHelp, summary: 'OS maintenance of nodes: drain, OS upgrade command, reboot, uncordon, in batches' },
  bluegreen: { run: bluegreenCommand, help: bluegreenHelp, summary: 'replace a node pool by a new one at a version (blue/green); rollback until removal' },
  watch: { run: watchCommand, help: watchHelp, summary: 're-attach to a running upgrade (or maintenance, or blue/green run)' },
  status: { run: operateCommand('status'), help: operateHelp.status, summary: 'where an upgrade is, node by node' },
  approve: { run: operateCommand('approve'), help: operateHelp.approve, summary: 'approve a waiting gate' },
  resolve: { run: operateCommand('resolve'), help: operateHelp.resolve, summary: 'resolve a blocked drain' },
  pause: { run: operateCommand('pause'), help: operateHelp.pause, summary: 'start no new node' },
  resume: { run: operateCommand('resume'), help: operateHelp.resume, summary: 'go on after a pause' },
  abort: { run: operateCommand('abort'), help: operateHelp.abort, summary: 'stop and compensate (no downgrade)' },
  schedule: { run: scheduleCommand, help: scheduleHelp, summary: 'upgrades started by a Temporal Schedule: create, list, describe, pause, unpause, delete, trigger' },
  fleet: { run: fleetCommand, help: fleetHelp, summary: 'upgrade a fleet of clusters in order (admin first), stopping the line on a blocked one' },
  restore: { run: restoreCommand, help: restoreHelp, summary: 'restore the control plane from an etcd snapshot (destructive; approval first)' },
  rehearse: { run: rehearseCommand, help: rehearseHelp, summary: 'rehearse an upgrade on a simulated twin of the cluster: blocked drains, timings, skew' },
  history: { run: historyCommand, help: historyHelp, summary: 'the audit trail of an upgrade: steps, approvals, resolutions, snapshots' },
  worker: { run: workerCommand, help: workerHelp, summary: 'run the worker with a directory of cluster configurations', service: true },
  'dev-server': { run: devServerCommand, help: devServerHelp, summary: 'start the Temporal dev server with its UI', service: true },
};

export const mainHelp = `Usage: skewless COMMAND [OPTIONS]

Zero-downtime, skew-safe upgrades of kubeadm clusters, run as durable Temporal workflows.

Commands:
${Object.entries(COMMANDS)
  .map(([name, c]) => `  ${name.padEnd(12)} ${c.summary}`)
  .join('\n')}

Run "skewless COMMAND --help" for a command's options. Every command that prints data takes
--output json (upgrade and watch: one JSON object per line as the upgrade moves).`;

export async function main(argv: string[], io: CommandIo = processIo): Promise<number> {
  // stderr carries one line per error; a library's deprecation notice (gRPC's TLS server name
  // for an IP address) is nothing an operator can act on.
  process.noDeprecation = true;
  const [name, ...args] = argv;
  if (name === undefined || name === '--help' || name === '-h' || name === 'help') {
    io.out(mainHelp);
    return name === undefined ? EXIT.invalid : EXIT.ok;
  }
  return runCommand(io, () => {
    const command = COMMANDS[name];
    if (!command) throw new UsageError(`unknown command "${name}"; run "skewless --help" for the list`);
    return command.run(args, io);
  });
}
