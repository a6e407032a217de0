import { existsSync, readFileSync, statSync } from 'node:fs';
import { isAbsolute, join } from 'node:path';
import { ApplicationFailure } from '@temporalio/activity';
import ssh2 from 'ssh2';
import { parse as parseYaml } from 'yaml';
import {
  etcdPatchTarget,
  PACKAGE_MANAGERS,
  parseMaintenanceWindows,
  parseExclusions,
  parseHooks,
  parseNotifySinks,
  RuleError,
  type MaintenanceWindow,
  type Exclusion,
  type HookConfig,
  type NotifySink,
  type PackageManager,
  drainRules,
  type DrainOptions,
  type DrainRule,
} from '../rules/index.js';
import { parseAlertMatcher, type AlertMatcher } from '../rules/readiness/alert-matchers.js';
import { ErrorType } from './errors.js';
import { SETTING_LIMITS, type SettingName } from '../contracts/time-limits.js';
import {
  boolean,
  dnsLabel,
  FieldError,
  FieldPath,
  integer,
  isDnsLabel,
  isLabelKey,
  isLabelValue,
  isNodeName,
  listOf,
  mapping,
  mappingOf,
  oneOf,
  optional,
  refuse,
  text,
  withDefault,
  type Shape,
} from '../rules/input-shapes.js';

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
  /**
   * Per-pod drain order, skip and wait-for-completion (rules/drain-rules.ts); empty: every pod drained
   * at once. The three keys below are filled by parseClusterConfig; absent (a hand-built config): the defaults.
   */
  drainRules?: DrainRule[];
  /** What the node check after a kubelet restart (and a control plane's after kubeadm) waits for besides Ready. */
  nodeHealth?: NodeHealthConfig;
  /** kubeadm's addons: whether `kubeadm upgrade apply` skips its kube-proxy phase. */
  addons?: AddonsConfig;
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
  /**
   * Where a run's events go (rules/notify-config.ts, docs/notifications.md): each sink's URL and secret
   * stay here, read by the delivery activity; workflows get the sinks' names and events only.
   */
  notify?: NotifySink[];
  /** Change hooks around each step (rules/hooks-config.ts): workflows get their names, points and failure policy only. */
  hooks?: HookConfig[];
  /** Blackout dates (rules/exclusions.ts): policy, not a secret; the inventory hands them to the workflow. */
  exclusions?: Exclusion[];
}

export interface NodeHealthConfig {
  /** Every DaemonSet pod bound to the node Ready (the CNI and kube-proxy among them). */
  daemonSets: boolean;
  /** Node condition types that must not be True (node-problem-detector's). */
  conditions: string[];
  /**
   * The least the check waits for them, however short the run's verifySeconds: a DaemonSet pod comes back
   * some seconds after its kubelet (a CNI's init containers, kube-proxy's first sync).
   */
  waitSeconds: number;
}

/** The node conditions checked unless `nodeHealth.conditions` says otherwise: node-problem-detector's permanent problems. */
export const DEFAULT_NODE_CONDITIONS = ['KernelDeadlock', 'ReadonlyFilesystem'];
export const DEFAULT_NODE_HEALTH: NodeHealthConfig = { daemonSets: true, conditions: DEFAULT_NODE_CONDITIONS, waitSeconds: 30 };

