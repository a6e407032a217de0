import type { V1Pod } from '@kubernetes/client-node';
import type { Client } from '@temporalio/client';
import { CORDONED_BY_ANNOTATION } from '../../activities/node-activities.js';
import type { KubeClients } from '../../sim/cluster/kube-clients.js';
import type { CommandEvent } from '../../sim/hosts/command-runner.js';
import type { HostSimulator } from '../../sim/hosts/host-simulator.js';
import { upgradeNodeOfWorkflowId } from '../../contracts/workflow-ids.js';

/**
 * What is going on at the moment of a kill, seen from outside the worker: the commands running on
 * the simulated hosts (the simulator's command events), the drains in progress (the API), and the
 * activities Temporal has handed out (pending activities of every running workflow).
 */

export interface RunningCommand {
  host: string;
  command: string;
  startedAt: number;
}

export interface CommandTracker {
  inFlight(): RunningCommand[];
  isRunning(c: RunningCommand): boolean;
  /** Resolves with the next command to start that matches, or undefined once `signal` fires. */
  nextStart(match: (c: RunningCommand) => boolean, signal: AbortSignal): Promise<RunningCommand | undefined>;
  stop(): void;
}

export function trackCommands(hosts: HostSimulator): CommandTracker {
  const running = new Set<RunningCommand>();
  const waiters = new Set<{ match: (c: RunningCommand) => boolean; resolve: (c: RunningCommand) => void }>();
  const unsubscribe = hosts.onCommand((e: CommandEvent) => {
    if (e.phase === 'start') {
      const c: RunningCommand = { host: e.host, command: e.command, startedAt: e.time };
      running.add(c);
      // Resolved here, in the host's own call: the waiter runs while the command is still in flight.
      for (const w of waiters) {
        if (!w.match(c)) continue;
        waiters.delete(w);
        w.resolve(c);
      }
      return;
    }
    // The oldest running command with this host and line is the one that ended.
    const ended = [...running].find((c) => c.host === e.host && c.command === e.command);
    if (ended) running.delete(ended);
  });
  return {
    inFlight: () => [...running],
    isRunning: (c) => running.has(c),
    nextStart(match, signal) {
      if (signal.aborted) return Promise.resolve(undefined);
      return new Promise((resolve) => {
        const waiter = { match, resolve: (c: RunningCommand) => resolve(c) };
        waiters.add(waiter);
        signal.addEventListener(
          'abort',
          () => {
            waiters.delete(waiter);
            resolve(undefined);
          },
          { once: true },
        );
      });
    },
    stop() {
      unsubscribe();
      waiters.clear();
    },
  };
}

export interface DrainInProgress {
  node: string;
  /** Pods a drain still has to move (not DaemonSet pods, not mirror pods), `namespace/name`. */
  remaining: string[];
  terminating: number;
}

/** Pods on `node` that a drain has to move: not DaemonSet pods, not mirror pods, not finished. */
export function podsToMove(pods: V1Pod[], node: string): V1Pod[] {
  return pods.filter(
    (p) =>
      p.spec?.nodeName === node &&
      !p.metadata?.annotations?.['kubernetes.io/config.mirror'] &&
      !p.metadata?.ownerReferences?.some((o) => o.kind === 'DaemonSet') &&
      p.status?.phase !== 'Succeeded' &&
      p.status?.phase !== 'Failed',
  );
}

const podName = (p: V1Pod) => `${p.metadata?.namespace}/${p.metadata?.name}`;

/** Nodes cordoned by skewless that still run pods a drain evicts. */
export async function drainsInProgress(kube: KubeClients): Promise<DrainInProgress[]> {
  const [nodes, pods] = await Promise.all([kube.core.listNode(), kube.core.listPodForAllNamespaces()]);
  const cordoned = nodes.items
    .filter((n) => n.spec?.unschedulable && n.metadata?.annotations?.[CORDONED_BY_ANNOTATION])
    .map((n) => n.metadata?.name as string);
  const out: DrainInProgress[] = [];
  for (const node of cordoned) {
    const evictable = podsToMove(pods.items, node);
    if (evictable.length > 0)
      out.push({ node, remaining: evictable.map(podName), terminating: evictable.filter((p) => p.metadata?.deletionTimestamp).length });
  }
  return out;
}

/** `namespace/name` of the pods a drain should have moved off `node` that are still there. */
export async function podsLeftOn(kube: KubeClients, node: string): Promise<string[]> {
  const { items } = await kube.core.listPodForAllNamespaces({ fieldSelector: `spec.nodeName=${node}` });
  return podsToMove(items, node).map(podName);
}

export interface PendingActivity {
  workflowId: string;
  activity: string;
  attempt: number;
  /** Started by a worker (the one just killed, most likely), not only scheduled. */
  started: boolean;
  /** The worker that started the current attempt, `pid@host`. */
  worker?: string;
}

/** Every activity Temporal has scheduled or handed out in the running workflows. */
export async function pendingActivities(client: Client): Promise<PendingActivity[]> {
  const out: PendingActivity[] = [];
  for await (const wf of client.workflow.list({ query: 'ExecutionStatus = "Running"' })) {
    const d = await client.workflow.getHandle(wf.workflowId, wf.runId).describe();
    for (const a of d.raw.pendingActivities ?? []) {
      out.push({
        workflowId: wf.workflowId,
        activity: a.activityType?.name ?? '?',
        attempt: a.attempt ?? 1,
        started: Number(a.state) === 2, // PENDING_ACTIVITY_STATE_STARTED
        ...(a.lastWorkerIdentity ? { worker: a.lastWorkerIdentity } : {}),
      });
    }
  }
  return out.sort((a, b) => `${a.workflowId} ${a.activity}`.localeCompare(`${b.workflowId} ${b.activity}`));
}

/**
 * `drainNode worker-3@1.33.7 #2`: the node and hop end a node workflow's id (upgrade/<cluster>/<hop>/<node>).
 * Attempts a worker killed earlier left behind (out until their heartbeat times out) are marked.
 */
export function describeActivity(a: PendingActivity, killed?: string): string {
  const child = upgradeNodeOfWorkflowId(a.workflowId);
  const where = child ? ` ${child.node}@${child.hop}` : '';
  const state = !a.started ? ' (scheduled)' : killed && a.worker !== killed ? ' (left by an earlier worker)' : '';
  return `${a.activity}${where}${a.attempt > 1 ? ` #${a.attempt}` : ''}${state}`;
}
