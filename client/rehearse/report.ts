import { readinessLines, type ReadinessView } from '../render-readiness.js';
import { checkSkew, compareNatural } from '../../rules/index.js';
import type { VersionRecord } from './twin.js';
import type { SkewInventory } from '../../rules/index.js';
import type { RehearsalOutcome } from './auto-operator.js';
import type { PhaseTiming, NodeTiming } from './timings.js';
import type { TwinNames } from './twin-description.js';
import { clusterPlacement, placementNote, type ClusterPlacement } from './twin-placement.js';

/** What `skewless rehearse` prints: text for a person, the same as one JSON document with --output json. */
export interface RehearsalReport {
  cluster: string;
  target: string;
  from: string;
  hops: string[];
  /** upgraded: every node at the target; partial: the run ended but nodes were left behind (blocked drains, refused nodes); failed. */
  outcome: 'upgraded' | 'partial' | 'failed';
  failure?: string;
  /** PDBs the pre-flight would refuse the real upgrade on unless acknowledged (the twin's run acknowledged them, to go on). */
  preflight: string[];
  /**
   * What would hold each hop of the real cluster (issue 21), read as `plan --cluster` reads it: the
   * twin has no apiserver metrics, audit log, certificates or alerts of the cluster, so these are the
   * live cluster's. `notChecked`: why it could not be read (the rehearsal goes on without it).
   */
  readiness: ReadinessView | { notChecked: string };
  phases: PhaseTiming[];
  nodes: NodeTiming[];
  /**
   * Drains that blocked on the twin: `node` is the twin's node (its scheduler placed the pods), `pods`
   * the twin's, named by the cluster's workload that owns them; `clusterNodes`: the cluster's nodes where
   * that workload's pods run (read from the cluster), where its drains block on the real run.
   */
  blockedDrains: {
    node: string;
    hop?: string;
    pdbs: string[];
    pods: string[];
    clusterNodes?: string[];
    /** Each refusing budget (the cluster's name) → the cluster's nodes running the workload it covers. */
    clusterNodesByPdb?: Record<string, string[]>;
    message: string;
    action: string;
  }[];
  /**
   * The blocked drains mapped to the cluster by owner (absent when the facts carry no placement):
   * `twinOnly`, nodes blocked on the twin's placement only; `clusterBlocks`, the cluster's nodes where
   * the pods of the workloads whose budgets blocked run, where the real run's drains block.
   */
  placement?: ClusterPlacement;
  refusedNodes: { node: string; hop?: string; pods: string[]; message: string; action: string }[];
  otherBlocks: { node: string; kind: string; hop?: string; message: string; action: string }[];
  skew: {
    statesChecked: number;
    unreadable: number;
    compliant: boolean;
    violations: { at: string; cause: string; node: string; rule: string }[];
  };
  finalVersions: { node: string; kubelet?: string; apiserver?: string; controllerManager?: string; scheduler?: string }[];
  twin: { nodes: number; workloads: number; drainTimeoutSeconds: number; latenciesMs: Record<string, number>; notModelled: string[] };
  seconds: number;
}

/** Every recorded version state of the twin, judged as the upgrade judges the cluster (kubeadm topology). */
export function skewOfHistory(records: VersionRecord[], name: (twin: string) => string): RehearsalReport['skew'] {
  const violations: RehearsalReport['skew']['violations'] = [];
  let unreadable = 0;
  for (const r of records) {
    if (r.error) {
      unreadable++;
      continue;
    }
    for (const v of checkSkew(r.inventory, { topology: 'kubeadm' }).violations) {
      // The rule's sentence names the twin's nodes; `node` is the cluster's name.
      violations.push({ at: r.at, cause: r.cause.split(' ').map(name).join(' '), node: name(v.node), rule: v.rule });
    }
  }
  return {
    statesChecked: records.length - unreadable,
    unreadable,
    compliant: violations.length === 0 && records.length > unreadable,
    violations,
  };
}

export function finalVersions(inventory: SkewInventory, name: (twin: string) => string): RehearsalReport['finalVersions'] {
  const rows = new Map<string, RehearsalReport['finalVersions'][number]>();
  const put = (list: { node: string; version: string }[] | undefined, key: 'kubelet' | 'apiserver' | 'controllerManager' | 'scheduler') => {
    for (const c of list ?? []) {
      const row = rows.get(c.node) ?? { node: name(c.node) };
      row[key] = c.version;
      rows.set(c.node, row);
    }
  };
  put(inventory.kubelets, 'kubelet');
  put(inventory.apiservers, 'apiserver');
  put(inventory.controllerManagers, 'controllerManager');
  put(inventory.schedulers, 'scheduler');
  return [...rows.values()].sort((a, b) => a.node.localeCompare(b.node, 'en', { numeric: true }));
}

