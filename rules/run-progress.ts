import { compareVersions, parseVersion } from './version.js';

/**
 * What an upgrade's progress counts and which versions its header names, from its status: the same
 * for `status` and `watch` (the run's query) and for the memo that `status` reads when no worker answers.
 */
export interface RunProgressFacts {
  /** The apiservers' version when the plan was made. */
  from: string;
  /** The version asked for (`1.33`, or what an expression named). */
  to: string;
  hops: readonly string[];
  nodes: Readonly<Record<string, { from?: string; version?: string }>>;
  /** Node → the hops at which the plan moves it; absent in runs that predate it (every node at every hop). */
  moves?: Readonly<Record<string, readonly string[]>>;
}

/**
 * From the oldest of the apiservers and the kubelets the run moves, to its last hop's version: a
 * finishing run's `1.32.4 → 1.33.7`, not its apiservers' `1.33.7 → 1.33`. Before the plan (no hop
 * yet), the apiservers' version and the version asked for.
 */
export function runSpan(s: RunProgressFacts): { from: string; to: string } {
  const moving = Object.entries(s.nodes).filter(([node]) => s.moves === undefined || (s.moves[node]?.length ?? 0) > 0);
  const froms = [s.from, ...moving.map(([, n]) => n.from)].filter((v): v is string => isVersion(v));
  const oldest = froms.sort((a, b) => compareVersions(parseVersion(a), parseVersion(b)))[0] ?? s.from;
  return { from: oldest, to: s.hops.at(-1) ?? s.to };
}

/**
 * Node upgrades done of those the plan does: a worker moved once across hops counts once, a node
 * already at a hop not at all. A run that predates `moves` counts every node at every hop.
 */
export function nodeUpgradesDone(s: RunProgressFacts): { done: number; total: number } {
  const reached = (version: string | undefined) => (version ? s.hops.indexOf(version) : -1);
  const nodes = Object.values(s.nodes);
  if (!s.moves) return { done: nodes.reduce((sum, n) => sum + reached(n.version) + 1, 0), total: nodes.length * s.hops.length };
  let done = 0;
  let total = 0;
  for (const [node, hops] of Object.entries(s.moves)) {
    total += hops.length;
    done += hops.filter((h) => s.hops.indexOf(h) <= reached(s.nodes[node]?.version)).length;
  }
  return { done, total };
}

const isVersion = (v: string | undefined): boolean => {
  try {
    return v !== undefined && v !== '' && parseVersion(v) !== undefined;
  } catch {
    return false;
  }
};
