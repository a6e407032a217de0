// `kubeadm`, the model: `version` reports the INSTALLED package (so upgrading the package is what
// changes it); `upgrade plan|apply|node` live in kubeadm-upgrade.ts. A per-node simulation runs the
// real kubeadm instead (kubeadm-real.ts).
import { fail, print, type CommandContext, type CommandOutcome } from './command.js';
import { certsCheckExpiration } from './kubeadm-certs.js';
import { runRealKubeadm } from './kubeadm-real.js';
import { upgradeApply, upgradeNode, upgradePlan } from './kubeadm-upgrade.js';
import { parseKubeadmArgs, STACK_HINT } from './kubeadm-args.js';

export async function kubeadm(ctx: CommandContext): Promise<CommandOutcome> {
  const real = ctx.machine.config.realKubeadm;
  const binary = real?.binary(ctx.machine.installed('kubeadm'));
  if (real && binary) return runRealKubeadm(ctx, binary, real.scratchDir);
  const parsed = parseKubeadmArgs(ctx.argv.slice(1));
  if (typeof parsed === 'string') return fail(ctx, `${parsed}\n${STACK_HINT}`, 1);
  const [command, sub, ...rest] = parsed.positional;
  const installed = ctx.machine.installed('kubeadm');
  if (command === 'version') {
    const output = parsed.flags.get('output');
    if (output === 'short') print(ctx, `v${installed}`);
    else if (output === 'json' || output === 'yaml') {
      const info = versionInfo(installed);
      print(
        ctx,
        output === 'json'
          ? JSON.stringify({ clientVersion: info }, null, 2)
          : `clientVersion:\n${Object.entries(info)
              .map(([k, val]) => `  ${k}: ${JSON.stringify(val)}`)
              .join('\n')}`,
      );
    } else if (output === undefined) {
      const info = versionInfo(installed);
      print(
        ctx,
        `kubeadm version: &version.Info{${Object.entries(info)
          .map(([k, val]) => `${k[0]!.toUpperCase()}${k.slice(1)}:${JSON.stringify(val)}`)
          .join(', ')}}`,
      );
    } else return fail(ctx, `error: invalid output format: ${output}\n${STACK_HINT}`, 1);
    return 0;
  }
  if (command === 'upgrade') {
    if (sub === 'plan') return upgradePlan(ctx, parsed, rest);
    if (sub === 'apply') return upgradeApply(ctx, parsed, rest);
    if (sub === 'node') return upgradeNode(ctx, parsed, rest);
    if (sub === undefined) {
      print(ctx, 'Upgrade your cluster smoothly to a newer version with this command', '', 'Usage:', '  kubeadm upgrade [command]');
      return 0;
    }
    return fail(ctx, `error: unknown command "${sub}" for "kubeadm upgrade"\n${STACK_HINT}`, 1);
  }
  if (command === 'certs' && sub === 'check-expiration' && rest.length === 0) return certsCheckExpiration(ctx, parsed);
  if (command === undefined) {
    print(ctx, 'kubeadm: easily bootstrap a secure Kubernetes cluster', '', 'Usage:', '  kubeadm [command]');
    return 0;
  }
  return fail(ctx, `unknown command "${command}" for "kubeadm"\n${STACK_HINT}`, 1);
}

function versionInfo(installed: string): Record<string, string> {
  const [major = '1', minor = '0'] = installed.split('.');
  return {
    major,
    minor,
    gitVersion: `v${installed}`,
    gitCommit: '0000000000000000000000000000000000000000',
    gitTreeState: 'clean',
    buildDate: '2025-01-01T00:00:00Z',
    goVersion: 'go1.24.0',
    compiler: 'gc',
    platform: 'linux/amd64',
  };
}
