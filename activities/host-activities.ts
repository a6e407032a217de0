// The host side of an upgrade as activities: each takes one input object starting with the cluster's
// name, resolves the cluster's access on the worker, and returns plain JSON.
import type { ClusterResolver } from './cluster-access.js';
import { kubeadmUpgradeApply, kubeadmUpgradeNode, kubeadmUpgradePlan } from './host-kubeadm.js';
import { rebootNode, restartKubelet } from './host-kubelet.js';
import {
  downgradePackages,
  downloadPackages,
  installPackages,
  readPackageHolds,
  restorePackageHolds,
  type KubePackage,
} from './host-packages.js';
import { availableVersions, pointPackageRepository } from './package-repository.js';

export type { KubeadmStepResult, KubeadmUpgradePlanResult } from './host-kubeadm.js';
export type { RebootNodeResult, RestartKubeletResult } from './host-kubelet.js';
export type { DownloadPackagesResult, InstallPackagesResult, KubePackage, PackageHolds, RestoreHoldsResult } from './host-packages.js';
export type { PointRepositoryResult } from './package-repository.js';

export interface NodeInput {
  cluster: string;
  node: string;
}

export interface NodeVersionInput extends NodeInput {
  /** `1.33.7` or `v1.33.7`; validated with the rules' parseVersion before use. */
  version: string;
}

export function createHostActivities(deps: { clusters: ClusterResolver }) {
  const access = (cluster: string) => deps.clusters(cluster);
  return {
    /**
     * Kubernetes versions the node can install, newest first: its repository's, and the next minors'
     * (looked at without changing the node). `to`, the target when known, names a repository file
     * that cannot offer it in the failure.
     */
    availableVersions: async (input: NodeInput & { to?: string }) => availableVersions(access(input.cluster), input),
    /** The node's repository file pointed at the version's minor (the first step of a hop on a node), lists refreshed. */
    pointPackageRepository: async (input: NodeVersionInput) => pointPackageRepository(access(input.cluster), input),
    /** Exact package versions with holds; nothing changes when already there; never a downgrade. */
    installPackages: async (input: NodeVersionInput & { packages: KubePackage[] }) => installPackages(access(input.cluster), input),
    /** Exact older package versions after a trial's rollback (issue 36), holds as an install's; nothing when already there. */
    downgradePackages: async (input: NodeVersionInput & { packages: KubePackage[] }) => downgradePackages(access(input.cluster), input),
    /** The Kubernetes packages the node holds (apt-mark, or kubernetes.repo's exclude=): read before a run changes any. */
    readPackageHolds: async (input: NodeInput) => readPackageHolds(access(input.cluster), input),
    /** The holds read before a run put back where the node lost them (an install that did not finish); none added. */
    restorePackageHolds: async (input: NodeInput & { held: KubePackage[] }) => restorePackageHolds(access(input.cluster), input),
    /** The archives of packages not at the version yet, fetched into the package cache, nothing installed. */
    downloadPackages: async (input: NodeVersionInput & { packages: KubePackage[] }) => downloadPackages(access(input.cluster), input),
    /** `kubeadm upgrade plan v<version>`, parsed. */
    kubeadmUpgradePlan: async (input: NodeVersionInput) => kubeadmUpgradePlan(access(input.cluster), input),
    /** `kubeadm upgrade apply v<version> --yes` unless the control plane is already there. */
    kubeadmUpgradeApply: async (input: NodeVersionInput) => kubeadmUpgradeApply(access(input.cluster), input),
    /** `kubeadm upgrade node` unless the node is already there. */
    kubeadmUpgradeNode: async (input: NodeVersionInput) => kubeadmUpgradeNode(access(input.cluster), input),
    /** daemon-reload + restart, then wait until Ready at the version; skipped when already so. */
    restartKubelet: async (input: NodeVersionInput & { timeoutSeconds: number }) => restartKubelet(access(input.cluster), input),
    /** Reboot, then wait for SSH and Ready. */
    rebootNode: async (input: NodeInput & { command?: string[]; timeoutSeconds: number }) => rebootNode(access(input.cluster), input),
  };
}

export type HostActivities = ReturnType<typeof createHostActivities>;
