import type { Rng } from './prng.js';

/**
 * The fault harness's plan, drawn from the seed before anything starts: which kill waits for what,
 * how long the worker stays dead, and when the Temporal server goes down. The same seed gives the
 * same plan; where each kill lands still depends on the run's timing, so the report says it.
 */

/** A targeted kill waits for its moment: a drain evicting pods, or a host command in flight. */
export type KillTarget = 'apply' | 'drain' | 'apt-install' | 'kubelet-restart';
export const TARGETS: readonly KillTarget[] = ['apply', 'drain', 'apt-install', 'kubelet-restart'];

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
 * Kills 1–4 are the four targets (apply first: it only happens early in each hop); after them each
 * kill is random or targeted with even odds, so a long run kills into every kind of step many
 * times. `kubeadm upgrade apply` runs once per hop, so it comes back rarely (1 in 8 targeted kills).
 */
export function planKills(rng: Rng, o: KillScheduleOptions): PlannedKill[] {
  const [rMin, rMax] = o.randomAfterMs ?? [500, 5_000];
  const [dMin, dMax] = o.downMs ?? [200, 2_000];
  const first: KillTarget[] = ['apply', ...rng.shuffle(TARGETS.filter((t) => t !== 'apply'))];
  const later: KillTarget[] = ['apply', 'drain', 'drain', 'drain', 'apt-install', 'apt-install', 'kubelet-restart', 'kubelet-restart'];
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
  'apt-install': /\bapt-get install\b/,
  'kubelet-restart': /\bsystemctl restart kubelet\b/,
};