/** The operator's records, in the cluster's names. */
export function blocksOf(
  outcome: RehearsalOutcome,
  names: TwinNames,
): Pick<RehearsalReport, 'blockedDrains' | 'placement' | 'refusedNodes' | 'otherBlocks'> {
  const node = (n: string) => names.nodes[n] ?? n;
  // The twin's scheduler placed its pods itself, under names of its own: a pod is named by the
  // cluster's workload that owns it, never as if the cluster had a pod of the twin's name.
  const ownerOf = (p: string) =>
    Object.keys(names.workloads)
      .filter((w) => p.startsWith(`${w}-`))
      .sort((a, b) => b.length - a.length)[0];
  const pod = (p: string) => {
    const same = names.workloads[p];
    if (same) return same; // a bare pod: the twin's copy of the cluster's
    const owner = ownerOf(p);
    return owner ? `a pod of ${names.workloads[owner]} (the twin's ${p.slice(p.indexOf('/') + 1)})` : `${p} (the twin's)`;
  };
  // Where the owners' pods run on the cluster: read from the cluster, not from the twin's placement.
  const clusterNodes = (pods: string[]) => {
    if (!names.clusterNodes) return {};
    const owners = pods.map(ownerOf).filter((o): o is string => o !== undefined);
    return { clusterNodes: [...new Set(owners.flatMap((o) => names.clusterNodes?.[o] ?? []))].sort(compareNatural) };
  };
  const pdb = (p: string) => names.pdbs[p] ?? p;
  // The twin models one budget per workload, named after it: each blocking budget's workload, where the cluster runs it.
  const byPdb = (pdbs: string[]) => {
    if (!names.clusterNodes) return {};
    const out: Record<string, string[]> = {};
    for (const p of pdbs) out[pdb(p)] = [...new Set([...(out[pdb(p)] ?? []), ...(names.clusterNodes[p] ?? [])])].sort(compareNatural);
    return { clusterNodesByPdb: out };
  };
  const hop = (b: { hop?: string }) => (b.hop ? { hop: b.hop } : {});
  const blockedDrains = outcome.blocks
    .filter((b) => b.kind === 'DrainBlocked')
    .map((b) => ({
      node: node(b.node),
      ...hop(b),
      pdbs: b.pdbs.map(pdb),
      pods: b.pods.map(pod),
      ...clusterNodes(b.pods),
      ...byPdb(b.pdbs),
      message: b.message,
      action: b.action,
    }));
  const placement = clusterPlacement(blockedDrains);
  return {
    blockedDrains,
    ...(placement ? { placement } : {}),
    refusedNodes: outcome.blocks
      .filter((b) => b.kind === 'DrainRefused')
      .map((b) => ({ node: node(b.node), ...hop(b), pods: b.pods.map(pod), message: b.message, action: b.action })),
    otherBlocks: outcome.blocks
      .filter((b) => b.kind === 'StepFailed' || b.kind === 'Halted')
      .map((b) => ({ node: node(b.node), kind: b.kind, ...hop(b), message: b.message, action: b.action })),
  };
}

/** The cluster's own placement of a blocked drain's workload, beside the twin's. */
const onCluster = (nodes: string[] | undefined) =>
  nodes === undefined
    ? ''
    : nodes.length
      ? `; on the cluster its pods run on ${nodes.join(', ')}`
      : '; on the cluster none of its pods runs';

const s = (seconds: number) => (seconds < 60 ? `${seconds.toFixed(1)} s` : `${Math.floor(seconds / 60)} min ${Math.round(seconds % 60)} s`);

/** The phases and nodes timed on the twin; a node's line says where the twin's outcome is its own placement's. */
function timingLines(r: RehearsalReport): string[] {
  const out: string[] = [];
  const note = (node: string, around: (t: string) => string) => {
    const text = placementNote(node, r.placement, r.blockedDrains);
    return text ? around(text) : '';
  };
  out.push('', 'Phases (time on the twin):');
  for (const p of r.phases) {
    const nodes = p.nodes.map((n) => `${n}${note(n, (t) => ` (${t})`)}`).join(', ');
    out.push(`  ${p.hop.padEnd(8)} ${p.phase.padEnd(14)} ${s(p.seconds).padStart(12)}${nodes ? `  ${nodes}` : ''}`);
  }
  if (r.phases.length === 0) out.push('  none ran');
  out.push('', 'Nodes (on the twin):');
  for (const n of r.nodes)
    out.push(
      `  ${n.hop.padEnd(8)} ${n.node.padEnd(24)} ${s(n.seconds).padStart(12)}  ${n.steps.map((x) => `${x.step} ${s(x.seconds)}${x.outcome === 'done' ? '' : ` (${x.outcome})`}`).join('; ')}${note(n.node, (t) => `; ${t}`)}`,
    );
  return out;
}

