// `systemctl` for the kubelet unit, and `reboot`. A restart returns as soon as systemd has started the
// unit; the node turns Ready (kubeletStarted) after the host's restart latency, as a real kubelet does.
import { asError } from '../host-machine.js';
import { fail, print, REBOOT, type CommandContext, type CommandOutcome } from './command.js';

const NOT_AUTHORIZED = 'Interactive authentication required.';
/** Units the simulated host has; only the kubelet's does anything. */
const UNITS = new Set(['kubelet', 'containerd', 'ssh']);

/** The unit verbs this systemctl carries out on a unit. */
const UNIT_VERBS = ['restart', 'try-restart', 'reload-or-restart', 'start', 'stop', 'enable', 'disable'];
/** Every verb this systemctl carries out (sim/hosts/faults.ts refuses a fault for another). */
export const SYSTEMCTL_VERBS: readonly string[] = ['reboot', 'daemon-reload', 'is-active', 'status', ...UNIT_VERBS];

export async function systemctl(ctx: CommandContext): Promise<CommandOutcome> {
  const args = ctx.argv.slice(1).filter((a) => !['--no-pager', '--no-block', '-q', '--quiet', '--now'].includes(a));
  const quiet = ctx.argv.includes('-q') || ctx.argv.includes('--quiet');
  const [verb, ...rest] = args;
  const unit = (rest[0] ?? '').replace(/\.service$/, '');
  const { machine } = ctx;
  if (verb === 'reboot') return reboot(ctx);
  if (verb === 'daemon-reload') {
    if (!ctx.root) return fail(ctx, `Failed to reload daemon: ${NOT_AUTHORIZED}`, 1);
    machine.store.update((s) => {
      s.kubelet = { ...s.kubelet, unitPackage: s.packages.kubelet };
    });
    return 0;
  }
  if (verb === undefined) return fail(ctx, 'sim: systemctl without a verb (list-units) is not simulated', 2);
  if (rest.length === 0) return fail(ctx, `Too few arguments.`, 1);
  if (verb === 'is-active') {
    const active = unit === 'kubelet' ? machine.state.kubelet.active : UNITS.has(unit);
    if (!quiet) print(ctx, active ? 'active' : 'inactive');
    return active ? 0 : 3;
  }
  if (verb === 'status') {
    if (!UNITS.has(unit)) return fail(ctx, `Unit ${unit}.service could not be found.`, 4);
    const active = unit === 'kubelet' ? machine.state.kubelet.active : true;
    print(
      ctx,
      `● ${unit}.service`,
      `     Loaded: loaded (/lib/systemd/system/${unit}.service; enabled; preset: enabled)`,
      `     Active: ${active ? 'active (running)' : 'inactive (dead)'}`,
    );
    return active ? 0 : 3;
  }
  if (!UNIT_VERBS.includes(verb)) {
    return fail(ctx, `Unknown command verb '${verb}'.`, 1);
  }
  if (!ctx.root)
    return fail(
      ctx,
      `Failed to ${verb} ${unit}.service: ${NOT_AUTHORIZED}\nSee system logs and 'systemctl status ${unit}.service' for details.`,
      1,
    );
  if (!UNITS.has(unit)) return fail(ctx, `Failed to ${verb} ${unit}.service: Unit ${unit}.service not found.`, 5);
  if (unit !== 'kubelet' || verb === 'enable' || verb === 'disable') return 0;
  if (verb !== 'stop' && machine.state.kubelet.unitPackage !== machine.state.packages.kubelet) {
    ctx.err(
      "Warning: The unit file, source configuration file or drop-ins of kubelet.service changed on disk. Run 'systemctl daemon-reload' to reload units.\n",
    );
  }
  if (verb === 'start' && machine.state.kubelet.active) return 0;
  if (verb !== 'start') {
    try {
      await machine.stopKubelet();
    } catch (err) {
      return fail(ctx, `sim: ${asError(err, 'cluster effect kubeletStopped failed').message}`, 1);
    }
  }
  if (verb !== 'stop') machine.startKubelet();
  return 0;
}

/** `reboot`, `systemctl reboot`, `shutdown -r now`. */
export async function reboot(ctx: CommandContext): Promise<CommandOutcome> {
  if (ctx.argv[0] === 'shutdown' && !ctx.argv.includes('-r')) return fail(ctx, 'sim: only `shutdown -r` is simulated', 2);
  if (!ctx.root) return fail(ctx, `Failed to set wall message, ignoring: ${NOT_AUTHORIZED}\nCall to Reboot failed: ${NOT_AUTHORIZED}`, 1);
  return REBOOT;
}
