import { mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import type { SimBinaries } from '../sim/cluster/binaries.js';
import { parseDescription } from '../sim/description.js';
import { startSimulation, type Simulation } from '../sim/simulation.js';

/** A fresh simulated cluster from a description for one run: its own state folder, stopped and removed by `close`. */
export async function freshCluster(
  yaml: string,
  cluster: string,
  dir: string,
  binaries: SimBinaries,
): Promise<{ sim: Simulation; upSeconds: number; close(): Promise<void> }> {
  const stateDir = join(dir, cluster);
  rmSync(stateDir, { recursive: true, force: true });
  mkdirSync(stateDir, { recursive: true });
  const started = Date.now();
  const sim = await startSimulation(parseDescription(yaml), { stateDir, binaries, timeoutMs: 1_800_000 });
  return {
    sim,
    upSeconds: (Date.now() - started) / 1000,
    async close() {
      await sim.stop();
      rmSync(stateDir, { recursive: true, force: true });
    },
  };
}

/** Fails unless every node reports `version` and none is left cordoned. */
export async function assertUpgraded(sim: Simulation, version: string, what: string): Promise<void> {
  const nodes = (await sim.kube.core.listNode()).items;
  const behind = nodes
    .filter((n) => n.status?.nodeInfo?.kubeletVersion !== `v${version}`)
    .map((n) => `${n.metadata?.name} (${n.status?.nodeInfo?.kubeletVersion})`);
  const cordoned = nodes.filter((n) => n.spec?.unschedulable).map((n) => n.metadata?.name);
  if (behind.length || cordoned.length) {
    throw new Error(
      `${what}: ${behind.length ? `not at v${version}: ${behind.slice(0, 5).join(', ')}${behind.length > 5 ? ` and ${behind.length - 5} more` : ''}` : ''}${cordoned.length ? ` cordoned: ${cordoned.slice(0, 5).join(', ')}` : ''}`,
    );
  }
}
