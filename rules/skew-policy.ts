import { RuleError } from './rule-error.js';
import { minorIndex, minorOf, parseVersion, type Version } from './version.js';

/**
 * The version skew policy of kubernetes.io/releases/version-skew-policy, with kube-apiserver
 * as the reference. Only minors count; patch versions never do.
 */

export type Component = 'apiserver' | 'controllerManager' | 'scheduler' | 'kubelet' | 'kubeProxy' | 'kubectl';

export const COMPONENTS: readonly Component[] = ['apiserver', 'controllerManager', 'scheduler', 'kubelet', 'kubeProxy', 'kubectl'];

/** Where a component runs (a node name, or `laptop` for a kubectl) and its version. */
export interface ComponentVersion {
  node: string;
  version: string;
}

/** The versions skew is judged on. Only `apiservers` is required. */
export interface SkewInventory {
  apiservers: ComponentVersion[];
  controllerManagers?: ComponentVersion[];
  schedulers?: ComponentVersion[];
  kubelets?: ComponentVersion[];
  kubeProxies?: ComponentVersion[];
  kubectl?: ComponentVersion[];
}

export const INVENTORY_KEYS: Record<Component, keyof SkewInventory> = {
  apiserver: 'apiservers',
  controllerManager: 'controllerManagers',
  scheduler: 'schedulers',
  kubelet: 'kubelets',
  kubeProxy: 'kubeProxies',
  kubectl: 'kubectl',
};

export type SkewRuleId =
  | 'apiserver-ha-skew'
  | 'node-newer-than-apiserver'
  | 'node-too-old'
  | 'control-plane-newer-than-apiserver'
  | 'control-plane-too-old'
  | 'kubectl-skew';

export interface SkewViolation {
  component: Component;
  node: string;
  version: string;
  ruleId: SkewRuleId;
  /** One sentence naming the rule and the versions that break it. */
  rule: string;
}

/**
 * Which kube-apiserver a kube-controller-manager or kube-scheduler talks to.
 * - `any`: any instance, e.g. through a load balancer. The table of docs/design.md: bounded by the oldest
 *   and the newest apiserver. The safe default for an inventory of unknown origin.
 * - `kubeadm`: the one on its own node. kubeadm ≥ 1.19 points their kubeconfigs at the local API
 *   endpoint precisely so that an HA upgrade can move one control-plane node at a time; the policy
 *   then bounds them by that apiserver (and by the table when no apiserver runs on their node).
 */
export type ControlPlaneTopology = 'any' | 'kubeadm';

export interface SkewOptions {
  topology?: ControlPlaneTopology;
}

export interface SkewReport {
  compliant: boolean;
  violations: SkewViolation[];
}

/** Oldest apiserver minor at which kubelets may lag three minors (KEP-3935); before it, two. */
const N3_KUBELET_SINCE_MINOR = 28;

export function maxNodeLag(newestApiserver: { major: number; minor: number }): number {
  return newestApiserver.major === 1 && newestApiserver.minor < N3_KUBELET_SINCE_MINOR ? 2 : 3;
}

const NAMES: Record<Component, string> = {
  apiserver: 'kube-apiserver',
  controllerManager: 'kube-controller-manager',
  scheduler: 'kube-scheduler',
  kubelet: 'kubelet',
  kubeProxy: 'kube-proxy',
  kubectl: 'kubectl',
};

interface Parsed {
  component: Component;
  node: string;
  version: Version;
}

function parseEntries(inventory: SkewInventory, component: Component): Parsed[] {
  const key = INVENTORY_KEYS[component];
  const entries = inventory[key];
  if (entries === undefined) return [];
  if (!Array.isArray(entries)) throw new RuleError('InvalidInventory', `inventory.${key} must be an array`);
  return entries.map((entry, i) => {
    if (typeof entry !== 'object' || entry === null || typeof entry.node !== 'string' || entry.node === '') {
      throw new RuleError('InvalidInventory', `inventory.${key}[${i}] must be {"node": "...", "version": "..."}`);
    }
    try {
      return { component, node: entry.node, version: parseVersion(entry.version) };
    } catch (err) {
      throw new RuleError('InvalidInventory', `inventory.${key}[${i}] (${entry.node}): ${(err as Error).message}`);
    }
  });
}

