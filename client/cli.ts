import { endQuietlyWhenStdoutCloses, EXIT, processIo, runCommand, UsageError, type CommandIo } from './cli-support.js';

/**
 * A command, loaded only when it runs: a spawn of `skewless plan` should not pay for the
 * Temporal SDK and the workflow code that `upgrade` and `worker` need (0.2 s per CLI call).
 * Every command that prints data takes --output json|text (tests hold every entry to it);
 * `service` marks the long-running services (worker, dev-server): they print no data, only a log on stderr.
 */
type Command = { load: () => Promise<LoadedCommand>; summary: string; service?: true };
export type LoadedCommand = { run: (args: string[], io: CommandIo) => Promise<number>; help: string };

export const COMMANDS: Record<string, Command> = {
  'skew-check': {
    load: () => import('./commands/skew-check.js').then((m) => ({ run: m.skewCheckCommand, help: m.skewCheckHelp })),
    summary: 'judge component versions against the skew policy',
  },
  path: {
    load: () => import('./commands/path.js').then((m) => ({ run: m.pathCommand, help: m.pathHelp })),
    summary: 'the upgrade hops from one version to another',
  },
  plan: {
    load: () => import('./commands/plan.js').then((m) => ({ run: m.planCommand, help: m.planHelp })),
    summary: 'the whole upgrade runbook, checked step by step (from files or a live cluster)',
  },
  upgrade: {
    load: () => import('./commands/upgrade.js').then((m) => ({ run: m.upgradeCommand, help: m.upgradeHelp })),
    summary: 'start the durable upgrade of a cluster and watch it',
  },
  maintain: {
    load: () => import('./commands/maintain.js').then((m) => ({ run: m.maintainCommand, help: m.maintainHelp })),
    summary: 'OS maintenance of nodes: drain, OS upgrade command, reboot, uncordon, in batches',
  },
  bluegreen: {
    load: () => import('./commands/bluegreen.js').then((m) => ({ run: m.bluegreenCommand, help: m.bluegreenHelp })),
    summary: 'replace a node pool by a new one at a version (blue/green); rollback until removal',
  },
  watch: {
    load: () => import('./commands/watch.js').then((m) => ({ run: m.watchCommand, help: m.watchHelp })),
    summary: 're-attach to a running upgrade (or maintenance, or blue/green run)',
  },
  status: {
    load: () => import('./commands/status.js').then((m) => ({ run: m.statusCommand, help: m.statusHelp })),
    summary: 'where an upgrade is, node by node',
  },
  approve: {
    load: () => import('./commands/operate.js').then((m) => ({ run: m.operateCommand('approve'), help: m.operateHelp.approve })),
    summary: 'approve a waiting gate',
  },
  resolve: {
    load: () => import('./commands/operate.js').then((m) => ({ run: m.operateCommand('resolve'), help: m.operateHelp.resolve })),
    summary: 'resolve a blocked drain',
  },
  pause: {
    load: () => import('./commands/operate.js').then((m) => ({ run: m.operateCommand('pause'), help: m.operateHelp.pause })),
    summary: 'start no new node',
  },
  resume: {
    load: () => import('./commands/operate.js').then((m) => ({ run: m.operateCommand('resume'), help: m.operateHelp.resume })),
    summary: 'go on after a pause',
  },
  abort: {
    load: () => import('./commands/operate.js').then((m) => ({ run: m.operateCommand('abort'), help: m.operateHelp.abort })),
    summary: 'stop and compensate (no downgrade)',
  },
  rollback: {
    load: () => import('./commands/operate.js').then((m) => ({ run: m.operateCommand('rollback'), help: m.operateHelp.rollback })),
    summary: "take back a reversible hop's trial (no etcd restore)",
  },
  notify: {
    load: () => import('./commands/notify.js').then((m) => ({ run: m.notifyCommand, help: m.notifyHelp })),
    summary: 'send a test event to every notification sink of a cluster',
  },
  schedule: {
    load: () => import('./commands/schedule.js').then((m) => ({ run: m.scheduleCommand, help: m.scheduleHelp })),
    summary: 'upgrades started by a Temporal Schedule: create, list, describe, pause, unpause, delete, trigger',
  },
  fleet: {
    load: () => import('./commands/fleet.js').then((m) => ({ run: m.fleetCommand, help: m.fleetHelp })),
    summary: 'upgrade a fleet of clusters in order (admin first), stopping the line on a blocked one',
  },
  restore: {
    load: () => import('./commands/restore.js').then((m) => ({ run: m.restoreCommand, help: m.restoreHelp })),
    summary: 'restore the control plane from an etcd snapshot (destructive; approval first)',
  },
  rehearse: {
    load: () => import('./commands/rehearse.js').then((m) => ({ run: m.rehearseCommand, help: m.rehearseHelp })),
    summary: 'rehearse an upgrade on a simulated twin of the cluster: blocked drains, timings, skew',
  },
  history: {
    load: () => import('./commands/history.js').then((m) => ({ run: m.historyCommand, help: m.historyHelp })),
    summary: 'the audit trail of an upgrade: steps, approvals, resolutions, snapshots',
  },
  version: {
    load: () => import('./commands/version.js').then((m) => ({ run: m.versionCommand, help: m.versionHelp })),
    summary: 'the package version, the workflow build id and the Temporal SDK version',
  },
  worker: {
    load: () => import('./commands/worker.js').then((m) => ({ run: m.workerCommand, help: m.workerHelp })),
    summary: 'run the worker with a directory of cluster configurations',
    service: true,
  },
  'dev-server': {
    load: () => import('./commands/dev-server.js').then((m) => ({ run: m.devServerCommand, help: m.devServerHelp })),
    summary: 'start the Temporal dev server with its UI',
    service: true,
  },
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
  if (io === processIo) endQuietlyWhenStdoutCloses();
  const [given, ...args] = argv;
  const name = given === '--version' || given === '-V' ? 'version' : given;
  if (name === undefined || name === '--help' || name === '-h' || name === 'help') {
    io.out(mainHelp);
    return name === undefined ? EXIT.invalid : EXIT.ok;
  }
  return runCommand(io, () => {
    const command = COMMANDS[name];
    if (!command) throw new UsageError(`unknown command "${name}"; run "skewless --help" for the list`);
    return command.load().then(({ run }) => run(args, io));
  });
}
