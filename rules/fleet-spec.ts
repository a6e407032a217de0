import { RuleError } from './rule-error.js';
import { boolean, dnsLabel, FieldError, FieldPath, integer, mappingOf, type Shape } from './input-shapes.js';
import { reversibleRunInput, type ReversibleRunInput } from './hop-reversibility.js';
import { checkPolicy, UPGRADE_POLICY_KEYS, type PolicyWording } from './policy.js';
import type { UpgradePolicy } from './rollout-plan.js';
import { parseTarget } from './version.js';

/**
 * A fleet file (`skewless fleet start FILE`), checked before anything starts: clusters in stages
 * (admin or management clusters first, then the user clusters), each with its own target, policy
 * and optional approval gate, and how many clusters upgrade at once. Pure: the CLI reads the YAML,
 * this judges what it holds, and every refusal is one line naming the entry (`stages[1].clusters[0].to`).
 *
 *   name: prod                 # the fleet workflow is fleet/<name>
 *   maxParallel: 2             # clusters upgrading at once (default 1)
 *   defaults: { to: latest-patch, policy: { canary: 1 }, approve: false }
 *   # reversible: true runs each hop as a trial (docs/reversible-hops.md); autoCommit: true commits one
 *   # whose soak passes (needs policy.soakSeconds or phaseSoakSeconds); both also per cluster
 *   stages:                    # in order: a stage starts once every cluster before it is done or skipped
 *     - name: admin
 *       clusters: [{ name: admin, to: '1.34', approve: true }]
 *     - name: users
 *       clusters: [user-a, { name: user-b, policy: { batchSize: 2 } }]
 */

/** What a fleet file may set per cluster: the upgrade's whole policy. */
export type FleetPolicy = UpgradePolicy;

export interface FleetCluster {
  cluster: string;
  /** The stage's name and its index (0 first): a stage starts only after every earlier one has ended. */
  stage: string;
  stageIndex: number;
  /** An exact version, a minor, latest-patch or next-minor: the cluster's upgrade resolves it. */
  to: string;
  /** Wait for `skewless fleet approve NAME --cluster C` before this cluster starts. */
  approve: boolean;
  policy: FleetPolicy;
  /** `reversible: true` (and `autoCommit`): the upgrade's `reversible` input. Absent: no trial. */
  reversible?: ReversibleRunInput;
}

export interface FleetSpec {
  name: string;
  maxParallel: number;
  /** In order: stage by stage, in the order the file lists them. */
  clusters: FleetCluster[];
}

const MAX_CLUSTERS = 500;

const fail = (where: string, message: string): never => {
  throw new RuleError('InvalidFleet', `fleet file: ${where}: ${message}`);
};
const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Reads `value` at `where` with one of the shapes of rules/input-shapes.ts, refusing in the fleet file's words. */
function read<T>(shape: Shape<T>, where: string, value: unknown): T {
  try {
    return shape(value, FieldPath.root(where));
  } catch (err) {
    if (err instanceof FieldError) return fail(err.field, err.detail);
    throw err;
  }
}
const onlyKeys = (where: string, value: Record<string, unknown>, allowed: readonly string[]) =>
  read((v, at) => mappingOf(v, at, allowed), where, value);

/** The fleet file's policy keys: an upgrade's (rules/policy.ts), with the bounds the CLI's flags have. */
export const FLEET_POLICY_KEYS = UPGRADE_POLICY_KEYS;

/** The one policy's refusals in the fleet file's words: `fleet file: <entry>: ...`. */
const wordingAt = (where: string): PolicyWording => ({
  name: (key) => key,
  fail: (key, message, at = '') => fail(key === undefined ? where : `${where}.${key}${at}`, message),
});

function parsePolicy(where: string, value: unknown, combinations: boolean): FleetPolicy {
  if (value === undefined || value === null) return {};
  if (!isRecord(value)) fail(where, 'must be a mapping of policy keys');
  return checkPolicy(value, wordingAt(where), UPGRADE_POLICY_KEYS, { combinations });
}

function parseTo(where: string, value: unknown): string {
  try {
    parseTarget(value);
  } catch (err) {
    fail(where, (err as Error).message);
  }
  return value as string;
}

const CLUSTER_KEYS = ['name', 'to', 'policy', 'approve', 'reversible', 'autoCommit'] as const;

