import type { ClusterInventory } from './cluster-inventory.js';
import { SKIP_KUBE_PROXY_PHASE, skipsKubeProxyPhase, type KubeProxyMode } from './kube-proxy-addon.js';
import { etcdPatchHop } from './etcd-patch.js';
import { fullHopWork, hopWork, type HopWork, type WorkerHops } from './hop-work.js';
import { PACKAGE_COMMANDS, type PackageCommands, type PackageManager } from './package-commands.js';
import type { RolloutPlan } from './rollout-plan.js';

/**
 * The ordered steps of an upgrade, per hop, as the workflows will run them. Pure data: the
 * plan command prints it, the step check simulates it, the workflows follow the same order.
 *
 * Order within a hop (kubeadm's, tightened by the skew policy):
 *  [etcd patch, with fixPrerequisites, before the hop whose kubeadm brings etcd 3.6: a snapshot, then
 *  each control plane's etcd member] → backup → kubeadm upgrade plan → stage labels → every control plane's components, one at a time
 *  (`kubeadm upgrade apply` on the first, `kubeadm upgrade node` on the others) → every control
 *  plane's kubelet, one node at a time → gate → canary → gate → batches → post-hop check.
 * Control-plane kubelets move only after every kube-apiserver is at the target: a kubelet must
 * never be newer than the oldest kube-apiserver, and kubeadm points kubelets at the control-plane
 * endpoint, which may be any instance. kube-proxy (a kubeadm addon) moves with the last control
 * plane, as kubeadm ≥ 1.28 does. A worker need not move in every hop (rules/worker-moves.ts): it
 * sits out the hops its kubelet may lag through, and in the hop it moves in goes straight to that
 * hop's version (repository, kubeadm, `kubeadm upgrade node`, kubelet), as kubeadm supports a
 * kubelet up to three minors older than itself.
 */
export type StepAction =
  | 'backup'
  | 'etcd-patch'
  | 'preflight'
  | 'label'
  | 'upgrade-control-plane'
  | 'cordon'
  | 'drain'
  | 'upgrade-node'
  | 'upgrade-kubelet'
  | 'wait-ready'
  | 'uncordon'
  | 'verify'
  | 'gate';

/** What decides kubeadm's kube-proxy phase: the configuration's mode and whether the DaemonSet exists. */
export interface KubeProxyAddon {
  mode: KubeProxyMode;
  daemonSet: boolean;
}

export interface RunbookStep {
  hop: string;
  /** Stage label value of the phase (`control-plane`, `canary`, `batch-1`), or `hop` for hop-wide steps. */
  stage: string;
  action: StepAction;
  node?: string;
  /** What runs on the host, for host steps (informative; activities build the real argv). */
  command?: string;
  /** For upgrade-control-plane: the last control plane also moves the kubeadm addons (kube-proxy). */
  addons?: boolean;
  /** For upgrade-control-plane: this one runs `kubeadm upgrade apply` (the others `kubeadm upgrade node`). */
  apply?: boolean;
  detail: string;
}

/**
 * The first package step of a node in a hop: its repository file (kubernetes.io's layout, one minor
 * per file) pointed at the hop's minor and the metadata refreshed, as the upgrade guide's first
 * step, then kubeadm of the hop.
 */
const newKubeadm = (tools: PackageCommands, hop: string): string => `${tools.pointRepository(hop)} && ${tools.install(hop, ['kubeadm'])}`;

function nodeSteps(tools: PackageCommands, hop: string, stage: string, node: string, worker: boolean): RunbookStep[] {
  const v = hop;
  const steps: RunbookStep[] = [
    { hop, stage, action: 'cordon', node, detail: `cordon ${node} (mark unschedulable; pods keep running)` },
    {
      hop,
      stage,
      action: 'drain',
      node,
      detail: `drain ${node} through the Eviction API (PodDisruptionBudgets honoured, DaemonSet pods left)`,
    },
  ];
  if (worker) {
    steps.push({
      hop,
      stage,
      action: 'upgrade-node',
      node,
      command: `${newKubeadm(tools, v)} && kubeadm upgrade node`,
      detail: `package repository of ${node} at the hop's minor, kubeadm ${v}, then kubeadm upgrade node (kubelet configuration)`,
    });
  }
  steps.push(
    {
      hop,
      stage,
      action: 'upgrade-kubelet',
      node,
      command: `${tools.install(v, ['kubelet', 'kubectl'])} && systemctl daemon-reload && systemctl restart kubelet`,
      detail: `kubelet and kubectl ${v} on ${node}, restart kubelet`,
    },
    { hop, stage, action: 'wait-ready', node, detail: `wait until ${node} is Ready with kubelet v${v}` },
    { hop, stage, action: 'uncordon', node, detail: `uncordon ${node}` },
  );
  return steps;
}

