import type { ClusterConfig } from './cluster-config.js';
import type { KubeApi } from './kube-api.js';

export interface ExecResult {
  exitCode: number;
  stdout: string;
  stderr: string;
}

export interface ExecOptions {
  /** The command is abandoned (channel closed) after this long: HostCommandTimedOut. */
  timeoutMs: number;
  /** Run as root through `sudo -n` when the cluster's SSH user is not root. */
  sudo?: boolean;
  /** Environment for the command, e.g. DEBIAN_FRONTEND=noninteractive (names and values are validated). */
  env?: Record<string, string>;
  /** Activity cancellation: closes the channel. */
  signal?: AbortSignal;
}

/**
 * Commands on a node over SSH. `argv` is quoted word by word, so no argument is ever read by a shell
 * as syntax; callers build argv from validated values only. A non-zero exit is returned, not thrown:
 * the caller decides what it means. Unreachable hosts and host-key mismatches throw typed failures.
 */
/** Where to reach a node's SSH server: the configuration's `nodes:` entry, else the Node's InternalIP (activities/host-address.ts). */
export type AddressResolver = (node: string) => Promise<{ host: string; port: number }>;

export interface RemoteShell {
  exec(node: string, argv: readonly string[], options: ExecOptions): Promise<ExecResult>;
  /** Copies a file off the node (SFTP) to a local path, atomically (temp file + rename). */
  download(node: string, remotePath: string, localPath: string, options: { timeoutMs: number; signal?: AbortSignal }): Promise<void>;
  /**
   * Copies a local file onto the node (SFTP, as the SSH user, mode 0600) at a path that user may
   * write (/tmp); root moves it into place. Optional: a shell without it cannot place a snapshot.
   */
  upload?(node: string, localPath: string, remotePath: string, options: { timeoutMs: number; signal?: AbortSignal }): Promise<void>;
}

/** Everything the worker holds for one cluster. */
export interface ClusterAccess {
  config: ClusterConfig;
  kube: KubeApi;
  shell: RemoteShell;
}

/** Resolves a cluster name (the only thing workflows pass) to its access, on the worker's side. */
export type ClusterResolver = (cluster: string) => ClusterAccess;
