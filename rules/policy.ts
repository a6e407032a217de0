import { acknowledgementNameProblem } from './readiness/finding.js';
import { RuleError } from './rule-error.js';
import { MAX_OPEN_CHILDREN } from './open-children.js';
import type { PhaseKind, UpgradePolicy } from './rollout-plan.js';
import { limitReason, SETTING_LIMITS } from '../contracts/time-limits.js';
import {
  boolean,
  FieldError,
  FieldPath,
  integer,
  isNamespacedName,
  labelKey,
  labelValue,
  listOf,
  nodeName,
  oneOf,
  refuse,
  shown,
  type IntBounds,
  type Shape,
} from './input-shapes.js';

/**
 * The one policy of a rollout: every key an upgrade, an OS maintenance run or a blue/green run takes,
 * with its bounds, checked here for the CLI's flags, a fleet file's entries, schedules and the
 * workflows, so that no two of them disagree. The bounds keep each value inside the activity it
 * feeds (contracts/time-limits.ts, the one table of time limits): a value the activity could not
 * honour is refused before anything starts.
 */
export interface Policy extends UpgradePolicy {
  /** OS maintenance: how long a node may take to come back over SSH and Ready after its reboot. */
  rebootTimeoutSeconds?: number;
  /** OS maintenance: pods (`namespace/name`) no controller manages that the operator lets go before the start. */
  forcePods?: string[];
}
export type PolicyKey = keyof Policy;

/** Defaults of the keys the workflows read with one (the rest default to "absent"). */
export const POLICY_DEFAULTS = {
  kubeletTimeoutSeconds: 300,
  verifySeconds: 60,
  soakSeconds: 0,
  continueAsNewAfterEvents: 4_000,
  rebootTimeoutSeconds: 600,
} as const;

/** How the caller names a key in a refusal, and how it refuses (a UsageError for flags, a RuleError for files). */
export interface PolicyWording {
  name: (key: PolicyKey) => string;
  /** `key` absent: a combination of keys; `at`: the entry of a list (`[2]`). */
  fail: (key: PolicyKey | undefined, message: string, at?: string) => never;
}

const MAX_UNAVAILABLE = /^([1-9]\d{0,5}|[1-9]\d?%|100%)$/;
/** maxUnavailable as text (a flag): a count ≥ 1 or a percentage from 1% to 100% (0 would never let a worker start). */
export const isMaxUnavailable = (v: string): boolean => MAX_UNAVAILABLE.test(v);
export const MAX_UNAVAILABLE_SHAPE = 'a count ≥ 1 or a percentage from 1% to 100%';

/**
 * A count above MAX_OPEN_CHILDREN is refused: one run never keeps more node workflows open, so the number
 * the operator asked for could not be honoured on any cluster. A percentage that comes to more is
 * capped instead (rules/rollout-plan.ts), and the plan says so: it asked for "as many as can go".
 */
export const MAX_UNAVAILABLE_BOUNDS: IntBounds = {
  min: 1,
  max: MAX_OPEN_CHILDREN,
  why: 'the most node workflows one run keeps open; a percentage is capped at it',
};

const maxUnavailable: Shape<number | string> = (v, at) => {
  if (typeof v === 'number') return integer(MAX_UNAVAILABLE_BOUNDS)(v, at);
  if (typeof v !== 'string' || !isMaxUnavailable(v)) return refuse(at, `must be ${MAX_UNAVAILABLE_SHAPE}, got ${shown(v)}`);
  return /%$/.test(v) ? v : integer(MAX_UNAVAILABLE_BOUNDS)(Number(v), at);
};

/** Whether a policy asks for a count of workers out at once above MAX_OPEN_CHILDREN (which the check refuses). */
export function maxUnavailableAboveCap(policy: unknown): boolean {
  const v = (policy as { maxUnavailable?: unknown } | null | undefined)?.maxUnavailable;
  const count = typeof v === 'string' && /^\d+$/.test(v) ? Number(v) : v;
  return typeof count === 'number' && count > MAX_OPEN_CHILDREN;
}

