import { ApplicationFailure } from '@temporalio/activity';
import { parseVersion } from '../rules/index.js';
import type { ClusterResolver } from './cluster-access.js';
import { ErrorType, httpStatus, kubeCall, kubeFailure } from './errors.js';
import type { KubeApi } from './kube-api.js';
import { readyz } from './health-apiserver.js';
import { cancellationSignal, pollUntilHealthy, unhealthy, waitSecondsOf } from './health-poll.js';
import { runProbe, type ProbeResult } from './health-probes.js';
import { judgeDaemonSet, judgeDeployment, judgeStatefulSet, type UnhealthyWorkload } from './health-workloads.js';
import { CONTROL_PLANE_COMPONENTS, imageVersion, isLive, isReady, podFacts, versionOrUndefined } from './inventory-facts.js';
import { DEFAULT_PAGE_SIZE, listAll } from './inventory-pages.js';

export type { ReadyzResult } from './health-apiserver.js';
export type { ProbeResult } from './health-probes.js';
export type { UnhealthyWorkload } from './health-workloads.js';

/** Every check may wait up to `waitSeconds` (default 0) for health to converge, heartbeating. */
interface Wait {
  waitSeconds?: number;
}
/** Survey checks report; with `require: true` they throw Unhealthy instead of reporting a failure. */
interface Require {
  require?: boolean;
}

const NODE_NAME = /^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$/;

function invalid(message: string): ApplicationFailure {
  return ApplicationFailure.create({ type: ErrorType.Invalid, message, nonRetryable: true });
}
function nodeName(node: unknown): string {
  // It goes into a field selector: nothing but a DNS subdomain may pass.
  if (typeof node !== 'string' || !NODE_NAME.test(node)) throw invalid(`invalid node name ${JSON.stringify(node)}`);
  return node;
}
function versionText(version: unknown): string {
  try {
    return parseVersion(version).text;
  } catch (err) {
    throw invalid((err as Error).message);
  }
}
const list = (items: string[], max = 10) => items.slice(0, max).join('; ') + (items.length > max ? `; and ${items.length - max} more` : '');

/** Most unhealthy workloads a waiting check reads again by name; beyond it, it lists again. */
const MAX_REREADS = 50;

/** Lists a namespace's (or every namespace's) Deployments, StatefulSets and DaemonSets and judges each. */
async function judgeWorkloadsIn(kube: KubeApi, namespace: string | undefined, limit: number) {
  const where = namespace ?? 'all namespaces';
  const [deployments, statefulSets, daemonSets] = await Promise.all([
    listAll(
      `list Deployments in ${where}`,
      (p) => (namespace ? kube.apps.listNamespacedDeployment({ ...p, namespace }) : kube.apps.listDeploymentForAllNamespaces(p)),
      limit,
    ),
    listAll(
      `list StatefulSets in ${where}`,
      (p) => (namespace ? kube.apps.listNamespacedStatefulSet({ ...p, namespace }) : kube.apps.listStatefulSetForAllNamespaces(p)),
      limit,
    ),
    listAll(
      `list DaemonSets in ${where}`,
      (p) => (namespace ? kube.apps.listNamespacedDaemonSet({ ...p, namespace }) : kube.apps.listDaemonSetForAllNamespaces(p)),
      limit,
    ),
  ]);
  const unhealthy = [...deployments.map(judgeDeployment), ...statefulSets.map(judgeStatefulSet), ...daemonSets.map(judgeDaemonSet)];
  return {
    checked: { deployments: deployments.length, statefulSets: statefulSets.length, daemonSets: daemonSets.length },
    unhealthy: unhealthy.filter((w) => w !== undefined),
  };
}

/** Reads one workload the last listing found unhealthy and judges it again; one deleted since is no longer a concern. */
async function rejudgeWorkload(kube: KubeApi, w: UnhealthyWorkload): Promise<UnhealthyWorkload | undefined> {
  const at = { name: w.name, namespace: w.namespace };
  try {
    if (w.kind === 'Deployment') return judgeDeployment(await kube.apps.readNamespacedDeployment(at));
    if (w.kind === 'StatefulSet') return judgeStatefulSet(await kube.apps.readNamespacedStatefulSet(at));
    return judgeDaemonSet(await kube.apps.readNamespacedDaemonSet(at));
  } catch (err) {
    if (httpStatus(err) === 404) return undefined;
    throw kubeFailure(err, `read ${w.kind} ${w.namespace}/${w.name}`);
  }
}

