// Blue/green node pools, the provisioning side: which nodes a run replaces and what it creates
// (read-only), the green machines created through the cluster's provider until their Nodes join,
// and the drained blue machines removed (Node object, then the machine). Cordon, drain and health
// are the upgrade's own activities (node-activities.ts, drain.ts, health.ts).
import type { V1Node, V1Pod } from '@kubernetes/client-node';
import { ApplicationFailure } from '@temporalio/activity';
import { compareNatural, compareVersions, isDnsLabel, minorIndex, parseVersion } from '../rules/index.js';
import type { ClusterAccess, ClusterResolver } from './cluster-access.js';
import { isLabelKey, isLabelValue, labelsText, type PoolConfig, type ProvisioningConfig } from './cluster-config.js';
import { ErrorType, httpStatus, kubeCall, kubeFailure } from './errors.js';
import { heartbeatWhile, hostActivityScope } from './host-activity-context.js';
import { pollUntil } from '../tooling/poll-until.js';
import { checkNode, checkVersion, invalid, shown } from './host-commands.js';
import { CONTROL_PLANE_LABEL, imageVersion, isReady, MIRROR_ANNOTATION, versionOrUndefined } from './inventory-facts.js';
import { machineProvider, type MachineProvider } from './provisioning.js';

export interface PlanBlueGreenInput {
  cluster: string;
  /** The pool to replace (a name under `pools:` in the cluster configuration). */
  from: string;
  /** The pool to create. */
  to: string;
  /** The version the green pool runs (at most the control plane's). */
  version: string;
  /** How many green machines; default: as many as blue has nodes. */
  count?: number;
}

export interface BlueGreenPlanFacts {
  /** The blue pool's nodes, in natural order: name, kubelet version, labels. */
  blue: { name: string; kubelet: string; labels: Record<string, string> }[];
  /** What to create: `<to>-<n>` names no Node uses, at `version`, with the green pool's labels. */
  green: { pool: string; names: string[]; version: string; labels: Record<string, string> };
  /** The oldest kube-apiserver's version (a kubelet may never be newer). */
  controlPlaneVersion: string;
  provider: string;
}

export interface CreatePoolMachinesInput {
  cluster: string;
  pool: string;
  names: string[];
  version: string;
  labels: Record<string, string>;
}

export interface DeletePoolMachinesInput {
  cluster: string;
  pool: string;
  names: string[];
}

/** At most this many machines per call (a pool is not a fleet). */
export const MAX_POOL_MACHINES = 200;
/** Machines asked for at once. */
const CREATE_CONCURRENCY = 4;
const JOIN_POLL_MS = 2_000;

const refuse = (message: string): ApplicationFailure =>
  ApplicationFailure.create({ type: ErrorType.BlueGreenInvalid, message, nonRetryable: true });

function checkPoolName(pool: unknown, what: string): string {
  if (!isDnsLabel(pool) || pool.length > 50) throw invalid(`${what} must be a pool name, got ${shown(pool)}`);
  return pool;
}

function checkNames(names: unknown): string[] {
  if (!Array.isArray(names) || names.length === 0 || names.length > MAX_POOL_MACHINES)
    throw invalid(`names must be a list of 1 to ${MAX_POOL_MACHINES} node names`);
  const checked = names.map(checkNode);
  if (new Set(checked).size !== checked.length) throw invalid('names must not repeat a node');
  return checked;
}

function checkLabels(labels: unknown): Record<string, string> {
  if (typeof labels !== 'object' || labels === null || Array.isArray(labels))
    throw invalid('labels must be a mapping of label keys to values');
  for (const [k, v] of Object.entries(labels)) {
    if (!isLabelKey(k) || typeof v !== 'string' || !isLabelValue(v)) throw invalid(`invalid label ${shown(k)}=${shown(v)}`);
  }
  return labels as Record<string, string>;
}

/** The pool as configured; an unknown one is BlueGreenInvalid naming the known ones. */
function poolOf(access: ClusterAccess, cluster: string, pool: string): PoolConfig {
  const pools = access.config.pools ?? {};
  const found = Object.hasOwn(pools, pool) ? pools[pool] : undefined;
  if (!found) {
    const known = Object.keys(pools);
    throw refuse(
      `cluster ${cluster} has no pool ${pool} in its configuration (${known.length ? `pools: ${known.join(', ')}` : 'no pools: configured'})`,
    );
  }
  return found;
}

function provisioningOf(access: ClusterAccess, cluster: string): ProvisioningConfig {
  const p = access.config.provisioning;
  if (!p)
    throw refuse(
      `cluster ${cluster} has no provisioning in its configuration: blue/green needs a provider to create and remove machines (provisioning.provider)`,
    );
  return p;
}