/** The etcd snapshot on the first control plane. */
function snapshotStep(hop: string, first: string | undefined, detail: string): RunbookStep {
  return { hop, stage: 'hop', action: 'backup', node: first, command: 'etcdctl snapshot save … && etcdctl snapshot status …', detail };
}

/**
 * The etcd patch step's rows (rules/etcd-patch.ts, run by the upgrade workflow's patchEtcd): a
 * snapshot, then each control plane's stacked member below `target` moved to it, etcd's health and
 * quorum checked after each. Which members move and their order (followers first, the leader last)
 * are read when the step runs; the rows name every control plane in the rollout's order.
 */
function etcdPatchSteps(hop: string, controlPlanes: readonly string[], target: string): RunbookStep[] {
  const [first] = controlPlanes;
  return [
    snapshotStep(
      hop,
      first,
      `etcd snapshot on ${first} before the etcd patch (--fix-prerequisites: etcd 3.6 needs every member at 3.5.26 or newer)`,
    ),
    ...controlPlanes.map((node): RunbookStep => ({
      hop,
      stage: 'hop',
      action: 'etcd-patch',
      node,
      command: `image of /etc/kubernetes/manifests/etcd.yaml → ${target} && etcdctl endpoint status --cluster`,
      detail: `etcd member on ${node} to ${target} if below it (one member at a time, followers first, the leader last), then every member up with one leader`,
    })),
  ];
}

/** A hop's opening: the etcd snapshot, the pre-flight (when a control plane moves), the stage labels. */
function hopOpeningSteps(
  tools: PackageCommands,
  hop: string,
  first: string | undefined,
  work: HopWork,
  rollout: RolloutPlan,
): RunbookStep[] {
  return [
    snapshotStep(hop, first, `etcd snapshot on ${first}, verified and copied off the node`),
    // kubeadm plans only up to its own version: the first control plane gets the new kubeadm first.
    ...(work.controlPlanes.length > 0
      ? [
          {
            hop,
            stage: 'hop',
            action: 'preflight' as const,
            node: first,
            command: `${newKubeadm(tools, hop)} && kubeadm upgrade plan v${hop}`,
            detail: `pre-flight: skew now and for every step, PDB audit, all nodes Ready, package repository of ${first} at the hop's minor, kubeadm ${hop} and kubeadm upgrade plan on ${first}`,
          },
        ]
      : []),
    { hop, stage: 'hop', action: 'label', detail: `label nodes with their stage (${Object.keys(rollout.stageLabels).length} nodes)` },
  ];
}

/**
 * kubeadm on each control plane that moves (apply on the first, addons after the last), each verified;
 * `skipProxy`: apply and every control plane's `upgrade node` skip kube-proxy's addon phase (rules/kube-proxy-addon.ts):
 * kubeadm moves the addons at whichever runs once every control plane is at the hop.
 */
function controlPlaneSteps(tools: PackageCommands, hop: string, work: HopWork, skipProxy: boolean): RunbookStep[] {
  return work.controlPlanes.flatMap((node, i): RunbookStep[] => {
    const isFirst = i === 0 && work.apply;
    const isLast = i === work.controlPlanes.length - 1;
    return [
      {
        hop,
        stage: 'control-plane',
        action: 'upgrade-control-plane',
        node,
        addons: isLast,
        ...(isFirst ? { apply: true } : {}),
        command:
          `${newKubeadm(tools, hop)} && ` +
          (isFirst ? `kubeadm upgrade apply v${hop} --yes` : 'kubeadm upgrade node') +
          (skipProxy ? ` ${SKIP_KUBE_PROXY_PHASE}` : ''),
        detail: `control-plane components of ${node} to v${hop}` + (isLast ? addonsDetail(skipProxy) : ''),
      },
      { hop, stage: 'control-plane', action: 'verify', node, detail: `control-plane health on ${node}: /readyz, mirror pods at v${hop}` },
    ];
  });
}

/** What the last control plane's kubeadm does with the addons. */
function addonsDetail(skipProxy: boolean): string {
  return skipProxy
    ? ', then kubeadm addons (CoreDNS; kube-proxy phase skipped: the cluster runs without it)'
    : ', then kubeadm addons (kube-proxy)';
}

/** Each worker phase with a node that moves: its nodes' steps, the workloads verified, the canary's gate. */
function workerPhaseSteps(tools: PackageCommands, hop: string, rollout: RolloutPlan, moves: Set<string>): RunbookStep[] {
  const steps: RunbookStep[] = [];
  for (const phase of rollout.phases) {
    if (phase.kind === 'control-plane' || !phase.nodes.some((n) => moves.has(n))) continue;
    for (const node of phase.nodes.filter((n) => moves.has(n))) steps.push(...nodeSteps(tools, hop, phase.stage, node, true));
    steps.push({
      hop,
      stage: phase.stage,
      action: 'verify',
      detail: `verify workloads after ${phase.stage} (Deployments/StatefulSets available, DaemonSets rolled)`,
    });
    if (phase.kind === 'canary') {
      steps.push({ hop, stage: phase.stage, action: 'gate', detail: 'gate: approval or soak time after the canary' });
    }
  }
  return steps;
}

