// `kubeadm upgrade plan|apply|node` on a node. apply/node first look at the cluster through the API
// (kubeadm-config's version, the node's mirror-pod images) and do nothing when it is already there.
import { ApplicationFailure } from '@temporalio/activity';
import { compareVersions, parseVersion } from '../rules/index.js';
import type { ClusterAccess } from './cluster-access.js';
import { ErrorType } from './errors.js';
import { heartbeatWhile, hostActivityScope, type HostActivityScope } from './host-activity-context.js';
import { pollUntil } from '../tooling/poll-until.js';
import {
  awaitQuietHost,
  checkNode,
  checkVersion,
  clusterVersion,
  commandFailed,
  controlPlaneVersions,
  invalid,
  readNodeState,
  run,
} from './host-commands.js';
import { kubeProxyPhaseFlags } from './kube-proxy-addon.js';
import { parseKubeadmUpgradePlan, type KubeadmUpgradePlan } from './parsers/kubeadm-upgrade-plan.js';

// Timeouts come from the cluster configuration (timeouts.kubeadm*Seconds), each below its activity profile's startToClose.
const ms = (seconds: number): number => seconds * 1000;
const COMPONENTS = ['kube-apiserver', 'kube-controller-manager', 'kube-scheduler'];
/** How long apply/node wait for a kubeadm an earlier attempt left running before they look (awaitQuietHost). */
const EARLIER_KUBEADM_MS = 8 * 60_000;

export interface KubeadmStepResult {
  node: string;
  version: string;
  /** False when the cluster was already at the version and nothing ran on the host. */
  ran: boolean;
  /** Control-plane component versions on the node afterwards (empty on a worker). */
  components: Record<string, string>;
}

export interface KubeadmUpgradePlanResult extends KubeadmUpgradePlan {
  node: string;
  version: string;
}

export async function kubeadmUpgradePlan(
  access: ClusterAccess,
  input: { node: string; version: string },
): Promise<KubeadmUpgradePlanResult> {
  const node = checkNode(input.node);
  const version = checkVersion(input.version);
  const scope = hostActivityScope();
  const r = await run(access, node, ['kubeadm', 'upgrade', 'plan', `v${version}`], {
    timeoutMs: ms(access.config.timeouts.kubeadmPlanSeconds),
    sudo: true,
    signal: scope.signal,
  });
  return { node, version, ...parseKubeadmUpgradePlan(r.stdout) };
}

/** No control-plane downgrade: going back means restoring the etcd snapshot. */
function refuseDowngrade(cluster: string | undefined, version: string): void {
  if (cluster !== undefined && compareVersions(parseVersion(cluster), parseVersion(version)) > 0) {
    throw invalid(
      `the cluster is at ${cluster}, newer than ${version}: kubeadm never downgrades a control plane; restore the etcd snapshot instead`,
    );
  }
}

const atVersion = (components: Record<string, string>, version: string): boolean => COMPONENTS.every((c) => components[c] === version);

/** Waits for the mirror pods to show the version, heartbeating: the wait can outlast a heartbeat timeout. */
async function awaitComponents(
  access: ClusterAccess,
  node: string,
  version: string,
  scope: HostActivityScope,
): Promise<Record<string, string>> {
  const step = { node, step: `wait for control-plane pods at v${version}` };
  scope.heartbeat(step);
  return pollUntil(
    () => controlPlaneVersions(access, node),
    (components) => atVersion(components, version),
    (components) => {
      throw ApplicationFailure.create({
        type: ErrorType.Unhealthy,
        message: `control plane on ${node} is not at ${version} 2 minutes after kubeadm finished: ${JSON.stringify(components)}`,
      });
    },
    { timeoutMs: 120_000, intervalMs: 1000, signal: scope.signal, onPending: () => scope.heartbeat(step) },
  );
}

export async function kubeadmUpgradeApply(access: ClusterAccess, input: { node: string; version: string }): Promise<KubeadmStepResult> {
  const node = checkNode(input.node);
  const version = checkVersion(input.version);
  const scope = hostActivityScope();
  const look = async () => ({ components: await controlPlaneVersions(access, node), cluster: await clusterVersion(access) });
  let now = await look();
  const done = () => now.cluster === version && atVersion(now.components, version);
  if (done()) return { node, version, ran: false, components: now.components };
  refuseDowngrade(now.cluster, version);
  if (Object.keys(now.components).length === 0)
    throw invalid(`${node} runs no control-plane mirror pods: kubeadm upgrade apply belongs on the first control plane`);
  // A kubeadm an earlier attempt left running may be doing this very upgrade: its outcome decides.
  if (await awaitQuietHost(access, node, ['kubeadm'], EARLIER_KUBEADM_MS, scope)) {
    now = await look();
    if (done()) return { node, version, ran: false, components: now.components };
  }
  const argv = ['kubeadm', 'upgrade', 'apply', `v${version}`, '--yes', ...(await kubeProxyPhaseFlags(access.kube, access.config, version))];
  const result = await heartbeatWhile(
    scope,
    () => ({ node, step: 'kubeadm upgrade apply' }),
    access.shell.exec(node, argv, { timeoutMs: ms(access.config.timeouts.kubeadmApplySeconds), sudo: true, signal: scope.signal }),
  );
  if (result.exitCode !== 0) throw commandFailed(node, argv, result);
  return { node, version, ran: true, components: await awaitComponents(access, node, version, scope) };
}

/**
 * Control plane: done when its mirror pods run the version. Worker: done once its kubelet reports the
 * version (`upgrade node` precedes the kubelet package); before that, re-running it is harmless.
 */
export async function kubeadmUpgradeNode(access: ClusterAccess, input: { node: string; version: string }): Promise<KubeadmStepResult> {
  const node = checkNode(input.node);
  const version = checkVersion(input.version);
  const scope = hostActivityScope();
  let before = await controlPlaneVersions(access, node);
  const controlPlane = Object.keys(before).length > 0;
  const done = async () => (controlPlane ? atVersion(before, version) : (await readNodeState(access, node)).kubeletVersion === version);
  if (await done()) return { node, version, ran: false, components: before };
  const cluster = await clusterVersion(access);
  refuseDowngrade(cluster, version);
  if (cluster !== version) {
    throw invalid(
      `the cluster is at ${cluster ?? 'an unknown version'}, not ${version}: run kubeadm upgrade apply on the first control plane before upgrading ${node}`,
    );
  }
  // A kubeadm an earlier attempt left running may be doing this very step: its outcome decides.
  if (await awaitQuietHost(access, node, ['kubeadm'], EARLIER_KUBEADM_MS, scope)) {
    before = await controlPlaneVersions(access, node);
    if (await done()) return { node, version, ran: false, components: before };
  }
  // A control plane's `upgrade node` may be the last one, which moves the addons: it skips kube-proxy's as apply does.
  const flags = controlPlane ? await kubeProxyPhaseFlags(access.kube, access.config, version) : [];
  await run(access, node, ['kubeadm', 'upgrade', 'node', ...flags], {
    timeoutMs: ms(access.config.timeouts.kubeadmNodeSeconds),
    sudo: true,
    signal: scope.signal,
  });
  return { node, version, ran: true, components: controlPlane ? await awaitComponents(access, node, version, scope) : {} };
}
