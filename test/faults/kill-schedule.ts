import type { Rng } from './prng.js';

/**
 * The fault harness's plan, drawn from the seed before anything starts: which kill waits for what,
 * how long the worker stays dead, and when the Temporal server goes down. The same seed gives the
 * same plan; where each kill lands still depends on the run's timing, so the report says it.
 */

/**
 * A targeted kill waits for its moment: a drain evicting pods, or a host command in flight
 * (`upgrade-node`: `kubeadm upgrade node`, a target of the per-node world, where the real kubeadm runs it).
 */
export type KillTarget = 'apply' | 'upgrade-node' | 'drain' | 'apt-install' | 'kubelet-restart';
export const TARGETS: readonly KillTarget[] = ['apply', 'upgrade-node', 'drain', 'apt-install', 'kubelet-restart'];
/** The shared world's targets: its `kubeadm upgrade node` is the model's (a second), not worth a target. */
export const SHARED_TARGETS: readonly KillTarget[] = ['apply', 'drain', 'apt-install', 'kubelet-restart'];

export interface PlannedKill {
  /** A target, or random: `afterMs` after the worker last came up. */
  target: KillTarget | 'random';
  /** Random kills: the delay after the worker is up. Targets: the fraction (0–1) of the command's latency to wait into it. */
  afterMs: number;
  into: number;
  /** How long the worker stays dead before it is started again. */
  downMs: number;
}

export interface PlannedServerRestart {
  /** After the upgrade started (first) or after the previous restart came back. */
  afterMs: number;
  downMs: number;
}

export interface KillScheduleOptions {
  kills: number;
  serverRestarts: number;
  /** Random kills land this long after the worker came up (default 0.5–5 s). */
  randomAfterMs?: [number, number];
  /** The worker stays dead this long (default 0.2–2 s). */
  downMs?: [number, number];
  /** Gaps between server restarts (default 15–45 s) and their downtime (default 0.5–3 s). */
  serverGapMs?: [number, number];
  serverDownMs?: [number, number];
}

/**
 * The first kills are the targets, one each (apply first: it only happens early in each hop); after
 * them each kill is random or targeted with even odds, so a long run kills into every kind of step many
 * times. `kubeadm upgrade apply` runs once per hop, so it comes back rarely (1 in 8 or 9 targeted kills).
 */
export function planKills(rng: Rng, o: KillScheduleOptions, targets: readonly KillTarget[] = SHARED_TARGETS): PlannedKill[] {
  const [rMin, rMax] = o.randomAfterMs ?? [500, 5_000];
  const [dMin, dMax] = o.downMs ?? [200, 2_000];
  const first: KillTarget[] = ['apply', ...rng.shuffle(targets.filter((t) => t !== 'apply'))];
  const weights: Partial<Record<KillTarget, number>> = { apply: 1, 'upgrade-node': 1, drain: 3, 'apt-install': 2, 'kubelet-restart': 2 };
  const later = targets.flatMap((t) => Array<KillTarget>(weights[t] ?? 1).fill(t));
  const plan: PlannedKill[] = [];
  for (let i = 0; i < o.kills; i++) {
    const target = i < first.length ? (first[i] as KillTarget) : rng.chance(0.5) ? rng.pick(later) : 'random';
    plan.push({
      target,
      afterMs: Math.round(rng.between(rMin, rMax)),
      into: rng.between(0.1, 0.8),
      downMs: Math.round(rng.between(dMin, dMax)),
    });
  }
  return plan;
}

/**
 * The stack's outages, PostgreSQL's and the Temporal server's, each part's own plan: the first inside
 * `kubeadm upgrade apply`, the second inside a drain (the moments a lost database or server would hurt
 * most: the one long host command, the evictions), the rest random gaps or one of those again. Drawn
 * from forks of their own, so adding them leaves the worker's plan for a seed alone.
 */
export interface PlannedOutage {
  target: 'apply' | 'drain' | 'random';
  /** Random: after the previous outage of the part (or the start); targets: the fraction into the command. */
  afterMs: number;
  into: number;
  downMs: number;
}

export function planOutages(rng: Rng, o: { count: number; gapMs?: [number, number]; downMs?: [number, number] }): PlannedOutage[] {
  const [gMin, gMax] = o.gapMs ?? [15_000, 45_000];
  const [dMin, dMax] = o.downMs ?? [500, 3_000];
  return Array.from({ length: o.count }, (_, i) => ({
    target: i === 0 ? 'apply' : i === 1 ? 'drain' : rng.pick(['random', 'random', 'drain', 'apply'] as const),
    afterMs: Math.round(rng.between(gMin, gMax)),
    // Early in the command: the other part's outage may take its turn first, and the command must still run after it.
    into: rng.between(0.05, 0.35),
    downMs: Math.round(rng.between(dMin, dMax)),
  }));
}

/** The dev server's restarts as outages: random gaps only (what the runs before the stack's did). */
export const randomOutages = (plan: PlannedServerRestart[]): PlannedOutage[] => plan.map((p) => ({ target: 'random', into: 0, ...p }));

export function planServerRestarts(rng: Rng, o: KillScheduleOptions): PlannedServerRestart[] {
  const [gMin, gMax] = o.serverGapMs ?? [15_000, 45_000];
  const [dMin, dMax] = o.serverDownMs ?? [500, 3_000];
  return Array.from({ length: o.serverRestarts }, () => ({
    afterMs: Math.round(rng.between(gMin, gMax)),
    downMs: Math.round(rng.between(dMin, dMax)),
  }));
}

/** Which host command a target waits for (as the host logs it, after `sudo -n` and env). */
export const TARGET_COMMAND: Record<Exclude<KillTarget, 'drain'>, RegExp> = {
  apply: /\bkubeadm upgrade apply v\S+ --yes\b/,
  'upgrade-node': /\bkubeadm upgrade node\b/,
  'apt-install': /\bapt-get install\b/,
  'kubelet-restart': /\bsystemctl restart kubelet\b/,
};

/** A targeted kill or outage that missed its moment is tried again this many times at most, before the plan goes on. */
export const EXTRA_TRIES_PER_TARGET = 2;

/**
 * After planned step `i` missed its target (never hit so far), the same step again right after it,
 * while the target has extra tries left: a missed moment (a drain over before the kill came) costs no
 * other target its turn. Returns whether it queued one.
 */
export function tryAgainAfter<T extends { target: string }>(queue: T[], i: number, extraTries: Map<string, number>): boolean {
  const step = queue[i];
  if (!step || step.target === 'random') return false;
  const used = extraTries.get(step.target) ?? 0;
  if (used >= EXTRA_TRIES_PER_TARGET) return false;
  extraTries.set(step.target, used + 1);
  queue.splice(i + 1, 0, { ...step });
  return true;
}
