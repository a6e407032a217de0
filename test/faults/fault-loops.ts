import { hostname } from 'node:os';
import type { Client } from '@temporalio/client';
import type { Simulation } from '../../sim/simulation.js';
import type { DevServerProcess, WorkerProcess } from './fault-processes.js';
import { describeActivity, drainsInProgress, pendingActivities, type CommandTracker, type RunningCommand } from './in-flight.js';
import { TARGET_COMMAND, type KillTarget, type PlannedKill, type PlannedServerRestart } from './kill-schedule.js';

/** The two loops of a fault run: kill the worker at planned moments; kill the Temporal server. */

export interface LoopContext {
  sim: Simulation;
  client: Client;
  worker: WorkerProcess;
  server: DevServerProcess;
  tracker: CommandTracker;
  log: (line: string) => void;
  /** When the upgrade started: times in the report are relative to it. */
  t0: number;
  /** Fires when the upgrade has ended: the loops stop. */
  finished: AbortSignal;
  /** How long a later targeted kill waits for its moment before it kills anyway. */
  targetWaitMs: number;
}

/** A target not hit yet waits this long for its moment (until the upgrade ends, in practice). */
const FIRST_HIT_WAIT_MS = 15 * 60_000;

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

export interface ServerRestartRecord {
  n: number;
  atMs: number;
  downMs: number;
  /** From the kill until the restarted server answered. */
  outageMs: number;
  commands: string[];
}

/** Resolves after `ms`, or false as soon as `signal` fires. */
const wait = (ms: number, signal: AbortSignal): Promise<boolean> =>
  new Promise((resolve) => {
    if (signal.aborted) return resolve(false);
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', onAbort);
      resolve(true);
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      resolve(false);
    };
    signal.addEventListener('abort', onAbort, { once: true });
  });

