// `apt-mark hold|unhold|showhold`: holds keep `apt-get install -y` from changing a package unless
// --allow-change-held-packages is given, which is how kubeadm's docs pin the Kubernetes packages.
import { isPackageName, PACKAGES, type PackageName } from '../host-state.js';
import { fail, print, type CommandContext, type CommandOutcome } from './command.js';

/** The operations this apt-mark carries out (sim/hosts/faults.ts refuses a fault for another). */
export const APT_MARK_VERBS: readonly string[] = ['hold', 'unhold', 'showhold', 'showholds'];

export async function aptMark(ctx: CommandContext): Promise<CommandOutcome> {
  const [verb, ...names] = ctx.argv.slice(1).filter((a) => a !== '-q' && a !== '-qq');
  const { machine } = ctx;
  if (verb === 'showhold' || verb === 'showholds') {
    print(ctx, ...PACKAGES.filter((p) => machine.state.holds.includes(p)));
    return 0;
  }
  if (verb === undefined || !APT_MARK_VERBS.includes(verb)) {
    return fail(ctx, verb === undefined ? 'E: No operation specified' : `E: Invalid operation ${verb}`, 100);
  }
  if (names.length === 0) return fail(ctx, 'E: No packages found', 100);
  const unknown = names.find((n) => !isPackageName(n));
  if (unknown !== undefined) return fail(ctx, `E: Unable to locate package ${unknown}`, 100);
  if (!ctx.root)
    return fail(ctx, 'dpkg: error: requested operation requires superuser privilege\nE: Executing dpkg failed. Are you root?', 100);
  const packages = names as PackageName[];
  const holding = verb === 'hold';
  for (const p of packages) {
    const held = machine.state.holds.includes(p);
    if (holding) print(ctx, held ? `${p} was already set on hold.` : `${p} set on hold.`);
    else print(ctx, held ? `Canceled hold on ${p}.` : `${p} was already not on hold.`);
  }
  machine.store.update((s) => {
    const rest = s.holds.filter((h) => !packages.includes(h));
    s.holds = PACKAGES.filter((p) => rest.includes(p) || (holding && packages.includes(p)));
  });
  return 0;
}
