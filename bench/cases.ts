import type { Latencies } from '../sim/description.js';

/**
 * What the benchmark runs: cluster sizes, hops and tools, and the simulated host latencies every
 * run shares. The latencies are a real cluster's scaled down by ten (an apt install of the
 * Kubernetes packages ~3 s, a kubelet restart ~2 s, `kubeadm upgrade apply` ~10 s), so a sequential
 * 100-node run takes minutes, not hours; the pods' termination grace is kept at a real 1 s.
 */

export const LATENCIES_MS = {
  // A cold install of the Kubernetes packages, 300 ms, is half fetching the archives and half dpkg: a
  // worker fetches its kubelet's before its cordon (apt-get install --download-only), and installs it drained.
  aptInstall: 150,
  packageDownload: 150,
  kubeletRestart: 200,
  kubeadmApply: 1000,
  kubeadmNode: 300,
  etcdSnapshot: 200,
} as const satisfies Latencies;

export const TERMINATION_GRACE_SECONDS = 1;

/** The cluster starts at FROM; one hop goes to HOPS[0], two hops on to HOPS[1]. */
export const FROM = '1.32.4';
export const HOPS = ['1.33.7', '1.34.2'] as const;

export interface ClusterSize {
  id: string;
  controlPlanes: number;
  workers: number;
  podsPerWorker: number;
}

export const SIZES: readonly ClusterSize[] = [
  { id: '10x20', controlPlanes: 1, workers: 10, podsPerWorker: 20 },
  { id: '100x20', controlPlanes: 1, workers: 100, podsPerWorker: 20 },
  { id: '1000x10', controlPlanes: 1, workers: 1000, podsPerWorker: 10 },
];

/** The suite's shape check: the smallest cluster that still has batches. */
export const QUICK_SIZE: ClusterSize = { id: '3x4', controlPlanes: 1, workers: 3, podsPerWorker: 4 };

export type Tool = 'baseline' | 'skewless';

export interface BenchRun {
  size: ClusterSize;
  hops: 1 | 2;
  tool: Tool;
  /** Workers upgraded at once after the canary (the baseline: 1, node by node). */
  batchSize: number;
  /** skewless with --workers-every-hop: every worker drained at every hop, as before issue 22. */
  workersEveryHop?: boolean;
  /** skewless from another build (--builds LABEL=DIR): the label, appended to the run's id. */
  build?: string;
}

/** maxUnavailable of the batched runs: 10% of the workers, at least 2 (a batch of one is the sequential run). */
export const batchOf = (workers: number) => Math.max(2, Math.floor(workers / 10));

/** The runs of one size and hop count: the baseline, skewless node by node, skewless batched. */
export const BENCH_TOOLS = ['baseline', 'skewless-1', 'skewless-batched', 'skewless-every-hop'] as const;
export type BenchTool = (typeof BENCH_TOOLS)[number];

export function runsOf(size: ClusterSize, hops: 1 | 2, tools: readonly BenchTool[]): BenchRun[] {
  const out: BenchRun[] = [];
  if (tools.includes('baseline')) out.push({ size, hops, tool: 'baseline', batchSize: 1 });
  if (tools.includes('skewless-1')) out.push({ size, hops, tool: 'skewless', batchSize: 1 });
  const batch = batchOf(size.workers);
  if (tools.includes('skewless-batched') && batch > 1) out.push({ size, hops, tool: 'skewless', batchSize: batch });
  // The plan before issue 22, beside it: only a run of several hops differs.
  if (tools.includes('skewless-every-hop') && batch > 1 && hops > 1)
    out.push({ size, hops, tool: 'skewless', batchSize: batch, workersEveryHop: true });
  return out;
}

export const runId = (r: BenchRun) =>
  `${r.size.id}-${r.hops}hop-${r.tool === 'baseline' ? 'baseline' : `skewless-b${r.batchSize}${r.workersEveryHop ? '-every-hop' : ''}`}${r.build ? `-${r.build}` : ''}`;

/**
 * The simulated cluster of a size, as a description (sim/description.ts): Deployments of one
 * replica per worker, `podsPerWorker` of them, each behind a PDB allowing as many unavailable as the
 * batched run drains nodes at once (10% of the workers, at least 2), and a DaemonSet (which drains
 * ignore). The budgets are sized for the batch, as an operator sizes the batch for the budgets.
 */
export function descriptionYaml(size: ClusterSize, cluster: string): string {
  const replicas = size.workers;
  return [
    `name: ${cluster}`,
    `version: ${FROM}`,
    `repository: [${[FROM, ...HOPS].join(', ')}]`,
    'rebootSeconds: 1',
    `terminationGraceSeconds: ${TERMINATION_GRACE_SECONDS}`,
    `latencies: {${Object.entries(LATENCIES_MS)
      .map(([k, v]) => `${k}: ${v}`)
      .join(', ')}}`,
    'nodes:',
    `  - {name: cp, role: control-plane, count: ${size.controlPlanes}}`,
    `  - {name: worker, role: worker, count: ${size.workers}}`,
    'workloads:',
    ...Array.from(
      { length: size.podsPerWorker },
      (_, i) => `  - {kind: Deployment, name: app-${i + 1}, replicas: ${replicas}, pdb: {maxUnavailable: ${batchOf(size.workers)}}}`,
    ),
    '  - {kind: DaemonSet, name: node-exporter, namespace: monitoring}',
    '',
  ].join('\n');
}