export function createHealthActivities(deps: { clusters: ClusterResolver; pageSize?: number }) {
  const limit = deps.pageSize ?? DEFAULT_PAGE_SIZE;
  return {
    /** GET /readyz through the kubeconfig's client; Unhealthy unless it answers 200 within the wait. */
    async checkApiserver(input: { cluster: string } & Wait) {
      const { config } = deps.clusters(input.cluster);
      const result = await pollUntilHealthy('apiserver readyz', waitSecondsOf(input), () => readyz(config, cancellationSignal()));
      if (!result.healthy) throw unhealthy(ErrorType.Unhealthy, `kube-apiserver of ${input.cluster} is not ready: ${result.error}`, result);
      return result;
    },

    /** That node's kube-apiserver, controller-manager and scheduler mirror pods Running, Ready and at v<version>. */
    async checkControlPlane(input: { cluster: string; node: string; version: string } & Wait) {
      const node = nodeName(input.node);
      const version = versionText(input.version);
      const { kube } = deps.clusters(input.cluster);
      const result = await pollUntilHealthy(`control plane on ${node}`, waitSecondsOf(input), async () => {
        const pods = (
          await kubeCall(`list control-plane pods on ${node}`, () =>
            kube.core.listNamespacedPod({
              namespace: 'kube-system',
              fieldSelector: `spec.nodeName=${node}`,
              labelSelector: `component in (${Object.keys(CONTROL_PLANE_COMPONENTS).join(',')})`,
            }),
          )
        ).items
          .map(podFacts)
          .filter((p) => p.mirror && !p.terminating);
        const components = Object.keys(CONTROL_PLANE_COMPONENTS).map((component) => {
          const pod = pods.find((p) => p.labels.component === component);
          const running = imageVersion(pod?.image);
          const problems = !pod
            ? ['no mirror pod']
            : [
                ...(running === version ? [] : [`image ${pod.image ?? '(none)'} is not at v${version}`]),
                ...(pod.phase === 'Running' ? [] : [`phase ${pod.phase}`]),
                ...(pod.ready ? [] : ['not Ready']),
              ];
          return {
            component,
            ...(pod ? { pod: pod.name, phase: pod.phase, ready: pod.ready } : {}),
            ...(running ? { version: running } : {}),
            ok: problems.length === 0,
            problems,
          };
        });
        const failures = components.filter((c) => !c.ok).map((c) => `${c.component}: ${c.problems.join(', ')}`);
        return { cluster: input.cluster, node, version, healthy: failures.length === 0, components, failures };
      });
      if (!result.healthy)
        throw unhealthy(ErrorType.Unhealthy, `control plane on ${node} is not healthy at v${version}: ${list(result.failures)}`, result);
      return result;
    },

    /** The node Ready (and its kubelet at `version` when given); NodeNotReady otherwise. */
    async checkNodeReady(input: { cluster: string; node: string; version?: string } & Wait) {
      const node = nodeName(input.node);
      const version = input.version === undefined ? undefined : versionText(input.version);
      const { kube } = deps.clusters(input.cluster);
      const result = await pollUntilHealthy(`node ${node} Ready`, waitSecondsOf(input), async () => {
        const n = await kubeCall(`read node ${node}`, () => kube.core.readNode({ name: node }));
        const ready = isReady(n.status?.conditions);
        const raw = n.status?.nodeInfo?.kubeletVersion ?? '';
        const kubeletVersion = versionOrUndefined(raw) ?? raw;
        const failures = [
          ...(ready ? [] : [`not Ready (${n.status?.conditions?.find((c) => c.type === 'Ready')?.reason ?? 'no Ready condition'})`]),
          ...(version === undefined || kubeletVersion === version ? [] : [`kubelet reports ${raw || '(none)'}, expected v${version}`]),
        ];
        return {
          cluster: input.cluster,
          node,
          ...(version ? { version } : {}),
          healthy: failures.length === 0,
          ready,
          kubeletVersion,
          failures,
        };
      });
      if (!result.healthy) throw unhealthy(ErrorType.NodeNotReady, `node ${node}: ${result.failures.join('; ')}`, result);
      return result;
    },

    /**
     * Every Deployment, StatefulSet and DaemonSet (in `namespaces`, default all) rolled out and available.
     * Waiting is cheap for the API server: after a full listing finds some unhealthy, the next attempts
     * read only those by name; once they all pass, one more full listing confirms the whole (a batch of
     * 100 nodes leaves a few dozen workloads converging among 10,000, listed twice instead of every 0.5 s).
     */
    async checkWorkloads(input: { cluster: string; namespaces?: string[] } & Wait & Require) {
      const { kube } = deps.clusters(input.cluster);
      const scopes: (string | undefined)[] = input.namespaces?.length ? input.namespaces : [undefined];
      const calls = { listings: 0, reads: 0 };
      let checked = { deployments: 0, statefulSets: 0, daemonSets: 0 };
      let suspects: UnhealthyWorkload[] = [];
      const result = await pollUntilHealthy('workloads', waitSecondsOf(input), async () => {
        // Many suspects: one listing is cheaper than as many reads.
        if (suspects.length > 0 && suspects.length <= MAX_REREADS) {
          calls.reads += suspects.length;
          suspects = (await Promise.all(suspects.map((w) => rejudgeWorkload(kube, w)))).filter((w) => w !== undefined);
        }
        if (suspects.length === 0 || suspects.length > MAX_REREADS) {
          calls.listings++;
          const listed = await Promise.all(scopes.map((namespace) => judgeWorkloadsIn(kube, namespace, limit)));
          checked = { deployments: 0, statefulSets: 0, daemonSets: 0 };
          for (const l of listed) {
            checked.deployments += l.checked.deployments;
            checked.statefulSets += l.checked.statefulSets;
            checked.daemonSets += l.checked.daemonSets;
          }
          suspects = listed.flatMap((l) => l.unhealthy);
        }
        return {
          cluster: input.cluster,
          namespaces: input.namespaces?.length ? input.namespaces : 'all',
          checked,
          healthy: suspects.length === 0,
          unhealthy: suspects,
          calls: { ...calls },
        };
      });
      if (!result.healthy && input.require) {
        throw unhealthy(
          ErrorType.Unhealthy,
          `${result.unhealthy.length} workload(s) unhealthy: ${list(result.unhealthy.map((w) => `${w.kind} ${w.namespace}/${w.name} (${w.reason})`))}`,
          result,
        );
      }
      return result;
    },

    /**
     * Every live (not finished, not terminating) pod on the node when the check starts Running and Ready
     * within the wait. Pods the scheduler places there meanwhile are counted, not judged: a node just
     * uncordoned during a batch draws the batch's evicted pods, and some were always still starting, so
     * "every pod at one instant" never held on a busy cluster (measured in docs/benchmark.md, H). The
     * workload check after the batch judges those pods with their Deployments.
     */
    async checkPodsOnNode(input: { cluster: string; node: string } & Wait & Require) {
      const node = nodeName(input.node);
      const { kube } = deps.clusters(input.cluster);
      let judged: Set<string> | undefined;
      const result = await pollUntilHealthy(`pods on ${node}`, waitSecondsOf(input), async () => {
        const live = (
          await listAll(
            `list pods on ${node}`,
            async (p) => {
              const r = await kube.core.listPodForAllNamespaces({ ...p, fieldSelector: `spec.nodeName=${node}` });
              return { items: r.items.map(podFacts), metadata: r.metadata };
            },
            limit,
          )
        ).filter(isLive);
        judged ??= new Set(live.map((p) => p.uid));
        const pods = live.filter((p) => judged?.has(p.uid));
        const notReady = pods
          .filter((p) => p.phase !== 'Running' || !p.ready)
          .map((p) => ({ namespace: p.namespace, name: p.name, phase: p.phase, ready: p.ready }));
        const arrived = live.length - pods.length;
        return { cluster: input.cluster, node, checked: pods.length, arrived, healthy: notReady.length === 0, notReady };
      });
      if (!result.healthy && input.require) {
        throw unhealthy(
          ErrorType.Unhealthy,
          `${result.notReady.length} pod(s) on ${node} not Running and Ready: ${list(result.notReady.map((p) => `${p.namespace}/${p.name} (${p.phase}${p.ready ? '' : ', not Ready'})`))}`,
          result,
        );
      }
      return result;
    },

    /** The cluster's user probes (config.probes), each with its own timeout. */
    async runProbes(input: { cluster: string } & Wait & Require) {
      const { config } = deps.clusters(input.cluster);
      const result = await pollUntilHealthy('probes', waitSecondsOf(input), async () => {
        const probes: ProbeResult[] = await Promise.all(config.probes.map((p) => runProbe(p, cancellationSignal())));
        const failed = probes.filter((p) => !p.ok).map((p) => p.name);
        return { cluster: input.cluster, healthy: failed.length === 0, probes, failed };
      });
      if (!result.healthy && input.require) {
        throw unhealthy(
          ErrorType.Unhealthy,
          `probe(s) failing: ${list(result.probes.filter((p) => !p.ok).map((p) => `${p.name} (${p.error})`))}`,
          result,
        );
      }
      return result;
    },
  };
}

export type HealthActivities = ReturnType<typeof createHealthActivities>;
