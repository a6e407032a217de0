// `apt-cache madison|policy`: what the lists of the configured sources offer, in the column layout
// apt prints. `-o Dir::Etc::SourceList=… -o Dir::Etc::SourceParts=- -o Dir::State::Lists=…` reads
// another set of sources and lists (the probe of a next minor); `-o Dir::Cache::*=` is accepted.
import { sourceLabel } from '../apt-archive.js';
import { isPackageName } from '../host-state.js';
import { addAptOption, aptDirs, comparePackageVersions, offers, readSources } from './apt-repository.js';
import { fail, print, type CommandContext, type CommandOutcome } from './command.js';

function parseArgs(args: readonly string[]): { options: Map<string, string>; words: string[] } | string {
  const options = new Map<string, string>();
  const words: string[] = [];
  for (let i = 0; i < args.length; i++) {
    const a = args[i]!;
    if (a === '-o' || a === '--option') {
      if (!addAptOption(options, args[++i])) return `E: Missing the value for the option ${a}`;
    } else if (a.startsWith('-o')) {
      if (!addAptOption(options, a.slice(2))) return `E: Option ${a}: Configuration item specification must have an =<val>.`;
    } else if (a === '-q' || a === '-qq') continue;
    else if (a.startsWith('-')) return `E: Command line option '${a}' is not understood in combination with the other options.`;
    else words.push(a);
  }
  return { options, words };
}

/** The operations this apt-cache carries out (sim/hosts/faults.ts refuses a fault for another). */
export const APT_CACHE_VERBS: readonly string[] = ['madison', 'policy'];

export async function aptCache(ctx: CommandContext): Promise<CommandOutcome> {
  const parsed = parseArgs(ctx.argv.slice(1));
  if (typeof parsed === 'string') return fail(ctx, parsed, 100);
  const [verb, ...names] = parsed.words;
  const { machine } = ctx;
  if (verb === undefined || !APT_CACHE_VERBS.includes(verb))
    return fail(ctx, verb === undefined ? 'E: No operation specified' : `E: Invalid operation ${verb}`, 100);
  if (names.length === 0) return fail(ctx, 'E: No packages found', 100);
  const dirs = aptDirs(parsed.options);
  const sources = readSources(machine, dirs, ctx.root);
  if (typeof sources === 'string') return fail(ctx, sources, 100);
  for (const name of names) {
    if (!isPackageName(name)) {
      // madison says nothing about an unknown package; policy names it with nothing installed.
      if (verb === 'policy') print(ctx, `N: Unable to locate package ${name}`);
      continue;
    }
    const offered = offers(machine, dirs, sources, name);
    if (verb === 'madison') {
      // apt formats each line with setw(10) for the name and the version.
      for (const o of offered) print(ctx, `${name.padStart(10)} | ${o.version.padStart(10)} | ${sourceLabel(o.entry)}Packages`);
      continue;
    }
    const installed = machine.state.packages[name];
    // The newest offered, unless older than what is installed; a hold stops the resolver, not the candidate.
    const newest = offered[0]?.version;
    const candidate = newest !== undefined && comparePackageVersions(newest, installed) > 0 ? newest : installed;
    print(ctx, `${name}:`, `  Installed: ${installed}`, `  Candidate: ${candidate}`, '  Version table:');
    const table = offered.some((o) => o.version === installed) ? offered : [...offered, { version: installed, entry: undefined }];
    for (const o of table) {
      print(ctx, `${o.version === installed ? ' *** ' : '     '}${o.version} 500`);
      if (o.entry) print(ctx, `        500 ${sourceLabel(o.entry)}Packages`);
      if (o.version === installed) print(ctx, '        100 /var/lib/dpkg/status');
    }
  }
  return 0;
}
