import { CORDONED_BY_ANNOTATION, STAGE_LABEL, STAGE_OWNER_ANNOTATION } from '../../activities/node-activities.js';
import { formatAvailability, type AvailabilityReport } from '../../sim/availability-sampler.js';
import { readVersionHistory } from '../../sim/cluster/version-recorder.js';
import { toKubernetesVersion, type CommandLogEntry } from '../../sim/hosts/host-state.js';
import type { Simulation } from '../../sim/simulation.js';
import type { UpgradeStatus } from '../../workflows/rollout-messages.js';
import { judgeVersionHistory } from '../helpers/upgrade-evidence.js';

/**
 * What must hold after an upgrade that was crashed into, however often: each check returns the
 * problems it found, in words that say where to look. Empty: the upgrade kept every promise.
 */

export interface Evidence {
  sim: Simulation;
  /** The hops the upgrade should have gone through, `1.33.7`, `1.34.2`. */
  hops: string[];
  status: UpgradeStatus | undefined;
  failure: string | undefined;
  availability: AvailabilityReport;
}

const PACKAGES = ['kubeadm', 'kubelet', 'kubectl'] as const;
const ok = (e: CommandLogEntry) => e.exitCode === 0;

export async function checkUpgradeOutcome(e: Evidence): Promise<string[]> {
  const problems: string[] = [];
  const target = e.hops.at(-1) as string;
  if (e.failure) problems.push(`the workflow did not complete: ${e.failure}`);
  if (e.status && e.status.phase !== 'done') problems.push(`the workflow ended in phase ${e.status.phase}: ${e.status.outcome ?? ''}`);
  if (e.status && e.status.hops.join(',') !== e.hops.join(','))
    problems.push(`the workflow went through ${e.status.hops.join(' → ')}, not ${e.hops.join(' → ')}`);
  problems.push(...(await checkCluster(e.sim, target)));
  problems.push(...checkHosts(e.sim, e.hops));
  problems.push(...checkHistory(e.sim, e.hops));
  if (e.availability.violated) problems.push(`a PodDisruptionBudget went below its floor:\n${formatAvailability(e.availability)}`);
  if (e.availability.samples < 10) problems.push(`only ${e.availability.samples} availability samples: the PDB check saw too little`);
  return problems;
}

