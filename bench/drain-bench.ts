import { spawn } from 'node:child_process';
import { MockActivityEnvironment } from '@temporalio/testing';
import { createDrainActivities } from '../activities/drain.js';
import { createClusterResolver } from '../activities/host-address.js';
import { mergePatch } from '../activities/kube-api.js';
import { createNodeActivities } from '../activities/node-activities.js';
import type { SimBinaries } from '../sim/cluster/binaries.js';
import { waitFor } from '../sim/cluster/wait-for.js';
import type { Simulation } from '../sim/simulation.js';
import { TERMINATION_GRACE_SECONDS } from './cases.js';

/**
 * Evictions per second in the drain of one full node: 110 pods (a kubelet's default maximum), one
 * of them a DaemonSet's. skewless's drainNode (cordon included, through the worker's identity and
 * the activity code the worker runs) against `kubectl drain --ignore-daemonsets` on the same node,
 * in alternating order, the pods scheduled back between rounds.
 */

export const DRAIN_NODE = 'worker-1';

/** The drain bench's cluster: one worker full to 110 pods (109 of a Deployment with no PDB, and kube-proxy). */
export function drainDescriptionYaml(cluster: string, pods: number): string {
  return [
    `name: ${cluster}`,
    'version: 1.32.4',
    'repository: [1.32.4]',
    `terminationGraceSeconds: ${TERMINATION_GRACE_SECONDS}`,
    'nodes:',
    '  - {name: cp, role: control-plane}',
    `  - {name: ${DRAIN_NODE.replace(/-1$/, '')}, role: worker, count: 1}`,
    'workloads:',
    `  - {kind: Deployment, name: load, replicas: ${pods - 1}}`,
    '',
  ].join('\n');
}

export interface DrainMeasurement {
  tool: 'skewless' | 'kubectl';
  round: number;
  evicted: number;
  seconds: number;
  evictionsPerSecond: number;
}

async function loadPodsOnNode(sim: Simulation): Promise<number> {
  const pods = await sim.kube.core.listNamespacedPod({ namespace: 'default', fieldSelector: `spec.nodeName=${DRAIN_NODE}` });
  return pods.items.filter(
    (p) => !p.metadata?.deletionTimestamp && p.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True'),
  ).length;
}

async function refill(sim: Simulation, expected: number): Promise<void> {
  await sim.kube.core.patchNode({ name: DRAIN_NODE, body: { spec: { unschedulable: false } } }, mergePatch);
  await waitFor(`${expected} load pods Ready on ${DRAIN_NODE}`, async () => (await loadPodsOnNode(sim)) === expected, 300_000, 500);
}

const kubectlDrain = (binaries: SimBinaries, kubeconfig: string) =>
  new Promise<void>((resolve, reject) => {
    const child = spawn(binaries.bin('kubectl'), ['drain', DRAIN_NODE, '--ignore-daemonsets', '--delete-emptydir-data'], {
      env: { ...process.env, KUBECONFIG: kubeconfig },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let err = '';
    child.stderr.on('data', (d: Buffer) => (err += d.toString()));
    child.on('close', (code) =>
      code === 0 ? resolve() : reject(new Error(`kubectl drain exited ${code}: ${err.trim().split('\n').at(-1)}`)),
    );
  });

export async function drainBench(sim: Simulation, binaries: SimBinaries, rounds = 2): Promise<DrainMeasurement[]> {
  const cluster = sim.description.name;
  const deps = { clusters: createClusterResolver(sim.endpoints.clustersDir) };
  const drains = createDrainActivities(deps);
  const nodes = createNodeActivities(deps);
  const expected = sim.description.workloads[0]?.replicas ?? 0;
  const out: DrainMeasurement[] = [];
  const tools: ('skewless' | 'kubectl')[] = [];
  for (let r = 0; r < rounds; r++) tools.push(...(r % 2 === 0 ? (['skewless', 'kubectl'] as const) : (['kubectl', 'skewless'] as const)));
  for (const [i, tool] of tools.entries()) {
    await refill(sim, expected);
    const started = Date.now();
    if (tool === 'skewless') {
      const env = new MockActivityEnvironment();
      await env.run(nodes.cordonNode, { cluster, node: DRAIN_NODE, owner: 'bench' });
      await env.run(drains.drainNode, { cluster, node: DRAIN_NODE, force: [], timeoutSeconds: 600 });
    } else {
      await kubectlDrain(binaries, sim.endpoints.adminKubeconfig);
    }
    const seconds = (Date.now() - started) / 1000;
    out.push({
      tool,
      round: Math.floor(i / 2) + 1,
      evicted: expected,
      seconds,
      evictionsPerSecond: Math.round((expected / seconds) * 10) / 10,
    });
  }
  await refill(sim, expected);
  return out;
}
