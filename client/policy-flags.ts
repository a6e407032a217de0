import { parseAcknowledgements } from './acknowledge-flags.js';
import {
  BLUEGREEN_POLICY_KEYS,
  checkPolicy,
  INT_BOUNDS,
  MAINTENANCE_POLICY_KEYS,
  UPGRADE_POLICY_KEYS,
  type IntPolicyKey,
  type Policy,
  type PolicyKey,
  type PolicyWording,
} from '../rules/index.js';
import { POLICY_FLAG } from '../contracts/cli-flags.js';
import { intOption, UsageError } from './cli-support.js';
import { maxUnavailable, namespacedName, nodeName } from './input-checks.js';

/**
 * The policy flags of every command that starts a rollout (`upgrade`, `schedule create`, `rehearse`,
 * `maintain`, `bluegreen`): each flag's key in the one policy (rules/policy.ts), which judges the
 * values and their combinations for every command alike. The table is contracts/cli-flags.ts: a
 * run's finish command (rules/upgrade-command.ts) writes the same flags back.
 */
const FLAG_OF = POLICY_FLAG satisfies Partial<Record<PolicyKey, string>>;
type FlagKey = keyof typeof FLAG_OF;
type Flag = (typeof FLAG_OF)[FlagKey];

/** A flow's policy keys that have a flag (the rest, e.g. verifySeconds, come from a fleet file or the defaults). */
const withFlags = (keys: readonly PolicyKey[]): FlagKey[] => keys.filter((k): k is FlagKey => k in FLAG_OF);

/** The policy flags of each command: an upgrade's (also a schedule's and a rehearsal's), an OS maintenance run's, a blue/green run's. */
export const UPGRADE_FLAG_KEYS = withFlags(UPGRADE_POLICY_KEYS);
export const MAINTAIN_FLAG_KEYS = withFlags(MAINTENANCE_POLICY_KEYS);
export const BLUEGREEN_FLAG_KEYS = withFlags(BLUEGREEN_POLICY_KEYS);

/** What `plan` takes: the rollout's shape, and acknowledgements (with --cluster). */
export const PLAN_FLAG_KEYS = [
  'canary',
  'batchSize',
  'maxUnavailable',
  'firstControlPlane',
  'batchBy',
  'batchOrder',
  'workersEveryHop',
  'acknowledge',
  'fixPrerequisites',
] as const satisfies readonly FlagKey[];

export const POLICY_OPTIONS = {
  canary: { type: 'string' },
  'batch-size': { type: 'string' },
  'max-unavailable': { type: 'string' },
  'first-control-plane': { type: 'string' },
  'batch-by': { type: 'string' },
  'batch-order': { type: 'string' },
  rebalance: { type: 'boolean' },
  'approve-workers': { type: 'boolean' },
  'approve-canary': { type: 'boolean' },
  soak: { type: 'string' },
  'soak-after-phase': { type: 'string' },
  'workers-every-hop': { type: 'boolean' },
  'drain-timeout': { type: 'string' },
  'on-drain-timeout': { type: 'string' },
  'host-retry': { type: 'string' },
  'fix-prerequisites': { type: 'boolean' },
  acknowledge: { type: 'string', multiple: true },
} as const;

/** `--batch-size` → `batch-size`: a flag as parseArgs names its option. */
type OptionOf<K extends FlagKey> = (typeof FLAG_OF)[K] extends `--${infer O extends keyof typeof POLICY_OPTIONS}` ? O : never;
type PlanFlagKey = (typeof PLAN_FLAG_KEYS)[number];

/** The option table of `plan`'s policy flags, derived from PLAN_FLAG_KEYS and the one table above. */
export const PLAN_POLICY_OPTIONS = Object.fromEntries(
  PLAN_FLAG_KEYS.map((k) => {
    const option = FLAG_OF[k].slice(2) as OptionOf<PlanFlagKey>;
    return [option, POLICY_OPTIONS[option]];
  }),
) as { [K in PlanFlagKey as OptionOf<K>]: (typeof POLICY_OPTIONS)[OptionOf<K>] };

export const POLICY_USAGE = `[--canary N] [--batch-size N] [--max-unavailable N|N%] [--first-control-plane NODE] [--batch-by LABEL [--batch-order V1,V2,...]] [--workers-every-hop] [--rebalance]
[--approve-workers] [--approve-canary] [--soak SECONDS] [--soak-after-phase SECONDS] [--drain-timeout SECONDS] [--on-drain-timeout wait|quarantine] [--host-retry SECONDS] [--fix-prerequisites] [--acknowledge NAMESPACE/PDB|CHECK:SUBJECT]...`;

/** What parseArgs gives for the policy flags: a string, a boolean or a list per flag name. */
export type PolicyFlags = { [F in Flag as F extends `--${infer N}` ? N : never]?: string | boolean | string[] | undefined };

/** Refusals of the one policy in the CLI's words: the flag's name, one line, exit 2. */
const FLAG_WORDING: PolicyWording = {
  name: (key) => (FLAG_OF as Partial<Record<PolicyKey, string>>)[key] ?? key,
  fail: (key, message, at = '') => {
    throw new UsageError(key === undefined ? message : `${FLAG_WORDING.name(key)}${at ? ` ${at}` : ''} ${message}`);
  },
};

/** One flag's value as its policy key wants it; a malformed one is refused with the flag's name. */
function flagValue(key: FlagKey, value: string | boolean | string[]): unknown {
  const flag = FLAG_OF[key];
  if (key in INT_BOUNDS) return intOption(value as string, flag, INT_BOUNDS[key as IntPolicyKey].min);
  if (key === 'maxUnavailable') return maxUnavailable(value as string);
  // Only its shape here: whether it is a control plane of the cluster, the rules judge on the worker (planRollout).
  if (key === 'firstControlPlane') return nodeName(value as string, flag);
  if (key === 'acknowledge') {
    const { pdbs, readiness } = parseAcknowledgements(value as string[]);
    return [...pdbs, ...readiness];
  }
  if (key === 'forcePods') return [...new Set((value as string[]).map((v) => namespacedName(v, flag, 'NAME')))];
  if (key === 'onDrainTimeout' || key === 'batchBy') return value; // a word: the policy judges it
  // Comma-separated values, each judged by the policy (an empty one too: `a,,b` names "").
  if (key === 'batchOrder') return (value as string).split(',');
  return value === true ? true : undefined; // a boolean flag: present or absent
}

/**
 * The policy the flags of `keys` ask for (default: an upgrade's); a value, or a combination the
 * workflow would silently ignore, that cannot be right is a UsageError (exit 2).
 */
export function policyFromFlags(values: PolicyFlags, keys: readonly FlagKey[] = UPGRADE_FLAG_KEYS): Policy {
  const raw: Record<string, unknown> = {};
  for (const key of keys) {
    const value = values[FLAG_OF[key].slice(2) as keyof PolicyFlags];
    if (value === undefined || (Array.isArray(value) && value.length === 0)) continue;
    const parsed = flagValue(key, value);
    if (parsed !== undefined) raw[key] = parsed;
  }
  return checkPolicy(raw, FLAG_WORDING, keys);
}

/** What --to takes, for the help of upgrade, plan and schedule create. */
export const TARGET_HELP = `TARGET: an exact version (1.34.2), a minor (1.34: its newest patch), latest-patch (the newest
patch of the cluster's current minor the package repository offers) or next-minor (the newest
patch of the minor after it). An expression with nothing newer to go to means nothing to do.`;