/** The bounds of the integer keys; a maximum that an activity imposes says which. */
export const INT_BOUNDS = {
  canary: { min: 0 },
  batchSize: { min: 1 },
  soakSeconds: { min: 0 },
  phaseSoakSeconds: { min: 0, max: 86_400, why: 'a day' },
  drainTimeoutSeconds: { min: 1, max: SETTING_LIMITS.drainTimeoutSeconds.max, why: limitReason('drainTimeoutSeconds') },
  hostRetrySeconds: { min: 0, max: 86_400, why: 'a day' },
  kubeletTimeoutSeconds: { min: 1, max: SETTING_LIMITS.kubeletTimeoutSeconds.max, why: limitReason('kubeletTimeoutSeconds') },
  verifySeconds: { min: 0, max: SETTING_LIMITS.verifySeconds.max, why: 'the longest wait of a health check' },
  // 1 continues as new at every safe point (the tests that cross runs use it); the server's own suggestion still holds.
  continueAsNewAfterEvents: { min: 1 },
  rebootTimeoutSeconds: { min: 1, max: SETTING_LIMITS.rebootTimeoutSeconds.max, why: limitReason('rebootTimeoutSeconds') },
} satisfies Partial<Record<PolicyKey, IntBounds>>;
export type IntPolicyKey = keyof typeof INT_BOUNDS;

const bounded = (key: IntPolicyKey): Shape<number> => integer(INT_BOUNDS[key]);
const names = (ok: (v: string) => boolean, what: string): Shape<string[]> =>
  listOf((v, at) => (typeof v === 'string' && ok(v) ? v : refuse(at, `must be ${what}, got ${shown(v)}`)), what);

/** Every key with its shape. */
const CHECKS: { [K in PolicyKey]-?: Shape<unknown> } = {
  canary: bounded('canary'),
  canaryNodes: listOf(nodeName, 'node names'),
  batchSize: bounded('batchSize'),
  maxUnavailable,
  order: oneOf('name', 'inventory'),
  firstControlPlane: nodeName,
  batchBy: labelKey,
  batchOrder: (v, at) => {
    const values = listOf(labelValue, 'label values')(v, at);
    if (values.length === 0) return refuse(at, 'must name at least one value');
    const twice = values.find((x, i) => values.indexOf(x) !== i);
    return twice === undefined ? values : refuse(at, `names ${shown(twice)} twice`);
  },
  rebalance: boolean,
  approveWorkers: boolean,
  approveAfterCanary: boolean,
  soakSeconds: bounded('soakSeconds'),
  phaseSoakSeconds: bounded('phaseSoakSeconds'),
  workersEveryHop: boolean,
  acknowledge: names(
    (v) => (v.includes(':') ? acknowledgementNameProblem(v) === undefined : isNamespacedName(v)),
    'NAMESPACE/PDB names or readiness acknowledgements (<check>:<subject>)',
  ),
  drainTimeoutSeconds: bounded('drainTimeoutSeconds'),
  onDrainTimeout: oneOf('wait', 'quarantine'),
  hostRetrySeconds: bounded('hostRetrySeconds'),
  fixPrerequisites: boolean,
  kubeletTimeoutSeconds: bounded('kubeletTimeoutSeconds'),
  verifySeconds: bounded('verifySeconds'),
  continueAsNewAfterEvents: bounded('continueAsNewAfterEvents'),
  rebootTimeoutSeconds: bounded('rebootTimeoutSeconds'),
  forcePods: names(isNamespacedName, 'NAMESPACE/NAME names'),
};
export const POLICY_KEYS = Object.keys(CHECKS) as PolicyKey[];
/** What each flow takes: an upgrade (and a fleet file, a schedule), an OS maintenance run, a blue/green run. */
export const UPGRADE_POLICY_KEYS = POLICY_KEYS.filter((k) => k !== 'rebootTimeoutSeconds' && k !== 'forcePods');
export const MAINTENANCE_POLICY_KEYS = [
  'canary',
  'batchSize',
  'maxUnavailable',
  'batchBy',
  'batchOrder',
  'approveAfterCanary',
  'soakSeconds',
  'drainTimeoutSeconds',
  'hostRetrySeconds',
  'rebootTimeoutSeconds',
  'verifySeconds',
  'forcePods',
] as const satisfies readonly PolicyKey[];
export const BLUEGREEN_POLICY_KEYS = [
  'canary',
  'batchSize',
  'approveAfterCanary',
  'soakSeconds',
  'drainTimeoutSeconds',
  'hostRetrySeconds',
  'verifySeconds',
  'acknowledge',
] as const satisfies readonly PolicyKey[];
export type MaintenancePolicy = Pick<Policy, (typeof MAINTENANCE_POLICY_KEYS)[number]>;
export type BlueGreenPolicy = Pick<Policy, (typeof BLUEGREEN_POLICY_KEYS)[number]>;

