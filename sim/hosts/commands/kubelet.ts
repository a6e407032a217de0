// The Kubernetes binaries besides kubeadm, for their version: what the INSTALLED package would print.
import { fail, print, type CommandContext, type CommandOutcome } from './command.js';

export async function kubelet(ctx: CommandContext): Promise<CommandOutcome> {
  if (ctx.argv[1] === '--version' || ctx.argv[1] === '--version=true') {
    print(ctx, `Kubernetes v${ctx.machine.installed('kubelet')}`);
    return 0;
  }
  return fail(ctx, "sim: only 'kubelet --version' is simulated; the kubelet runs as a systemd unit", 2);
}

export async function kubectl(ctx: CommandContext): Promise<CommandOutcome> {
  const args = ctx.argv.slice(1);
  if (args[0] === 'version' && args.includes('--client')) {
    const version = `v${ctx.machine.installed('kubectl')}`;
    if (args.includes('-o=json') || args.join(' ').includes('-o json') || args.includes('--output=json')) {
      print(ctx, JSON.stringify({ clientVersion: { gitVersion: version, platform: 'linux/amd64' }, kustomizeVersion: 'v5.6.0' }, null, 2));
    } else print(ctx, `Client Version: ${version}`, 'Kustomize Version: v5.6.0');
    return 0;
  }
  return fail(ctx, "sim: only 'kubectl version --client' is simulated on hosts; talk to the API server instead", 2);
}
