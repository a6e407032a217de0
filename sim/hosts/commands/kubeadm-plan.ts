// The text of `kubeadm upgrade plan`, laid out like kubeadm's tables. The host only knows its own
// node, so the kubelet and control-plane rows name this node alone.
import semver from 'semver';
import type { HostMachine } from '../host-machine.js';
import { releasedVersions } from './apt-repository.js';
import { toKubernetesVersion } from '../host-state.js';
import { v } from './kubeadm-policy.js';

const RULE = '_____________________________________________________________________';

/** Columns padded to the widest cell plus three spaces, as kubeadm's tabwriter does. */
function table(rows: string[][]): string {
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => (r[i] ?? '').length)));
  return rows
    .map((r) =>
      r
        .map((cell, i) => (i === r.length - 1 ? cell : cell.padEnd(widths[i]! + 3)))
        .join('')
        .trimEnd(),
    )
    .join('\n');
}

export async function renderPlan(
  machine: HostMachine,
  cluster: semver.SemVer,
  kubeadm: semver.SemVer,
  target: semver.SemVer,
): Promise<string> {
  const node = machine.name;
  const latestInSeries =
    releasedVersions(machine)
      .map(toKubernetesVersion)
      .filter((ver) => semver.valid(ver) && semver.major(ver) === cluster.major && semver.minor(ver) === cluster.minor)[0] ??
    cluster.version;
  const head = [
    `[upgrade/versions] Cluster version: ${v(cluster)}`,
    `[upgrade/versions] kubeadm version: ${v(kubeadm)}`,
    `[upgrade/versions] Target version: ${v(target)}`,
    `[upgrade/versions] Latest version in the v${cluster.major}.${cluster.minor} series: ${v(latestInSeries)}`,
    '',
  ].join('\n');
  if (semver.eq(target, cluster)) return `${head}\nAwesome, you're up-to-date! Enjoy!\n`;

  const kubelet = machine.state.kubelet.version ?? machine.installed('kubelet');
  const components = await machine.effects.controlPlaneVersions(node);
  const componentRows = Object.keys(components)
    .sort()
    .map((name) => [name, node, v(components[name]!), v(target)]);
  const sections = [
    "Components that must be upgraded manually after you have upgraded the control plane with 'kubeadm upgrade apply':",
    table([
      ['COMPONENT', 'NODE', 'CURRENT', 'TARGET'],
      ['kubelet', node, v(kubelet), v(target)],
    ]),
    '',
    'Upgrade to the latest stable version:',
    '',
    table([['COMPONENT', 'NODE', 'CURRENT', 'TARGET'], ...componentRows, ['kube-proxy', '', v(cluster), v(target)]]),
    '',
    'You can now apply the upgrade by executing the following command:',
    '',
    `\tkubeadm upgrade apply ${v(target)}`,
    '',
    RULE,
    '',
    'The table below shows the current state of component configs as understood by this version of kubeadm.',
    'Configs that have a "yes" mark in the "MANUAL UPGRADE REQUIRED" column require manual config upgrade or',
    'resetting to kubeadm defaults before a successful upgrade can be performed. The version to manually',
    'upgrade to is denoted in the "PREFERRED VERSION" column.',
    '',
    table([
      ['API GROUP', 'CURRENT VERSION', 'PREFERRED VERSION', 'MANUAL UPGRADE REQUIRED'],
      ['kubeproxy.config.k8s.io', 'v1alpha1', 'v1alpha1', 'no'],
      ['kubelet.config.k8s.io', 'v1beta1', 'v1beta1', 'no'],
    ]),
    RULE,
    '',
  ];
  return `${head}\n${sections.join('\n')}`;
}
