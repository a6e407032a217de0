// `kubeadm upgrade plan|apply|node`: checked like kubeadm checks them (root, control plane, version
// policy, --yes), and on success they move the simulated node through ClusterEffects.
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import semver from 'semver';
import { asError } from '../host-machine.js';
import { CONTROL_PLANE_MANIFESTS, imageOfManifest, withImage } from '../static-pod-manifest.js';
import { fail, print, type CommandContext, type CommandOutcome } from './command.js';
import { flagOn, STACK_HINT, type KubeadmArgs } from './kubeadm-args.js';
import { formatPolicyErrors, hasErrors, parseKubernetesVersion, v, versionPolicy } from './kubeadm-policy.js';
import { renderPlan } from './kubeadm-plan.js';

const CONFIG_LINES = [
  '[upgrade/config] Reading configuration from the "kubeadm-config" ConfigMap in namespace "kube-system"...',
  "[upgrade/config] Use 'kubeadm init phase upload-config --config your-config-file' to re-upload it.",
];

/** Root, and for apply/plan a control plane (only there is /etc/kubernetes/admin.conf); null when fine. */
function precondition(ctx: CommandContext, args: KubeadmArgs, needsControlPlane: boolean): number | null {
  if (!ctx.root) {
    return fail(
      ctx,
      '[preflight] Some fatal errors occurred:\n\t[ERROR IsPrivilegedUser]: user is not running as root\n' +
        '[preflight] If you know what you are doing, you can make a check non-fatal with `--ignore-preflight-errors=...`\n' +
        STACK_HINT,
      1,
    );
  }
  if (needsControlPlane && ctx.machine.state.role !== 'control-plane') {
    return fail(
      ctx,
      'couldn\'t create a Kubernetes client from file "/etc/kubernetes/admin.conf": failed to load admin kubeconfig: ' +
        `open /etc/kubernetes/admin.conf: no such file or directory\n${STACK_HINT}`,
      1,
    );
  }
  if (flagOn(args, 'force')) return fail(ctx, 'sim: kubeadm --force is not simulated', 2);
  return null;
}

/** The cluster's version and kubeadm's, or the exit code of the failure already printed. */
async function versions(ctx: CommandContext): Promise<{ cluster: semver.SemVer; kubeadm: semver.SemVer } | number> {
  let clusterText: string;
  try {
    clusterText = await ctx.machine.effects.clusterVersion();
  } catch (err) {
    return fail(ctx, `[upgrade/config] FATAL: ${asError(err, 'failed to get the kubeadm-config ConfigMap').message}\n${STACK_HINT}`, 1);
  }
  const cluster = parseKubernetesVersion(clusterText);
  const kubeadm = parseKubernetesVersion(ctx.machine.installed('kubeadm'));
  if (!cluster || !kubeadm)
    return fail(
      ctx,
      `[upgrade/versions] FATAL: cannot parse versions (cluster "${clusterText}", kubeadm "${ctx.machine.installed('kubeadm')}")`,
      1,
    );
  return { cluster, kubeadm };
}

/** kubeadm's name for a backup dir: `kubeadm-backup-manifests-2026-12-02-01-02-03`. */
const backupStamp = (d: Date) => d.toISOString().slice(0, 19).replace(/[T:]/g, '-');

/**
 * kubeadm's static-pod upgrade on this host: each component's manifest that names another version
 * is backed up under /etc/kubernetes/tmp and rewritten with the new image; resolves once the
 * kubelet (the static-pod model) runs what the manifests now name.
 */
async function upgradeManifests(ctx: CommandContext, version: string): Promise<void> {
  const dir = ctx.machine.hostPath('/etc/kubernetes/manifests');
  const backup = ctx.machine.hostPath(`/etc/kubernetes/tmp/kubeadm-backup-manifests-${backupStamp(new Date())}`);
  for (const component of CONTROL_PLANE_MANIFESTS) {
    const file = join(dir, `${component}.yaml`);
    if (!existsSync(file)) continue;
    const text = readFileSync(file, 'utf8');
    const image = `registry.k8s.io/${component}:v${version}`;
    if (imageOfManifest(text) === image) continue;
    mkdirSync(backup, { recursive: true });
    writeFileSync(join(backup, `${component}.yaml`), text);
    writeFileSync(file, withImage(text, image));
  }
  await ctx.machine.noticeManifests();
}

export async function upgradePlan(ctx: CommandContext, args: KubeadmArgs, rest: string[]): Promise<CommandOutcome> {
  const early = precondition(ctx, args, true);
  if (early !== null) return early;
  print(
    ctx,
    '[preflight] Running pre-flight checks.',
    ...CONFIG_LINES,
    '[upgrade] Running cluster health checks',
    '[upgrade] Fetching available versions to upgrade to',
  );
  const got = await versions(ctx);
  if (typeof got === 'number') return got;
  const target = rest[0] === undefined ? got.kubeadm : parseKubernetesVersion(rest[0]);
  if (!target) return fail(ctx, `[upgrade/versions] FATAL: invalid version "${rest[0]}"\n${STACK_HINT}`, 1);
  const policy = versionPolicy(target, got.cluster, got.kubeadm);
  if (hasErrors(policy)) return fail(ctx, formatPolicyErrors(policy), 1);
  ctx.out(await renderPlan(ctx.machine, got.cluster, got.kubeadm, target));
  return 0;
}

