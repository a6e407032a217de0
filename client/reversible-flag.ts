import { planReversibility, reversibleAck, reversibleRefusal, type HopReversibility, type ReversibilityFacts } from '../rules/index.js';
import { UsageError } from './cli-support.js';

/**
 * `--reversible` and `--acknowledge reversible:<hop>` (issue 36): the acknowledgements of hops that
 * cannot be reversible are split from the others before the policy parser sees them, the verdict of
 * each hop is the pure rule's (rules/hop-reversibility.ts), and a hop that cannot be reversible and was
 * not acknowledged is refused in one line (exit 2), before anything is started.
 */
const PREFIX = 'reversible:';

/** How `upgrade` and `schedule create` name the reversible settings in their one-line refusals (rules' reversibleRunInput). */
export const REVERSIBLE_FLAGS = {
  reversible: '--reversible',
  autoCommit: '--auto-commit',
  soak: '--soak SECONDS or --soak-after-phase SECONDS',
} as const;

export function splitReversibleAcks(values: readonly string[] | undefined): { reversible: string[]; rest: string[] | undefined } {
  const reversible: string[] = [];
  const rest: string[] = [];
  for (const v of values ?? []) {
    if (!v.startsWith(PREFIX)) {
      rest.push(v);
      continue;
    }
    try {
      reversible.push(reversibleAck(v.slice(PREFIX.length)));
    } catch {
      throw new UsageError(`--acknowledge: ${JSON.stringify(v)} is not reversible:<hop version>, e.g. reversible:1.33.13`);
    }
  }
  return { reversible, rest: values === undefined ? undefined : rest };
}

/** Each hop's verdict; with `--reversible`, the one-line refusal of an unacknowledged hop that cannot be. */
export function judgeReversibility(
  from: string,
  hops: readonly string[],
  asked: boolean,
  acks: readonly string[],
  facts?: ReversibilityFacts,
): HopReversibility[] {
  const verdicts = planReversibility(from, hops, facts);
  const refusal = asked ? reversibleRefusal(verdicts, acks) : undefined;
  if (refusal) throw new UsageError(refusal);
  return verdicts;
}

/** The plan's lines: whether each hop can run as a trial that rolls back without an etcd restore. */
export function reversibilityLines(verdicts: readonly HopReversibility[]): string[] {
  if (verdicts.length === 0) return [];
  return [
    '',
    'Reversible (--reversible: a trial, then commit or rollback without an etcd restore):',
    ...verdicts.map((v) =>
      v.reversible
        ? `  ${v.hop}: yes, the ${v.hop} control plane can run emulating ${v.emulates} and go back`
        : `  ${v.hop}: no: ${v.reasons.map((r) => r.text).join('; ')} (acknowledge: ${v.ack})`,
    ),
  ];
}
