import { existsSync, readFileSync, statSync } from 'node:fs';
import { isAbsolute, join } from 'node:path';
import { ApplicationFailure } from '@temporalio/activity';
import ssh2 from 'ssh2';
import { parse as parseYaml } from 'yaml';
import {
  etcdPatchTarget,
  PACKAGE_MANAGERS,
  parseMaintenanceWindows,
  RuleError,
  type MaintenanceWindow,
  type PackageManager,
} from '../rules/index.js';
import { parseAlertMatcher, type AlertMatcher } from '../rules/readiness/alert-matchers.js';
import { ErrorType } from './errors.js';
import { SETTING_LIMITS } from '../contracts/time-limits.js';

/**
 * A cluster's configuration, read by the worker only (it names credentials' paths), found by
 * cluster name in the worker's clusters directory: <dir>/<name>.yaml. Workflows pass the name.
 */
export { PACKAGE_MANAGERS, type PackageManager } from '../rules/index.js';

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
  /** apt (Debian and Ubuntu: kubernetes.list, apt-mark holds) or dnf (the RHEL family: kubernetes.repo, its exclude= as the hold). */
  packageManager: PackageManager;
  etcd: {
    endpoint: string;
    caCert: string;
    cert: string;
    key: string;
    /** Where the snapshot is written on the control plane before it is copied off. */
    remoteDir: string;
    /**
     * The 3.5 image tag the etcd patch step moves members to (--fix-prerequisites), when the cluster's
     * image source (a mirror) offers another than the newest the product knows (rules/etcd-patch.ts).
     */
    patchImageTag?: string;
  };
  snapshots: { dir: string };
  drain: { timeoutSeconds: number; gracePeriodSeconds?: number; deleteEmptyDirData: boolean; ignoreDaemonSets: boolean };
  probes: { name: string; url: string; expectStatus: number; timeoutSeconds: number }[];
  /**
   * The alert gate (issue 21): the operator's Prometheus and which of its firing alerts hold a phase
   * (activities/alerts.ts, rules/readiness/alert-matchers.ts). Absent: no alert gate.
   */
  alerts?: AlertsConfig;
  /** Seconds a host command may run before it is abandoned (channel closed) and its step retried. */
  timeouts: HostTimeouts;
  /**
   * When disruptive phases may start (rules/maintenance-window.ts); absent: any time. Policy, not a
   * secret: the inventory hands it to the workflow.
   */
  maintenanceWindows?: MaintenanceWindow[];
  /**
   * OS maintenance (`skewless maintain`): the command that upgrades a node's operating system, run
   * over SSH (through sudo when ssh.sudo) on each drained node before its reboot. Absent: maintain refuses.
   */
  maintenance?: MaintenanceConfig;
  /**
   * Named sets of nodes (blue/green): each an equality-only label selector, whose terms are also the
   * labels a new node of the pool gets. Absent when none is configured.
   */
  pools?: Record<string, PoolConfig>;
  /** How machines are created and torn down (blue/green). Absent: no pool can be provisioned. */
  provisioning?: ProvisioningConfig;
  /**
   * The kube-apiserver's JSON audit log (its --audit-log-path, as a path on each control-plane node),
   * read over SSH to name the clients of removed APIs (activities/readiness/removed-api-usage.ts). Absent: not read.
   */
  auditLog?: { path: string };
}

export interface AlertsConfig {
  /** Prometheus's base URL (`https://prom.example:9090`, or under a path prefix); user info is sent as basic auth and never shown. */
  prometheusUrl: string;
  /** All must hold; none: every firing alert holds. */
  matchers: AlertMatcher[];
  /** Per query. */
  timeoutSeconds: number;
  /** How often a phase held by a firing alert asks again. */
  pollSeconds: number;
}

/** Default and maximum of alerts.timeoutSeconds (contracts/time-limits.ts). */
export const ALERTS_TIMEOUT = { default: 10, max: SETTING_LIMITS['alerts.timeoutSeconds'].max } as const;
/** Default and maximum of alerts.pollSeconds: kured asks every minute; a held phase should see a cleared alert sooner. */
export const ALERTS_POLL = { default: 30, max: 600 } as const;