/** Nodes and components as the API shows them. */
async function checkCluster(sim: Simulation, target: string): Promise<string[]> {
  const problems: string[] = [];
  const nodes = (await sim.kube.core.listNode()).items;
  for (const n of nodes) {
    const name = n.metadata?.name ?? '?';
    const kubelet = n.status?.nodeInfo?.kubeletVersion;
    if (kubelet !== `v${target}`) problems.push(`${name}: kubelet ${kubelet}, not v${target}`);
    if (n.spec?.unschedulable)
      problems.push(`${name}: left cordoned (by ${n.metadata?.annotations?.[CORDONED_BY_ANNOTATION] ?? 'someone'})`);
    if (n.metadata?.labels?.[STAGE_LABEL]) problems.push(`${name}: stage label ${n.metadata.labels[STAGE_LABEL]} left`);
    if (n.metadata?.annotations?.[STAGE_OWNER_ANNOTATION] || n.metadata?.annotations?.[CORDONED_BY_ANNOTATION])
      problems.push(`${name}: a skewless annotation left`);
    if (!n.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True')) problems.push(`${name}: not Ready`);
  }
  const mirrors = (await sim.kube.core.listNamespacedPod({ namespace: 'kube-system', labelSelector: 'tier=control-plane,component!=etcd' }))
    .items;
  const controlPlanes = sim.description.nodes.filter((n) => n.role === 'control-plane').map((n) => n.name);
  for (const cp of controlPlanes) {
    const images = mirrors.filter((p) => p.spec?.nodeName === cp).map((p) => p.spec?.containers[0]?.image ?? '?');
    if (images.length !== 3 || !images.every((i) => i.endsWith(`:v${target}`)))
      problems.push(`${cp}: control-plane components ${images.join(', ')}, not all v${target}`);
  }
  const cm = await sim.kube.core.readNamespacedConfigMap({ name: 'kubeadm-config', namespace: 'kube-system' });
  const recorded = /^kubernetesVersion:\s*v?(\S+)\s*$/m.exec(cm.data?.ClusterConfiguration ?? '')?.[1];
  if (recorded !== target) problems.push(`kubeadm-config records ${recorded}, not ${target}`);
  return problems;
}

/**
 * The hosts' own record. `kubeadm upgrade apply`: exactly one run per hop completed on the hosts
 * (status 0 in a host's command log, whether or not the client heard it), on the first control
 * plane. Packages: every package version the upgrade moves a node to was installed by exactly one
 * `apt-get install` that completed, and no other version was installed; each host ends at the target.
 * A control plane moves at every hop; a worker (all start at one version) only at the last (issue 22).
 */
function checkHosts(sim: Simulation, hops: string[]): string[] {
  const problems: string[] = [];
  const target = hops.at(-1) as string;
  const hosts = sim.description.nodes.map((n) => n.name);
  const firstControlPlane = sim.description.nodes.find((n) => n.role === 'control-plane')?.name;
  for (const hop of hops) {
    const applies = hosts.flatMap((h) =>
      sim.hosts
        .commandLog(h)
        .filter((c) => ok(c) && /\bkubeadm upgrade apply v?(\S+)/.exec(c.command)?.[1] === hop)
        .map(() => h),
    );
    if (applies.length !== 1 || applies[0] !== firstControlPlane) {
      problems.push(
        `kubeadm upgrade apply ${hop} completed ${applies.length} time(s) (on ${applies.join(', ') || 'no host'}), not once on ${firstControlPlane}`,
      );
    }
  }
  const roleOf = new Map(sim.description.nodes.map((n) => [n.name, n.role]));
  for (const host of hosts) {
    const installs = new Map<string, number>();
    // A download before the cordon (--download-only) fetches the archives; only the install after it counts.
    const installed = (c: { command: string }) => /\bapt-get install\b/.test(c.command) && !/--download-only\b/.test(c.command);
    for (const c of sim.hosts.commandLog(host).filter((c) => ok(c) && installed(c))) {
      for (const [, pkg, version] of c.command.matchAll(/\b(kubeadm|kubelet|kubectl)=(\S+)/g)) {
        const key = `${pkg}=${toKubernetesVersion(version as string)}`;
        installs.set(key, (installs.get(key) ?? 0) + 1);
      }
    }
    const movesAt = roleOf.get(host) === 'control-plane' ? hops : hops.slice(-1);
    const wanted = movesAt.flatMap((hop) => PACKAGES.map((p) => `${p}=${hop}`));
    for (const key of wanted) {
      const n = installs.get(key) ?? 0;
      if (n !== 1) problems.push(`${host}: ${key} installed ${n} times, not once`);
    }
    for (const [key, n] of installs)
      if (!wanted.includes(key)) problems.push(`${host}: ${key} installed ${n} time(s), not part of the plan`);
    const state = sim.hosts.state(host);
    for (const p of PACKAGES)
      if (toKubernetesVersion(state.packages[p]) !== target) problems.push(`${host}: package ${p} at ${state.packages[p]}, not ${target}`);
    if (state.kubelet.version !== target) problems.push(`${host}: kubelet runs ${state.kubelet.version ?? 'nothing'}, not ${target}`);
  }
  return problems;
}

/**
 * The skew policy in every state the cluster went through, each control plane's kubelet through each
 * hop, and each worker's to the last (workers move as seldom as the policy allows: issue 22).
 */
function checkHistory(sim: Simulation, hops: string[]): string[] {
  const verdict = judgeVersionHistory(readVersionHistory(sim.stateDir));
  const problems = [...verdict.problems];
  for (const n of sim.description.nodes) {
    const seen = verdict.versionsSeen[`kubelets ${n.name}`] ?? [];
    for (const hop of n.role === 'control-plane' ? hops : hops.slice(-1))
      if (!seen.includes(hop)) problems.push(`${n.name}: the recorded kubelet versions ${seen.join(' → ')} skip ${hop}`);
  }
  return problems;
}
