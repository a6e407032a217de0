// The facts of the drain predictions (rules/readiness/drain-predictions.ts), read from the API in one
// paged list per resource type: nodes (for the rollout plan's phases, rules/rollout-plan.ts), pods,
// PDBs, Deployments and StatefulSets (replicas), Services and admission webhook configurations.
// Read-only. The drain's options come from the cluster configuration, its timeout from the policy.
import type { V1MutatingWebhook, V1Pod, V1ValidatingWebhook } from '@kubernetes/client-node';
import { ApplicationFailure } from '@temporalio/activity';
import {
  movesAtHop,
  planRollout,
  RuleError,
  selectorMatches,
  type LabelSelector,
  type PlanNode,
  type RolloutPolicy,
  type WorkerHops,
} from '../../rules/index.js';
import type { ReadinessFinding } from '../../rules/readiness/finding.js';
import {
  predictDrainBlocks,
  type PredictionPdb,
  type PredictionPod,
  type PredictionWebhook,
} from '../../rules/readiness/drain-predictions.js';
import type { ClusterAccess, ClusterResolver } from '../cluster-access.js';
import { drainOptionsOf } from '../cluster-config.js';
import { podFacts as drainPodFacts } from '../drain-facts.js';
import { ErrorType, kubeCall } from '../errors.js';
import { nodeFacts, pdbFacts } from '../inventory-facts.js';
import { DEFAULT_PAGE_SIZE, listAll } from '../inventory-pages.js';

export interface DrainPredictionsInput {
  cluster: string;
  /** The hop these drains belong to (`1.34`). */
  hop: string;
  /**
   * Every hop of the run, with the hops each worker moves at (the plan's `workerHops`; absent: every
   * worker at every hop): a node's drains are predicted at the first hop that drains it, so a worker
   * that moves once is named at the hop it moves in. Without `hops`, `hop` alone.
   */
  hops?: string[];
  workerHops?: WorkerHops;
  /** The rollout's policy (canary, batchSize, maxUnavailable, order…): the phases are planned from it as the upgrade plans them. */
  policy?: RolloutPolicy;
  /** The policy's drainTimeoutSeconds; default: the cluster configuration's drain.timeoutSeconds. */
  drainTimeoutSeconds?: number;
}

export interface DrainPredictionsResult {
  findings: ReadinessFinding[];
  /** What could not be read (e.g. webhook configurations where the API client has none). */
  problems: string[];
}

const isLive = (p: V1Pod) => !p.metadata?.deletionTimestamp && p.status?.phase !== 'Succeeded' && p.status?.phase !== 'Failed';

/** The workload behind a pod's controller: a ReplicaSet's Deployment (by the pod-template-hash suffix), or a StatefulSet. */
function workloadOf(pod: V1Pod, replicas: Map<string, number>): { kind: string; name: string; replicas?: number } | undefined {
  const owner = pod.metadata?.ownerReferences?.find((o) => o.controller === true);
  const ns = pod.metadata?.namespace ?? '';
  if (!owner) return undefined;
  if (owner.kind === 'ReplicaSet') {
    const hash = pod.metadata?.labels?.['pod-template-hash'];
    const name = hash && owner.name.endsWith(`-${hash}`) ? owner.name.slice(0, -hash.length - 1) : undefined;
    const r = name === undefined ? undefined : replicas.get(`Deployment ${ns}/${name}`);
    // A ReplicaSet of no Deployment we know: judged as its own workload, replicas unknown.
    return name !== undefined && r !== undefined ? { kind: 'Deployment', name, replicas: r } : { kind: 'ReplicaSet', name: owner.name };
  }
  const r = replicas.get(`${owner.kind} ${ns}/${owner.name}`);
  return { kind: owner.kind, name: owner.name, ...(r === undefined ? {} : { replicas: r }) };
}

