import { EXIT, processIo, runCommand, UsageError, type CommandIo } from './cli-support.js';
import { devServerCommand, devServerHelp } from './commands/dev-server.js';
import { pathCommand, pathHelp } from './commands/path.js';
import { planCommand, planHelp } from './commands/plan.js';
import { skewCheckCommand, skewCheckHelp } from './commands/skew-check.js';

type Command = { run: (args: string[], io: CommandIo) => Promise<number>; help: string; summary: string };

const COMMANDS: Record<string, Command> = {
  'skew-check': { run: skewCheckCommand, help: skewCheckHelp, summary: 'judge component versions against the skew policy' },
  path: { run: pathCommand, help: pathHelp, summary: 'the upgrade hops from one version to another' },
  plan: { run: planCommand, help: planHelp, summary: 'the whole upgrade runbook, checked step by step' },
  'dev-server': { run: devServerCommand, help: devServerHelp, summary: 'start the Temporal dev server with its UI' },
};

export const mainHelp = `Usage: skewless COMMAND [OPTIONS]

Zero-downtime, skew-safe upgrades of kubeadm clusters, run as durable Temporal workflows.

Commands:
${Object.entries(COMMANDS)
  .map(([name, c]) => `  ${name.padEnd(12)} ${c.summary}`)
  .join('\n')}

Run "skewless COMMAND --help" for a command's options.`;

export async function main(argv: string[], io: CommandIo = processIo): Promise<number> {
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
