import type { ReadinessFinding } from './finding.js';
import { gateFindings } from './finding.js';

/**
 * The operator's own health signals around each phase of a hop (issue 21): alerts firing in their
 * Prometheus (`alerts:` in the cluster configuration, read by the activity checkAlerts) and their HTTP
 * probes (`probes[]`, run by runProbes). Both become readiness findings that hold, acknowledged by
 * `alert:<alertname>` or `probe:<name>`, and the gate says what the rollout does with them:
 *
 * - before a phase (`before-phase`): a held finding means the phase does not start: it `wait`s and the
 *   workflow asks again (kured's behaviour: no reboot while an alert fires);
 * - after a phase (`after-phase`): a held finding `halt`s the rollout for the operator, as a failed
 *   workload check does (`status.halted`, answered with `skewless resolve`).
 */

/** One firing alert as checkAlerts reports it. */
export interface FiringAlert {
  /** `alertname`. */
  name: string;
  /** Its labels, less `__name__`, `alertname` and `alertstate`. */
  labels: Record<string, string>;
  /** When it became active (pending, then firing), ISO 8601; absent when Prometheus did not say. */
  since?: string;
}

/** What the gate needs of a probe result (activities/health-probes.ts ProbeResult has it). */
export interface ProbeSignal {
  name: string;
  ok: boolean;
  /** Scheme, host and path: never user info or a query. */
  target?: string;
  error?: string;
}

export type SignalMoment = 'before-phase' | 'after-phase';
export type SignalVerdict = 'proceed' | 'wait' | 'halt';

/** kured's alert gate, which this one follows (docs/research/readiness-sources.md section 5). */
export const ALERT_SOURCE = 'https://github.com/kubereboot/kured/blob/9a4b8fdb32903307718b786ec47d8d3bc48fed44/pkg/alerts/prometheus.go';
/** A probe is the operator's own rule: its source is their configuration. */
export const PROBE_SOURCE = 'the cluster configuration: probes[] (docs/real-cluster.md)';

const labelsText = (labels: Record<string, string>): string =>
  Object.keys(labels)
    .sort()
    .map((k) => `${k}=${JSON.stringify(labels[k])}`)
    .join(', ');

/** One finding per firing alert (an alert of several instances is one finding each, one acknowledgement for all). */
export function alertFindings(alerts: readonly FiringAlert[], hop: string): ReadinessFinding[] {
  return [...alerts]
    .sort((a, b) => a.name.localeCompare(b.name) || labelsText(a.labels).localeCompare(labelsText(b.labels)))
    .map((a) => {
      const labels = labelsText(a.labels);
      return {
        check: 'alert' as const,
        severity: 'hold' as const,
        hop,
        ...(a.labels.node ? { node: a.labels.node } : {}),
        what: `alert ${a.name} firing${a.since ? ` since ${a.since}` : ''}${labels ? ` {${labels}}` : ''}`,
        todo: `resolve what ${a.name} reports, or acknowledge alert:${a.name} to go on while it fires`,
        source: ALERT_SOURCE,
        ack: `alert:${a.name}`,
      };
    });
}

/** One finding per failing probe; a passing probe finds nothing. */
export function probeFindings(probes: readonly ProbeSignal[], hop: string): ReadinessFinding[] {
  return probes
    .filter((p) => !p.ok)
    .map((p) => ({
      check: 'probe' as const,
      severity: 'hold' as const,
      hop,
      what: `probe ${p.name}${p.target ? ` (${p.target})` : ''} failing: ${p.error ?? 'failed'}`,
      todo: `make ${p.name} pass again, or acknowledge probe:${p.name} to go on without it`,
      source: PROBE_SOURCE,
      ack: `probe:${p.name}`,
    }));
}

export interface OperatorSignalsInput {
  moment: SignalMoment;
  /** The hop's target, e.g. `1.33`. */
  hop: string;
  /** The phase about to start or just done, as the status names it (`control-plane`, `canary`, `batch-2`). */
  phase: string;
  alerts: readonly FiringAlert[];
  probes: readonly ProbeSignal[];
  /** Acknowledgement names the operator gave (`alert:NodeDown`, `probe:web`). */
  acknowledged: readonly string[];
}

export interface OperatorSignalsGate {
  verdict: SignalVerdict;
  /** Every finding, held or acknowledged. */
  findings: ReadinessFinding[];
  held: ReadinessFinding[];
  acknowledged: ReadinessFinding[];
  /** One line for the status and history, e.g. `canary of 1.33 waits: alert:NodeDown (2 firing)`; empty when it proceeds. */
  reason: string;
}

/** `canary of 1.33`; a run without versions (OS maintenance) names the phase alone. */
export const phaseOfHop = (phase: string, hop: string): string => (hop ? `${phase} of ${hop}` : phase);

/** What the rollout does at `moment` of `phase`, given the signals and the acknowledgements. */
export function judgeOperatorSignals(input: OperatorSignalsInput): OperatorSignalsGate {
  const findings = [...alertFindings(input.alerts, input.hop), ...probeFindings(input.probes, input.hop)];
  const { held, acknowledged } = gateFindings(findings, input.acknowledged);
  if (held.length === 0) return { verdict: 'proceed', findings, held, acknowledged, reason: '' };
  const verdict: SignalVerdict = input.moment === 'before-phase' ? 'wait' : 'halt';
  const count = new Map<string, number>();
  for (const f of held) count.set(f.ack, (count.get(f.ack) ?? 0) + 1);
  const names = [...count].map(([ack, n]) => (n > 1 ? `${ack} (${n} firing)` : ack));
  const where = phaseOfHop(input.phase, input.hop);
  const doing = verdict === 'wait' ? `${where} waits` : `halted after ${where}`;
  return { verdict, findings, held, acknowledged, reason: `${doing}: ${names.join(', ')}` };
}
