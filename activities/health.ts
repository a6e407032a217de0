import { ApplicationFailure } from '@temporalio/activity';
import { isNodeName, parseVersion } from '../rules/index.js';
import type { ClusterResolver } from './cluster-access.js';
import type { V1DaemonSet, V1Deployment, V1Node, V1Pod, V1StatefulSet } from '@kubernetes/client-node';
import { ErrorType } from './errors.js';
import { readyz } from './health-apiserver.js';
import { cancellationSignal, pollUntilHealthy, unhealthy, waitSecondsOf } from './health-poll.js';
import { runProbe, type ProbeResult } from './health-probes.js';
import { judgeDaemonSet, judgeDeployment, judgeStatefulSet, type UnhealthyWorkload } from './health-workloads.js';
import { CONTROL_PLANE_COMPONENTS, imageVersion, isLive, isReady, podFacts, versionOrUndefined } from './inventory-facts.js';
import { DEFAULT_PAGE_SIZE } from './inventory-pages.js';
import { nodeHealthOfFacts, nodeHealthPolicy } from './node-health.js';
import { controlPlanePodsCollection, nodeCollection, podsOnNodeCollection, workloadCollection } from './health-watches.js';
import { watchUntilHealthy } from './watch-until.js';

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

function invalid(message: string): ApplicationFailure {
  return ApplicationFailure.create({ type: ErrorType.Invalid, message, nonRetryable: true });
}
function nodeName(node: unknown): string {
  // It goes into a field selector: nothing but a DNS subdomain may pass.
  if (!isNodeName(node)) throw invalid(`invalid node name ${JSON.stringify(node)}`);
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

/** The workloads' collections in the order `judgeWorkloads` reads them: per scope, Deployments, StatefulSets, DaemonSets. */
const WORKLOAD_KINDS = ['Deployment', 'StatefulSet', 'DaemonSet'] as const;

function judgeWorkloads(objects: unknown[][]) {
  const checked = { deployments: 0, statefulSets: 0, daemonSets: 0 };
  const unhealthy: UnhealthyWorkload[] = [];
  objects.forEach((items, i) => {
    const kind = WORKLOAD_KINDS[i % WORKLOAD_KINDS.length];
    for (const o of items) {
      const w =
        kind === 'Deployment'
          ? (checked.deployments++, judgeDeployment(o as V1Deployment))
          : kind === 'StatefulSet'
            ? (checked.statefulSets++, judgeStatefulSet(o as V1StatefulSet))
            : (checked.daemonSets++, judgeDaemonSet(o as V1DaemonSet));
      if (w) unhealthy.push(w);
    }
  });
  unhealthy.sort((x, y) => `${x.kind} ${x.namespace}/${x.name}`.localeCompare(`${y.kind} ${y.namespace}/${y.name}`));
  return { checked, unhealthy };
}

/** What every health activity reads: the cluster's access and the page size of its lists. */
interface HealthDeps {
  clusters: ClusterResolver;
  limit: number;
}

/**
 * The node's DaemonSet pods Ready and none of its configured conditions True (rules/node-health.ts),
 * waited for at least nodeHealth.waitSeconds: checked once the node is Ready.
 */
function nodeHealthWithin(h: HealthDeps, cluster: string, node: string, waitSeconds: number, started: number) {
  const { kube, config } = h.clusters(cluster);
  const policy = nodeHealthPolicy(config);
  // What is left of the check's wait (the whole stays within the activity's time), never less than the floor.
  const left = Math.max(waitSeconds - (Date.now() - started) / 1000, policy.waitSeconds);
  // Followed by watch, as the Ready wait before it: a node that is not healthy yet costs no list a second.
  return watchUntilHealthy({
    what: `node ${node} DaemonSets and conditions`,
    cluster,
    waitSeconds: left,
    kube: kube.watch,
    collections: [nodeCollection(kube, node), ...(policy.daemonSets ? [podsOnNodeCollection(kube, node, h.limit)] : [])],
    judge: ([nodes, pods]) => {
      const failures = nodeHealthOfFacts((nodes?.[0] ?? {}) as V1Node, (pods ?? []) as V1Pod[], policy);
      return { cluster, node, healthy: failures.length === 0, failures };
    },
  });
}

/** GET /readyz through the kubeconfig's client; Unhealthy unless it answers 200 within the wait. */
async function checkApiserver(h: HealthDeps, input: { cluster: string } & Wait) {
  const { config } = h.clusters(input.cluster);
  const result = await pollUntilHealthy('apiserver readyz', waitSecondsOf(input), () => readyz(config, cancellationSignal()));
  if (!result.healthy) throw unhealthy(ErrorType.Unhealthy, `kube-apiserver of ${input.cluster} is not ready: ${result.error}`, result);
  return result;
}

/** That node's kube-apiserver, controller-manager and scheduler mirror pods Running, Ready and at v<version>. */
async function checkControlPlane(h: HealthDeps, input: { cluster: string; node: string; version: string } & Wait) {
  const node = nodeName(input.node);
  const version = versionText(input.version);
  const { kube } = h.clusters(input.cluster);
  const started = Date.now();
  const result = await watchUntilHealthy({
    what: `control plane on ${node}`,
    cluster: input.cluster,
    waitSeconds: waitSecondsOf(input),
    kube: kube.watch,
    collections: [controlPlanePodsCollection(kube, node, Object.keys(CONTROL_PLANE_COMPONENTS))],
    judge: ([items]) => {
      const pods = (items as V1Pod[]).map(podFacts).filter((p) => p.mirror && !p.terminating);
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
    },
  });
  if (!result.healthy)
    throw unhealthy(ErrorType.Unhealthy, `control plane on ${node} is not healthy at v${version}: ${list(result.failures)}`, result);
  const health = await nodeHealthWithin(h, input.cluster, node, waitSecondsOf(input), started);
  if (!health.healthy)
    throw unhealthy(ErrorType.Unhealthy, `control plane on ${node} is not healthy at v${version}: ${list(health.failures)}`, health);
  return result;
}

/** The node Ready (and its kubelet at `version` when given); NodeNotReady otherwise. */
async function checkNodeReady(h: HealthDeps, input: { cluster: string; node: string; version?: string } & Wait) {
  const node = nodeName(input.node);
  const version = input.version === undefined ? undefined : versionText(input.version);
  const { kube } = h.clusters(input.cluster);
  const started = Date.now();
  const result = await watchUntilHealthy({
    what: `node ${node} Ready`,
    cluster: input.cluster,
    waitSeconds: waitSecondsOf(input),
    kube: kube.watch,
    collections: [nodeCollection(kube, node)],
    judge: ([nodes]) => {
      const n = nodes?.[0] as V1Node | undefined;
      const ready = isReady(n?.status?.conditions);
      const raw = n?.status?.nodeInfo?.kubeletVersion ?? '';
      const kubeletVersion = versionOrUndefined(raw) ?? raw;
      const failures = [
        ...(ready ? [] : [`not Ready (${n?.status?.conditions?.find((c) => c.type === 'Ready')?.reason ?? 'no Ready condition'})`]),
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
    },
  });
  if (!result.healthy) throw unhealthy(ErrorType.NodeNotReady, `node ${node}: ${result.failures.join('; ')}`, result);
  const health = await nodeHealthWithin(h, input.cluster, node, waitSecondsOf(input), started);
  if (!health.healthy) throw unhealthy(ErrorType.NodeNotReady, `node ${node} is Ready but not healthy: ${list(health.failures)}`, health);
  return result;
}

/**
 * Every Deployment, StatefulSet and DaemonSet (in `namespaces`, default all) rolled out and available.
 * Waiting is cheap for the API server: each kind is listed once and then watched (watch-until.ts), so
 * a batch of 100 nodes leaving a few dozen workloads converging among 10,000 costs three lists and
 * their watches, however long it waits, and the answer comes with the event that made it true.
 */
async function checkWorkloads(h: HealthDeps, input: { cluster: string; namespaces?: string[] } & Wait & Require) {
  const { kube } = h.clusters(input.cluster);
  const scopes: (string | undefined)[] = input.namespaces?.length ? input.namespaces : [undefined];
  const collections = scopes.flatMap((namespace) => WORKLOAD_KINDS.map((kind) => workloadCollection(kube, kind, namespace, h.limit)));
  const calls = { lists: 0 };
  const result = await watchUntilHealthy({
    calls,
    what: 'workloads',
    cluster: input.cluster,
    waitSeconds: waitSecondsOf(input),
    kube: kube.watch,
    collections,
    judge: (objects) => {
      const { checked, unhealthy } = judgeWorkloads(objects);
      const namespaces = input.namespaces?.length ? input.namespaces : ('all' as const);
      return { cluster: input.cluster, namespaces, checked, healthy: unhealthy.length === 0, unhealthy, calls: { ...calls } };
    },
  });
  if (!result.healthy && input.require) {
    throw unhealthy(
      ErrorType.Unhealthy,
      `${result.unhealthy.length} workload(s) unhealthy: ${list(result.unhealthy.map((w) => `${w.kind} ${w.namespace}/${w.name} (${w.reason})`))}`,
      result,
    );
  }
  return result;
}

/**
 * Every live (not finished, not terminating) pod on the node when the check starts Running and Ready
 * within the wait. Pods the scheduler places there meanwhile are counted, not judged: a node just
 * uncordoned during a batch draws the batch's evicted pods, and some were always still starting, so
 * "every pod at one instant" never held on a busy cluster (measured in docs/benchmark.md, H). The
 * workload check after the batch judges those pods with their Deployments.
 */
async function checkPodsOnNode(h: HealthDeps, input: { cluster: string; node: string } & Wait & Require) {
  const node = nodeName(input.node);
  const { kube } = h.clusters(input.cluster);
  let judged: Set<string> | undefined;
  const result = await watchUntilHealthy({
    what: `pods on ${node}`,
    cluster: input.cluster,
    waitSeconds: waitSecondsOf(input),
    kube: kube.watch,
    collections: [podsOnNodeCollection(kube, node, h.limit)],
    judge: ([items]) => {
      const live = (items as V1Pod[]).map(podFacts).filter(isLive);
      judged ??= new Set(live.map((p) => p.uid));
      const pods = live.filter((p) => judged?.has(p.uid));
      const notReady = pods
        .filter((p) => p.phase !== 'Running' || !p.ready)
        .map((p) => ({ namespace: p.namespace, name: p.name, phase: p.phase, ready: p.ready }))
        .sort((x, y) => `${x.namespace}/${x.name}`.localeCompare(`${y.namespace}/${y.name}`));
      const arrived = live.length - pods.length;
      return { cluster: input.cluster, node, checked: pods.length, arrived, healthy: notReady.length === 0, notReady };
    },
  });
  if (!result.healthy && input.require) {
    throw unhealthy(
      ErrorType.Unhealthy,
      `${result.notReady.length} pod(s) on ${node} not Running and Ready: ${list(result.notReady.map((p) => `${p.namespace}/${p.name} (${p.phase}${p.ready ? '' : ', not Ready'})`))}`,
      result,
    );
  }
  return result;
}

/** The cluster's user probes (config.probes), each with its own timeout. */
async function runProbes(h: HealthDeps, input: { cluster: string } & Wait & Require) {
  const { config } = h.clusters(input.cluster);
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
}

/** The health checks as activities: each a module function above, given the cluster access it reads. */
export function createHealthActivities(deps: { clusters: ClusterResolver; pageSize?: number }) {
  const h: HealthDeps = { clusters: deps.clusters, limit: deps.pageSize ?? DEFAULT_PAGE_SIZE };
  return {
    checkApiserver: (input: Parameters<typeof checkApiserver>[1]) => checkApiserver(h, input),
    checkControlPlane: (input: Parameters<typeof checkControlPlane>[1]) => checkControlPlane(h, input),
    checkNodeReady: (input: Parameters<typeof checkNodeReady>[1]) => checkNodeReady(h, input),
    checkWorkloads: (input: Parameters<typeof checkWorkloads>[1]) => checkWorkloads(h, input),
    checkPodsOnNode: (input: Parameters<typeof checkPodsOnNode>[1]) => checkPodsOnNode(h, input),
    runProbes: (input: Parameters<typeof runProbes>[1]) => runProbes(h, input),
  };
}

export type HealthActivities = ReturnType<typeof createHealthActivities>;
