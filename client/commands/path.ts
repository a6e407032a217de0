import { planHops } from '../../rules/index.js';
import { type CommandIo, EXIT, helpAsked, outputFormat, parseOptions, readJsonFile, requireOption, stringOptions } from '../cli-support.js';

export const pathHelp = `Usage: skewless path --from VERSION --to TARGET --available FILE [--output json|text]

Prints the upgrade hops, one minor at a time: the newest release of every intermediate minor,
then the exact target (1.34.2) or the newest release of the target minor (1.34); latest-patch
and next-minor resolve against --from (the newest patch of its minor, or of the minor after it).
FILE is a JSON array of the versions the package repository offers.
Pre-releases are used only when named exactly as the target.

Exit status: 0 with the hops (none when already there), 2 when impossible or invalid.`;

export async function pathCommand(args: string[], io: CommandIo): Promise<number> {
  const { values } = parseOptions(args, stringOptions('from', 'to', 'available', 'output'));
  if (helpAsked(values, pathHelp, io)) return EXIT.ok;
  const output = outputFormat(values.output);
  const from = requireOption(values.from, '--from');
  const to = requireOption(values.to, '--to');
  const available = readJsonFile(requireOption(values.available, '--available'), 'available versions') as string[];
  const hops = planHops({ from, to, available });
  if (output === 'json') io.out(JSON.stringify({ hops }));
  else if (hops.length === 0) io.out(`already at ${to}: nothing to do`);
  else io.out(hops.join(' → '));
  return EXIT.ok;
}
