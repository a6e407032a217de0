import { canEmulate, emulationRange } from './emulation.js';
import { RuleError } from './rule-error.js';
import { minorIndex, minorOf, parseVersion } from './version.js';

/**
 * Whether a hop N → N+1 can run as a trial (the N+1 control-plane binaries emulating N, etcd and
 * kubelets left where they are) that rolls back to the N binaries without an etcd restore; when not,
 * why. Each reason cites its source; `plan` prints them and `--reversible` refuses such a hop unless
 * the operator acknowledges it by name (`reversible:<hop>`).
 */

export type IrreversibleReasonId = 'not-one-minor' | 'cannot-emulate' | 'etcd-too-old' | 'alpha-feature-gates';

export interface IrreversibleReason {
  id: IrreversibleReasonId;
  /** One sentence naming what stops the trial and its source. */
  text: string;
}

export interface HopReversibility {
  /** The hop's version, `1.33.13`. */
  hop: string;
  /** The minor its trial emulates, `1.32`. */
  emulates: string;
  reversible: boolean;
  reasons: IrreversibleReason[];
  /** What acknowledges the hop under `--reversible` when it cannot be reversible. */
  ack: string;
}

/** What the cluster runs that a trial depends on. Unknown facts are not held against a hop. */
export interface ReversibilityFacts {
  /** The oldest etcd member's version, `3.5.24`. */
  etcd?: string;
  /** Alpha feature gates the control plane turns on (`--feature-gates`), at the cluster's minor. */
  alphaFeatureGates?: readonly string[];
}

/**
 * The oldest etcd minor a trial's apiserver was seen running on: 1.33.13 and 1.34.4 serve on etcd
 * 3.5.24 (measured, docs/reversible-hops.md). An older etcd is not shown to carry the N+1 apiserver.
 */
const OLDEST_TRIAL_ETCD = { major: 3, minor: 5 };

export const reversibleAck = (hop: string): string => `reversible:${parseVersion(hop).text}`;

/** The verdict for one hop from `from` (the cluster's version before it) to `hop`. */
export function hopReversibility(from: string, hop: string, facts: ReversibilityFacts = {}): HopReversibility {
  const f = parseVersion(from);
  const h = parseVersion(hop);
  const emulates = minorOf(f);
  const reasons: IrreversibleReason[] = [];
  if (minorIndex(h) - minorIndex(f) !== 1) {
    reasons.push({
      id: 'not-one-minor',
      text: `${f.text} → ${h.text} is not one minor: a trial emulates the minor just below its binaries (docs/design.md, minors one at a time)`,
    });
  } else if (!canEmulate(h.text, emulates)) {
    const range = emulationRange(h.text);
    reasons.push({
      id: 'cannot-emulate',
      text: `the ${h.text} binaries cannot emulate ${emulates}: their --emulated-version accepts ${range.oldest}..${range.newest} (KEP-4330)`,
    });
  }
  if (facts.etcd !== undefined) {
    const e = parseVersion(facts.etcd);
    if (minorIndex(e) < minorIndex(OLDEST_TRIAL_ETCD)) {
      reasons.push({
        id: 'etcd-too-old',
        text: `etcd ${e.text} stays during the trial, and the ${h.text} apiserver is not shown to run on an etcd before ${minorOf(OLDEST_TRIAL_ETCD)} (docs/reversible-hops.md)`,
      });
    }
  }
  const alpha = [...(facts.alphaFeatureGates ?? [])].sort();
  if (alpha.length > 0) {
    reasons.push({
      id: 'alpha-feature-gates',
      text: `alpha feature gates ${alpha.join(', ')} are on: KEP-4330 does not emulate alpha features, so ${emulates}'s behaviour of them is not kept (the binaries start anyway)`,
    });
  }
  return { hop: h.text, emulates, reversible: reasons.length === 0, reasons, ack: reversibleAck(h.text) };
}

/** The verdict for each hop of a plan, each hop's `from` being the one before it. */
export function planReversibility(from: string, hops: readonly string[], facts: ReversibilityFacts = {}): HopReversibility[] {
  return hops.map((hop, i) => hopReversibility(i === 0 ? from : (hops[i - 1] as string), hop, facts));
}

/**
 * `--reversible` over a plan: the hops that cannot be reversible and were not acknowledged
 * (`reversible:<hop>` among `acks`), each with its first reason, for the one-line refusal.
 */
export function unacknowledgedIrreversibleHops(verdicts: readonly HopReversibility[], acks: readonly string[]): HopReversibility[] {
  return verdicts.filter((v) => !v.reversible && !acks.includes(v.ack));
}

/** The one line `--reversible` refuses with; undefined when every hop can be reversible or is acknowledged. */
export function reversibleRefusal(verdicts: readonly HopReversibility[], acks: readonly string[]): string | undefined {
  const [first, ...rest] = unacknowledgedIrreversibleHops(verdicts, acks);
  if (!first) return undefined;
  const more = rest.length > 0 ? ` (and ${rest.map((v) => v.hop).join(', ')})` : '';
  return `--reversible: hop ${first.hop} cannot be reversible: ${first.reasons[0]?.text ?? 'unknown'}${more}; acknowledge it with --acknowledge ${first.ack} to run it without a trial`;
}

/**
 * The soak of a trial that commits by itself (`--auto-commit`): the longer of the canary's soak
 * (`--soak`) and the soak after every phase (`--soak-after-phase`). Zero: auto-commit is refused, since
 * a trial would commit the moment its probes first pass.
 */
export function autoCommitSoakSeconds(policy: { soakSeconds?: number; phaseSoakSeconds?: number } | undefined): number {
  return Math.max(policy?.soakSeconds ?? 0, policy?.phaseSoakSeconds ?? 0);
}

/** The upgrade's `reversible` input (workflows/cluster-upgrade-workflow.ts UpgradeInput.reversible). */
export interface ReversibleRunInput {
  acknowledged: string[];
  autoCommit?: true;
}

/** How the caller names the two settings: flags (`--reversible`) or a file's keys (`stages[0].clusters[1].reversible`). */
export interface ReversibleWording {
  reversible: string;
  autoCommit: string;
  soak: string;
}

/**
 * The run's `reversible` input from what the operator asked, the same for `upgrade`, schedules and
 * fleet files: undefined when not asked; autoCommit only with reversible and with a soak to pass.
 * Refusals are one line naming the flag or key (RuleError: exit 2 at the CLI, before anything starts).
 */
export function reversibleRunInput(
  asked: { reversible?: boolean | undefined; autoCommit?: boolean | undefined; acknowledged?: readonly string[] | undefined },
  policy: Parameters<typeof autoCommitSoakSeconds>[0],
  words: ReversibleWording,
): ReversibleRunInput | undefined {
  if (asked.autoCommit === true && asked.reversible !== true)
    throw new RuleError('InvalidPolicy', `${words.autoCommit} goes with ${words.reversible}`);
  if (asked.reversible !== true) return undefined;
  if (asked.autoCommit === true && autoCommitSoakSeconds(policy) === 0)
    throw new RuleError('InvalidPolicy', `${words.autoCommit} needs a soak: ${words.soak} (the trial soaks the longer)`);
  return { acknowledged: [...(asked.acknowledged ?? [])], ...(asked.autoCommit === true ? { autoCommit: true as const } : {}) };
}
