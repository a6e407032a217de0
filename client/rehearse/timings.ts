import { defaultPayloadConverter } from '@temporalio/common';
import type { temporal } from '@temporalio/proto';
import type { UpgradeStatus } from '../../workflows/rollout-messages.js';

type HistoryEvent = temporal.api.history.v1.IHistoryEvent;

/**
 * How long each phase and each node took on the twin, from the twin upgrade's own history: the
 * parent's activities (etcd snapshot, kubeadm plan) and its node child workflows, whose ids are
 * `upgrade/<cluster>/<hop>/<node>` and whose input names the step (control-plane or node).
 */

export interface NodeTiming {
  node: string;
  hop: string;
  /** The control plane's components, then the node step (drain, kubelet, uncordon). */
  steps: { step: string; seconds: number; outcome: string }[];
  seconds: number;
}

export interface PhaseTiming {
  hop: string;
  /** `backup` (etcd snapshot), `kubeadm-plan`, `control-plane`, `canary`, `batch-N`. */
  phase: string;
  seconds: number;
  nodes: string[];
}

const ms = (e: HistoryEvent): number => Number(String(e.eventTime?.seconds ?? 0)) * 1000 + Math.floor((e.eventTime?.nanos ?? 0) / 1e6);
const round = (n: number) => Math.round(n / 100) / 10;

function firstArg(payloads: { payloads?: temporal.api.common.v1.IPayload[] | null } | null | undefined): Record<string, unknown> {
  const p = payloads?.payloads?.[0];
  if (!p) return {};
  try {
    const v = defaultPayloadConverter.fromPayload<unknown>(p as never);
    return typeof v === 'object' && v !== null ? (v as Record<string, unknown>) : {};
  } catch {
    return {};
  }
}

type ChildSpan = { workflowId: string; step: string; node: string; hop: string; start?: number; end?: number; outcome?: string };
type ActivitySpan = { name: string; hop?: string; version?: string; start: number; end?: number };

/** The node children's and the activities' spans in a run's history, by their initiating event. */
function spansOf(events: HistoryEvent[]): { children: Map<string, ChildSpan>; activities: Map<string, ActivitySpan> } {
  const children = new Map<string, ChildSpan>();
  const activities = new Map<string, ActivitySpan>();
  for (const e of events) {
    const id = String(e.eventId ?? '');
    const initiated = e.startChildWorkflowExecutionInitiatedEventAttributes;
    if (initiated) {
      const input = firstArg(initiated.input);
      children.set(id, {
        workflowId: initiated.workflowId ?? '',
        step: String(input.step ?? ''),
        node: String(input.node ?? ''),
        hop: String(input.version ?? ''),
      });
    }
    const started = e.childWorkflowExecutionStartedEventAttributes;
    if (started) {
      const c = children.get(String(started.initiatedEventId ?? ''));
      if (c) c.start = ms(e);
    }
    for (const [attrs, outcome] of [
      [e.childWorkflowExecutionCompletedEventAttributes, 'completed'],
      [e.childWorkflowExecutionFailedEventAttributes, 'failed'],
      [e.childWorkflowExecutionCanceledEventAttributes, 'canceled'],
      [e.childWorkflowExecutionTerminatedEventAttributes, 'terminated'],
      [e.childWorkflowExecutionTimedOutEventAttributes, 'timed out'],
    ] as const) {
      if (!attrs) continue;
      const c = children.get(String(attrs.initiatedEventId ?? ''));
      if (!c) continue;
      c.end = ms(e);
      c.outcome =
        outcome === 'completed'
          ? String(firstArg((attrs as temporal.api.history.v1.IChildWorkflowExecutionCompletedEventAttributes).result).outcome ?? 'done')
          : outcome;
    }
    const scheduled = e.activityTaskScheduledEventAttributes;
    if (scheduled) {
      const input = firstArg(scheduled.input);
      activities.set(id, {
        name: scheduled.activityType?.name ?? '',
        start: ms(e),
        ...(typeof input.hop === 'string' ? { hop: input.hop } : {}),
        ...(typeof input.version === 'string' ? { version: input.version } : {}),
      });
    }
    const completed = e.activityTaskCompletedEventAttributes;
    if (completed) {
      const a = activities.get(String(completed.scheduledEventId ?? ''));
      if (a) a.end = ms(e);
    }
  }
  return { children, activities };
}

export function twinTimings(events: HistoryEvent[], status: UpgradeStatus): { phases: PhaseTiming[]; nodes: NodeTiming[] } {
  const { children, activities } = spansOf(events);
  const nodes = new Map<string, NodeTiming>();
  const phases = new Map<string, { hop: string; phase: string; start: number; end: number; nodes: Set<string> }>();
  const addPhase = (hop: string, phase: string, start: number, end: number, node?: string) => {
    const key = `${hop} ${phase}`;
    const p = phases.get(key) ?? { hop, phase, start, end, nodes: new Set<string>() };
    p.start = Math.min(p.start, start);
    p.end = Math.max(p.end, end);
    if (node) p.nodes.add(node);
    phases.set(key, p);
  };
  for (const a of activities.values()) {
    if (a.end === undefined) continue;
    if (a.name === 'snapshotEtcd' && a.hop) addPhase(a.hop, 'backup', a.start, a.end);
    if ((a.name === 'kubeadmUpgradePlan' || a.name === 'installPackages') && a.version) addPhase(a.version, 'kubeadm-plan', a.start, a.end);
  }
  for (const c of children.values()) {
    if (c.start === undefined || c.end === undefined) continue;
    const key = `${c.hop} ${c.node}`;
    const t = nodes.get(key) ?? { node: c.node, hop: c.hop, steps: [], seconds: 0 };
    t.steps.push({
      step: c.step === 'control-plane' ? 'control-plane components' : 'drain, kubelet, uncordon',
      seconds: round(c.end - c.start),
      outcome: c.outcome ?? 'running',
    });
    t.seconds = round(t.seconds * 1000 + (c.end - c.start));
    nodes.set(key, t);
    const stage = status.nodes[c.node]?.stage ?? 'control-plane';
    addPhase(c.hop, /^(canary|batch-\d+)$/.test(stage) ? stage : 'control-plane', c.start, c.end, c.node);
  }
  const hopIndex = (hop: string) => status.hops.indexOf(hop);
  const phaseOrder = (p: string) =>
    p === 'backup' ? 0 : p === 'kubeadm-plan' ? 1 : p === 'control-plane' ? 2 : p === 'canary' ? 3 : 4 + Number(p.replace('batch-', ''));
  return {
    phases: [...phases.values()]
      .sort((a, b) => hopIndex(a.hop) - hopIndex(b.hop) || phaseOrder(a.phase) - phaseOrder(b.phase))
      .map((p) => ({ hop: p.hop, phase: p.phase, seconds: round(p.end - p.start), nodes: [...p.nodes] })),
    nodes: [...nodes.values()].sort((a, b) => hopIndex(a.hop) - hopIndex(b.hop) || a.node.localeCompare(b.node, 'en', { numeric: true })),
  };
}