/** `auto`: skip kube-proxy's phase when the cluster has no kube-proxy DaemonSet; `absent`: always skip it; `present`: never. */
export const KUBE_PROXY_MODES = ['auto', 'absent', 'present'] as const;
export interface AddonsConfig {
  kubeProxy: (typeof KUBE_PROXY_MODES)[number];
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

const PROBE_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$/;

/** `etcd.patchImageTag`: an etcd 3.5 image tag at or past 3.5.26 (rules/etcd-patch.ts judges it, naming the key). */
const etcdPatchTag: Shape<string> = (v, at) => {
  if (typeof v !== 'string') return refuse(at, `must be an image tag such as 3.5.26-0, got ${JSON.stringify(v)}`);
  try {
    return etcdPatchTarget(v);
  } catch (err) {
    throw new FieldError('', (err as Error).message);
  }
};

/** A path on the worker (or, for etcd's, on the control planes): absolute, so no working directory decides it. */
const absolutePath: Shape<string> = (v, at) => {
  const p = text(v, at);
  return isAbsolute(p) ? p : refuse(at, `must be an absolute path, got ${JSON.stringify(p)}`);
};

/** A login name as useradd takes it: it becomes a command word on the hosts (`chown USER FILE`), so never an option. */
const userName: Shape<string> = (v, at) => {
  const u = text(v, at);
  return /^[A-Za-z0-9_][A-Za-z0-9._-]{0,31}$/.test(u)
    ? u
    : refuse(at, `must be a user name (letters, digits, '.', '_', '-', not first), got ${JSON.stringify(u).slice(0, 40)}`);
};

const port = integer({ min: 1, max: 65535 });
/** A node condition's type as the API names them: `KernelDeadlock`, `example.com/Problem`. */
const conditionType: Shape<string> = (v, at) =>
  typeof v === 'string' && isLabelKey(v) ? v : refuse(at, `must be a node condition type such as KernelDeadlock, got ${JSON.stringify(v)}`);
/** Seconds from 1 to the setting's maximum in the one table of time limits, `fallback` where absent. */
const seconds = (setting: SettingName, fallback: number): Shape<number> =>
  withDefault(integer({ min: 1, max: SETTING_LIMITS[setting].max }), fallback);
const ETCD_PKI = '/etc/kubernetes/pki/etcd';

/**
 * The plain sections of the configuration, described by their keys: each key's shape and default.
 * A misspelt key (`drian:`) is refused, not ignored with its setting silently replaced by the default.
 */
const SECTIONS = {
  ssh: mapping({
    user: userName,
    port: withDefault(port, 22),
    privateKeyPath: absolutePath,
    knownHostsPath: absolutePath,
    sudo: withDefault(boolean, true),
    connectTimeoutSeconds: seconds('ssh.connectTimeoutSeconds', 10),
  }),
  etcd: mapping({
    endpoint: withDefault(text, 'https://127.0.0.1:2379'),
    caCert: withDefault(absolutePath, `${ETCD_PKI}/ca.crt`),
    cert: withDefault(absolutePath, `${ETCD_PKI}/server.crt`),
    key: withDefault(absolutePath, `${ETCD_PKI}/server.key`),
    remoteDir: withDefault(absolutePath, '/var/lib/skewless/snapshots'),
    patchImageTag: optional(etcdPatchTag),
  }),
  snapshots: mapping({ dir: absolutePath }),
  drain: mapping({
    timeoutSeconds: seconds('drain.timeoutSeconds', 600),
    gracePeriodSeconds: optional(integer({ min: 0 })),
    deleteEmptyDirData: withDefault(boolean, false),
    ignoreDaemonSets: withDefault(boolean, true),
  }),
  timeouts: mapping({
    commandSeconds: seconds('timeouts.commandSeconds', HOST_TIMEOUT_LIMITS.commandSeconds.default),
    packageInstallSeconds: seconds('timeouts.packageInstallSeconds', HOST_TIMEOUT_LIMITS.packageInstallSeconds.default),
    kubeadmPlanSeconds: seconds('timeouts.kubeadmPlanSeconds', HOST_TIMEOUT_LIMITS.kubeadmPlanSeconds.default),
    kubeadmApplySeconds: seconds('timeouts.kubeadmApplySeconds', HOST_TIMEOUT_LIMITS.kubeadmApplySeconds.default),
    kubeadmNodeSeconds: seconds('timeouts.kubeadmNodeSeconds', HOST_TIMEOUT_LIMITS.kubeadmNodeSeconds.default),
  }),
  drainRules,
  nodeHealth: mapping({
    daemonSets: withDefault(boolean, true),
    conditions: withDefault(
      listOf(conditionType, 'node condition types, e.g. [KernelDeadlock, ReadonlyFilesystem]'),
      DEFAULT_NODE_CONDITIONS,
    ),
    waitSeconds: withDefault(integer({ min: 0, max: SETTING_LIMITS.verifySeconds.max, why: 'the longest wait of a health check' }), 30),
  }),
  addons: mapping({ kubeProxy: withDefault(oneOf(...KUBE_PROXY_MODES), 'auto') }),
  node: mapping({ address: optional(text), port: optional(port) }),
  probe: mapping({
    name: text,
    url: text,
    expectStatus: withDefault(integer({ min: 100, max: 599 }), 200),
    timeoutSeconds: seconds('probes.timeoutSeconds', 5),
  }),
} satisfies Record<string, Shape<unknown>>;

/**
 * Reads `value` at `where` with a shape of rules/input-shapes.ts, refusing with the configuration's
 * one line: `lab.yaml: ssh.port must be an integer from 1 to 65535, got 0`.
 */
function read<T>(file: string | undefined, shape: Shape<T>, where: string, value: unknown): T {
  try {
    return shape(value, FieldPath.root(where));
  } catch (err) {
    if (!(err instanceof FieldError)) throw err;
    const { unknownKey: u, field } = err;
    throw invalid(file, u ? `unknown key ${field ? `${field}.` : ''}${u.key} (known: ${u.known.join(', ')})` : err.message);
  }
}

function invalid(file: string | undefined, message: string): ApplicationFailure {
  return ApplicationFailure.create({
    type: ErrorType.ClusterConfigInvalid,
    message: file ? `${file}: ${message}` : message,
    nonRetryable: true,
  });
}

/** The keys of the top level and of the sections read by hand (their values depend on each other). */
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
    'drainRules',
    'nodeHealth',
    'addons',
    'probes',
    'timeouts',
    'maintenanceWindows',
    'maintenance',
    'pools',
    'provisioning',
    'auditLog',
    'alerts',
    'notify',
    'hooks',
    'exclusions',
  ],
  auditLog: ['path'],
  alerts: ['prometheusUrl', 'matchers', 'timeoutSeconds', 'pollSeconds'],
  pool: ['selector'],
  provisioning: ['provider', 'endpoint', 'tokenFile', 'create', 'delete', 'joinTimeoutSeconds', 'commandTimeoutSeconds'],
  maintenance: ['command', 'timeoutSeconds', 'rebootCommand'],
} as const;