export interface PoolConfig {
  /** `k=v,k2=v2`, as written. */
  selector: string;
  /** The selector's terms: what a node of the pool carries. */
  labels: Record<string, string>;
}

/**
 * The machine provider. `simulation`: the simulated cluster's machine API (HTTP on loopback, a
 * bearer token in a file the worker reads; never passed through a workflow). `command`: argv lists
 * run on the worker host without a shell, `{node}` `{version}` `{pool}` `{labels}` replaced word by
 * word. Room is left for `cluster-api` (a MachineDeployment scale), not built.
 */
export type ProvisioningConfig =
  | { provider: 'simulation'; endpoint: string; tokenFile: string; joinTimeoutSeconds: number }
  | { provider: 'command'; create: string[]; delete: string[]; joinTimeoutSeconds: number; commandTimeoutSeconds: number };

/** Default and maximum of provisioning.joinTimeoutSeconds and .commandTimeoutSeconds (contracts/time-limits.ts). */
export const PROVISIONING_TIMEOUT = {
  join: { default: 600, max: SETTING_LIMITS['provisioning.joinTimeoutSeconds'].max },
  command: { default: 600, max: SETTING_LIMITS['provisioning.commandTimeoutSeconds'].max },
} as const;

/** The placeholders a provisioning command may hold. */
export const PROVISIONING_PLACEHOLDERS = ['{node}', '{version}', '{pool}', '{labels}'] as const;

export interface MaintenanceConfig {
  /** argv, each word quoted for the remote shell (activities/shell-words.ts): never read as shell syntax. */
  command: string[];
  /** How long the command may run before it is abandoned (HostCommandTimedOut). */
  timeoutSeconds: number;
  /** How the node is rebooted: one of the forms activities/host-kubelet.ts allows. Default [reboot]. */
  rebootCommand?: string[];
}

/** Default and maximum of maintenance.timeoutSeconds (contracts/time-limits.ts). */
export const MAINTENANCE_TIMEOUT = { default: 1800, max: SETTING_LIMITS['maintenance.timeoutSeconds'].max } as const;

/**
 * Per-command timeouts on the hosts. Slow mirrors and slow disks are real, so the operator may raise
 * them; each maximum stays below the startToClose of the activity profile that runs the command
 * (both in contracts/time-limits.ts), so the activity reports the timeout itself instead of being cut
 * off by Temporal.
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
  commandSeconds: { default: 60, max: SETTING_LIMITS['timeouts.commandSeconds'].max },
  packageInstallSeconds: { default: 480, max: SETTING_LIMITS['timeouts.packageInstallSeconds'].max },
  kubeadmPlanSeconds: { default: 300, max: SETTING_LIMITS['timeouts.kubeadmPlanSeconds'].max },
  kubeadmApplySeconds: { default: 1080, max: SETTING_LIMITS['timeouts.kubeadmApplySeconds'].max },
  kubeadmNodeSeconds: { default: 540, max: SETTING_LIMITS['timeouts.kubeadmNodeSeconds'].max },
};

const NAME = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const PROBE_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$/;
/** A Kubernetes node name: a DNS-1123 subdomain (dot-separated labels of lowercase alphanumerics and '-', at most 253). */
const NODE_NAME = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

/** `etcd.patchImageTag`: an etcd 3.5 image tag at or past 3.5.26 (rules/etcd-patch.ts judges it). */
function etcdPatchTag(file: string | undefined, value: unknown): string {
  if (typeof value !== 'string')
    throw invalid(file, `etcd.patchImageTag must be an image tag such as 3.5.26-0, got ${JSON.stringify(value)}`);
  try {
    return etcdPatchTarget(value);
  } catch (err) {
    throw invalid(file, (err as Error).message);
  }
}

function invalid(file: string | undefined, message: string): ApplicationFailure {
  return ApplicationFailure.create({
    type: ErrorType.ClusterConfigInvalid,
    message: file ? `${file}: ${message}` : message,
    nonRetryable: true,
  });
}

/**
 * The keys each mapping may hold. A misspelt key (`drian:`) would otherwise be ignored and its
 * setting silently replaced by the default. `timeouts` is the per-cluster timeouts section.
 */
