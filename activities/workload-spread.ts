import type { V1Deployment, V1Pod } from '@kubernetes/client-node';
import { ApplicationFailure } from '@temporalio/activity';
import { isDnsLabel, isNodeName, selectorMatches, type LabelSelector } from '../rules/index.js';
import type { ClusterResolver } from './cluster-access.js';
import { ErrorType, kubeCall } from './errors.js';
import { pollUntilHealthy, waitSecondsOf } from './health-poll.js';
import { mergePatch, type KubeApi } from './kube-api.js';
import { DEFAULT_PAGE_SIZE, listAll } from './inventory-pages.js';

/** The pod template annotation a rebalance writes: its value is the run and hop that asked, so a retry restarts nothing twice. */
export const REBALANCED_ANNOTATION = 'skewless.io/rebalanced';

/** A Deployment whose running replicas all sit on one node. */
export interface ConcentratedWorkload {
  namespace: string;
  name: string;
  node: string;
  replicas: number;
}

export interface RebalanceResult {
  namespace: string;
  name: string;
  restarted: boolean;
  /** Why not (a PodDisruptionBudget that allows no disruption now), or the nodes its pods sit on after. */
  reason?: string;
  nodes?: string[];
}

const invalid = (message: string) => ApplicationFailure.create({ type: ErrorType.Invalid, message, nonRetryable: true });
const running = (p: V1Pod) => p.status?.phase === 'Running' && !p.metadata?.deletionTimestamp && Boolean(p.spec?.nodeName);

function podsOf(d: V1Deployment, pods: V1Pod[]): V1Pod[] {
  const selector = d.spec?.selector as LabelSelector | undefined;
  return pods.filter((p) => p.metadata?.namespace === d.metadata?.namespace && selectorMatches(selector, p.metadata?.labels));
}

/** Deployments of two replicas or more whose running pods are all on one node (the others drained after it). */
export function concentratedOf(deployments: V1Deployment[], pods: V1Pod[]): ConcentratedWorkload[] {
  const out: ConcentratedWorkload[] = [];
  for (const d of deployments) {
    const replicas = d.spec?.replicas ?? 1;
    if (replicas < 2) continue;
    const mine = podsOf(d, pods).filter(running);
    const nodes = new Set(mine.map((p) => p.spec?.nodeName));
    if (mine.length >= 2 && nodes.size === 1)
      out.push({ namespace: d.metadata?.namespace ?? '', name: d.metadata?.name ?? '', node: [...nodes][0] as string, replicas });
  }
  return out.sort((a, b) => `${a.namespace}/${a.name}`.localeCompare(`${b.namespace}/${b.name}`));
}

async function readDeploymentAndPods(kube: KubeApi, namespace: string, name: string) {
  const d = await kubeCall(`read Deployment ${namespace}/${name}`, () => kube.apps.readNamespacedDeployment({ namespace, name }));
  const pods = (await kubeCall(`list pods in ${namespace}`, () => kube.core.listNamespacedPod({ namespace }))).items;
  return { d, pods: podsOf(d, pods) };
}

/** The PDB covering the Deployment's pods that allows no disruption now, if any. */
async function budgetInTheWay(kube: KubeApi, d: V1Deployment): Promise<string | undefined> {
  const namespace = d.metadata?.namespace ?? '';
  const { items } = await kubeCall(`list PodDisruptionBudgets in ${namespace}`, () =>
    kube.policy.listNamespacedPodDisruptionBudget({ namespace }),
  );
  const labels = d.spec?.template?.metadata?.labels;
  const refusing = items.find(
    (b) => selectorMatches(b.spec?.selector as LabelSelector | undefined, labels) && (b.status?.disruptionsAllowed ?? 0) < 1,
  );
  return refusing ? `PodDisruptionBudget ${namespace}/${refusing.metadata?.name ?? ''} allows no disruption now` : undefined;
}

const rolledOut = (d: V1Deployment) => {
  const want = d.spec?.replicas ?? 1;
  const s = d.status ?? {};
  return (
    (s.observedGeneration ?? 0) >= (d.metadata?.generation ?? 1) &&
    (s.updatedReplicas ?? 0) === want &&
    (s.replicas ?? 0) === want &&
    (s.availableReplicas ?? 0) === want
  );
};

export function createWorkloadSpreadActivities(deps: { clusters: ClusterResolver; pageSize?: number }) {
  const limit = deps.pageSize ?? DEFAULT_PAGE_SIZE;
  return {
    /** Read-only: the Deployments left with every running replica on one node (issue 40). */
    async findConcentratedWorkloads(input: { cluster: string }): Promise<{ concentrated: ConcentratedWorkload[] }> {
      const { kube } = deps.clusters(input.cluster);
      const [deployments, pods] = await Promise.all([
        listAll('list Deployments', (p) => kube.apps.listDeploymentForAllNamespaces(p), limit),
        listAll('list pods', (p) => kube.core.listPodForAllNamespaces(p), limit),
      ]);
      return { concentrated: concentratedOf(deployments, pods) };
    },

    /**
     * Restarts a Deployment through its own rollout (a pod template annotation, as `kubectl rollout
     * restart` does), so the scheduler places its pods again, under its own maxUnavailable and
     * maxSurge; not while a PodDisruptionBudget over its pods allows no disruption. Waits up to
     * waitSeconds for the rollout to finish. Idempotent: `restartKey` (run and hop) is the annotation's
     * value, so a retry finds it written and only waits.
     */
    async rebalanceWorkload(input: {
      cluster: string;
      namespace: string;
      name: string;
      restartKey: string;
      waitSeconds: number;
    }): Promise<RebalanceResult> {
      const { namespace, name, restartKey } = input;
      if (!isDnsLabel(namespace) || !isNodeName(name)) throw invalid(`invalid Deployment ${JSON.stringify(`${namespace}/${name}`)}`);
      if (typeof restartKey !== 'string' || restartKey === '' || restartKey.length > 253)
        throw invalid('restartKey must be a short non-empty string');
      const waitSeconds = waitSecondsOf(input);
      const { kube } = deps.clusters(input.cluster);
      const d = await kubeCall(`read Deployment ${namespace}/${name}`, () => kube.apps.readNamespacedDeployment({ namespace, name }));
      if (d.spec?.template?.metadata?.annotations?.[REBALANCED_ANNOTATION] !== restartKey) {
        const refusing = await budgetInTheWay(kube, d);
        if (refusing) return { namespace, name, restarted: false, reason: refusing };
        const body = {
          metadata: { resourceVersion: d.metadata?.resourceVersion },
          spec: { template: { metadata: { annotations: { [REBALANCED_ANNOTATION]: restartKey } } } },
        };
        await kubeCall(`restart Deployment ${namespace}/${name}`, () =>
          kube.apps.patchNamespacedDeployment({ namespace, name, body }, mergePatch),
        );
      }
      const last = await pollUntilHealthy(`rollout of ${namespace}/${name}`, waitSeconds, async () => {
        const now = await readDeploymentAndPods(kube, namespace, name);
        return { healthy: rolledOut(now.d), nodes: [...new Set(now.pods.filter(running).map((p) => p.spec?.nodeName as string))].sort() };
      });
      return {
        namespace,
        name,
        restarted: true,
        nodes: last.nodes,
        ...(last.healthy ? {} : { reason: `its rollout had not finished after ${waitSeconds} s` }),
      };
    },
  };
}
