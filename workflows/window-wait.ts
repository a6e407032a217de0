import { condition, patched, upsertMemo } from '@temporalio/workflow';
import { windowAt, windowPhaseLabel, type MaintenanceWindow } from '../rules/index.js';
import { PATCH } from './patches.js';
import type { RolloutStatus, UpgradePhase, WindowWait } from './upgrade-messages.js';

export interface WindowWaitContext {
  /** An upgrade's (its phases belong to a hop) or an OS maintenance run's. */
  status: RolloutStatus & { hop?: string };
  /** The cluster's windows, read from its configuration when the rollout started; empty: any time. */
  windows: readonly MaintenanceWindow[];
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
  if (windows.length === 0 || !patched(PATCH.maintenanceWindows)) return 0;
  const started = Date.now(); // workflow time: deterministic on replay
  const before = status.phase;
  const hop = status.hop ?? '';
  let wait: WindowWait | undefined;
  while (!ctx.aborted()) {
    const now = Date.now();
    const verdict = windowAt(windows, now);
    if (!verdict || verdict.open) break;
    const opensAt = iso(verdict.opensAt);
    if (wait?.opensAt !== opensAt) {
      wait = { for: 'maintenance-window', phase, hop, since: wait?.since ?? iso(now), opensAt };
      status.waiting = wait;
      status.events.push(`${windowPhaseLabel(phase, hop)} waits for the maintenance window: opens ${opensAt}`);
      upsertMemo({ waiting: { for: wait.for, phase, hop, opensAt } });
      ctx.setPhase('waiting');
    }
    // Durable: the timer lives on the server, so a worker restart or days of waiting change nothing.
    await condition(ctx.aborted, verdict.opensAt - now);
  }
  if (wait) {
    delete status.waiting;
    upsertMemo({ waiting: null });
    const waited = Date.now() - started;
    status.events.push(
      `${windowPhaseLabel(phase, hop)} waited ${Math.round(waited / 1000)} s for the maintenance window${ctx.aborted() ? ' (aborted while waiting)' : ''}`,
    );
    if (!ctx.aborted()) ctx.setPhase(before);
    return ctx.aborted() ? 'aborted' : waited;
  }
  return ctx.aborted() ? 'aborted' : 0;
}
