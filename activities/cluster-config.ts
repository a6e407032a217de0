import { existsSync, readFileSync } from 'node:fs';
import { isAbsolute, join } from 'node:path';
import { ApplicationFailure } from '@temporalio/activity';
import { parse as parseYaml } from 'yaml';
import { ErrorType } from './errors.js';

/**
 * A cluster's configuration, read by the worker only (it names credentials' paths), found by
 * cluster name in the worker's clusters directory: <dir>/<name>.yaml. Workflows pass the name.
 */
export interface ClusterConfig {
  name: string;
  kubeconfig: string;
  context?: string;
  ssh: {
    user: string;
    port: number;
    privateKeyPath: string;
    knownHostsPath: string;
    /** Prefix changing commands with `sudo -n` (a non-root SSH user). */
    sudo: boolean;
    connectTimeoutSeconds: number;
  };
  /** Per-node address overrides; default: the node's InternalIP and ssh.port. */
  nodes: Record<string, { address?: string; port?: number }>;
  packageManager: 'apt';
  etcd: {
    endpoint: string;
    caCert: string;
    cert: string;
    key: string;
    /** Where the snapshot is written on the control plane before it is copied off. */
    remoteDir: string;
  };
  snapshots: { dir: string };
  drain: { timeoutSeconds: number; gracePeriodSeconds?: number; deleteEmptyDirData: boolean; ignoreDaemonSets: boolean };
  probes: { name: string; url: string; expectStatus: number; timeoutSeconds: number }[];
  /** Seconds a host command may run before it is abandoned (channel closed) and its step retried. */
  timeouts: HostTimeouts;
}

/**
 * Per-command timeouts on the hosts. Slow mirrors and slow disks are real, so the operator may raise
 * them; each maximum stays below the startToClose of the activity profile that runs the command
 * (workflows/activity-options.ts; a test holds the two together), so the activity reports the
 * timeout itself instead of being cut off by Temporal.
 */
export interface HostTimeouts {
  /** Quick commands: apt-cache, apt-mark, dpkg --audit, kubelet --version, systemctl. */
  commandSeconds: number;
  /** apt-get update, apt-get install, dpkg --configure -a: they download and unpack. */
  packageInstallSeconds: number;
  kubeadmPlanSeconds: number;
  kubeadmApplySeconds: number;
  kubeadmNodeSeconds: number;
}

/** Default and maximum of each timeout, in seconds. */
export const HOST_TIMEOUT_LIMITS: Record<keyof HostTimeouts, { default: number; max: number }> = {
  commandSeconds: { default: 60, max: 300 },
  packageInstallSeconds: { default: 480, max: 540 }, // hostCommand: 10 min
  kubeadmPlanSeconds: { default: 300, max: 540 }, // hostCommand: 10 min
  kubeadmApplySeconds: { default: 1080, max: 1140 }, // kubeadmApply: 20 min
  kubeadmNodeSeconds: { default: 540, max: 540 }, // hostCommand: 10 min
};

const NAME = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;

function invalid(file: string, message: string): ApplicationFailure {
  return ApplicationFailure.create({ type: ErrorType.ClusterConfigInvalid, message: `${file}: ${message}`, nonRetryable: true });
}

