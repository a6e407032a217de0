/**
 * The package commands a runbook shows for a node's package tools, as kubernetes.io's "Upgrading
 * kubeadm clusters" writes them (informative: the activities build the real argv), except the
 * refresh: skewless refreshes the Kubernetes source alone (another source's failure is not the hop's),
 * so the runbook shows that, not the guide's full `apt-get update` / `dnf makecache`.
 */
export const PACKAGE_MANAGERS = ['apt', 'dnf'] as const;
export type PackageManager = (typeof PACKAGE_MANAGERS)[number];

const minorOfHop = (hop: string): string => hop.split('.').slice(0, 2).join('.');

export interface PackageCommands {
  /** The first package step of a node in a hop: the repository file at the hop's minor, its metadata alone refreshed. */
  pointRepository(hop: string): string;
  install(hop: string, packages: readonly string[]): string;
}

export const PACKAGE_COMMANDS: Record<PackageManager, PackageCommands> = {
  apt: {
    pointRepository: (hop) =>
      `point kubernetes.list at v${minorOfHop(hop)} && apt-get update -o Dir::Etc::SourceList=/etc/apt/sources.list.d/kubernetes.list -o Dir::Etc::SourceParts=-`,
    install: (hop, packages) => `apt-get install ${packages.map((p) => `${p}=${hop}-*`).join(' ')}`,
  },
  dnf: {
    pointRepository: (hop) => `point kubernetes.repo at v${minorOfHop(hop)} && dnf makecache --repo=kubernetes`,
    install: (hop, packages) => `dnf install --disableexcludes=kubernetes ${packages.map((p) => `${p}-${hop}-*`).join(' ')}`,
  },
};