function onlyKnownKeys(file: string, value: Record<string, unknown>, keys: readonly string[], where: string): void {
  read(file, (v, at) => mappingOf(v, at, keys), where, value);
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

/** A mapping at `where`, or {} when absent. */
function mappingAt(file: string, v: unknown, where: string): Record<string, unknown> {
  if (v === undefined) return {};
  if (typeof v !== 'object' || v === null || Array.isArray(v)) throw invalid(file, `${where} must be a mapping`);
  return v as Record<string, unknown>;
}

/** `nodes:`, by node name: each node's own settings. */
function nodesSection(file: string, section: unknown): ClusterConfig['nodes'] {
  const nodes: ClusterConfig['nodes'] = {};
  for (const [node, value] of Object.entries(mappingAt(file, section, 'nodes'))) {
    // A name no Node can have would never be looked up: refused like a misspelt key, not ignored.
    if (!isNodeName(node)) {
      throw invalid(
        file,
        `nodes: ${JSON.stringify(node).slice(0, 80)} is not a node name (lowercase letters, digits, '-' and '.', at most 253 characters)`,
      );
    }
    nodes[node] = read(file, SECTIONS.node, `nodes.${node}`, value);
  }
  return nodes;
}

/** `probes:`, each a named http(s) check acknowledged as `probe:<name>`. */
function probesSection(file: string, value: unknown): ClusterConfig['probes'] {
  const probeNames = new Set<string>();
  return (
    value === undefined
      ? []
      : Array.isArray(value)
        ? value
        : (() => {
            throw invalid(file, 'probes must be a list');
          })()
  ).map((p: unknown, i: number) => {
    const { name, url, expectStatus, timeoutSeconds } = read(file, SECTIONS.probe, `probes[${i}]`, p);
    if (!/^https?:\/\//.test(url)) throw invalid(file, `probes[${i}].url must be http(s)`);
    // The gate acknowledges a failing probe by `probe:<name>` (rules/readiness/finding.ts): one word, one probe.
    if (!PROBE_NAME.test(name))
      throw invalid(
        file,
        `probes[${i}].name must be letters, digits, '.', '_' or '-' (it is acknowledged as probe:<name>), got ${JSON.stringify(name).slice(0, 60)}`,
      );
    if (probeNames.has(name)) throw invalid(file, `probes[${i}].name ${name} is given twice`);
    probeNames.add(name);
    return { name, url, expectStatus, timeoutSeconds };
  });
}

/** `pools:` (blue/green), by pool name: the selector of its nodes. */
function poolsSection(file: string, section: unknown): Record<string, PoolConfig> {
  const pools: Record<string, PoolConfig> = {};
  for (const [pool, value] of Object.entries(mappingAt(file, section, 'pools'))) {
    if (!isDnsLabel(pool) || pool.length > 50)
      throw invalid(
        file,
        `pools: ${JSON.stringify(pool).slice(0, 60)} is not a pool name (a DNS label of at most 50 characters: its nodes are named <pool>-<n>)`,
      );
    const p = mappingAt(file, value, `pools.${pool}`);
    onlyKnownKeys(file, p, KNOWN_KEYS.pool, `pools.${pool}`);
    const selector = read(file, text, `pools.${pool}.selector`, p.selector);
    try {
      pools[pool] = { selector, labels: parsePoolSelector(selector) };
    } catch (err) {
      throw invalid(file, `pools.${pool}.selector: ${(err as Error).message}`);
    }
  }
  return pools;
}

/** `auditLog:`: where the control planes write the API server's audit log. */
function auditLogSection(file: string, value: unknown): { path: string } | undefined {
  if (value === undefined) return undefined;
  const a = mappingAt(file, value, 'auditLog');
  onlyKnownKeys(file, a, KNOWN_KEYS.auditLog, 'auditLog');
  const remote = read(file, text, 'auditLog.path', a.path);
  if (!/^\/[\w./-]+$/.test(remote) || remote.split('/').includes('..'))
    throw invalid(file, 'auditLog.path must be an absolute path on the control-plane nodes (letters, digits, . _ - /)');
  return { path: remote };
}

/** Parses and validates one cluster's YAML; every problem is a one-line ClusterConfigInvalid. */
export function parseClusterConfig(yamlText: string, file: string): ClusterConfig {
  let raw: Record<string, unknown>;
  try {
    raw = parseYaml(yamlText) as Record<string, unknown>;
  } catch (err) {
    throw invalid(file, `not valid YAML: ${(err as Error).message.split('\n')[0]}`);
  }
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) throw invalid(file, 'must be a mapping');
  onlyKnownKeys(file, raw, KNOWN_KEYS[''], '');
  const obj = (v: unknown, where: string): Record<string, unknown> => mappingAt(file, v, where);
  const str = (v: unknown, where: string, fallback?: string): string =>
    read(file, fallback === undefined ? text : withDefault(text, fallback), where, v);
  const path = (v: unknown, where: string, fallback?: string): string =>
    read(file, fallback === undefined ? absolutePath : withDefault(absolutePath, fallback), where, v);
  const int = (v: unknown, where: string, fallback: number, min: number, max?: number): number =>
    read(file, withDefault(integer({ min, ...(max === undefined ? {} : { max }) }), fallback), where, v);

  const name = read(file, dnsLabel, 'name', raw.name);
  const section = <K extends keyof typeof SECTIONS>(key: K): ReturnType<(typeof SECTIONS)[K]> =>
    read(file, SECTIONS[key] as Shape<unknown>, key, raw[key]) as ReturnType<(typeof SECTIONS)[K]>;
  const packageManager = str(raw.packageManager, 'packageManager', 'apt');
  if (!(PACKAGE_MANAGERS as readonly string[]).includes(packageManager)) {
    throw invalid(file, `packageManager ${JSON.stringify(packageManager)} is not supported (${PACKAGE_MANAGERS.join(' or ')})`);
  }

  const nodes = nodesSection(file, raw.nodes);
  const probes = probesSection(file, raw.probes);
  let maintenanceWindows: MaintenanceWindow[];
  try {
    maintenanceWindows = parseMaintenanceWindows(raw.maintenanceWindows);
  } catch (err) {
    if (err instanceof RuleError) throw invalid(file, err.message);
    throw err;
  }

  const maintenance = maintenanceConfig(file, obj(raw.maintenance, 'maintenance'), raw.maintenance !== undefined, int);
  const pools = poolsSection(file, raw.pools);
  const provisioning = provisioningConfig(file, obj(raw.provisioning, 'provisioning'), raw.provisioning !== undefined, { str, path, int });
  const auditLog = auditLogSection(file, raw.auditLog);
  const alerts = alertsConfig(file, obj(raw.alerts, 'alerts'), raw.alerts !== undefined, { str, path, int });
  const notify = fromRule(file, () => parseNotifySinks(raw.notify));
  const hooks = fromRule(file, () => parseHooks(raw.hooks));
  const exclusions = fromRule(file, () => parseExclusions(raw.exclusions));

  return {
    name,
    kubeconfig: path(raw.kubeconfig, 'kubeconfig'),
    ...(raw.context === undefined ? {} : { context: str(raw.context, 'context') }),
    ssh: section('ssh'),
    nodes,
    packageManager: packageManager as PackageManager,
    etcd: section('etcd'),
    snapshots: section('snapshots'),
    drain: section('drain'),
    drainRules: section('drainRules'),
    nodeHealth: section('nodeHealth'),
    addons: section('addons'),
    probes,
    timeouts: section('timeouts'),
    ...(maintenanceWindows.length > 0 ? { maintenanceWindows } : {}),
    ...(maintenance ? { maintenance } : {}),
    ...(Object.keys(pools).length > 0 ? { pools } : {}),
    ...(provisioning ? { provisioning } : {}),
    ...(auditLog ? { auditLog } : {}),
    ...(alerts ? { alerts } : {}),
    ...(notify.length > 0 ? { notify } : {}),
    ...(hooks.length > 0 ? { hooks } : {}),
    ...(exclusions.length > 0 ? { exclusions } : {}),
  };
}

/** The drain filters' options from the configuration: every drain, plan and prediction judges pods alike. */
export function drainOptionsOf(config: ClusterConfig, force: string[] = []): DrainOptions {
  const { ignoreDaemonSets, deleteEmptyDirData } = config.drain;
  return { ignoreDaemonSets, deleteEmptyDirData, force, rules: config.drainRules ?? [] };
}

/** A pure rule's check of a section: its RuleError is the configuration's one-line refusal. */
function fromRule<T>(file: string, parse: () => T): T {
  try {
    return parse();
  } catch (err) {
    if (err instanceof RuleError) throw invalid(file, err.message);
    throw err;
  }
}

/** The label shapes are the rules' (rules/input-shapes.ts); blue/green's pools read them from here. */
export { isLabelKey, isLabelValue };

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

/** The simulation's machine API: plain http on loopback, nothing after the port. */
function simulationEndpoint(file: string, endpoint: string): URL {
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
  return url;
}

/** A provisioning command: argv (no shell), an absolute program, only the known placeholders. */
function provisioningArgv(file: string, v: unknown, where: string): string[] {
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
}

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
    const url = simulationEndpoint(file, str(p.endpoint, 'provisioning.endpoint'));
    return {
      provider,
      endpoint: `${url.protocol}//${url.host}`,
      tokenFile: path(p.tokenFile, 'provisioning.tokenFile'),
      joinTimeoutSeconds,
    };
  }
  if (provider === 'command') {
    only(['create', 'delete', 'joinTimeoutSeconds', 'commandTimeoutSeconds']);
    const create = provisioningArgv(file, p.create, 'provisioning.create');
    const del = provisioningArgv(file, p.delete, 'provisioning.delete');
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
  if (!isDnsLabel(cluster)) {
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
