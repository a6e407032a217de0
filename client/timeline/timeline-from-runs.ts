import type { temporal } from '@temporalio/proto';
import { firstArg, record, str, tsToMs, type RunHistory } from '../audit-trail.js';
import { CLUSTER_LANE, orderLanes, type Timeline, type TimelineBar, type TimelinePhase } from './timeline-model.js';

type HistoryEvent = temporal.api.history.v1.IHistoryEvent;

/** The node workflow every rollout runs per node (upgrade, maintain, blue/green drains). */
const NODE_WORKFLOW = 'nodeUpgradeWorkflow';

const PHASE_OF_ACTIVITY: Readonly<Record<string, TimelinePhase>> = {
  snapshotEtcd: 'snapshot',
  cordonNode: 'cordon',
  drainNode: 'drain',
  installPackages: 'packages',
  downloadPackages: 'packages',
  readPackageHolds: 'packages',
  restorePackageHolds: 'packages',
  kubeadmUpgradeNode: 'kubeadm',
  restartKubelet: 'kubelet',
  uncordonNode: 'uncordon',
  // Every health check (workflows/activity-options.ts: the healthCheck profile), the node's and the cluster's between batches.
  checkNodeReady: 'verify',
  checkPodsOnNode: 'verify',
  checkControlPlane: 'verify',
  checkApiserver: 'verify',
  checkWorkloads: 'verify',
  runProbes: 'verify',
  checkAlerts: 'verify',
};

/** `kubeadm upgrade apply` runs on the first control plane only; `upgrade node` is the control plane's step there and the kubelet's configuration on a worker. */
function phaseOf(activity: string, step: string | undefined): TimelinePhase {
  if (activity === 'kubeadmUpgradeApply' || (activity === 'kubeadmUpgradeNode' && step === 'control-plane')) return 'control-plane';
  return PHASE_OF_ACTIVITY[activity] ?? 'other';
}

/** A node workflow's id ends in its node (`upgrade/<cluster>/<hop>/<node>`, `maintain/<cluster>/<node>`): plain text even when payloads are encrypted. */
const lastSegment = (workflowId: string | null | undefined): string | undefined => str(workflowId?.split('/').at(-1));

const isControlPlane = (input: Record<string, unknown>) => input.role === 'control-plane' || input.step === 'control-plane';

interface OpenStep {
  lane: string;
  phase: TimelinePhase;
  startMs: number;
  label: string;
}

type ScheduledAttributes = NonNullable<HistoryEvent['activityTaskScheduledEventAttributes']>;
type SignaledAttributes = NonNullable<HistoryEvent['workflowExecutionSignaledEventAttributes']>;

/** An activity's bar from its scheduling: its node's lane (else the node workflow's, else the cluster's), its summary in the label. */
function openStep(e: HistoryEvent, a: ScheduledAttributes, runNode: string | undefined, step: string | undefined): OpenStep {
  const activity = a.activityType?.name ?? '?';
  const lane = str(record(firstArg(a.input)).node) ?? runNode ?? CLUSTER_LANE;
  const decoded = firstArg({ payloads: e.userMetadata?.summary ? [e.userMetadata.summary] : [] });
  const summary = typeof decoded === 'string' ? str(decoded) : undefined;
  return { lane, phase: phaseOf(activity, step), startMs: tsToMs(e.eventTime), label: summary ? `${activity}: ${summary}` : activity };
}

/**
 * A node's `nodeBlocked` signal: a block opens its wait, the all-clear closes it. Without its payload
 * (encrypted) a block cannot be told from the all-clear that follows the resolution: no bar.
 */
function nodeBlocked(
  e: HistoryEvent,
  a: SignaledAttributes,
  blocked: Map<string, { startMs: number; label: string }>,
  closeBlock: (node: string, endMs: number) => void,
): void {
  const args = firstArg(a.input);
  if (typeof args !== 'object') return;
  const node = str(args.node) ?? lastSegment(a.externalWorkflowExecution?.workflowId);
  if (!node) return;
  const block = record(args.block);
  if (!args.block) return closeBlock(node, tsToMs(e.eventTime));
  if (!blocked.has(node))
    blocked.set(node, {
      startMs: tsToMs(e.eventTime),
      label: `blocked: ${str(block.kind) === 'StepFailed' ? `${str(block.step) ?? 'a step'} failed` : 'drain'}`,
    });
}

/**
 * One bar per activity execution of the given runs (the parent's and its node workflows', as
 * `fetchUpgradeRuns` returns them), from its scheduling (retries included) to its close; one that
 * still runs ends at its run's last event. Its lane is the node its input names, else the node of
 * the node workflow it ran in, else `cluster`. A node's wait for the operator (the parent's
 * `nodeBlocked` signal with a block, to the resolution) is a `blocked` bar. Only named fields are
 * read from payloads; one that cannot be decoded (encrypted without the key) is left out.
 */