const inPool = (node: V1Node, pool: PoolConfig): boolean => {
  const labels = node.metadata?.labels ?? {};
  return Object.entries(pool.labels).every(([k, v]) => labels[k] === v);
};
const nameOf = (node: V1Node): string => node.metadata?.name ?? '';
const kubeletOf = (node: V1Node): string => {
  const raw = node.status?.nodeInfo?.kubeletVersion ?? '';
  return versionOrUndefined(raw) ?? raw;
};

/** The oldest kube-apiserver's version, from the mirror pods' images; kubeadm-config's when none is seen. */
async function controlPlaneVersion(access: ClusterAccess): Promise<string> {
  const { items } = await kubeCall('list kube-apiserver pods', () =>
    access.kube.core.listNamespacedPod({ namespace: 'kube-system', labelSelector: 'component=kube-apiserver' }),
  );
  const versions = items
    .map((p) => imageVersion(p.spec?.containers[0]?.image))
    .filter((v): v is string => v !== undefined)
    .map((v) => parseVersion(v));
  if (versions.length > 0) return versions.sort(compareVersions)[0]!.text;
  const cm = await kubeCall('read kube-system/kubeadm-config', () =>
    access.kube.core.readNamespacedConfigMap({ name: 'kubeadm-config', namespace: 'kube-system' }),
  );
  const recorded = versionOrUndefined(/^kubernetesVersion:\s*v?(\S+)\s*$/m.exec(cm.data?.ClusterConfiguration ?? '')?.[1]);
  if (!recorded) throw refuse('no kube-apiserver version found (no mirror pod with a version tag, nothing in kubeadm-config)');
  return recorded;
}

/** Pods that keep a node from being removed: anything but DaemonSet pods, mirror pods and finished pods. */
function stillRunning(pod: V1Pod): boolean {
  if (pod.metadata?.annotations?.[MIRROR_ANNOTATION] !== undefined) return false;
  if (pod.metadata?.ownerReferences?.some((o) => o.kind === 'DaemonSet' && o.controller === true)) return false;
  return pod.status?.phase !== 'Succeeded' && pod.status?.phase !== 'Failed';
}

/** Why a node has not joined as asked, or undefined when it has. */
function notJoined(node: V1Node | undefined, version: string, labels: Record<string, string>): string | undefined {
  if (!node) return 'not registered';
  if (!isReady(node.status?.conditions)) return 'not Ready';
  const kubelet = kubeletOf(node);
  if (kubelet !== version) return `kubelet ${kubelet || 'unknown'}, not ${version}`;
  const have = node.metadata?.labels ?? {};
  const missing = Object.entries(labels)
    .filter(([k, v]) => have[k] !== v)
    .map(([k, v]) => `${k}=${v}`);
  if (missing.length) return `without label ${missing.join(',')}`;
  return undefined;
}

/**
 * The named Nodes as they are: one list by the labels they should carry (cheap however large the
 * cluster), and a read of each name that list lacks (not registered yet, or without a label).
 */
async function joinedSoFar(access: ClusterAccess, names: readonly string[], labels: Record<string, string>): Promise<Map<string, V1Node>> {
  const labelSelector = labelsText(labels);
  const { items } = await kubeCall(`list nodes ${labelSelector}`, () => access.kube.core.listNode({ labelSelector }));
  const found = new Map(items.map((n) => [nameOf(n), n]));
  for (const name of names) {
    if (found.has(name)) continue;
    try {
      found.set(name, await access.kube.core.readNode({ name }));
    } catch (err) {
      if (httpStatus(err) !== 404) throw kubeFailure(err, `read node ${name}`);
    }
  }
  return found;
}

async function inBatches<T>(items: readonly T[], size: number, each: (item: T) => Promise<void>): Promise<void> {
  for (let i = 0; i < items.length; i += size) await Promise.all(items.slice(i, i + size).map(each));
}

/** What the pool activities read: the cluster's access and the machine provider its provisioning names. */
interface PoolDeps {
  clusters: ClusterResolver;
  providerOf: (config: ProvisioningConfig) => MachineProvider;
}

const listNodes = async (access: ClusterAccess) => (await kubeCall('list nodes', () => access.kube.core.listNode({}))).items;

/**
 * Read-only: the blue pool's nodes and what the green pool will be. Refuses (BlueGreenInvalid)
 * an unknown pool, the same pool twice, an empty blue pool or one holding a control plane, a
 * green pool that already has Nodes, a version above the control plane's, no provisioning.
 */