type WebhookConfiguration = { metadata?: { name?: string }; webhooks?: readonly (V1ValidatingWebhook | V1MutatingWebhook)[] };
type LivePod = { metadata?: { namespace?: string; name?: string; labels?: Record<string, string> }; spec?: { nodeName?: string } };

/** The admission webhooks, each with the live pods behind its service (a drain that evicts them all leaves the webhook unanswered). */
function webhooksOf(
  validating: readonly WebhookConfiguration[],
  mutating: readonly WebhookConfiguration[],
  services: readonly { metadata?: { namespace?: string; name?: string }; spec?: { selector?: Record<string, string> } }[],
  live: readonly LivePod[],
): PredictionWebhook[] {
  const backendsOf = (svc: { namespace: string; name: string }) => {
    const s = services.find((x) => x.metadata?.namespace === svc.namespace && x.metadata?.name === svc.name);
    const selector = s?.spec?.selector;
    if (!selector || Object.keys(selector).length === 0) return [];
    return live
      .filter(
        (p) =>
          p.metadata?.namespace === svc.namespace && selectorMatches({ matchLabels: selector } as LabelSelector, p.metadata?.labels ?? {}),
      )
      .map((p) => ({ namespace: svc.namespace, name: p.metadata?.name ?? '', node: p.spec?.nodeName as string }));
  };
  const webhooks: PredictionWebhook[] = [];
  const add = (kind: 'validating' | 'mutating', config: string, hooks: WebhookConfiguration['webhooks']) => {
    for (const w of hooks ?? []) {
      const svc = w.clientConfig.service;
      webhooks.push({
        name: `${config}/${w.name}`,
        kind,
        // The API defaults failurePolicy to Fail (admissionregistration.k8s.io/v1).
        failurePolicy: w.failurePolicy === 'Ignore' ? 'Ignore' : 'Fail',
        ...(svc ? { service: { namespace: svc.namespace, name: svc.name } } : {}),
        backends: svc ? backendsOf(svc) : [],
      });
    }
  };
  for (const c of validating) add('validating', c.metadata?.name ?? '', c.webhooks);
  for (const c of mutating) add('mutating', c.metadata?.name ?? '', c.webhooks);
  return webhooks;
}