const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`;
const short = (command: string) =>
  command
    .replace(/^sudo -n (\S+=\S+ )*/, '')
    .replace(/ -o \S+/g, '')
    .replace(/ -[qy]\b/g, '');
const describeCommands = (cs: RunningCommand[], now: number) =>
  cs.map((c) => `${c.host}: '${short(c.command)}' (${now - c.startedAt} ms in)`);

/**
 * An AbortSignal that fires at the deadline or when `parent` does; `done()` releases it. Not
 * AbortSignal.any + AbortSignal.timeout: on Node 20 the timeout signal can be garbage-collected
 * before it fires (nodejs/node#48951), and a wait then never ends.
 */
function until(parent: AbortSignal, ms: number): { signal: AbortSignal; done(): void } {
  const controller = new AbortController();
  const abort = () => controller.abort();
  const timer = setTimeout(abort, ms);
  parent.addEventListener('abort', abort, { once: true });
  if (parent.aborted) abort();
  return {
    signal: controller.signal,
    done: () => {
      clearTimeout(timer);
      parent.removeEventListener('abort', abort);
    },
  };
}

interface Moment {
  hit: boolean;
  what: string;
  /** The node a drain target chose, to confirm against Temporal's pending activities. */
  drainNode?: string;
}

const LATENCY_OF = { apply: 'kubeadmApply', 'apt-install': 'aptInstall', 'kubelet-restart': 'kubeletRestart' } as const;

/** Waits for a host command of the target to be in flight `into` of its latency; undefined when none came in time. */
async function commandMoment(
  ctx: LoopContext,
  target: Exclude<KillTarget, 'drain'>,
  into: number,
  waitMs: number,
): Promise<Moment | undefined> {
  const deadline = until(ctx.finished, waitMs);
  try {
    for (;;) {
      const c = await ctx.tracker.nextStart((r) => TARGET_COMMAND[target].test(r.command), deadline.signal);
      if (!c) return undefined;
      // A kubelet restart returns at once (the node turns Ready later): the kill goes in as it starts.
      const latency = ctx.sim.description.nodes.find((n) => n.name === c.host)?.latencies[LATENCY_OF[target]] ?? 0;
      const delay = target === 'kubelet-restart' ? 0 : Math.round(into * latency);
      if (delay > 0 && !(await wait(delay, ctx.finished))) return undefined;
      if (ctx.tracker.isRunning(c)) return { hit: true, what: `${c.host}: '${short(c.command)}' ${delay} ms in` };
    }
  } finally {
    deadline.done();
  }
}

/** The SDK's default worker identity: the live worker's, as opposed to an attempt a killed one left behind. */
const identityOf = (pid: number | undefined) => `${pid}@${hostname()}`;

/** A drainNode attempt of the live worker is out for `node` (a dead worker's stays "started" until its heartbeat times out). */
const drainRunning = async (ctx: LoopContext, node: string): Promise<boolean> =>
  (await pendingActivities(ctx.client).catch(() => [])).some(
    (a) => a.activity === 'drainNode' && a.started && a.worker === identityOf(ctx.worker.pid) && a.workflowId.endsWith(`/${node}`),
  );

/** Waits until a node cordoned by skewless still has pods to evict while its drainNode activity runs. */
async function drainMoment(ctx: LoopContext, into: number, waitMs: number): Promise<Moment | undefined> {
  const deadline = Date.now() + waitMs;
  while (Date.now() < deadline && !ctx.finished.aborted) {
    for (const d of await drainsInProgress(ctx.sim.kube).catch(() => [])) {
      if (!(await drainRunning(ctx, d.node))) continue;
      // A drain that meets no PDB is over in a few hundred ms: the kill follows within 150 ms.
      if (!(await wait(Math.round(into * 150), ctx.finished))) return undefined;
      return { hit: true, what: `drain of ${d.node}: ${d.remaining.join(', ')} to move, ${d.terminating} terminating`, drainNode: d.node };
    }
    if (!(await wait(150, ctx.finished))) return undefined;
  }
  return undefined;
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
  let retarget: KillTarget | undefined;
  for (const [i, planned] of plan.entries()) {
    if (ctx.finished.aborted) return;
    const target = retarget ?? planned.target;
    retarget = undefined;
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
    // A target not hit yet is tried again by the next kill, until each has been hit once.
    if (target !== 'random' && !moment.hit && !out.some((k) => k.target === target && k.hit)) retarget = target;
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
      `[faults] kill ${record.n}/${plan.length} at ${seconds(atMs)} [${target}${target === 'random' ? '' : record.hit ? ', hit' : ', MISSED'}]: ${record.moment}`,
    );
    ctx.log(`[faults]   commands in flight: ${commands.join('; ') || 'none'}`);
    ctx.log(`[faults]   activities out: ${record.activities.join(', ') || 'none'}; worker down ${seconds(planned.downMs)}`);
    await new Promise((r) => setTimeout(r, planned.downMs));
    await restartWorker(ctx); // even when the upgrade has ended meanwhile: the harness stops it gracefully
  }
}

export async function restartServerLoop(ctx: LoopContext, plan: PlannedServerRestart[], out: ServerRestartRecord[]): Promise<void> {
  for (const [i, planned] of plan.entries()) {
    if (!(await wait(planned.afterMs, ctx.finished))) return;
    const now = Date.now();
    const commands = describeCommands(ctx.tracker.inFlight(), now);
    await ctx.server.kill();
    await new Promise((r) => setTimeout(r, planned.downMs));
    await ctx.server.start();
    const record: ServerRestartRecord = { n: i + 1, atMs: now - ctx.t0, downMs: planned.downMs, outageMs: Date.now() - now, commands };
    out.push(record);
    ctx.log(
      `[faults] server restart ${record.n}/${plan.length} at ${seconds(record.atMs)}: down ${seconds(record.outageMs)} (same port, same db); commands in flight: ${commands.join('; ') || 'none'}`,
    );
  }
}
