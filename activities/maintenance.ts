// OS maintenance (`skewless maintain`): which nodes a run takes and what on them would be lost
// (read-only), and the configured OS upgrade command on one node.
import { ApplicationFailure } from '@temporalio/activity';
import {
  compareNatural,
  isLabelKey,
  sinkSubscriptions,
  type MaintenanceWindow,
  type NodeRole,
  type SinkSubscription,
} from '../rules/index.js';
import type { ClusterResolver } from './cluster-access.js';
import { drainOptionsOf } from './cluster-config.js';
import { readNodeDrainState } from './drain-facts.js';
import { ErrorType, kubeCall } from './errors.js';
import { hostActivityScope } from './host-activity-context.js';
import { checkNode, invalid, run, shown } from './host-commands.js';
import { nodeFacts, pickedLabels } from './inventory-facts.js';

export interface PlanMaintenanceInput {
  cluster: string;
  /** A label selector as the API takes it (`pool=blue,zone in (a,b)`), or ... */
  selector?: string;
  /** ... node names. Exactly one of the two. */
  nodes?: string[];
  /** Pods the operator lets go although nothing recreates them, `namespace/name`. */
  force?: string[];
  /** The node labels to report (the policy's batchBy). */
  labelKeys?: string[];
}

export interface MaintenanceNode {
  name: string;
  role: NodeRole;
  ready: boolean;
  unschedulable: boolean;
  /** The labels asked for (labelKeys: the policy's batchBy). */
  labels?: Record<string, string>;
}

export interface MaintenancePlanFacts {
  /** The selected nodes, in natural order. */
  nodes: MaintenanceNode[];
  /** Names asked for that are no Node of the cluster. */
  missing: string[];
  /** Pods on the selected nodes that no controller manages and that were not forced: they would not come back. */
  unmanaged: { namespace: string; name: string; node: string }[];
  /** Forced pods found on the selected nodes (each is deleted by its node's drain). */
  forced: string[];
  /** Whether the cluster configuration names the OS upgrade command (maintenance.command). */
  hasCommand: boolean;
  /** The cluster's maintenance windows (cluster configuration), if any: reboots start only inside one. */
  maintenanceWindows?: MaintenanceWindow[];
  /** The cluster's `notify:` sinks, names and events only (never a URL): where the run's events go. */
  notify?: SinkSubscription[];
}

/** A selector is handed to the API as is; this only keeps out what no selector has (and what a log line should not hold). */
function checkSelector(selector: unknown): string {
  if (typeof selector !== 'string' || selector === '' || selector.length > 1024 || /[\0\n\r]/.test(selector))
    throw invalid(`invalid label selector ${shown(selector)}`);
  return selector;
}

function checkForce(force: unknown): string[] {
  if (force === undefined) return [];
  if (!Array.isArray(force) || !force.every((f) => typeof f === 'string' && /^[a-z0-9][-a-z0-9.]*\/[a-z0-9][-a-z0-9.]*$/.test(f)))
    throw invalid('force must be a list of namespace/name');
  return force as string[];
}

export function createMaintenanceActivities(deps: { clusters: ClusterResolver }) {
  return {
    /**
     * Read-only: the nodes a maintenance run takes (by selector or by name) and the pods on them that
     * would be lost for good (no controller, not forced), judged by the same drain filters a drain
     * uses, so the run can refuse before it touches anything.
     */
    async planMaintenance(input: PlanMaintenanceInput): Promise<MaintenancePlanFacts> {
      const { kube, config } = deps.clusters(input.cluster);
      if ((input.selector === undefined) === (input.nodes === undefined))
        throw invalid('name the nodes by a selector or by name, not both and not neither');
      const force = checkForce(input.force);
      if (input.labelKeys !== undefined && !(Array.isArray(input.labelKeys) && input.labelKeys.every(isLabelKey)))
        throw invalid('labelKeys must be a list of label keys');
      const labelKeys = input.labelKeys;
      let nodes: MaintenanceNode[];
      const missing: string[] = [];
      if (input.selector !== undefined) {
        const labelSelector = checkSelector(input.selector);
        const list = await kubeCall(`list nodes ${labelSelector}`, () => kube.core.listNode({ labelSelector }));
        nodes = list.items.map((n) => {
          const { name, role, ready, unschedulable } = nodeFacts(n);
          return { name, role, ready, unschedulable, ...pickedLabels(n, labelKeys) };
        });
      } else {
        if (!Array.isArray(input.nodes) || input.nodes.length === 0) throw invalid('nodes must be a non-empty list');
        const names = [...new Set(input.nodes.map(checkNode))];
        const list = await kubeCall('list nodes', () => kube.core.listNode({}));
        const byName = new Map(list.items.map((n) => [n.metadata?.name ?? '', { ...nodeFacts(n), ...pickedLabels(n, labelKeys) }]));
        nodes = [];
        for (const name of names) {
          const n = byName.get(name);
          if (!n) missing.push(name);
          else
            nodes.push({ name, role: n.role, ready: n.ready, unschedulable: n.unschedulable, ...(n.labels ? { labels: n.labels } : {}) });
        }
      }
      nodes.sort((a, b) => compareNatural(a.name, b.name));
      const unmanaged: MaintenancePlanFacts['unmanaged'] = [];
      const forced: string[] = [];
      const options = drainOptionsOf(config, force);
      for (const node of nodes) {
        const { plan } = await readNodeDrainState(kube, node.name, options);
        for (const b of plan.blockers)
          if (b.override === 'force') unmanaged.push({ namespace: b.pod.namespace, name: b.pod.name, node: node.name });
        for (const w of plan.warnings) if (/forced by name/.test(w.reason)) forced.push(`${w.pod.namespace}/${w.pod.name}`);
      }
      return {
        nodes,
        missing,
        unmanaged,
        forced,
        hasCommand: config.maintenance !== undefined,
        ...(config.maintenanceWindows?.length ? { maintenanceWindows: config.maintenanceWindows } : {}),
        ...(config.notify?.length ? { notify: sinkSubscriptions(config.notify) } : {}),
      };
    },

    /**
     * Runs the cluster configuration's maintenance.command on the node (as root through sudo -n when
     * ssh.sudo), each word quoted: an OS upgrade such as `apt-get -y dist-upgrade`. The command comes
     * from the worker's configuration, never from a workflow input. A non-zero exit is
     * HostCommandFailed (the node waits for the operator); a passing cause (a lock, a mirror) is retried.
     */
    async runMaintenanceCommand(input: { cluster: string; node: string }): Promise<{ node: string; seconds: number }> {
      const access = deps.clusters(input.cluster);
      const node = checkNode(input.node);
      const maintenance = access.config.maintenance;
      if (!maintenance) {
        throw ApplicationFailure.create({
          type: ErrorType.ClusterConfigInvalid,
          nonRetryable: true,
          message: `cluster ${input.cluster} has no maintenance.command in its configuration`,
        });
      }
      const started = Date.now();
      const scope = hostActivityScope();
      await run(
        access,
        node,
        maintenance.command,
        { timeoutMs: maintenance.timeoutSeconds * 1000, sudo: true, signal: scope.signal },
        'the maintenance command',
      );
      return { node, seconds: Math.round((Date.now() - started) / 1000) };
    },
  };
}

export type MaintenanceActivities = ReturnType<typeof createMaintenanceActivities>;