async function planBlueGreen(h: PoolDeps, input: PlanBlueGreenInput): Promise<BlueGreenPlanFacts> {
  const access = h.clusters(input.cluster);
  const from = checkPoolName(input.from, 'from');
  const to = checkPoolName(input.to, 'to');
  const version = checkVersion(input.version);
  if (input.count !== undefined && (!Number.isInteger(input.count) || input.count < 1 || input.count > MAX_POOL_MACHINES)) {
    throw invalid(`count must be an integer from 1 to ${MAX_POOL_MACHINES}, got ${shown(input.count)}`);
  }
  const provisioning = provisioningOf(access, input.cluster);
  const blue = poolOf(access, input.cluster, from);
  const green = poolOf(access, input.cluster, to);
  if (from === to) throw refuse(`from and to are the same pool ${from}`);
  if (labelsText(blue.labels) === labelsText(green.labels)) throw refuse(`pools ${from} and ${to} have the same selector ${blue.selector}`);

  const nodes = await listNodes(access);
  const blueNodes = nodes.filter((n) => inPool(n, blue)).sort((a, b) => compareNatural(nameOf(a), nameOf(b)));
  if (blueNodes.length === 0) throw refuse(`pool ${from} (${blue.selector}) has no nodes: nothing to replace`);
  const controlPlanes = blueNodes.filter((n) => CONTROL_PLANE_LABEL in (n.metadata?.labels ?? {})).map(nameOf);
  if (controlPlanes.length)
    throw refuse(
      `pool ${from} (${blue.selector}) selects control-plane node${controlPlanes.length > 1 ? 's' : ''} ${controlPlanes.join(', ')}: blue/green replaces workers only`,
    );
  const greenNodes = nodes
    .filter((n) => inPool(n, green))
    .map(nameOf)
    .sort(compareNatural);
  if (greenNodes.length)
    throw refuse(
      `pool ${to} (${green.selector}) already has nodes: ${greenNodes.slice(0, 5).join(', ')}${greenNodes.length > 5 ? ` and ${greenNodes.length - 5} more` : ''}`,
    );

  const cpVersion = await controlPlaneVersion(access);
  const target = parseVersion(version);
  const cp = parseVersion(cpVersion);
  if (compareVersions(target, cp) > 0)
    throw refuse(
      `version ${version} is above the control plane's ${cpVersion}: a kubelet may never be newer than the apiserver; upgrade the control plane first`,
    );
  if (minorIndex(cp) - minorIndex(target) > 3)
    throw refuse(`version ${version} is more than three minors below the control plane's ${cpVersion}`);

  const used = new Set(nodes.map(nameOf));
  const count = input.count ?? blueNodes.length;
  const names: string[] = [];
  for (let n = 1; names.length < count; n++) if (!used.has(`${to}-${n}`)) names.push(`${to}-${n}`);
  return {
    blue: blueNodes.map((n) => ({ name: nameOf(n), kubelet: kubeletOf(n), labels: { ...(n.metadata?.labels ?? {}) } })),
    green: { pool: to, names, version, labels: { ...green.labels } },
    controlPlaneVersion: cpVersion,
    provider: provisioning.provider,
  };
}

/**
 * Asks the provider for each machine whose Node is not there yet, then waits (heartbeating) until
 * every Node is registered, Ready, at the version, with the labels, or provisioning.joinTimeoutSeconds
 * pass (NodeNotReady). Idempotent: a retry skips Nodes that exist and machines the previous attempt
 * asked for (its heartbeat details).
 */
async function createPoolMachines(h: PoolDeps, input: CreatePoolMachinesInput): Promise<{ joined: string[] }> {
  const access = h.clusters(input.cluster);
  const pool = checkPoolName(input.pool, 'pool');
  const names = checkNames(input.names);
  const version = checkVersion(input.version);
  const labels = checkLabels(input.labels);
  const provisioning = provisioningOf(access, input.cluster);
  const config = poolOf(access, input.cluster, pool);
  const lacking = Object.entries(config.labels).filter(([k, v]) => labels[k] !== v);
  if (lacking.length)
    throw invalid(
      `labels must include pool ${pool}'s selector ${config.selector} (missing ${lacking.map(([k, v]) => `${k}=${v}`).join(',')})`,
    );
  const provider = h.providerOf(provisioning);
  const scope = hostActivityScope();
  const previous = (scope.previousDetails as { created?: unknown } | undefined)?.created;
  const created = new Set(Array.isArray(previous) ? previous.filter((n): n is string => typeof n === 'string') : []);
  let pending: string[] = names;
  const details = () => ({ pool, created: [...created].sort(compareNatural), pending });

  const existing = new Map((await listNodes(access)).map((n) => [nameOf(n), n]));
  const strangers = names.filter((n) => existing.has(n) && !inPool(existing.get(n)!, config));
  if (strangers.length)
    throw refuse(
      `node${strangers.length > 1 ? 's' : ''} ${strangers.join(', ')} already exist${strangers.length > 1 ? '' : 's'} outside pool ${pool} (${config.selector}): choose other names`,
    );
  const toCreate = names.filter((n) => !existing.has(n) && !created.has(n));
  await heartbeatWhile(
    scope,
    details,
    inBatches(toCreate, CREATE_CONCURRENCY, async (node) => {
      await provider.create({ node, version, pool, labels }, scope.signal);
      created.add(node);
      scope.heartbeat(details());
    }),
  );

  /** Each named node and why it has not joined yet (undefined: joined). */
  const notYetJoined = async () => {
    const nodes = await joinedSoFar(access, names, labels);
    const why = names.map((n) => [n, notJoined(nodes.get(n), version, labels)] as const).filter(([, w]) => w !== undefined);
    pending = why.map(([n]) => n);
    scope.heartbeat(details());
    return why;
  };
  await pollUntil(
    notYetJoined,
    (why) => why.length === 0,
    (why) => {
      throw ApplicationFailure.create({
        type: ErrorType.NodeNotReady,
        nonRetryable: true,
        message: `${why.length} of ${names.length} new node${names.length > 1 ? 's' : ''} did not join within ${provisioning.joinTimeoutSeconds} s (provisioning.joinTimeoutSeconds): ${why
          .slice(0, 5)
          .map(([n, w]) => `${n} ${w}`)
          .join('; ')}`,
        details: [{ pending: why.map(([n, w]) => ({ node: n, why: w })) }],
      });
    },
    { timeoutMs: provisioning.joinTimeoutSeconds * 1000, intervalMs: JOIN_POLL_MS, signal: scope.signal },
  );
  return { joined: names };
}