export async function findDrainBlocks(access: ClusterAccess, input: DrainPredictionsInput): Promise<DrainPredictionsResult> {
  const { kube, config } = access;
  const limit = DEFAULT_PAGE_SIZE;
  const problems: string[] = [];
  const page =
    <T>(what: string, call: (p: { limit?: number; _continue?: string }) => Promise<{ items: T[]; metadata?: { _continue?: string } }>) =>
    () =>
      listAll(
        what,
        async (p) => {
          const r = await call(p);
          return { items: r.items, metadata: r.metadata };
        },
        limit,
      );
  const [nodes, pods, pdbs, deployments, statefulSets, services, validating, mutating] = await Promise.all([
    page('list nodes', (p) => kube.core.listNode(p))(),
    page('list pods', (p) => kube.core.listPodForAllNamespaces(p))(),
    page('list PodDisruptionBudgets', (p) => kube.policy.listPodDisruptionBudgetForAllNamespaces(p))(),
    page('list Deployments', (p) => kube.apps.listDeploymentForAllNamespaces(p))(),
    page('list StatefulSets', (p) => kube.apps.listStatefulSetForAllNamespaces(p))(),
    page('list Services', (p) => kube.core.listServiceForAllNamespaces(p))(),
    kube.admission
      ? kubeCall('list ValidatingWebhookConfigurations', () => kube.admission!.listValidatingWebhookConfiguration())
      : undefined,
    kube.admission ? kubeCall('list MutatingWebhookConfigurations', () => kube.admission!.listMutatingWebhookConfiguration()) : undefined,
  ]);
  if (!kube.admission) problems.push('admission webhook configurations not read: this API client has no admissionregistration group');

  const planNodes: PlanNode[] = nodes.map(nodeFacts).map((n) => ({ name: n.name, role: n.role }));
  let phases;
  try {
    phases = planRollout(planNodes, input.policy ?? {}).phases;
  } catch (err) {
    if (!(err instanceof RuleError)) throw err;
    throw ApplicationFailure.create({ type: ErrorType.Invalid, message: err.message, nonRetryable: true });
  }

  const replicas = new Map<string, number>();
  for (const d of deployments) replicas.set(`Deployment ${d.metadata?.namespace}/${d.metadata?.name}`, d.spec?.replicas ?? 1);
  for (const s of statefulSets) replicas.set(`StatefulSet ${s.metadata?.namespace}/${s.metadata?.name}`, s.spec?.replicas ?? 1);

  const bound = pods.filter((p) => p.spec?.nodeName);
  const predictionPods: PredictionPod[] = bound.map((p) => {
    const workload = workloadOf(p, replicas);
    return {
      ...drainPodFacts(p),
      node: p.spec?.nodeName as string,
      labels: p.metadata?.labels ?? {},
      ...(p.spec?.terminationGracePeriodSeconds === undefined
        ? {}
        : { terminationGracePeriodSeconds: p.spec.terminationGracePeriodSeconds }),
      ...(workload ? { workload } : {}),
    };
  });
  const live = bound.filter(isLive);
  const predictionPdbs: PredictionPdb[] = pdbs.map(pdbFacts).map((f) => ({
    ...f,
    coveredPods: live.filter((p) => p.metadata?.namespace === f.namespace && selectorMatches(f.selector, p.metadata?.labels ?? {})).length,
  }));

  const webhooks = webhooksOf(validating?.items ?? [], mutating?.items ?? [], services, live);

  const { ignoreDaemonSets, deleteEmptyDirData, rules } = drainOptionsOf(config);
  const drain = {
    ignoreDaemonSets,
    deleteEmptyDirData,
    ...(rules?.length ? { rules } : {}),
    timeoutSeconds: input.drainTimeoutSeconds ?? config.drain.timeoutSeconds,
  };
  // The phases keep their names at every hop (the upgrade plans them once); at each hop they hold the
  // nodes that move there: control planes always, workers at their moves. A drain is named once, at the
  // first hop that makes it.
  const controlPlanes = new Set(planNodes.filter((n) => n.role === 'control-plane').map((n) => n.name));
  const predict = (hop: string, hopPhases: typeof phases) =>
    predictDrainBlocks({ hop, phases: hopPhases, pods: predictionPods, pdbs: predictionPdbs, webhooks, drain });
  return { findings: overHops(input, phases, controlPlanes, predict), problems };
}

/** Each hop's predictions over the nodes that move there, a drain named once: at the first hop that makes it. */
function overHops<P extends { nodes: string[] }>(
  input: DrainPredictionsInput,
  phases: P[],
  controlPlanes: Set<string>,
  predict: (hop: string, phases: P[]) => ReadinessFinding[],
): ReadinessFinding[] {
  const named = new Set<string>();
  const findings: ReadinessFinding[] = [];
  for (const hop of input.hops?.length ? input.hops : [input.hop]) {
    const moving = (node: string) => controlPlanes.has(node) || movesAtHop(input.workerHops, node, hop);
    for (const f of predict(
      hop,
      phases.map((phase) => ({ ...phase, nodes: phase.nodes.filter(moving) })),
    )) {
      const key = `${f.ack} ${f.node ?? ''}`;
      if (named.has(key)) continue;
      named.add(key);
      findings.push(f);
    }
  }
  return findings;
}

export function createDrainPredictionActivities(deps: { clusters: ClusterResolver }) {
  return {
    /** Read-only: the drains of `hop` that will block, each naming pod, node and phase. */
    async predictBlockingDrains(input: DrainPredictionsInput): Promise<DrainPredictionsResult> {
      return findDrainBlocks(deps.clusters(input.cluster), input);
    },
  };
}
