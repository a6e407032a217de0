// `kubeadm`, the model: `version` reports the INSTALLED package (so upgrading the package is what
// changes it); `upgrade plan|apply|node` live in kubeadm-upgrade.ts. A per-node simulation runs the
// real kubeadm instead (kubeadm-real.ts).
import { fail, print, type CommandContext, type CommandOutcome } from './command.js';
import { certsCheckExpiration } from './kubeadm-certs.js';
import { runRealKubeadm } from './kubeadm-real.js';
import { upgradeApply, upgradeNode, upgradePlan } from './kubeadm-upgrade.js';

export interface KubeadmArgs {
  positional: string[];
  flags: Map<string, string>;
}

const VALUE_FLAGS = new Set([
  'config',
  'v',
  'ignore-preflight-errors',
  'patches',
  'output',
  'o',
  'kubeconfig',
  'skip-phases',
  'feature-gates',
  'cert-dir',
]);
const BOOL_FLAGS = new Set([
  'yes',
  'y',
  'dry-run',
  'force',
  'f',
  'certificate-renewal',
  'etcd-upgrade',
  'allow-experimental-upgrades',
  'allow-release-candidate-upgrades',
  'print-config',
  'allow-missing-template-keys',
  'show-managed-fields',
]);
const SHORT: Record<string, string> = { y: 'yes', f: 'force', o: 'output' };

/** Cobra-style flags: `--name=value`, `--name value`, `-y`; an unknown flag is cobra's error. */
export function parseKubeadmArgs(args: readonly string[]): KubeadmArgs | string {
  const parsed: KubeadmArgs = { positional: [], flags: new Map() };
  for (let i = 0; i < args.length; i++) {
    const a = args[i]!;
    if (!a.startsWith('-') || a === '-') {
      parsed.positional.push(a);
      continue;
    }
    const [rawName = '', inline] = a.replace(/^--?/, '').split(/=(.*)/s, 2);
    const name = SHORT[rawName] ?? rawName;
    if (BOOL_FLAGS.has(name)) parsed.flags.set(name, inline ?? 'true');
    else if (VALUE_FLAGS.has(name)) {
      const value = inline ?? args[++i];
      if (value === undefined) return `error: flag needs an argument: ${a}`;
      parsed.flags.set(name, value);
    } else
      return `error: unknown ${a.startsWith('--') ? 'flag' : 'shorthand flag'}: ${a.startsWith('--') ? a.split('=')[0] : `'${rawName}' in ${a}`}`;
  }
  return parsed;
}

export const flagOn = (args: KubeadmArgs, name: string): boolean => {
  const value = args.flags.get(name);
  return value !== undefined && value !== 'false';
};

export const STACK_HINT = 'To see the stack trace of this error execute with --v=5 or higher';

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
