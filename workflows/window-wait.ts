import { condition, patched, upsertMemo } from '@temporalio/workflow';
import { describeExclusion, exclusionAt, windowAt, windowPhaseLabel, type Exclusion, type MaintenanceWindow } from '../rules/index.js';
import { PATCH } from './patches.js';
import type { RolloutStatus, UpgradePhase, WindowWait } from './rollout-messages.js';

export interface WindowWaitContext {
  /** An upgrade's (its phases belong to a hop) or an OS maintenance run's. */
  status: RolloutStatus & { hop?: string };
  /** The cluster's windows, read from its configuration when the rollout started; empty: any time. */
  windows: readonly MaintenanceWindow[];
  /** The cluster's blackout dates (`exclusions:`), and whether the run moves to another minor (a `minor` exclusion holds only that). */
  exclusions?: readonly Exclusion[];
  minor?: boolean;
  aborted: () => boolean;
  setPhase: (phase: UpgradePhase) => void;
}

const iso = (ms: number) => new Date(ms).toISOString();

/**
 * Holds a disruptive phase (`control-plane` of a hop, `canary`, `batch-N`) until a maintenance
 * window is open: a durable timer to the next opening, re-checked on waking (the windows decide, not
 * the timer), cut short by an abort. While it waits, status.waiting, the memo's `waiting` and the
 * SkewlessPhase search attribute (`waiting`) say so; the events say when it waited and how long.
 *
 * No windows: returns 0 at once and issues no command, so such runs keep their command sequence.
 * With windows, behind patched(): the marker is the first command the feature adds.
 * Returns the milliseconds waited, or 'aborted' when an abort came first (the phase must not start).
 */
export async function waitForWindow(ctx: WindowWaitContext, phase: string): Promise<number | 'aborted'> {
  const { status, windows } = ctx;
  const exclusions = ctx.exclusions ?? [];
  // Each patch is reached only when its feature is configured: runs without it keep their command sequence.
  const useWindows = windows.length > 0 && patched(PATCH.maintenanceWindows);
  const useExclusions = exclusions.length > 0 && patched(PATCH.exclusions);
  if (!useWindows && !useExclusions) return 0;
  const started = Date.now(); // workflow time: deterministic on replay
  const before = status.phase;
  const hop = status.hop ?? '';
  let wait: WindowWait | undefined;
  while (!ctx.aborted()) {
    const now = Date.now();
    // A blackout date first (it may end inside a closed window: the loop then waits for the window).
    const held = useExclusions ? exclusionAt(exclusions, now, ctx.minor ?? true) : undefined;
    const verdict = useWindows ? windowAt(windows, now) : undefined;
    const until = held ? held.until : verdict && !verdict.open ? verdict.opensAt : undefined;
    if (until === undefined) break;
    const opensAt = iso(until);
    if (wait?.opensAt !== opensAt) {
      const why = held ? { for: 'exclusion' as const, reason: describeExclusion(held.exclusion) } : { for: 'maintenance-window' as const };
      wait = { ...why, phase, hop, since: wait?.since ?? iso(now), opensAt };
      status.waiting = wait;
      status.events.push(
        held
          ? `${windowPhaseLabel(phase, hop)} waits for the end of the exclusion ${why.reason ?? ''}: until ${opensAt}`
          : `${windowPhaseLabel(phase, hop)} waits for the maintenance window: opens ${opensAt}`,
      );
      upsertMemo({ waiting: { for: wait.for, phase, hop, opensAt } });
      ctx.setPhase('waiting');
    }
    // Durable: the timer lives on the server, so a worker restart or days of waiting change nothing.
    await condition(ctx.aborted, until - now);
  }
  if (wait) {
    delete status.waiting;
    upsertMemo({ waiting: null });
    const waited = Date.now() - started;
    status.events.push(
      `${windowPhaseLabel(phase, hop)} waited ${Math.round(waited / 1000)} s for the ${wait.for === 'exclusion' ? 'end of the exclusion' : 'maintenance window'}${ctx.aborted() ? ' (aborted while waiting)' : ''}`,
    );
    if (!ctx.aborted()) ctx.setPhase(before);
    return ctx.aborted() ? 'aborted' : waited;
  }
  return ctx.aborted() ? 'aborted' : 0;
}
