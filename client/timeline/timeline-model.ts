import { compareNatural } from '../../rules/natural-order.js';
/**
 * The timeline picture's model: lanes (the cluster, then each node) and one bar per step, in epoch
 * milliseconds. Pure and tool-neutral: `timeline-from-runs.ts` builds one from skewless's Temporal
 * histories, the benchmark builds one from the shell baseline's own log, and `timeline-svg.ts`
 * draws either the same way.
 */

/** The phases a bar can be, in the order the legend lists them. */
export const TIMELINE_PHASES = [
  'snapshot',
  'control-plane',
  'cordon',
  'drain',
  'packages',
  'kubeadm',
  'kubelet',
  'verify',
  'uncordon',
  'blocked',
  'other',
] as const;
export type TimelinePhase = (typeof TIMELINE_PHASES)[number];

/** One colour per phase: distinct hues, the waiting one (blocked) the only saturated red. */
export const TIMELINE_COLOURS: Record<TimelinePhase, string> = {
  snapshot: '#6a3d9a',
  'control-plane': '#1f78b4',
  cordon: '#a6cee3',
  drain: '#ff7f00',
  packages: '#33a02c',
  kubeadm: '#17becf',
  kubelet: '#8c564b',
  verify: '#bcbd22',
  uncordon: '#f781bf',
  blocked: '#e31a1c',
  other: '#b0b0b0',
};

export interface TimelineBar {
  lane: string;
  phase: TimelinePhase;
  /** Epoch milliseconds. */
  startMs: number;
  endMs: number;
  /** What ran, for the tooltip (e.g. the activity and its summary). */
  label?: string;
}

export interface Timeline {
  title: string;
  /** Display order: `cluster` (cluster-wide steps) first, then control planes, then workers (see `compareNodeNames`). */
  lanes: string[];
  bars: TimelineBar[];
}

/** The lane of steps that act on no one node (inventory, stage labels, workload checks). */
export const CLUSTER_LANE = 'cluster';

/** Natural order of node names (worker-2 before worker-10), the order the rollout plan uses. */
export const compareNodeNames = compareNatural;

/** The first start and the last end of the bars ({0, 0} for none). A loop, not Math.min(...): tens of thousands of bars would overflow the argument list. */
export function timelineSpanMs(bars: readonly TimelineBar[]): { startMs: number; endMs: number } {
  if (bars.length === 0) return { startMs: 0, endMs: 0 };
  let startMs = Infinity;
  let endMs = -Infinity;
  for (const b of bars) {
    startMs = Math.min(startMs, b.startMs);
    endMs = Math.max(endMs, b.endMs);
  }
  return { startMs, endMs };
}

/** Lanes in display order: the cluster lane, then the control planes, then every other node, each in natural order. */
export function orderLanes(nodes: Iterable<string>, controlPlanes: ReadonlySet<string>): string[] {
  const all = new Set(nodes);
  const cluster = all.delete(CLUSTER_LANE) ? [CLUSTER_LANE] : [];
  const sorted = [...all].sort(compareNodeNames);
  return [...cluster, ...sorted.filter((n) => controlPlanes.has(n)), ...sorted.filter((n) => !controlPlanes.has(n))];
}