/** Parses and validates one cluster's YAML; every problem is a one-line ClusterConfigInvalid. */
export function parseClusterConfig(text: string, file: string): ClusterConfig {
  let raw: Record<string, unknown>;
  try {
    raw = parseYaml(text) as Record<string, unknown>;
  } catch (err) {
    throw invalid(file, `not valid YAML: ${(err as Error).message.split('\n')[0]}`);
  }
  if (typeof raw !== 'object' || raw === null) throw invalid(file, 'must be a mapping');
  const obj = (v: unknown, where: string): Record<string, unknown> => {
    if (v === undefined) return {};
    if (typeof v !== 'object' || v === null || Array.isArray(v)) throw invalid(file, `${where} must be a mapping`);
    return v as Record<string, unknown>;
  };
  const str = (v: unknown, where: string, fallback?: string): string => {
    if (v === undefined && fallback !== undefined) return fallback;
    if (typeof v !== 'string' || v === '') throw invalid(file, `${where} must be a non-empty string`);
    return v;
  };
  const path = (v: unknown, where: string, fallback?: string): string => {
    const p = str(v, where, fallback);
    if (!isAbsolute(p)) throw invalid(file, `${where} must be an absolute path, got ${JSON.stringify(p)}`);
    return p;
  };
  const int = (v: unknown, where: string, fallback: number, min: number, max = Number.MAX_SAFE_INTEGER): number => {
    if (v === undefined) return fallback;
    if (typeof v !== 'number' || !Number.isInteger(v) || v < min || v > max) throw invalid(file, `${where} must be an integer from ${min} to ${max}`);
    return v;
  };
  const bool = (v: unknown, where: string, fallback: boolean): boolean => {
    if (v === undefined) return fallback;
    if (typeof v !== 'boolean') throw invalid(file, `${where} must be true or false`);
    return v;
  };

  const name = str(raw.name, 'name');
  if (!NAME.test(name)) throw invalid(file, `name must be a DNS label, got ${JSON.stringify(name)}`);
  const ssh = obj(raw.ssh, 'ssh');
  const etcd = obj(raw.etcd, 'etcd');
  const drain = obj(raw.drain, 'drain');
  const timeouts = obj(raw.timeouts, 'timeouts');
  for (const k of Object.keys(timeouts)) {
    if (!Object.hasOwn(HOST_TIMEOUT_LIMITS, k)) throw invalid(file, `timeouts.${k} is not a known timeout (${Object.keys(HOST_TIMEOUT_LIMITS).join(', ')})`);
  }
  const pki = '/etc/kubernetes/pki/etcd';
  const packageManager = str(raw.packageManager, 'packageManager', 'apt');
  if (packageManager !== 'apt') throw invalid(file, `packageManager ${JSON.stringify(packageManager)} is not supported yet (apt)`);

  const nodes: ClusterConfig['nodes'] = {};
  for (const [node, value] of Object.entries(obj(raw.nodes, 'nodes'))) {
    const n = obj(value, `nodes.${node}`);
    nodes[node] = {
      ...(n.address === undefined ? {} : { address: str(n.address, `nodes.${node}.address`) }),
      ...(n.port === undefined ? {} : { port: int(n.port, `nodes.${node}.port`, 22, 1, 65535) }),
    };
  }
  const probes = (raw.probes === undefined ? [] : Array.isArray(raw.probes) ? raw.probes : (() => { throw invalid(file, 'probes must be a list'); })())
    .map((p: unknown, i: number) => {
      const r = obj(p, `probes[${i}]`);
      const url = str(r.url, `probes[${i}].url`);
      if (!/^https?:\/\//.test(url)) throw invalid(file, `probes[${i}].url must be http(s)`);
      return { name: str(r.name, `probes[${i}].name`), url, expectStatus: int(r.expectStatus, `probes[${i}].expectStatus`, 200, 100, 599), timeoutSeconds: int(r.timeoutSeconds, `probes[${i}].timeoutSeconds`, 5, 1, 300) };
    });

  return {
    name,
    kubeconfig: path(raw.kubeconfig, 'kubeconfig'),
    ...(raw.context === undefined ? {} : { context: str(raw.context, 'context') }),
    ssh: {
      user: str(ssh.user, 'ssh.user'),
      port: int(ssh.port, 'ssh.port', 22, 1, 65535),
      privateKeyPath: path(ssh.privateKeyPath, 'ssh.privateKeyPath'),
      knownHostsPath: path(ssh.knownHostsPath, 'ssh.knownHostsPath'),
      sudo: bool(ssh.sudo, 'ssh.sudo', true),
      connectTimeoutSeconds: int(ssh.connectTimeoutSeconds, 'ssh.connectTimeoutSeconds', 10, 1, 300),
    },
    nodes,
    packageManager: 'apt',
    etcd: {
      endpoint: str(etcd.endpoint, 'etcd.endpoint', 'https://127.0.0.1:2379'),
      caCert: path(etcd.caCert, 'etcd.caCert', `${pki}/ca.crt`),
      cert: path(etcd.cert, 'etcd.cert', `${pki}/server.crt`),
      key: path(etcd.key, 'etcd.key', `${pki}/server.key`),
      remoteDir: path(etcd.remoteDir, 'etcd.remoteDir', '/var/lib/skewless/snapshots'),
    },
    snapshots: { dir: path(obj(raw.snapshots, 'snapshots').dir, 'snapshots.dir') },
    drain: {
      timeoutSeconds: int(drain.timeoutSeconds, 'drain.timeoutSeconds', 600, 1),
      ...(drain.gracePeriodSeconds === undefined ? {} : { gracePeriodSeconds: int(drain.gracePeriodSeconds, 'drain.gracePeriodSeconds', 0, 0) }),
      deleteEmptyDirData: bool(drain.deleteEmptyDirData, 'drain.deleteEmptyDirData', false),
      ignoreDaemonSets: bool(drain.ignoreDaemonSets, 'drain.ignoreDaemonSets', true),
    },
    probes,
    timeouts: Object.fromEntries(Object.entries(HOST_TIMEOUT_LIMITS).map(([k, limit]) =>
      [k, int(timeouts[k], `timeouts.${k}`, limit.default, 1, limit.max)])) as unknown as HostTimeouts,
  };
}

/** Reads <dir>/<cluster>.yaml; the name is checked first so it can never walk out of the directory. */
export function loadClusterConfig(dir: string, cluster: string): ClusterConfig {
  if (!NAME.test(cluster)) {
    throw ApplicationFailure.create({ type: ErrorType.ClusterConfigInvalid, message: `invalid cluster name ${JSON.stringify(cluster)}`, nonRetryable: true });
  }
  const file = join(dir, `${cluster}.yaml`);
  if (!existsSync(file)) {
    throw ApplicationFailure.create({ type: ErrorType.ClusterConfigInvalid, message: `no configuration for cluster ${cluster} (looked for ${file})`, nonRetryable: true });
  }
  const config = parseClusterConfig(readFileSync(file, 'utf8'), file);
  if (config.name !== cluster) throw invalid(file, `name is ${config.name}, expected ${cluster}`);
  return config;
}