const KNOWN_KEYS = {
  '': [
    'name',
    'kubeconfig',
    'context',
    'ssh',
    'nodes',
    'packageManager',
    'etcd',
    'snapshots',
    'drain',
    'probes',
    'timeouts',
    'maintenanceWindows',
    'maintenance',
    'pools',
    'provisioning',
    'auditLog',
    'alerts',
  ],
  auditLog: ['path'],
  alerts: ['prometheusUrl', 'matchers', 'timeoutSeconds', 'pollSeconds'],
  pool: ['selector'],
  provisioning: ['provider', 'endpoint', 'tokenFile', 'create', 'delete', 'joinTimeoutSeconds', 'commandTimeoutSeconds'],
  maintenance: ['command', 'timeoutSeconds', 'rebootCommand'],
  ssh: ['user', 'port', 'privateKeyPath', 'knownHostsPath', 'sudo', 'connectTimeoutSeconds'],
  node: ['address', 'port'],
  etcd: ['endpoint', 'caCert', 'cert', 'key', 'remoteDir', 'patchImageTag'],
  snapshots: ['dir'],
  drain: ['timeoutSeconds', 'gracePeriodSeconds', 'deleteEmptyDirData', 'ignoreDaemonSets'],
  probe: ['name', 'url', 'expectStatus', 'timeoutSeconds'],
} as const;

function onlyKnownKeys(file: string, value: Record<string, unknown>, keys: readonly string[], where: string): void {
  const unknown = Object.keys(value).find((k) => !keys.includes(k));
  if (unknown !== undefined)
    throw invalid(file, `unknown key ${where ? `${where}.` : ''}${JSON.stringify(unknown).slice(1, -1)} (known: ${keys.join(', ')})`);
}

/** A file the configuration names, read or stat-ed: a missing or unreadable one is ClusterConfigInvalid naming the field, never its content. */
function readConfigFile(file: string | undefined, field: string, path: string): Buffer {
  let why: string;
  try {
    if (statSync(path).isFile()) return readFileSync(path);
    why = 'not a regular file';
  } catch (err) {
    why = (err as NodeJS.ErrnoException).code ?? 'unreadable';
  }
  throw invalid(file, `${field} ${path} is not readable: ${why}`);
}

/**
 * The SSH private key, read and parsed: a file that is not an unencrypted private key (a public
 * key, a passphrase-protected key, anything else) is a configuration error, not a retry.
 */
export function readPrivateKey(path: string, file?: string): Buffer {
  const data = readConfigFile(file, 'ssh.privateKeyPath', path);
  const parsed = ssh2.utils.parseKey(data);
  const key = Array.isArray(parsed) ? (parsed[0] as unknown) : parsed;
  if (key instanceof Error || !key || !(key as { isPrivateKey(): boolean }).isPrivateKey()) {
    throw invalid(
      file,
      `ssh.privateKeyPath ${path} is not an unencrypted private key${key instanceof Error ? ` (${key.message.split('\n')[0]})` : ''}`,
    );
  }
  return data;
}

/** The local files a configuration names: the kubeconfig and known_hosts readable, the SSH key a usable private key. */
export function checkClusterFiles(config: ClusterConfig, file: string): void {
  readConfigFile(file, 'kubeconfig', config.kubeconfig);
  readPrivateKey(config.ssh.privateKeyPath, file);
  readConfigFile(file, 'ssh.knownHostsPath', config.ssh.knownHostsPath);
  if (config.provisioning?.provider === 'simulation') readConfigFile(file, 'provisioning.tokenFile', config.provisioning.tokenFile);
}

