import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { loadClusterConfig, type ClusterConfig } from '../../activities/cluster-config.js';
import { kubeApiFromFile, type KubeApi } from '../../activities/kube-api.js';
import { parseDescription } from '../../sim/description.js';
import type { KubeClients } from '../../sim/cluster/kube-clients.js';
import { startSimulation, type Simulation } from '../../sim/simulation.js';
import { archiveLabel, recordWorldSecrets } from './history-archive.js';
import { tempDir } from './temp-dir.js';

export interface TestCluster {
  sim: Simulation;
  /** The configuration the worker would read for this cluster (written by the simulation). */
  config: ClusterConfig;
  clustersDir: string;
  /** Admin clients, for a test's own changes to the cluster (never counted as the worker's). */
  kube: KubeClients;
  /** The worker's identity (what activities use, limited by RBAC). */
  workerKube: KubeApi;
  stop(): Promise<void>;
}

/** Starts a simulated cluster from YAML for one test file; stop() removes everything it made. */
export async function startTestCluster(descriptionYaml: string): Promise<TestCluster> {
  const stateDir = tempDir('test');
  const description = parseDescription(descriptionYaml);
  const sim = await startSimulation(description, { stateDir });
  const config = loadClusterConfig(sim.endpoints.clustersDir, description.name);
  // The secret scan at the end of the run looks for this world's keys in every history.
  const secretsLabel = archiveLabel(`sim-${description.name}`);
  recordWorldSecrets(stateDir, secretsLabel);
  return {
    sim,
    config,
    clustersDir: sim.endpoints.clustersDir,
    kube: sim.kube,
    workerKube: kubeApiFromFile(config.kubeconfig),
    async stop() {
      await sim.stop();
      recordWorldSecrets(stateDir, secretsLabel); // again: a fault may have rotated keys since
      rmSync(stateDir, { recursive: true, force: true });
    },
  };
}

/** The command lines a simulated host ran, and those it ran while `fn` ran (what an activity did there). */
export function hostCommands(tc: () => TestCluster) {
  const log = (node: string): string[] =>
    tc()
      .sim.hosts.commandLog(node)
      .map((e) => e.command);
  const during = async <T>(node: string, fn: () => Promise<T>): Promise<{ result: T; ran: string[] }> => {
    const start = log(node).length;
    const result = await fn();
    return { result, ran: log(node).slice(start) };
  };
  return { log, during };
}

/** A file of a simulated host, as a path on this machine (`/etc/…` under the host's root). */
export const onHostPath = (tc: TestCluster, node: string, path: string): string => join(tc.sim.stateDir, 'hosts', node, 'root', path);

/** The command lines of `ran` that went through sudo. */
export const asRoot = (ran: readonly string[]): string[] => ran.filter((c) => c.startsWith('sudo '));
