import { RuleError } from './rule-error.js';
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
}

export interface FleetSpec {
  name: string;
  maxParallel: number;
  /** In order: stage by stage, in the order the file lists them. */
  clusters: FleetCluster[];
}

const DNS_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const MAX_CLUSTERS = 500;

const fail = (where: string, message: string): never => {
  throw new RuleError('InvalidFleet', `fleet file: ${where}: ${message}`);
};
const shown = (v: unknown) => (typeof v === 'string' ? JSON.stringify(v) : (JSON.stringify(v) ?? String(v)));
const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

function onlyKeys(where: string, value: Record<string, unknown>, allowed: readonly string[]): void {
  for (const key of Object.keys(value)) {
    if (!allowed.includes(key)) fail(where, `unknown key ${JSON.stringify(key)} (expected ${allowed.join(', ')})`);
  }
}

function dnsLabel(where: string, value: unknown, what: string): string {
  if (typeof value !== 'string' || value.length > 63 || !DNS_LABEL.test(value))
    fail(where, `${what} must be a DNS label (lowercase letters, digits, '-'), got ${shown(value)}`);
  return value as string;
}

function int(where: string, value: unknown, min: number, max = Number.MAX_SAFE_INTEGER): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > max) {
    fail(where, `must be an integer ${max === Number.MAX_SAFE_INTEGER ? `≥ ${min}` : `from ${min} to ${max}`}, got ${shown(value)}`);
  }
  return value as number;
}

function bool(where: string, value: unknown): boolean {
  if (typeof value !== 'boolean') fail(where, `must be true or false, got ${shown(value)}`);
  return value as boolean;
}

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

const CLUSTER_KEYS = ['name', 'to', 'policy', 'approve'] as const;

/** Judges a parsed fleet file (YAML or JSON); throws RuleError('InvalidFleet') with one line naming the entry. */
export function parseFleetSpec(doc: unknown): FleetSpec {
  if (!isRecord(doc)) fail('top level', 'must be a mapping with name and stages');
  const top = doc as Record<string, unknown>;
  onlyKeys('top level', top, ['name', 'maxParallel', 'defaults', 'stages']);
  const name = dnsLabel('name', top.name, 'the fleet name');
  const maxParallel = top.maxParallel === undefined ? 1 : int('maxParallel', top.maxParallel, 1, 100);
  const defaultsRaw = top.defaults ?? {};
  if (!isRecord(defaultsRaw)) fail('defaults', 'must be a mapping (to, policy, approve)');
  const defaults = defaultsRaw as Record<string, unknown>;
  onlyKeys('defaults', defaults, ['to', 'policy', 'approve']);
  const defaultTo = defaults.to === undefined ? undefined : parseTo('defaults.to', defaults.to);
  const defaultPolicy = parsePolicy('defaults.policy', defaults.policy, false);
  const defaultApprove = defaults.approve === undefined ? false : bool('defaults.approve', defaults.approve);

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
    const stageName = stage.name === undefined ? `stage-${s + 1}` : dnsLabel(`${at}.name`, stage.name, 'a stage name');
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
      const cluster = dnsLabel(`${where}.name`, entry.name, 'the cluster name');
      const before = seenClusters.get(cluster);
      if (before) fail(`${where}.name`, `cluster ${cluster} is already listed at ${before}: one upgrade per cluster`);
      seenClusters.set(cluster, where);
      if (entry.to === undefined && defaultTo === undefined) fail(`${where}.to`, 'is required (or defaults.to)');
      const to = entry.to === undefined ? (defaultTo as string) : parseTo(`${where}.to`, entry.to);
      const policy = parsePolicy(`${where}.policy`, { ...defaultPolicy, ...parsePolicy(`${where}.policy`, entry.policy, false) }, true);
      const approve = entry.approve === undefined ? defaultApprove : bool(`${where}.approve`, entry.approve);
      clusters.push({ cluster, stage: stageName, stageIndex: s, to, approve, policy });
    });
  });
  if (clusters.length > MAX_CLUSTERS) fail('stages', `${clusters.length} clusters: a fleet holds at most ${MAX_CLUSTERS}`);
  return { name, maxParallel, clusters };
}
