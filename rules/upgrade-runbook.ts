import type { ClusterInventory } from './cluster-inventory.js';
import { fullHopWork, hopWork, type WorkerHops } from './hop-work.js';
import { PACKAGE_COMMANDS, type PackageCommands, type PackageManager } from './package-commands.js';
import type { RolloutPlan } from './rollout-plan.js';

/**
 * The ordered steps of an upgrade, per hop, as the workflows will run them. Pure data: the
 * plan command prints it, the step check simulates it, the workflows follow the same order.
 *
 * Order within a hop (kubeadm's, tightened by the skew policy):
 *  backup → kubeadm upgrade plan → stage labels → every control plane's components, one at a time
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

/**
 * `from`: the versions before the first hop. With it, each hop leaves out what is already at its
 * version (`hopWork`): a run that finishes nodes an earlier run left behind. Without it every node
 * moves in every hop. `workerHops`: the hops at which each worker's kubelet moves (planWorkerHops:
 * once, to the last hop, when the skew policy allows); without it every worker moves in every hop.
 * A hop in which no worker moves has no workers' gate and no worker phase: its control planes only.
 */
export function buildRunbook(
  hops: readonly string[],
  rollout: RolloutPlan,
  packageManager: PackageManager = 'apt',
  from?: ClusterInventory,
  workerHops?: WorkerHops,
): RunbookStep[] {
  const tools = PACKAGE_COMMANDS[packageManager];
  const steps: RunbookStep[] = [];
  const [first] = rollout.controlPlanes;
  let state = from;
  for (const hop of hops) {
    const hopStart = steps.length;
    const work = state ? hopWork(state, hop, rollout, workerHops) : fullHopWork(hop, rollout, workerHops);
    const moves = new Set(work.kubelets);
    const workers = rollout.phases.filter((p) => p.kind !== 'control-plane').flatMap((p) => p.nodes);
    steps.push({
      hop,
      stage: 'hop',
      action: 'backup',
      node: first,
      command: 'etcdctl snapshot save … && etcdctl snapshot status …',
      detail: `etcd snapshot on ${first}, verified and copied off the node`,
    });
    if (work.controlPlanes.length > 0) {
      // kubeadm plans only up to its own version: the first control plane gets the new kubeadm first.
      steps.push({
        hop,
        stage: 'hop',
        action: 'preflight',
        node: first,
        command: `${newKubeadm(tools, hop)} && kubeadm upgrade plan v${hop}`,
        detail: `pre-flight: skew now and for every step, PDB audit, all nodes Ready, package repository of ${first} at the hop's minor, kubeadm ${hop} and kubeadm upgrade plan on ${first}`,
      });
    }
    steps.push({
      hop,
      stage: 'hop',
      action: 'label',
      detail: `label nodes with their stage (${Object.keys(rollout.stageLabels).length} nodes)`,
    });
    work.controlPlanes.forEach((node, i) => {
      const isFirst = i === 0 && work.apply;
      const isLast = i === work.controlPlanes.length - 1;
      steps.push(
        {
          hop,
          stage: 'control-plane',
          action: 'upgrade-control-plane',
          node,
          addons: isLast,
          ...(isFirst ? { apply: true } : {}),
          command: `${newKubeadm(tools, hop)} && ` + (isFirst ? `kubeadm upgrade apply v${hop} --yes` : 'kubeadm upgrade node'),
          detail: `control-plane components of ${node} to v${hop}` + (isLast ? ', then kubeadm addons (kube-proxy)' : ''),
        },
        { hop, stage: 'control-plane', action: 'verify', node, detail: `control-plane health on ${node}: /readyz, mirror pods at v${hop}` },
      );
    });
    for (const node of rollout.controlPlanes.filter((n) => moves.has(n)))
      steps.push(...nodeSteps(tools, hop, 'control-plane', node, false));
    if (!workerHops || workers.some((n) => moves.has(n)))
      steps.push({ hop, stage: 'control-plane', action: 'gate', detail: 'gate: approval before the workers (if the policy asks)' });
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
    const here = (n: string) => n === step.node;
    const kubelets = inventory.kubelets ?? [];
    return {
      ...inventory,
      kubelets: kubelets.some((k) => k.node === step.node)
        ? set(kubelets, here)
        : [...kubelets, { node: step.node as string, version: step.hop }],
      kubectl: set(inventory.kubectl, here),
    };
  }
  return inventory;
}
