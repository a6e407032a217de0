// kubeadm's command line as the model reads it: what `kubeadm` (kubeadm.ts) and its `upgrade` subcommands
// (kubeadm-upgrade.ts) share, in a module of its own so that neither imports the other back.
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
