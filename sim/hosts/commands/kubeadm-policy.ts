// kubeadm's version checks, with its messages: which versions `kubeadm upgrade apply/plan` accepts
// given the cluster's version and kubeadm's own (kubeadm/app/phases/upgrade/policy.go, in spirit).
import semver from 'semver';

export interface PolicyErrors {
  /** Never bypassable. */
  mandatory: string[];
  /** kubeadm would accept these with --force, which the simulation does not offer. */
  skippable: string[];
}

/** `v1.33.7` or `1.33.7` → the semver, or null. */
export function parseKubernetesVersion(text: string): semver.SemVer | null {
  return /^v?\d+\.\d+\.\d+(-[0-9A-Za-z.-]+)?$/.test(text) ? semver.parse(text.replace(/^v/, '')) : null;
}

export const v = (version: semver.SemVer | string): string =>
  `v${typeof version === 'string' ? version.replace(/^v/, '') : version.version}`;

export function versionPolicy(target: semver.SemVer, cluster: semver.SemVer, kubeadm: semver.SemVer): PolicyErrors {
  const errors: PolicyErrors = { mandatory: [], skippable: [] };
  const to = JSON.stringify(v(target));
  if (target.major !== cluster.major || target.minor > cluster.minor + 1) {
    errors.mandatory.push(`Specified version to upgrade to ${to} is too high; kubeadm can upgrade only 1 minor version at a time`);
  }
  if (semver.gt(target, kubeadm)) {
    const msg = `Specified version to upgrade to ${to} is higher than the kubeadm version ${JSON.stringify(v(kubeadm))}. Upgrade kubeadm first using the tool you used to install kubeadm`;
    // A newer minor than kubeadm itself knows is never allowed; a newer patch only with --force.
    (target.minor > kubeadm.minor || target.major > kubeadm.major ? errors.mandatory : errors.skippable).push(msg);
  }
  if (semver.lt(target, cluster)) {
    errors.skippable.push(
      `Specified version to upgrade to ${to} is equal to or lower than the cluster version ${JSON.stringify(v(cluster))}. Downgrades are not supported yet`,
    );
  }
  if (kubeadm.major > target.major || kubeadm.minor > target.minor) {
    errors.skippable.push(
      `Kubeadm version ${JSON.stringify(v(kubeadm))} can only be used to upgrade to Kubernetes version "v${kubeadm.major}.${kubeadm.minor}"`,
    );
  }
  return errors;
}

/** The block kubeadm prints on stderr when the --version argument fails its checks. */
export function formatPolicyErrors(errors: PolicyErrors): string {
  const list = (items: string[]): string => items.map((e) => `\t- ${e}\n`).join('');
  if (errors.mandatory.length) {
    return `[upgrade/version] FATAL: the --version argument is invalid due to these fatal errors:\n\n${list(errors.mandatory)}${errors.skippable.length ? `\nAlso, these errors were found:\n\n${list(errors.skippable)}` : ''}\nPlease fix the misalignments highlighted above and try upgrading again\nTo see the stack trace of this error execute with --v=5 or higher\n`;
  }
  return `[upgrade/version] FATAL: the --version argument is invalid due to these errors:\n\n${list(errors.skippable)}\nCan be bypassed if you pass the --force flag\nTo see the stack trace of this error execute with --v=5 or higher\n`;
}

export const hasErrors = (errors: PolicyErrors): boolean => errors.mandatory.length + errors.skippable.length > 0;
