import { describeActivity, pendingActivities } from './in-flight.js';
import { TARGET_COMMAND, tryAgainAfter, type PlannedOutage } from './kill-schedule.js';
import type { LoopContext, OutageRecord } from './fault-loops.js';
import { commandMoment, describeCommands, drainMoment, FIRST_HIT_WAIT_MS, seconds, wait, type Moment } from './moments.js';

/** The Temporal side's outages: the server SIGKILLed and restarted; on the stack, PostgreSQL too. */

const PART = {
  server: { name: 'server restart', back: 'same storage' },
  postgres: { name: 'PostgreSQL kill', back: 'WAL recovery' },
} as const;

/**
 * A Temporal-side part SIGKILLed and restarted at its planned moments: the server (dev server or the
 * stack's), or PostgreSQL (the stack). A target not met within the wait (the upgrade past its applies)
 * falls back to an outage at once, recorded as not hit.
 */
export async function outageLoop(ctx: LoopContext, part: keyof typeof PART, plan: PlannedOutage[], out: OutageRecord[]): Promise<void> {
  const restart =
    part === 'server' ? (downMs: number) => ctx.temporal.restartServer(downMs) : ctx.temporal.restartDatabase?.bind(ctx.temporal);
  if (!restart) return;
  const queue = [...plan];
  const extraTries = new Map<string, number>();
  for (let i = 0; i < queue.length; i++) {
    const planned = queue[i] as PlannedOutage;
    let moment: Moment | undefined;
    if (planned.target === 'random') {
      if (!(await wait(planned.afterMs, ctx.finished))) return;
      moment = { hit: false, what: `${seconds(planned.afterMs)} after the last` };
    } else {
      const waitMs = out.some((r) => r.target === planned.target && r.hit) ? ctx.targetWaitMs : FIRST_HIT_WAIT_MS;
      moment =
        planned.target === 'drain'
          ? await drainMoment(ctx, planned.into, waitMs)
          : await commandMoment(ctx, planned.target, planned.into, waitMs);
      if (ctx.finished.aborted) return;
      moment ??= { hit: false, what: `no ${planned.target} within ${seconds(waitMs)}` };
    }
    const found = moment;
    const record = await ctx.outage.run(async (): Promise<OutageRecord> => {
      const now = Date.now();
      const running = ctx.tracker.inFlight();
      // The moment may have passed while the other part's outage held the turn: a command target must still run.
      const command = planned.target === 'apply' ? running.some((c) => TARGET_COMMAND.apply.test(c.command)) : true;
      const activities = await Promise.race([
        pendingActivities(ctx.client),
        new Promise<undefined>((r) => setTimeout(() => r(undefined), 3_000)),
      ]).catch(() => undefined);
      await restart(planned.downMs);
      const drainOut = activities?.some((a) => a.activity === 'drainNode' && a.started && a.workflowId.endsWith(`/${found.drainNode}`));
      return {
        n: i + 1,
        atMs: now - ctx.t0,
        downMs: planned.downMs,
        outageMs: Date.now() - now,
        commands: describeCommands(running, now),
        target: planned.target,
        hit: found.hit && command && (found.drainNode === undefined || drainOut === true),
        moment: found.what,
        activities: activities ? activities.map((a) => describeActivity(a)) : ['(Temporal did not answer)'],
      };
    });
    out.push(record);
    // A target not hit yet (its moment passed while the other part held the turn) is tried again by an extra outage.
    if (record.target !== 'random' && !record.hit && !out.some((r) => r.target === record.target && r.hit))
      tryAgainAfter(queue, i, extraTries);
    const what = record.target === 'random' ? record.moment : `[${record.target}${record.hit ? ', hit' : ', MISSED'}]: ${record.moment}`;
    ctx.log(
      `[faults] ${PART[part].name} ${record.n}/${queue.length} at ${seconds(record.atMs)} ${what}; back after ${seconds(record.outageMs)} (${PART[part].back})`,
    );
    ctx.log(
      `[faults]   commands in flight: ${record.commands.join('; ') || 'none'}; activities out: ${record.activities.join(', ') || 'none'}`,
    );
  }
}

/** One outage at a time: a turn runs after the previous one ended. */
export function takingTurns(): LoopContext['outage'] {
  let last: Promise<unknown> = Promise.resolve();
  return {
    run<T>(act: () => Promise<T>): Promise<T> {
      const next = last.then(act, act);
      last = next.catch(() => undefined);
      return next;
    },
  };
}
