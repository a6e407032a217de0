// Where a node's SSH endpoint is, and the worker's per-cluster access (config, API, shell) by name.
import { statSync } from 'node:fs';
import { isDnsLabel, isNodeName } from '../rules/index.js';
import { join } from 'node:path';
import { ApplicationFailure } from '@temporalio/activity';
import type { AddressResolver, ClusterAccess, ClusterResolver } from './cluster-access.js';
import { loadClusterConfig, type ClusterConfig } from './cluster-config.js';
import { ErrorType, kubeCall } from './errors.js';
import { kubeApiFromFile, type KubeApi } from './kube-api.js';
import { createSshShell, type SshShell } from './ssh-shell.js';

/** The override in `config.nodes[node]`, else the Node's InternalIP from the API and `config.ssh.port`. */
export function defaultAddressResolver(config: ClusterConfig, kube: KubeApi): AddressResolver {
  return async (node) => {
    if (!isNodeName(node)) {
      // checked before it reaches an API path or a message
      throw ApplicationFailure.create({
        type: ErrorType.Invalid,
        nonRetryable: true,
        message: `invalid node name ${JSON.stringify(String(node).slice(0, 80))}`,
      });
    }
    const override = config.nodes[node];
    if (override?.address) return { host: override.address, port: override.port ?? config.ssh.port };
    const object = await kubeCall(`read node ${node}`, () => kube.core.readNode({ name: node }));
    const ip = object.status?.addresses?.find((a) => a.type === 'InternalIP')?.address;
    if (!ip) {
      throw ApplicationFailure.create({
        type: ErrorType.ClusterConfigInvalid,
        nonRetryable: true,
        message: `node ${node} reports no InternalIP; set nodes.${node}.address in the cluster configuration`,
      });
    }
    return { host: ip, port: override?.port ?? config.ssh.port };
  };
}

/** Which version of a file is on disk: a rewrite (in place, or a new file renamed over it) changes it. */
function fileVersion(path: string): string | undefined {
  try {
    const s = statSync(path);
    return `${s.ino}:${s.size}:${s.mtimeMs}`;
  } catch {
    return undefined;
  }
}

/**
 * Resolves cluster names to their access, loading `<clustersDir>/<name>.yaml` once per name and
 * again whenever the file changes (a stat per call): a node added to `nodes:` while the worker runs
 * (a blue/green pool's new machines) is reachable by the next activity, without a restart. A
 * changed file that no longer loads fails the activity that asked (ClusterConfigInvalid).
 * Only the worker calls this; nothing it holds (key paths, clients) leaves the process.
 * Each cluster's shell pools its SSH connections (`sshIdleMs` idle at most, ssh-shell.ts); `close()`
 * closes them all (the worker at its shutdown), and a reloaded configuration's old shell closes its own.
 */
export function createClusterResolver(clustersDir: string, options: { sshIdleMs?: number } = {}): ClusterResolver & { close(): void } {
  const cache = new Map<string, { version: string | undefined; access: ClusterAccess; shell: SshShell }>();
  const resolve = (cluster: string): ClusterAccess => {
    const version = isDnsLabel(cluster) ? fileVersion(join(clustersDir, `${cluster}.yaml`)) : undefined;
    const cached = cache.get(cluster);
    if (cached && version !== undefined && cached.version === version) return cached.access;
    const config = loadClusterConfig(clustersDir, cluster);
    const kube = kubeApiFromFile(config.kubeconfig, config.context);
    const shell = createSshShell(config, defaultAddressResolver(config, kube), { idleMs: options.sshIdleMs });
    const access: ClusterAccess = { config, kube, shell };
    // The old configuration's connections: commands still running on them finish, then they close.
    cached?.shell.close();
    cache.set(cluster, { version, access, shell });
    return access;
  };
  return Object.assign(resolve, { close: () => cache.forEach((c) => c.shell.close()) });
}