/** Judges every component against the policy; every violation is kept, none short-circuits. */
export function checkSkew(inventory: SkewInventory, options: SkewOptions = {}): SkewReport {
  if (typeof inventory !== 'object' || inventory === null) {
    throw new RuleError('InvalidInventory', 'inventory must be a JSON object');
  }
  const apiservers = parseEntries(inventory, 'apiserver');
  if (apiservers.length === 0) {
    throw new RuleError('InvalidInventory', 'inventory.apiservers must list at least one kube-apiserver');
  }
  const oldest = apiservers.reduce((a, b) => (minorIndex(b.version) < minorIndex(a.version) ? b : a)).version;
  const newest = apiservers.reduce((a, b) => (minorIndex(b.version) > minorIndex(a.version) ? b : a)).version;
  const aOld = minorIndex(oldest);
  const aNew = minorIndex(newest);
  const violations: SkewViolation[] = [];
  const flag = (p: Parsed, ruleId: SkewRuleId, rule: string) =>
    violations.push({ component: p.component, node: p.node, version: p.version.text, ruleId, rule });

  for (const p of apiservers) {
    if (aNew - minorIndex(p.version) > 1) {
      flag(
        p,
        'apiserver-ha-skew',
        `kube-apiserver instances must be within 1 minor of each other (newest is ${minorOf(newest)}, this one ${minorOf(p.version)})`,
      );
    }
  }

  const lag = maxNodeLag(newest);
  for (const component of ['kubelet', 'kubeProxy'] as const) {
    for (const p of parseEntries(inventory, component)) {
      const m = minorIndex(p.version);
      if (m > aOld) {
        flag(p, 'node-newer-than-apiserver', `${NAMES[component]} must not be newer than the oldest kube-apiserver (${minorOf(oldest)})`);
      } else if (aNew - m > lag) {
        flag(
          p,
          'node-too-old',
          `${NAMES[component]} may be at most ${lag} minors older than the newest kube-apiserver (${minorOf(newest)})` +
            (lag === 2 ? '; the 3-minor allowance starts with kube-apiserver 1.28' : ''),
        );
      }
    }
  }

  for (const component of ['controllerManager', 'scheduler'] as const) {
    for (const p of parseEntries(inventory, component)) {
      const m = minorIndex(p.version);
      const local = options.topology === 'kubeadm' ? apiservers.find((a) => a.node === p.node) : undefined;
      const [low, high, which] = local
        ? [local.version, local.version, `the kube-apiserver on its node (${minorOf(local.version)})`]
        : [oldest, newest, ''];
      if (m > minorIndex(low)) {
        flag(
          p,
          'control-plane-newer-than-apiserver',
          `${NAMES[component]} must not be newer than ${which || `the oldest kube-apiserver (${minorOf(oldest)})`}`,
        );
      } else if (minorIndex(high) - m > 1) {
        flag(
          p,
          'control-plane-too-old',
          `${NAMES[component]} may be at most 1 minor older than ${which || `the newest kube-apiserver (${minorOf(newest)})`}`,
        );
      }
    }
  }

  for (const p of parseEntries(inventory, 'kubectl')) {
    const m = minorIndex(p.version);
    if (m - aOld > 1 || aNew - m > 1) {
      const range = aOld === aNew ? minorOf(oldest) : `${minorOf(oldest)}–${minorOf(newest)}`;
      flag(p, 'kubectl-skew', `kubectl must be within 1 minor of every kube-apiserver (${range})`);
    }
  }

  return { compliant: violations.length === 0, violations };
}