export async function upgradeApply(ctx: CommandContext, args: KubeadmArgs, rest: string[]): Promise<CommandOutcome> {
  const early = precondition(ctx, args, true);
  if (early !== null) return early;
  if (rest[0] === undefined)
    return fail(ctx, `[upgrade] FATAL: missing one or more required arguments. Required arguments: [version]\n${STACK_HINT}`, 1);
  const target = parseKubernetesVersion(rest[0]);
  if (!target) return fail(ctx, `[upgrade/version] FATAL: couldn't parse version "${rest[0]}"\n${STACK_HINT}`, 1);
  print(
    ctx,
    ...CONFIG_LINES,
    '[upgrade/preflight] Running preflight checks',
    '[upgrade] Running cluster health checks',
    `[upgrade/preflight] You have chosen to upgrade the cluster version to "${v(target)}"`,
  );
  const got = await versions(ctx);
  if (typeof got === 'number') return got;
  print(ctx, `[upgrade/versions] Cluster version: ${v(got.cluster)}`, `[upgrade/versions] kubeadm version: ${v(got.kubeadm)}`);
  const policy = versionPolicy(target, got.cluster, got.kubeadm);
  if (hasErrors(policy)) return fail(ctx, formatPolicyErrors(policy), 1);
  const dryRun = flagOn(args, 'dry-run');
  if (!flagOn(args, 'yes') && !dryRun) {
    // No terminal to answer on: kubeadm reads EOF from stdin and stops.
    ctx.out('[upgrade] Are you sure you want to proceed? [y/N]: ');
    return fail(ctx, `\nwon't proceed; the user didn't answer (Y|y) in order to continue\n${STACK_HINT}`, 1);
  }
  print(
    ctx,
    '[upgrade/prepull] Pulling images required for setting up a Kubernetes cluster',
    `[upgrade/control-plane] Upgrading your static Pod-hosted control plane to version "${v(target)}" (timeout: 5m0s)...`,
  );
  if (dryRun) {
    print(ctx, '[dryrun] Finished dryrunning successfully!');
    return 0;
  }
  await ctx.machine.latency('kubeadmApply', ctx.signal);
  try {
    await upgradeManifests(ctx, target.version);
    await ctx.machine.effects.upgradeControlPlane(ctx.machine.name, target.version, { recordClusterVersion: true });
  } catch (err) {
    return fail(ctx, `[upgrade/apply] FATAL: ${asError(err, "couldn't complete the static pod upgrade").message}\n${STACK_HINT}`, 1);
  }
  ctx.machine.store.update((s) => {
    s.nodeConfigVersion = target.version;
  });
  print(
    ctx,
    '[upgrade/kubeconfig] The kubeconfig files for this node were successfully upgraded!',
    '[upgrade/addons] Applied essential addon: CoreDNS',
    '[upgrade/addons] Applied essential addon: kube-proxy',
    '',
    `[upgrade/successful] SUCCESS! Your cluster was upgraded to "${v(target)}". Enjoy!`,
    '',
    "[upgrade/kubelet] Now that your control plane is upgraded, please proceed with upgrading your kubelets if you haven't already done so.",
  );
  return 0;
}

export async function upgradeNode(ctx: CommandContext, args: KubeadmArgs, _rest: string[]): Promise<CommandOutcome> {
  const early = precondition(ctx, args, false);
  if (early !== null) return early;
  print(ctx, ...CONFIG_LINES, '[upgrade/preflight] Running pre-flight checks');
  const got = await versions(ctx);
  if (typeof got === 'number') return got;
  const { cluster, kubeadm } = got;
  if (semver.lt(kubeadm, cluster)) {
    return fail(
      ctx,
      `[upgrade/version] FATAL: the kubeadm version ${JSON.stringify(v(kubeadm))} is lower than the cluster version ${JSON.stringify(v(cluster))}. ` +
        `Upgrade kubeadm first using the tool you used to install kubeadm\n${STACK_HINT}`,
      1,
    );
  }
  if (kubeadm.minor > cluster.minor + 1) {
    return fail(
      ctx,
      `this version of kubeadm only supports deploying clusters with the control plane version >= 1.${kubeadm.minor - 1}.0. Current version: ${v(cluster)}\n${STACK_HINT}`,
      1,
    );
  }
  const controlPlane = ctx.machine.state.role === 'control-plane';
  print(
    ctx,
    controlPlane
      ? '[upgrade/preflight] Pulling images required for setting up a Kubernetes cluster'
      : '[upgrade/preflight] Skipping prepull. Not a control plane node.',
  );
  if (flagOn(args, 'dry-run')) {
    print(ctx, '[dryrun] Finished dryrunning successfully!');
    return 0;
  }
  await ctx.machine.latency('kubeadmNode', ctx.signal);
  if (controlPlane) {
    print(ctx, `[upgrade/control-plane] Upgrading your Static Pod-hosted control plane instance to version "${v(cluster)}"...`);
    try {
      await upgradeManifests(ctx, cluster.version);
      await ctx.machine.effects.upgradeControlPlane(ctx.machine.name, cluster.version, { recordClusterVersion: false });
    } catch (err) {
      return fail(
        ctx,
        `error execution phase control-plane: ${asError(err, "couldn't complete the static pod upgrade").message}\n${STACK_HINT}`,
        1,
      );
    }
  } else print(ctx, '[upgrade] Skipping phase. Not a control plane node.');
  ctx.machine.store.update((s) => {
    s.nodeConfigVersion = cluster.version;
  });
  print(
    ctx,
    '[upgrade/kubelet-config] Writing kubelet configuration to file "/var/lib/kubelet/config.yaml"',
    '[upgrade] The configuration for this node was successfully updated!',
    '[upgrade] Now you should go ahead and upgrade the kubelet package using your package manager.',
  );
  return 0;
}
