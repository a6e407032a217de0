// `dpkg --audit` (-C) and `dpkg --configure -a|PACKAGE...`: what an operator (or skewless) runs after a
// host went down in the middle of an install. Messages and layout as dpkg's enquiry.c prints them.
import { configurePackages } from '../dpkg-database.js';
import { isPackageName, type PackageName } from '../host-state.js';
import { fail, print, type CommandContext, type CommandOutcome } from './command.js';

const SUMMARY: Record<PackageName, string> = {
  kubeadm: 'Command-line utility for administering a Kubernetes cluster',
  kubelet: 'Node agent for Kubernetes clusters',
  kubectl: 'Command-line utility for interacting with a Kubernetes cluster',
};

export async function dpkg(ctx: CommandContext): Promise<CommandOutcome> {
  const [action, ...rest] = ctx.argv.slice(1);
  const { machine } = ctx;
  if (action === '--audit' || action === '-C') {
    if (rest.length)
      return fail(
        ctx,
        `dpkg: error: --audit takes no arguments\n\nType dpkg --help for help about installing and deinstalling packages [*];`,
        2,
      );
    const unconfigured = machine.state.unconfigured ?? [];
    if (unconfigured.length === 0) return 0;
    print(
      ctx,
      'The following packages have been unpacked but not yet configured.',
      'They must be configured using dpkg --configure or the configure',
      'menu option in dselect for them to work:',
      ...unconfigured.map((p) => ` ${p.padEnd(20)} ${SUMMARY[p]}`),
      '',
    );
    return 0;
  }
  if (action === '--configure') {
    if (!ctx.root) return fail(ctx, 'dpkg: error: requested operation requires superuser privilege', 2);
    if (rest.length === 0)
      return fail(
        ctx,
        'dpkg: error: --configure needs at least one package name argument\n\nType dpkg --help for help about installing and deinstalling packages [*];',
        2,
      );
    const all = rest.length === 1 && (rest[0] === '-a' || rest[0] === '--pending');
    const unknown = all ? [] : rest.filter((p) => !isPackageName(p));
    if (unknown.length)
      return fail(
        ctx,
        `dpkg: error processing package ${unknown[0]} (--configure):\n package ${unknown[0]} is not installed and no information is available\nErrors were encountered while processing:\n ${unknown[0]}`,
        1,
      );
    const named = rest as PackageName[];
    for (const p of named)
      if (!all && !(machine.state.unconfigured ?? []).includes(p)) {
        return fail(
          ctx,
          `dpkg: error processing package ${p} (--configure):\n package ${p} is already installed and configured\nErrors were encountered while processing:\n ${p}`,
          1,
        );
      }
    for (const p of configurePackages(machine.store, all ? undefined : named))
      print(ctx, `Setting up ${p} (${machine.state.packages[p]}) ...`);
    return 0;
  }
  return fail(ctx, `sim: dpkg ${ctx.argv.slice(1).join(' ')} is not simulated (--audit, --configure)`, 2);
}