/** `reversible` and `autoCommit` at `where` (a cluster entry over the defaults), judged as the CLI's flags are. */
function parseReversible(
  where: string,
  entry: Record<string, unknown>,
  defaults: { reversible?: boolean; autoCommit?: boolean },
  policy: FleetPolicy,
): ReversibleRunInput | undefined {
  const flag = (key: 'reversible' | 'autoCommit') =>
    entry[key] === undefined ? defaults[key] : read(boolean, `${where}.${key}`, entry[key]);
  const words = {
    reversible: `${where}.reversible: true`,
    autoCommit: `${where}.autoCommit`,
    soak: `${where}.policy.soakSeconds or phaseSoakSeconds`,
  };
  const asked = { reversible: flag('reversible'), autoCommit: flag('autoCommit') };
  try {
    return reversibleRunInput(asked, policy, words);
  } catch (err) {
    if (err instanceof RuleError) return fail(where, err.message);
    throw err;
  }
}

/** Judges a parsed fleet file (YAML or JSON); throws RuleError('InvalidFleet') with one line naming the entry. */
export function parseFleetSpec(doc: unknown): FleetSpec {
  if (!isRecord(doc)) fail('top level', 'must be a mapping with name and stages');
  const top = doc as Record<string, unknown>;
  onlyKeys('top level', top, ['name', 'maxParallel', 'defaults', 'stages']);
  const name = read(dnsLabel, 'name', top.name);
  const maxParallel = top.maxParallel === undefined ? 1 : read(integer({ min: 1, max: 100 }), 'maxParallel', top.maxParallel);
  const defaultsRaw = top.defaults ?? {};
  if (!isRecord(defaultsRaw)) fail('defaults', 'must be a mapping (to, policy, approve)');
  const defaults = defaultsRaw as Record<string, unknown>;
  onlyKeys('defaults', defaults, ['to', 'policy', 'approve', 'reversible', 'autoCommit']);
  const defaultTo = defaults.to === undefined ? undefined : parseTo('defaults.to', defaults.to);
  const defaultPolicy = parsePolicy('defaults.policy', defaults.policy, false);
  const defaultApprove = defaults.approve === undefined ? false : read(boolean, 'defaults.approve', defaults.approve);
  const defaultReversible = {
    ...(defaults.reversible === undefined ? {} : { reversible: read(boolean, 'defaults.reversible', defaults.reversible) }),
    ...(defaults.autoCommit === undefined ? {} : { autoCommit: read(boolean, 'defaults.autoCommit', defaults.autoCommit) }),
  };

  if (!Array.isArray(top.stages) || top.stages.length === 0)
    fail('stages', 'must be a non-empty list (admin clusters first, then user clusters)');
  const clusters: FleetCluster[] = [];
  const seenStages = new Set<string>();
  const seenClusters = new Map<string, string>();
  (top.stages as unknown[]).forEach((stageRaw, s) => {
    const at = `stages[${s}]`;
    if (!isRecord(stageRaw)) fail(at, 'must be a mapping with name and clusters');
    const stage = stageRaw as Record<string, unknown>;
    onlyKeys(at, stage, ['name', 'clusters']);
    const stageName = stage.name === undefined ? `stage-${s + 1}` : read(dnsLabel, `${at}.name`, stage.name);
    if (seenStages.has(stageName)) fail(`${at}.name`, `stage ${stageName} is listed twice`);
    seenStages.add(stageName);
    if (!Array.isArray(stage.clusters) || stage.clusters.length === 0) fail(`${at}.clusters`, 'must be a non-empty list of clusters');
    (stage.clusters as unknown[]).forEach((entryRaw, c) => {
      const where = `${at}.clusters[${c}]`;
      const entry: Record<string, unknown> =
        typeof entryRaw === 'string'
          ? { name: entryRaw }
          : isRecord(entryRaw)
            ? entryRaw
            : fail(where, 'must be a cluster name or a mapping (name, to, policy, approve)');
      onlyKeys(where, entry, CLUSTER_KEYS);
      const cluster = read(dnsLabel, `${where}.name`, entry.name);
      const before = seenClusters.get(cluster);
      if (before) fail(`${where}.name`, `cluster ${cluster} is already listed at ${before}: one upgrade per cluster`);
      seenClusters.set(cluster, where);
      if (entry.to === undefined && defaultTo === undefined) fail(`${where}.to`, 'is required (or defaults.to)');
      const to = entry.to === undefined ? (defaultTo as string) : parseTo(`${where}.to`, entry.to);
      const policy = parsePolicy(`${where}.policy`, { ...defaultPolicy, ...parsePolicy(`${where}.policy`, entry.policy, false) }, true);
      const approve = entry.approve === undefined ? defaultApprove : read(boolean, `${where}.approve`, entry.approve);
      const reversible = parseReversible(where, entry, defaultReversible, policy);
      clusters.push({ cluster, stage: stageName, stageIndex: s, to, approve, policy, ...(reversible ? { reversible } : {}) });
    });
  });
  if (clusters.length > MAX_CLUSTERS) fail('stages', `${clusters.length} clusters: a fleet holds at most ${MAX_CLUSTERS}`);
  return { name, maxParallel, clusters };
}
