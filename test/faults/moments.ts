import { hostname } from 'node:os';
import { drainsInProgress, pendingActivities, type RunningCommand } from './in-flight.js';
import { TARGET_COMMAND, type KillTarget } from './kill-schedule.js';
import type { LoopContext } from './loop-context.js';

/**
 * The moments the fault loops wait for before they kill: a host command of a target `into` its run, or a
 * drain with pods still to move while the live worker's drainNode runs; and the small timing helpers.
 */

/** A target not hit yet waits this long for its moment (until the upgrade ends, in practice). */
export const FIRST_HIT_WAIT_MS = 15 * 60_000;

/** Resolves after `ms`, or false as soon as `signal` fires. */
export const wait = (ms: number, signal: AbortSignal): Promise<boolean> =>
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

export const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`;
export const short = (command: string) =>
  command
    .replace(/^sudo -n (\S+=\S+ )*/, '')
    .replace(/ -o \S+/g, '')
    .replace(/ -[qy]\b/g, '');
export const describeCommands = (cs: RunningCommand[], now: number) =>
  cs.map((c) => `${c.host}: '${short(c.command)}' (${now - c.startedAt} ms in)`);

/**
 * An AbortSignal that fires at the deadline or when `parent` does; `done()` releases it. Not
 * AbortSignal.any + AbortSignal.timeout: on Node 20 the timeout signal can be garbage-collected
 * before it fires (nodejs/node#48951), and a wait then never ends.
 */
export function until(parent: AbortSignal, ms: number): { signal: AbortSignal; done(): void } {
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

export interface Moment {
  hit: boolean;
  what: string;
  /** The node a drain target chose, to confirm against Temporal's pending activities. */
  drainNode?: string;
}

const LATENCY_OF = {
  apply: 'kubeadmApply',
  'upgrade-node': 'kubeadmNode',
  'apt-install': 'aptInstall',
  'kubelet-restart': 'kubeletRestart',
} as const;
/**
 * How long a command of the target runs when no latency models it: the per-node world's real kubeadm
 * (measured there: `upgrade apply` 15–40 s, `upgrade node` on a control plane 10–25 s, on a worker ~1 s).
 * A kill waits `into` of it, and counts as a hit only if the command still runs then.
 */
const UNMODELLED_MS = { apply: 10_000, 'upgrade-node': 4_000, 'apt-install': 1_000, 'kubelet-restart': 0 } as const;

/** Waits for a host command of the target to be in flight `into` of its latency; undefined when none came in time. */
export async function commandMoment(
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
      const latency = ctx.sim.description.nodes.find((n) => n.name === c.host)?.latencies[LATENCY_OF[target]] || UNMODELLED_MS[target];
      const delay = target === 'kubelet-restart' ? 0 : Math.round(into * latency);
      if (delay > 0 && !(await wait(delay, ctx.finished))) return undefined;
      if (ctx.tracker.isRunning(c)) return { hit: true, what: `${c.host}: '${short(c.command)}' ${delay} ms in` };
    }
  } finally {
    deadline.done();
  }
}

/** The SDK's default worker identity: the live worker's, as opposed to an attempt a killed one left behind. */
export const identityOf = (pid: number | undefined) => `${pid}@${hostname()}`;

/** A drainNode attempt of the live worker is out for `node` (a dead worker's stays "started" until its heartbeat times out). */
const drainRunning = async (ctx: LoopContext, node: string): Promise<boolean> =>
  (await pendingActivities(ctx.client).catch(() => [])).some(
    (a) => a.activity === 'drainNode' && a.started && a.worker === identityOf(ctx.worker.pid) && a.workflowId.endsWith(`/${node}`),
  );

/** Waits until a node cordoned by skewless still has pods to evict while its drainNode activity runs. */
export async function drainMoment(ctx: LoopContext, into: number, waitMs: number): Promise<Moment | undefined> {
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