/** Blocked drains (the twin's, mapped to the cluster by owner), refused nodes and other blocks. */
function blockLines(r: RehearsalReport): string[] {
  const out: string[] = [
    '',
    !r.blockedDrains.length
      ? 'Drains that blocked on the twin: none'
      : r.placement
        ? 'Drains that blocked on the twin (its scheduler placed the pods; mapped to the cluster by the workload each budget covers):'
        : "Drains that blocked on the twin (its scheduler placed the pods: on the cluster, the readiness section's drain-block lines say which drains block):",
  ];
  for (const b of r.blockedDrains) {
    const tags = [b.hop, r.placement?.twinOnly.includes(b.node) ? "the twin's placement only" : undefined].filter(Boolean);
    out.push(
      `  ${b.node}${tags.length ? ` (${tags.join(', ')})` : ''}: PDB ${b.pdbs.join(', ') || '?'} refused evicting ${b.pods.join(', ')}${onCluster(b.clusterNodes)}; the rehearsal answered ${b.action}`,
    );
  }
  if (r.placement)
    out.push(
      r.placement.clusterBlocks.length
        ? `On the cluster (its pods as read, not the twin's placement) these drains block: ${r.placement.clusterBlocks.map((c) => `${c.node} (PDB ${c.pdbs.join(', ')})`).join(', ')}`
        : 'On the cluster (its pods as read) no pod of these workloads runs: no drain blocks on their budgets',
    );
  out.push(r.refusedNodes.length ? 'Nodes refused (pods nothing would recreate):' : 'Nodes refused: none');
  for (const b of r.refusedNodes)
    out.push(`  ${b.node}${b.hop ? ` (${b.hop})` : ''}: ${b.pods.join(', ')}; the rehearsal answered ${b.action}`);
  for (const b of r.otherBlocks) out.push(`${b.kind}${b.node ? ` on ${b.node}` : ''}: ${b.message}; the rehearsal answered ${b.action}`);
  return out;
}

export function reportText(r: RehearsalReport): string {
  const out: string[] = [];
  const verdict =
    r.outcome === 'upgraded'
      ? 'the twin upgraded'
      : r.outcome === 'partial'
        ? 'the twin upgraded, with nodes left behind'
        : "the twin's upgrade FAILED";
  out.push(
    `Rehearsal of ${r.cluster}: ${r.from} → ${r.hops.join(' → ') || r.target}: ${verdict} in ${s(r.seconds)}${r.failure ? ` (${r.failure})` : ''}`,
  );
  out.push(
    `Twin: ${r.twin.nodes} nodes, ${r.twin.workloads} workloads; drain timeout ${r.twin.drainTimeoutSeconds} s; latencies (ms) ${Object.entries(
      r.twin.latenciesMs,
    )
      .map(([k, v]) => `${k} ${v}`)
      .join(', ')}`,
  );
  if (r.preflight.length) {
    out.push(
      '',
      'Pre-flight: the real upgrade would refuse to start on these unless acknowledged (the rehearsal acknowledged them to go on):',
    );
    for (const p of r.preflight) out.push(`  ${p}`);
  }
  out.push(
    '',
    ...('notChecked' in r.readiness ? [`readiness: not checked: ${r.readiness.notChecked}`] : readinessLines(r.cluster, r.readiness)),
  );
  out.push(...timingLines(r), ...blockLines(r));
  out.push(
    '',
    r.skew.compliant
      ? `Skew policy: every one of the ${r.skew.statesChecked} version states the twin went through complies`
      : `Skew policy: ${r.skew.violations.length} violation(s) in ${r.skew.statesChecked} version states${r.skew.unreadable ? ` (${r.skew.unreadable} unreadable)` : ''}`,
  );
  for (const v of r.skew.violations) out.push(`  after ${v.cause}: ${v.rule}`);
  out.push('', 'Final versions on the twin:');
  for (const v of r.finalVersions) {
    const cp = v.apiserver
      ? `  apiserver ${v.apiserver}, controller-manager ${v.controllerManager ?? '?'}, scheduler ${v.scheduler ?? '?'}`
      : '';
    out.push(`  ${v.node.padEnd(24)} kubelet ${v.kubelet ?? '?'}${cp}`);
  }
  if (r.twin.notModelled.length) {
    out.push('', 'Not modelled by the twin:');
    for (const m of r.twin.notModelled) out.push(`  ${m}`);
  }
  return out.join('\n');
}
