import { describeActivity, pendingActivities } from './in-flight.js';
import { tryAgainAfter, type KillTarget, type PlannedKill, type PlannedOutage } from './kill-schedule.js';
import type { LoopContext } from './loop-context.js';
export type { LoopContext } from './loop-context.js';
import { commandMoment, describeCommands, drainMoment, FIRST_HIT_WAIT_MS, identityOf, seconds, wait, type Moment } from './moments.js';

/**
 * The loops of a fault run: kill the worker at planned moments (here); kill the Temporal server and, on
 * the stack, PostgreSQL (temporal-loops.ts). Those two take turns (`outage`), so each outage is one part's.
 */

export interface KillRecord {
  n: number;
  atMs: number;
  /** What the kill waited for; `random` also when a target's moment did not come in time. */
  target: KillTarget | 'random';
  /** A targeted kill that landed in its moment (the command still running, a drain activity out). */
  hit: boolean;
  /** What the moment was: the command and how far into it, or the drain. */
  moment: string;
  commands: string[];
  activities: string[];
  downMs: number;
}

/** One outage of a Temporal-side part (the server, PostgreSQL): when, how long, what it met. */
export interface OutageRecord {
  n: number;
  atMs: number;
  downMs: number;
  /** From the kill until the restarted part answered. */
  outageMs: number;
  commands: string[];
  target: PlannedOutage['target'];
  /** A targeted outage whose moment came: the command still running, or the drain activity out, as the part died. */
  hit: boolean;
  moment: string;
  activities: string[];
}

/** Starts the worker again; a worker that exits at start (the server down just then) is restarted, as a supervisor would. */
async function restartWorker(ctx: LoopContext): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    try {
      await ctx.worker.start();
      return;
    } catch (err) {
      if (attempt >= 30) throw err;
      ctx.log(`[faults]   worker start ${attempt} failed (${(err as Error).message.split('\n')[0]}); again in 1 s`);
      await new Promise((r) => setTimeout(r, 1000));
    }
  }
}

export async function killWorkerLoop(ctx: LoopContext, plan: PlannedKill[], out: KillRecord[]): Promise<void> {
  const queue = [...plan];
  const extraTries = new Map<string, number>();
  for (let i = 0; i < queue.length; i++) {
    if (ctx.finished.aborted) return;
    const planned = queue[i] as PlannedKill;
    const target = planned.target;
    let moment: Moment | undefined;
    if (target === 'random') {
      if (!(await wait(planned.afterMs, ctx.finished))) return;
      moment = { hit: false, what: `${seconds(planned.afterMs)} after the worker came up` };
    } else {
      // Until a target has been hit once, its kill waits for it; later ones fall back to a random kill.
      const waitMs = out.some((k) => k.target === target && k.hit) ? ctx.targetWaitMs : FIRST_HIT_WAIT_MS;
      moment = target === 'drain' ? await drainMoment(ctx, planned.into, waitMs) : await commandMoment(ctx, target, planned.into, waitMs);
      if (ctx.finished.aborted) return;
      moment ??= { hit: false, what: `no ${target} within ${seconds(waitMs)}` };
    }
    const now = Date.now();
    const commands = describeCommands(ctx.tracker.inFlight(), now);
    const killed = identityOf(ctx.worker.pid);
    await ctx.worker.kill();
    const atMs = now - ctx.t0;
    // Temporal still shows the dead worker's activities as started until their timeouts.
    const activities = await Promise.race([
      pendingActivities(ctx.client),
      new Promise<undefined>((r) => setTimeout(() => r(undefined), 5_000)),
    ]).catch(() => undefined);
    if (moment.drainNode && activities) {
      moment.hit = activities.some(
        (a) => a.activity === 'drainNode' && a.started && a.worker === killed && a.workflowId.endsWith(`/${moment.drainNode}`),
      );
    }
    // A target not hit yet is tried again by an extra kill, until each has been hit once.
    if (target !== 'random' && !moment.hit && !out.some((k) => k.target === target && k.hit)) tryAgainAfter(queue, i, extraTries);
    const record: KillRecord = {
      n: i + 1,
      atMs,
      target,
      hit: moment.hit,
      moment: moment.what,
      commands,
      activities: activities ? activities.map((a) => describeActivity(a, killed)) : ['(Temporal did not answer)'],
      downMs: planned.downMs,
    };
    out.push(record);
    ctx.log(
      `[faults] kill ${record.n}/${queue.length} at ${seconds(atMs)} [${target}${target === 'random' ? '' : record.hit ? ', hit' : ', MISSED'}]: ${record.moment}`,
    );
    ctx.log(`[faults]   commands in flight: ${commands.join('; ') || 'none'}`);
    ctx.log(`[faults]   activities out: ${record.activities.join(', ') || 'none'}; worker down ${seconds(planned.downMs)}`);
    await new Promise((r) => setTimeout(r, planned.downMs));
    await restartWorker(ctx); // even when the upgrade has ended meanwhile: the harness stops it gracefully
  }
}