export function timelineFromRuns(runs: RunHistory[], title: string): Timeline {
  const bars: TimelineBar[] = [];
  const nodes = new Set<string>();
  const controlPlanes = new Set<string>();
  const blocked = new Map<string, { startMs: number; label: string }>();
  let lastMs = 0;
  const closeBlock = (node: string, endMs: number) => {
    const open = blocked.get(node);
    if (!open) return;
    blocked.delete(node);
    bars.push({ lane: node, phase: 'blocked', startMs: open.startMs, endMs: Math.max(open.startMs, endMs), label: open.label });
  };

  for (const run of runs) {
    const open = new Map<string, OpenStep>();
    let runNode: string | undefined;
    let step: string | undefined;
    let runLastMs = 0;
    const close = (e: HistoryEvent, scheduledEventId: unknown, outcome?: string) => {
      const key = String(scheduledEventId);
      const s = open.get(key);
      if (!s) return;
      open.delete(key);
      bars.push({
        lane: s.lane,
        phase: s.phase,
        startMs: s.startMs,
        endMs: Math.max(s.startMs, tsToMs(e.eventTime)),
        label: outcome ? `${s.label} (${outcome})` : s.label,
      });
    };
    for (const e of run.events) {
      runLastMs = Math.max(runLastMs, tsToMs(e.eventTime));
      if (e.workflowExecutionStartedEventAttributes) {
        const a = e.workflowExecutionStartedEventAttributes;
        if (a.workflowType?.name === NODE_WORKFLOW) {
          const input = record(firstArg(a.input));
          runNode = str(input.node) ?? lastSegment(run.workflowId);
          step = str(input.step);
          if (runNode && isControlPlane(input)) controlPlanes.add(runNode);
        }
      } else if (e.startChildWorkflowExecutionInitiatedEventAttributes) {
        // The parent knows each child's role even when the child's own history is not at hand.
        const a = e.startChildWorkflowExecutionInitiatedEventAttributes;
        const input = record(firstArg(a.input));
        const node = str(input.node) ?? lastSegment(a.workflowId);
        if (node && isControlPlane(input)) controlPlanes.add(node);
      } else if (e.activityTaskScheduledEventAttributes) {
        open.set(String(e.eventId), openStep(e, e.activityTaskScheduledEventAttributes, runNode, step));
      } else if (e.activityTaskCompletedEventAttributes) {
        close(e, e.activityTaskCompletedEventAttributes.scheduledEventId);
      } else if (e.activityTaskFailedEventAttributes) {
        close(e, e.activityTaskFailedEventAttributes.scheduledEventId, 'failed');
      } else if (e.activityTaskTimedOutEventAttributes) {
        close(e, e.activityTaskTimedOutEventAttributes.scheduledEventId, 'timed out');
      } else if (e.activityTaskCanceledEventAttributes) {
        close(e, e.activityTaskCanceledEventAttributes.scheduledEventId, 'canceled');
      } else if (e.workflowExecutionSignaledEventAttributes?.signalName === 'nodeBlocked') {
        nodeBlocked(e, e.workflowExecutionSignaledEventAttributes, blocked, closeBlock);
      } else if (e.workflowExecutionUpdateAcceptedEventAttributes?.acceptedRequest?.input?.name === 'resolveDrain') {
        // The operator's answer ends the wait (the node's all-clear follows a moment later).
        const node = str(record(firstArg(e.workflowExecutionUpdateAcceptedEventAttributes.acceptedRequest.input.args)).node);
        if (node) closeBlock(node, tsToMs(e.eventTime));
      }
    }
    for (const s of open.values())
      bars.push({ lane: s.lane, phase: s.phase, startMs: s.startMs, endMs: Math.max(s.startMs, runLastMs), label: `${s.label} (running)` });
    lastMs = Math.max(lastMs, runLastMs);
  }
  // A block the parent's runs do not see resolved (the run still waits): up to the last event.
  for (const node of [...blocked.keys()]) closeBlock(node, lastMs);

  for (const bar of bars) nodes.add(bar.lane);
  const lanes = orderLanes(nodes, controlPlanes);
  const laneIndex = new Map(lanes.map((lane, i) => [lane, i]));
  // Within a lane, in the order the steps ran (the sort is stable for equal starts).
  bars.sort((a, b) => (laneIndex.get(a.lane) ?? 0) - (laneIndex.get(b.lane) ?? 0) || a.startMs - b.startMs || a.endMs - b.endMs);
  return { title, lanes, bars };
}
