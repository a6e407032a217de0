import type { UpgradePolicy } from '../workflows/cluster-upgrade-workflow.js';
import { intOption, UsageError } from './cli-support.js';
import { maxUnavailable, namespacedName, nodeName } from './input-checks.js';

/**
 * The rollout and safety flags an upgrade takes, shared by `upgrade` (which starts one now) and
 * `schedule create` (which starts one later, with the same policy): one parser, one set of refusals.
 */
export const POLICY_OPTIONS = {
  canary: { type: 'string' }, 'batch-size': { type: 'string' }, 'max-unavailable': { type: 'string' }, 'first-control-plane': { type: 'string' },
  'approve-workers': { type: 'boolean' }, 'approve-canary': { type: 'boolean' }, soak: { type: 'string' },
  'drain-timeout': { type: 'string' }, 'host-retry': { type: 'string' }, acknowledge: { type: 'string', multiple: true },
} as const;

export const POLICY_USAGE = `[--canary N] [--batch-size N] [--max-unavailable N|N%] [--first-control-plane NODE]
[--approve-workers] [--approve-canary] [--soak SECONDS] [--drain-timeout SECONDS] [--host-retry SECONDS] [--acknowledge NAMESPACE/PDB]...`;

export interface PolicyFlags {
  canary?: string | undefined;
  'batch-size'?: string | undefined;
  'max-unavailable'?: string | undefined;
  'first-control-plane'?: string | undefined;
  'approve-workers'?: boolean | undefined;
  'approve-canary'?: boolean | undefined;
  soak?: string | undefined;
  'drain-timeout'?: string | undefined;
  'host-retry'?: string | undefined;
  acknowledge?: string[] | undefined;
}

/** The policy the flags ask for; a value or combination that cannot be right is a UsageError (exit 2). */
export function policyFromFlags(values: PolicyFlags): UpgradePolicy {
  const policy: UpgradePolicy = {};
  const canary = intOption(values.canary, '--canary', 0);
  const batchSize = intOption(values['batch-size'], '--batch-size', 1);
  const soak = intOption(values.soak, '--soak', 0);
  if (canary !== undefined) policy.canary = canary;
  if (batchSize !== undefined) policy.batchSize = batchSize;
  if (soak !== undefined) policy.soakSeconds = soak;
  const drainTimeout = intOption(values['drain-timeout'], '--drain-timeout', 1);
  if (drainTimeout !== undefined) policy.drainTimeoutSeconds = drainTimeout;
  const hostRetry = intOption(values['host-retry'], '--host-retry', 0);
  if (hostRetry !== undefined && hostRetry > 86_400) throw new UsageError(`--host-retry must be at most 86400 seconds (a day), got ${hostRetry}`);
  if (hostRetry !== undefined) policy.hostRetrySeconds = hostRetry;
  const maxOut = maxUnavailable(values['max-unavailable']);
  if (maxOut !== undefined) policy.maxUnavailable = maxOut;
  // Only its shape here: whether it is a control plane of the cluster, the rules judge on the worker (planRollout).
  if (values['first-control-plane'] !== undefined) policy.firstControlPlane = nodeName(values['first-control-plane'], '--first-control-plane');
  if (values['approve-workers']) policy.approveWorkers = true;
  if (values['approve-canary']) policy.approveAfterCanary = true;
  // Flags the workflow would silently ignore together: refuse them, so the operator's intent is not lost.
  if (values['approve-canary'] && soak !== undefined) throw new UsageError('--soak waits after the canary when no approval is asked: leave it out with --approve-canary');
  if (canary === 0 && (values['approve-canary'] || soak !== undefined)) throw new UsageError(`--canary 0 means no canary: ${values['approve-canary'] ? '--approve-canary' : '--soak'} would never apply`);
  for (const ack of values.acknowledge ?? []) namespacedName(ack, '--acknowledge', 'PDB');
  if (values.acknowledge) policy.acknowledge = values.acknowledge;
  return policy;
}

/** What --to takes, for the help of upgrade, plan and schedule create. */
export const TARGET_HELP = `TARGET: an exact version (1.34.2), a minor (1.34: its newest patch), latest-patch (the newest
patch of the cluster's current minor the package repository offers) or next-minor (the newest
patch of the minor after it). An expression with nothing newer to go to means nothing to do.`;