/** Words for the workflows and anything else with no flags or file: the key's own name, a RuleError. */
export const PLAIN_WORDING: PolicyWording = {
  name: (key) => key,
  fail: (key, message, at = '') => {
    throw new RuleError('InvalidPolicy', key === undefined ? message : `${key}${at} ${message}`);
  },
};

/**
 * Checks a policy: only the keys `allowed` (default all), each within its bounds, and (unless
 * `combinations` is false) no two that the workflows would silently ignore together. Returns the policy as given (no defaults filled in:
 * `withDefaults` does that where a value is read).
 */
export function checkPolicy(
  raw: unknown,
  wording: PolicyWording = PLAIN_WORDING,
  allowed: readonly PolicyKey[] = POLICY_KEYS,
  options: { combinations?: boolean } = {},
): Policy {
  if (raw === undefined || raw === null) return {};
  if (typeof raw !== 'object' || Array.isArray(raw)) wording.fail(undefined, `a policy must be a mapping of keys, got ${shown(raw)}`);
  const policy = raw as Record<string, unknown>;
  for (const [key, value] of Object.entries(policy)) {
    if (!(allowed as readonly string[]).includes(key))
      wording.fail(undefined, `unknown key ${JSON.stringify(key)} (expected ${allowed.join(', ')})`);
    if (value === undefined) continue;
    try {
      CHECKS[key as PolicyKey](value, FieldPath.root(key));
    } catch (err) {
      if (!(err instanceof FieldError)) throw err;
      wording.fail(key as PolicyKey, err.detail, err.field.slice(key.length)); // the key in the caller's words, then `[2]`
    }
  }
  const p = policy as Policy;
  if (options.combinations === false) return p; // a part of a policy (a fleet file's defaults): judged once merged
  const { name } = wording;
  if (p.batchOrder !== undefined && p.batchBy === undefined)
    wording.fail('batchOrder', `orders the values of ${name('batchBy')}: give ${name('batchBy')} too`);
  if (p.approveAfterCanary && p.soakSeconds !== undefined) {
    wording.fail(
      undefined,
      `${name('soakSeconds')} waits after the canary when no approval is asked: leave it out with ${name('approveAfterCanary')}`,
    );
  }
  if (p.canary === 0 && (p.approveAfterCanary || p.soakSeconds !== undefined)) {
    wording.fail(
      undefined,
      `${name('canary')} 0 means no canary: ${name(p.approveAfterCanary ? 'approveAfterCanary' : 'soakSeconds')} would never apply`,
    );
  }
  return p;
}

export type Defaulted = { [K in keyof typeof POLICY_DEFAULTS]: number };

/** A policy with the defaults the workflows read filled in. */
export type WithDefaults<P extends Policy> = P & Defaulted;

/**
 * How long the rollout soaks after a phase of `kind` before the next starts: phaseSoakSeconds after
 * every phase, and after the canary the longer of it and the canary's own soakSeconds.
 */
export function soakSecondsAfter(policy: Policy | undefined, kind: PhaseKind): number {
  const every = policy?.phaseSoakSeconds ?? 0;
  return kind === 'canary' ? Math.max(every, policy?.soakSeconds ?? POLICY_DEFAULTS.soakSeconds) : every;
}

/** The policy with the defaults the workflows read filled in. */
export function withDefaults<P extends Policy>(policy: P | undefined): WithDefaults<P> {
  const p = policy ?? ({} as P);
  return {
    ...p,
    kubeletTimeoutSeconds: p.kubeletTimeoutSeconds ?? POLICY_DEFAULTS.kubeletTimeoutSeconds,
    verifySeconds: p.verifySeconds ?? POLICY_DEFAULTS.verifySeconds,
    soakSeconds: p.soakSeconds ?? POLICY_DEFAULTS.soakSeconds,
    continueAsNewAfterEvents: p.continueAsNewAfterEvents ?? POLICY_DEFAULTS.continueAsNewAfterEvents,
    rebootTimeoutSeconds: p.rebootTimeoutSeconds ?? POLICY_DEFAULTS.rebootTimeoutSeconds,
  };
}
