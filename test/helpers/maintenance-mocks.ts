import type { Activities } from '../../activities/index.js';
import type { MaintenancePlanFacts } from '../../activities/maintenance.js';
import { roomForEveryBatch } from './fake-cluster.js';

export type Call = [string, Record<string, unknown>];
export const MAINTENANCE_WRITES = [
  'setStageLabels',
  'cordonNode',
  'drainNode',
  'runMaintenanceCommand',
  'rebootNode',
  'uncordonNode',
  'clearStageLabels',
];
export const MOCK_WORKERS = ['w1', 'w2', 'w3', 'w4', 'w5'];

/**
 * A cluster of mocked activities that keeps what the workflow did to it: which nodes are cordoned
 * (and by whom), labels, reboots, and how many nodes were out of service at once.
 */
export function mockMaintenanceCluster(
  facts: Partial<MaintenancePlanFacts> = {},
  override: Record<string, (input: Record<string, unknown>) => unknown> = {},
) {
  const calls: Call[] = [];
  const cordoned = new Set<string>();
  const labels: Record<string, string> = {};
  const reboots: string[] = [];
  let out = 0;
  let maxOut = 0;
  const record = (name: string, fn: (input: Record<string, unknown>) => unknown) => async (input: Record<string, unknown>) => {
    calls.push([name, input]);
    if (override[name]) return override[name](input);
    return fn(input);
  };
  const acts: Partial<Activities> = Object.fromEntries(
    Object.entries({
      findRunningRollout: () => ({ running: false }),
      planMaintenance: (i) => ({
        nodes: MOCK_WORKERS.filter((n) => !Array.isArray(i.nodes) || i.nodes.includes(n)).map((name) => ({
          name,
          role: 'worker',
          ready: true,
          unschedulable: false,
        })),
        missing: [],
        unmanaged: [],
        forced: [],
        hasCommand: true,
        ...facts,
      }),
      setStageLabels: (i) => {
        Object.assign(labels, i.labels);
        return { changed: Object.keys(i.labels as object), unchanged: [] };
      },
      clearStageLabels: () => {
        for (const k of Object.keys(labels)) delete labels[k];
        return { changed: [], unchanged: [] };
      },
      cordonNode: (i) => {
        cordoned.add(i.node as string);
        out++;
        maxOut = Math.max(maxOut, out);
        return { cordoned: true, ownedByUs: true, changed: true };
      },
      uncordonNode: (i) => {
        const had = cordoned.delete(i.node as string);
        if (had) out--;
        return { uncordoned: true, changed: had };
      },
      drainNode: (i) => ({ node: i.node, gone: [], skipped: [], warnings: [], resumed: false }),
      runMaintenanceCommand: (i) => ({ node: i.node, seconds: 0 }),
      rebootNode: (i) => {
        reboots.push(i.node as string);
        return { node: i.node, bootIdChanged: true };
      },
      checkNodeReady: () => ({}),
      checkPodsOnNode: () => ({}),
      checkWorkloads: () => ({}),
      runProbes: () => ({ healthy: true, probes: [], failed: [] }),
      checkAlerts: (i: Record<string, unknown>) => ({ cluster: i.cluster, configured: false, firing: [] }), // no alerts: block
    } satisfies Record<string, (input: Record<string, unknown>) => unknown>).map(([name, fn]) => [name, record(name, fn)]),
  ) as Partial<Activities>;
  // A read, not recorded: the calls list what the run did to the cluster.
  acts.checkBatchCapacity ??= (override.checkBatchCapacity ?? roomForEveryBatch) as Activities['checkBatchCapacity'];
  return {
    acts,
    calls,
    cordoned,
    labels,
    reboots,
    get maxOut() {
      return maxOut;
    },
  };
}