/**
 * `from`: the versions before the first hop. With it, each hop leaves out what is already at its
 * version (`hopWork`): a run that finishes nodes an earlier run left behind. Without it every node
 * moves in every hop. `workerHops`: the hops at which each worker's kubelet moves (planWorkerHops:
 * once, to the last hop, when the skew policy allows); without it every worker moves in every hop.
 * A hop in which no worker moves has no workers' gate and no worker phase: its control planes only.
 * `etcdPatch`: the etcd patch step runs (policy fixPrerequisites) with that target tag, before the
 * first hop whose kubeadm brings etcd 3.6 (etcdPatchHop), as the upgrade workflow runs it.
 * `kubeProxy`: the configuration's addons.kubeProxy and whether the DaemonSet exists: `upgrade apply`
 * shows `--skip-phases=addon/kube-proxy` where the activity will add it (rules/kube-proxy-addon.ts).
 */
export function buildRunbook(
  hops: readonly string[],
  rollout: RolloutPlan,
  packageManager: PackageManager = 'apt',
  from?: ClusterInventory,
  workerHops?: WorkerHops,
  etcdPatch?: { target: string },
  kubeProxy?: KubeProxyAddon,
): RunbookStep[] {
  const tools = PACKAGE_COMMANDS[packageManager];
  const skipProxy = (hop: string) => kubeProxy !== undefined && skipsKubeProxyPhase(kubeProxy.mode, kubeProxy.daemonSet, hop);
  const steps: RunbookStep[] = [];
  const [first] = rollout.controlPlanes;
  let state = from;
  const patchBefore = etcdPatch ? etcdPatchHop(hops) : undefined;
  for (const hop of hops) {
    const hopStart = steps.length;
    if (etcdPatch && hop === patchBefore) steps.push(...etcdPatchSteps(hop, rollout.controlPlanes, etcdPatch.target));
    const work = state ? hopWork(state, hop, rollout, workerHops) : fullHopWork(hop, rollout, workerHops);
    const moves = new Set(work.kubelets);
    const workers = rollout.phases.filter((p) => p.kind !== 'control-plane').flatMap((p) => p.nodes);
    steps.push(...hopOpeningSteps(tools, hop, first, work, rollout), ...controlPlaneSteps(tools, hop, work, skipProxy(hop)));
    for (const node of rollout.controlPlanes.filter((n) => moves.has(n)))
      steps.push(...nodeSteps(tools, hop, 'control-plane', node, false));
    if (!workerHops || workers.some((n) => moves.has(n)))
      steps.push({ hop, stage: 'control-plane', action: 'gate', detail: 'gate: approval before the workers (if the policy asks)' });
    steps.push(...workerPhaseSteps(tools, hop, rollout, moves));
    steps.push({ hop, stage: 'hop', action: 'verify', detail: `post-hop check: full skew check and workload health at v${hop}` });
    if (state) state = steps.slice(hopStart).reduce(applyStep, state);
  }
  return steps;
}

/** The inventory after a step: what that step changes, and nothing else. */
export function applyStep(inventory: ClusterInventory, step: RunbookStep): ClusterInventory {
  const set = (entries: ClusterInventory['apiservers'] | undefined, when: (node: string) => boolean) =>
    entries?.map((e) => (when(e.node) ? { node: e.node, version: step.hop } : e));
  if (step.action === 'upgrade-control-plane') {
    const here = (n: string) => n === step.node;
    return {
      ...inventory,
      apiservers: set(inventory.apiservers, here) ?? [],
      controllerManagers: set(inventory.controllerManagers, here),
      schedulers: set(inventory.schedulers, here),
      kubeProxies: step.addons ? set(inventory.kubeProxies, () => true) : inventory.kubeProxies,
    };
  }
  if (step.action === 'upgrade-kubelet') {
    // One entry replaced in a copy (not a map over every entry with a closure): the runbook check
    // applies one such step per worker, so at 2,500 workers this runs 2,500 times over 2,500 kubelets.
    const moved = { node: step.node as string, version: step.hop };
    const replaced = (entries: ClusterInventory['kubelets']) => {
      const i = entries?.findIndex((e) => e.node === moved.node) ?? -1;
      if (!entries || i < 0) return undefined;
      const copy = entries.slice();
      copy[i] = moved;
      return copy;
    };
    return {
      ...inventory,
      kubelets: replaced(inventory.kubelets) ?? [...(inventory.kubelets ?? []), moved],
      kubectl: inventory.kubectl && (replaced(inventory.kubectl) ?? inventory.kubectl),
    };
  }
  return inventory;
}