/** Parses and validates one cluster's YAML; every problem is a one-line ClusterConfigInvalid. */
export function parseClusterConfig(text: string, file: string): ClusterConfig {
  let raw: Record<string, unknown>;
  try {
    raw = parseYaml(text) as Record<string, unknown>;
  } catch (err) {
    throw invalid(file, `not valid YAML: ${(err as Error).message.split('\n')[0]}`);
  }
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) throw invalid(file, 'must be a mapping');
  onlyKnownKeys(file, raw, KNOWN_KEYS[''], '');
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
  // A login name as useradd takes it: it becomes a command word on the hosts (`chown USER FILE`), so never an option.
  const userName = (u: string): string => {
    if (!/^[A-Za-z0-9_][A-Za-z0-9._-]{0,31}$/.test(u))
      throw invalid(
        file,
        `ssh.user must be a user name (letters, digits, '.', '_', '-', not first), got ${JSON.stringify(u).slice(0, 40)}`,
      );
    return u;
  };
  const int = (v: unknown, where: string, fallback: number, min: number, max = Number.MAX_SAFE_INTEGER): number => {
    if (v === undefined) return fallback;
    if (typeof v !== 'number' || !Number.isInteger(v) || v < min || v > max)
      throw invalid(file, `${where} must be an integer from ${min} to ${max}`);
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
    if (!Object.hasOwn(HOST_TIMEOUT_LIMITS, k))
      throw invalid(file, `timeouts.${k} is not a known timeout (${Object.keys(HOST_TIMEOUT_LIMITS).join(', ')})`);
  }
  const snapshots = obj(raw.snapshots, 'snapshots');
  onlyKnownKeys(file, ssh, KNOWN_KEYS.ssh, 'ssh');
  onlyKnownKeys(file, etcd, KNOWN_KEYS.etcd, 'etcd');
  onlyKnownKeys(file, drain, KNOWN_KEYS.drain, 'drain');
  onlyKnownKeys(file, snapshots, KNOWN_KEYS.snapshots, 'snapshots');
  const pki = '/etc/kubernetes/pki/etcd';
  const packageManager = str(raw.packageManager, 'packageManager', 'apt');
  if (!(PACKAGE_MANAGERS as readonly string[]).includes(packageManager)) {
    throw invalid(file, `packageManager ${JSON.stringify(packageManager)} is not supported (${PACKAGE_MANAGERS.join(' or ')})`);
  }

  const nodes: ClusterConfig['nodes'] = {};
  for (const [node, value] of Object.entries(obj(raw.nodes, 'nodes'))) {
    // A name no Node can have would never be looked up: refused like a misspelt key, not ignored.
    if (node.length > 253 || !NODE_NAME.test(node)) {
      throw invalid(
        file,
        `nodes: ${JSON.stringify(node).slice(0, 80)} is not a node name (lowercase letters, digits, '-' and '.', at most 253 characters)`,
      );
    }
    const n = obj(value, `nodes.${node}`);
    onlyKnownKeys(file, n, KNOWN_KEYS.node, `nodes.${node}`);
    nodes[node] = {
      ...(n.address === undefined ? {} : { address: str(n.address, `nodes.${node}.address`) }),
      ...(n.port === undefined ? {} : { port: int(n.port, `nodes.${node}.port`, 22, 1, 65535) }),
    };
  }
  const probeNames = new Set<string>();
  const probes = (
    raw.probes === undefined
      ? []
      : Array.isArray(raw.probes)
        ? raw.probes
        : (() => {
            throw invalid(file, 'probes must be a list');
          })()
  ).map((p: unknown, i: number) => {
    const r = obj(p, `probes[${i}]`);
    onlyKnownKeys(file, r, KNOWN_KEYS.probe, `probes[${i}]`);
    const url = str(r.url, `probes[${i}].url`);
    if (!/^https?:\/\//.test(url)) throw invalid(file, `probes[${i}].url must be http(s)`);
    const name = str(r.name, `probes[${i}].name`);
    // The gate acknowledges a failing probe by `probe:<name>` (rules/readiness/finding.ts): one word, one probe.
    if (!PROBE_NAME.test(name))
      throw invalid(
        file,
        `probes[${i}].name must be letters, digits, '.', '_' or '-' (it is acknowledged as probe:<name>), got ${JSON.stringify(name).slice(0, 60)}`,
      );
    if (probeNames.has(name)) throw invalid(file, `probes[${i}].name ${name} is given twice`);
    probeNames.add(name);
    return {
      name,
      url,
      expectStatus: int(r.expectStatus, `probes[${i}].expectStatus`, 200, 100, 599),
      timeoutSeconds: int(r.timeoutSeconds, `probes[${i}].timeoutSeconds`, 5, 1, SETTING_LIMITS['probes.timeoutSeconds'].max),
    };
  });
  let maintenanceWindows: MaintenanceWindow[];
  try {
    maintenanceWindows = parseMaintenanceWindows(raw.maintenanceWindows);
  } catch (err) {
    if (err instanceof RuleError) throw invalid(file, err.message);
    throw err;
  }

  const maintenance = maintenanceConfig(file, obj(raw.maintenance, 'maintenance'), raw.maintenance !== undefined, int);
  const pools: Record<string, PoolConfig> = {};
  for (const [pool, value] of Object.entries(obj(raw.pools, 'pools'))) {
    if (!NAME.test(pool) || pool.length > 50)
      throw invalid(
        file,
        `pools: ${JSON.stringify(pool).slice(0, 60)} is not a pool name (a DNS label of at most 50 characters: its nodes are named <pool>-<n>)`,
      );
    const p = obj(value, `pools.${pool}`);
    onlyKnownKeys(file, p, KNOWN_KEYS.pool, `pools.${pool}`);
    const selector = str(p.selector, `pools.${pool}.selector`);
    try {
      pools[pool] = { selector, labels: parsePoolSelector(selector) };
    } catch (err) {
      throw invalid(file, `pools.${pool}.selector: ${(err as Error).message}`);
    }
  }
  const provisioning = provisioningConfig(file, obj(raw.provisioning, 'provisioning'), raw.provisioning !== undefined, { str, path, int });
  let auditLog: { path: string } | undefined;
  if (raw.auditLog !== undefined) {
    const a = obj(raw.auditLog, 'auditLog');
    onlyKnownKeys(file, a, KNOWN_KEYS.auditLog, 'auditLog');
    const remote = str(a.path, 'auditLog.path');
    if (!/^\/[\w./-]+$/.test(remote) || remote.split('/').includes('..'))
      throw invalid(file, 'auditLog.path must be an absolute path on the control-plane nodes (letters, digits, . _ - /)');
    auditLog = { path: remote };
  }
  const alerts = alertsConfig(file, obj(raw.alerts, 'alerts'), raw.alerts !== undefined, { str, path, int });

  return {
    name,
    kubeconfig: path(raw.kubeconfig, 'kubeconfig'),
    ...(raw.context === undefined ? {} : { context: str(raw.context, 'context') }),
    ssh: {
      user: userName(str(ssh.user, 'ssh.user')),
      port: int(ssh.port, 'ssh.port', 22, 1, 65535),
      privateKeyPath: path(ssh.privateKeyPath, 'ssh.privateKeyPath'),
      knownHostsPath: path(ssh.knownHostsPath, 'ssh.knownHostsPath'),
      sudo: bool(ssh.sudo, 'ssh.sudo', true),
      connectTimeoutSeconds: int(
        ssh.connectTimeoutSeconds,
        'ssh.connectTimeoutSeconds',
        10,
        1,
        SETTING_LIMITS['ssh.connectTimeoutSeconds'].max,
      ),
    },
    nodes,
    packageManager: packageManager as PackageManager,
    etcd: {
      endpoint: str(etcd.endpoint, 'etcd.endpoint', 'https://127.0.0.1:2379'),
      caCert: path(etcd.caCert, 'etcd.caCert', `${pki}/ca.crt`),
      cert: path(etcd.cert, 'etcd.cert', `${pki}/server.crt`),
      key: path(etcd.key, 'etcd.key', `${pki}/server.key`),
      remoteDir: path(etcd.remoteDir, 'etcd.remoteDir', '/var/lib/skewless/snapshots'),
      ...(etcd.patchImageTag === undefined ? {} : { patchImageTag: etcdPatchTag(file, etcd.patchImageTag) }),
    },
    snapshots: { dir: path(snapshots.dir, 'snapshots.dir') },
    drain: {
      timeoutSeconds: int(drain.timeoutSeconds, 'drain.timeoutSeconds', 600, 1, SETTING_LIMITS['drain.timeoutSeconds'].max),
      ...(drain.gracePeriodSeconds === undefined
        ? {}
        : { gracePeriodSeconds: int(drain.gracePeriodSeconds, 'drain.gracePeriodSeconds', 0, 0) }),
      deleteEmptyDirData: bool(drain.deleteEmptyDirData, 'drain.deleteEmptyDirData', false),
      ignoreDaemonSets: bool(drain.ignoreDaemonSets, 'drain.ignoreDaemonSets', true),
    },
    probes,
    timeouts: Object.fromEntries(
      Object.entries(HOST_TIMEOUT_LIMITS).map(([k, limit]) => [k, int(timeouts[k], `timeouts.${k}`, limit.default, 1, limit.max)]),
    ) as unknown as HostTimeouts,
    ...(maintenanceWindows.length > 0 ? { maintenanceWindows } : {}),
    ...(maintenance ? { maintenance } : {}),
    ...(Object.keys(pools).length > 0 ? { pools } : {}),
    ...(provisioning ? { provisioning } : {}),
    ...(auditLog ? { auditLog } : {}),
    ...(alerts ? { alerts } : {}),
  };
}

