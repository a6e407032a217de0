// `apt-cache madison|policy`: what the repository offers, in the column layout apt prints.
import { isPackageName, toKubernetesVersion } from '../host-state.js';
import { candidateVersion, offeredVersions, repositoryUrl } from './apt-repository.js';
import { fail, print, type CommandContext, type CommandOutcome } from './command.js';

export async function aptCache(ctx: CommandContext): Promise<CommandOutcome> {
  const [verb, ...names] = ctx.argv.slice(1);
  const { machine } = ctx;
  if (verb !== 'madison' && verb !== 'policy') return fail(ctx, verb === undefined ? 'E: No operation specified' : `E: Invalid operation ${verb}`, 100);
  if (names.length === 0) return fail(ctx, 'E: No packages found', 100);
  const offered = offeredVersions(machine);
  for (const name of names) {
    if (!isPackageName(name)) {
      // madison says nothing about an unknown package; policy names it with nothing installed.
      if (verb === 'policy') print(ctx, `N: Unable to locate package ${name}`);
      continue;
    }
    if (verb === 'madison') {
      // apt formats each line with setw(10) for the name and the version.
      for (const v of offered) print(ctx, `${name.padStart(10)} | ${v.padStart(10)} | ${repositoryUrl(toKubernetesVersion(v))}  Packages`);
      continue;
    }
    const installed = machine.state.packages[name];
    const candidate = candidateVersion(machine, installed); // a hold stops the resolver, not the candidate
    print(ctx, `${name}:`, `  Installed: ${installed}`, `  Candidate: ${candidate}`, '  Version table:');
    const table = offered.includes(installed) ? offered : [...offered, installed];
    for (const v of table) {
      print(ctx, `${v === installed ? ' *** ' : '     '}${v} 500`);
      if (offered.includes(v)) print(ctx, `        500 ${repositoryUrl(toKubernetesVersion(v))}  Packages`);
      if (v === installed) print(ctx, '        100 /var/lib/dpkg/status');
    }
  }
  return 0;
}