/**
 * Removes the named machines of a pool: every one is checked first (in the pool, cordoned, nothing
 * left on it but DaemonSet, mirror and finished pods; else BlueGreenInvalid and nothing is touched),
 * then each Node object is deleted and the provider tears the machine down. Idempotent: a Node
 * already gone is only handed to the provider again.
 */
async function deletePoolMachines(h: PoolDeps, input: DeletePoolMachinesInput): Promise<{ deleted: string[] }> {
  const access = h.clusters(input.cluster);
  const pool = checkPoolName(input.pool, 'pool');
  const names = checkNames(input.names);
  const provider = h.providerOf(provisioningOf(access, input.cluster));
  const config = poolOf(access, input.cluster, pool);
  const scope = hostActivityScope();

  const nodes = new Map((await listNodes(access)).map((n) => [nameOf(n), n]));
  const problems: string[] = [];
  for (const name of names) {
    const node = nodes.get(name);
    if (!node) continue;
    if (!inPool(node, config)) problems.push(`${name} is not in pool ${pool} (${config.selector})`);
    else if (CONTROL_PLANE_LABEL in (node.metadata?.labels ?? {})) problems.push(`${name} is a control plane`);
    else if (node.spec?.unschedulable !== true) problems.push(`${name} is not cordoned`);
    else {
      const { items } = await kubeCall(`list pods on ${name}`, () =>
        access.kube.core.listPodForAllNamespaces({ fieldSelector: `spec.nodeName=${name}` }),
      );
      const left = items
        .filter(stillRunning)
        .map((p) => `${p.metadata?.namespace}/${p.metadata?.name}`)
        .sort();
      if (left.length)
        problems.push(
          `${name} still runs ${left.slice(0, 3).join(', ')}${left.length > 3 ? ` and ${left.length - 3} more` : ''} (drain it first)`,
        );
    }
  }
  if (problems.length) throw refuse(`refusing to remove machines of pool ${pool}: ${problems.join('; ')}`);

  const deleted: string[] = [];
  const details = () => ({ pool, deleted: [...deleted] });
  for (const name of names) {
    if (nodes.has(name)) {
      try {
        await access.kube.core.deleteNode({ name });
      } catch (err) {
        if (httpStatus(err) !== 404) throw kubeFailure(err, `delete node ${name}`);
      }
    }
    await heartbeatWhile(scope, details, provider.delete({ node: name, pool }, scope.signal));
    deleted.push(name);
    scope.heartbeat(details());
  }
  return { deleted };
}

/** Blue/green's machine steps as activities: each a module function above, given the access and provider it reads. */
export function createPoolActivities(deps: { clusters: ClusterResolver; provider?: (config: ProvisioningConfig) => MachineProvider }) {
  const h: PoolDeps = { clusters: deps.clusters, providerOf: deps.provider ?? machineProvider };
  return {
    planBlueGreen: (input: Parameters<typeof planBlueGreen>[1]) => planBlueGreen(h, input),
    createPoolMachines: (input: Parameters<typeof createPoolMachines>[1]) => createPoolMachines(h, input),
    deletePoolMachines: (input: Parameters<typeof deletePoolMachines>[1]) => deletePoolMachines(h, input),
  };
}

export type PoolActivities = ReturnType<typeof createPoolActivities>;