const LABEL_NAME = /^[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$/;
const LABEL_PREFIX = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

/** Whether `key` is a valid label key (`[prefix/]name`). */
export function isLabelKey(key: string): boolean {
  const slash = key.indexOf('/');
  const [prefix, name] = slash < 0 ? [undefined, key] : [key.slice(0, slash), key.slice(slash + 1)];
  return LABEL_NAME.test(name) && (prefix === undefined || (prefix.length <= 253 && LABEL_PREFIX.test(prefix)));
}

/** Whether `value` is a valid label value (empty allowed). */
export const isLabelValue = (value: string): boolean => value === '' || LABEL_NAME.test(value);

/**
 * A pool's selector: equality terms only (`k=v`, `k==v`, comma-separated), so it also says which
 * labels a new node of the pool gets. Throws a plain Error with a one-line reason.
 */
export function parsePoolSelector(selector: string): Record<string, string> {
  const labels: Record<string, string> = {};
  const terms = selector.split(',').map((t) => t.trim());
  if (terms.length === 0 || terms.some((t) => t === '')) throw new Error('must be comma-separated key=value terms');
  for (const term of terms) {
    const m = /^([^=!\s]+)\s*==?\s*([^=!\s]*)$/.exec(term);
    if (!m)
      throw new Error(
        `${JSON.stringify(term).slice(0, 80)} is not an equality term key=value (a pool's selector also gives a new node its labels, so !=, in, notin and bare keys are not allowed)`,
      );
    const [, key, value] = m as unknown as [string, string, string];
    if (!isLabelKey(key)) throw new Error(`${JSON.stringify(key).slice(0, 80)} is not a label key`);
    if (!isLabelValue(value)) throw new Error(`${JSON.stringify(value).slice(0, 80)} is not a label value`);
    if (key in labels && labels[key] !== value) throw new Error(`${key} is given two values`);
    labels[key] = value;
  }
  return labels;
}

/** `labels` as the pool's selector text and a command's {labels}: `k=v,k2=v2`, keys sorted. */
export const labelsText = (labels: Record<string, string>): string =>
  Object.keys(labels)
    .sort()
    .map((k) => `${k}=${labels[k]}`)
    .join(',');

type Readers = {
  str: (v: unknown, where: string, fallback?: string) => string;
  path: (v: unknown, where: string, fallback?: string) => string;
  int: (v: unknown, where: string, fallback: number, min: number, max?: number) => number;
};

/** `provisioning:` (blue/green): which provider, and what it needs; keys of another provider are refused. */
function provisioningConfig(
  file: string,
  p: Record<string, unknown>,
  present: boolean,
  { str, path, int }: Readers,
): ProvisioningConfig | undefined {
  if (!present) return undefined;
  onlyKnownKeys(file, p, KNOWN_KEYS.provisioning, 'provisioning');
  const provider = p.provider;
  const only = (keys: readonly string[]) => {
    const other = Object.keys(p).find((k) => k !== 'provider' && !keys.includes(k));
    if (other !== undefined)
      throw invalid(file, `provisioning.${other} is not for provider ${String(provider)} (it takes ${keys.join(', ')})`);
  };
  const joinTimeoutSeconds = int(
    p.joinTimeoutSeconds,
    'provisioning.joinTimeoutSeconds',
    PROVISIONING_TIMEOUT.join.default,
    1,
    PROVISIONING_TIMEOUT.join.max,
  );
  if (provider === 'simulation') {
    only(['endpoint', 'tokenFile', 'joinTimeoutSeconds']);
    const endpoint = str(p.endpoint, 'provisioning.endpoint');
    let url: URL | undefined;
    try {
      url = new URL(endpoint);
    } catch {
      url = undefined;
    }
    if (
      !url ||
      url.protocol !== 'http:' ||
      !['127.0.0.1', 'localhost', '[::1]'].includes(url.hostname) ||
      url.pathname !== '/' ||
      url.search ||
      url.username
    ) {
      throw invalid(
        file,
        `provisioning.endpoint must be http://127.0.0.1:PORT (the simulation's machine API on loopback), got ${JSON.stringify(endpoint).slice(0, 80)}`,
      );
    }
    return {
      provider,
      endpoint: `${url.protocol}//${url.host}`,
      tokenFile: path(p.tokenFile, 'provisioning.tokenFile'),
      joinTimeoutSeconds,
    };
  }
  if (provider === 'command') {
    only(['create', 'delete', 'joinTimeoutSeconds', 'commandTimeoutSeconds']);
    const argv = (v: unknown, where: string): string[] => {
      if (
        !Array.isArray(v) ||
        v.length === 0 ||
        v.length > 64 ||
        !v.every((w) => typeof w === 'string' && w !== '' && w.length <= 1024 && !/[\0\n\r]/.test(w))
      ) {
        throw invalid(
          file,
          `${where} must be a list of 1 to 64 non-empty words without line breaks (argv, no shell), e.g. [/usr/local/bin/make-machine, --name, "{node}"]`,
        );
      }
      if (!isAbsolute(v[0] as string))
        throw invalid(file, `${where}[0] must be an absolute path to the program, got ${JSON.stringify(v[0]).slice(0, 80)}`);
      const unknown = (v as string[])
        .flatMap((w) => w.match(/\{[^{}]*\}/g) ?? [])
        .find((ph) => !(PROVISIONING_PLACEHOLDERS as readonly string[]).includes(ph));
      if (unknown !== undefined)
        throw invalid(file, `${where}: unknown placeholder ${unknown.slice(0, 40)} (known: ${PROVISIONING_PLACEHOLDERS.join(' ')})`);
      return v as string[];
    };
    const create = argv(p.create, 'provisioning.create');
    const del = argv(p.delete, 'provisioning.delete');
    if (del.some((w) => /\{(version|labels)\}/.test(w)))
      throw invalid(file, 'provisioning.delete may use {node} and {pool} only (a machine is removed by name)');
    if (!create.some((w) => w.includes('{node}')) || !del.some((w) => w.includes('{node}')))
      throw invalid(file, 'provisioning.create and provisioning.delete must each name the machine: a word with {node}');
    return {
      provider,
      create,
      delete: del,
      joinTimeoutSeconds,
      commandTimeoutSeconds: int(
        p.commandTimeoutSeconds,
        'provisioning.commandTimeoutSeconds',
        PROVISIONING_TIMEOUT.command.default,
        1,
        PROVISIONING_TIMEOUT.command.max,
      ),
    };
  }
  if (provider === 'cluster-api') throw invalid(file, 'provisioning.provider cluster-api is not supported yet (simulation, command)');
  throw invalid(file, `provisioning.provider must be simulation or command, got ${JSON.stringify(provider ?? null).slice(0, 40)}`);
}

/**
 * `alerts: { prometheusUrl, matchers, timeoutSeconds, pollSeconds }`. A refusal never shows the URL's user info
 * (a password) or query: only its scheme, host and path.
 */
function alertsConfig(file: string, a: Record<string, unknown>, present: boolean, { str, int }: Readers): AlertsConfig | undefined {
  if (!present) return undefined;
  onlyKnownKeys(file, a, KNOWN_KEYS.alerts, 'alerts');
  const raw = str(a.prometheusUrl, 'alerts.prometheusUrl');
  let url: URL | undefined;
  try {
    url = new URL(raw);
  } catch {
    url = undefined;
  }
  const example = 'e.g. http://prometheus.monitoring:9090';
  if (!url) throw invalid(file, `alerts.prometheusUrl is not a URL (${example})`);
  const shown = `${url.protocol}//${url.host}${url.pathname}`;
  if (url.protocol !== 'http:' && url.protocol !== 'https:')
    throw invalid(file, `alerts.prometheusUrl must be http(s), got ${url.protocol} (${example})`);
  if (url.search || url.hash)
    throw invalid(file, `alerts.prometheusUrl must be Prometheus's base URL without ?query or #fragment, got ${shown}?… (${example})`);
  if (a.matchers !== undefined && !Array.isArray(a.matchers))
    throw invalid(file, 'alerts.matchers must be a list of matchers, e.g. [\'severity=~"critical|page"\', \'alertname!="Watchdog"\']');
  const matchers = ((a.matchers ?? []) as unknown[]).map((m, i) => {
    const parsed = parseAlertMatcher(m);
    if ('problem' in parsed) throw invalid(file, `alerts.matchers[${i}] ${parsed.problem}`);
    return parsed.matcher;
  });
  return {
    prometheusUrl: url.href,
    matchers,
    timeoutSeconds: int(a.timeoutSeconds, 'alerts.timeoutSeconds', ALERTS_TIMEOUT.default, 1, ALERTS_TIMEOUT.max),
    pollSeconds: int(a.pollSeconds, 'alerts.pollSeconds', ALERTS_POLL.default, 1, ALERTS_POLL.max),
  };
}

/**
 * `maintenance: { command: [...], timeoutSeconds, rebootCommand }`. The command is a list of words,
 * never one string: a string would have to be split by a shell, and what the words mean is then
 * the shell's business. No word may hold a NUL or a line break (a line break ends a command for sh).
 */
function maintenanceConfig(
  file: string,
  m: Record<string, unknown>,
  present: boolean,
  int: (v: unknown, where: string, fallback: number, min: number, max?: number) => number,
): MaintenanceConfig | undefined {
  if (!present) return undefined;
  onlyKnownKeys(file, m, KNOWN_KEYS.maintenance, 'maintenance');
  const words = (v: unknown, where: string): string[] => {
    if (
      !Array.isArray(v) ||
      v.length === 0 ||
      v.length > 64 ||
      !v.every((w) => typeof w === 'string' && w !== '' && w.length <= 1024 && !/[\0\n\r]/.test(w))
    ) {
      throw invalid(file, `${where} must be a list of 1 to 64 non-empty words without line breaks, e.g. [apt-get, -y, dist-upgrade]`);
    }
    return v as string[];
  };
  const command = words(m.command, 'maintenance.command');
  const rebootCommand = m.rebootCommand === undefined ? undefined : words(m.rebootCommand, 'maintenance.rebootCommand');
  if (rebootCommand && !REBOOT_COMMANDS.some((r) => r.length === rebootCommand.length && r.every((w, i) => w === rebootCommand[i]))) {
    throw invalid(file, `maintenance.rebootCommand must be one of ${REBOOT_COMMANDS.map((r) => `[${r.join(', ')}]`).join(', ')}`);
  }
  return {
    command,
    timeoutSeconds: int(m.timeoutSeconds, 'maintenance.timeoutSeconds', MAINTENANCE_TIMEOUT.default, 1, MAINTENANCE_TIMEOUT.max),
    ...(rebootCommand ? { rebootCommand } : {}),
  };
}

/** The reboot forms a node may be rebooted with (rebootNode refuses any other argv). */
export const REBOOT_COMMANDS: readonly (readonly string[])[] = [
  ['reboot'],
  ['systemctl', 'reboot'],
  ['shutdown', '-r', 'now'],
  ['/sbin/reboot'],
  ['/usr/sbin/reboot'],
];

/**
 * Reads <dir>/<cluster>.yaml and checks the files it names; the name is checked first so it can
 * never walk out of the directory.
 */
export function loadClusterConfig(dir: string, cluster: string): ClusterConfig {
  if (!NAME.test(cluster)) {
    throw ApplicationFailure.create({
      type: ErrorType.ClusterConfigInvalid,
      message: `invalid cluster name ${JSON.stringify(cluster)}`,
      nonRetryable: true,
    });
  }
  const file = join(dir, `${cluster}.yaml`);
  if (!existsSync(file)) {
    throw ApplicationFailure.create({
      type: ErrorType.ClusterConfigInvalid,
      message: `no configuration for cluster ${cluster} (looked for ${file})`,
      nonRetryable: true,
    });
  }
  const config = parseClusterConfig(readFileSync(file, 'utf8'), file);
  if (config.name !== cluster) throw invalid(file, `name is ${config.name}, expected ${cluster}`);
  checkClusterFiles(config, file);
  return config;
}
