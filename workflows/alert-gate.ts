import { ActivityFailure, condition, patched, sleep } from '@temporalio/workflow';
import { judgeOperatorSignals, phaseOfHop, type SignalMoment } from '../rules/readiness/operator-signals.js';
import { activities as a } from './activities-proxy.js';
import { recordGateWait } from './metrics.js';
import { PATCH } from './patches.js';
import type { GateState, RolloutStatus } from './rollout-messages.js';

/** What the alert gate needs of its rollout (workflows/rollout.ts). */
export interface AlertGateHost {
  cluster: string;
  status: RolloutStatus;
  note(text: string): void;
  aborted(): string | undefined;
  updateMemo(): void;
  /** The acknowledgements the run started with (`alert:NodeDown` lets a phase go while NodeDown fires). */
  acknowledged: readonly string[];
}

/** What one ask of Prometheus decided; undefined when the cluster has no `alerts:` block. */
interface Reading {
  go: boolean;
  reason: string;
  pollSeconds: number;
}

/** `alerts-before-canary-1.33`: what `skewless approve --gate` names. */
const gateName = (when: 'before' | 'after', phase: string, hop: string) => `alerts-${when}-${phase}${hop ? `-${hop}` : ''}`;

/** Until Prometheus says how often (alerts.pollSeconds), a held phase asks again this often. */
const DEFAULT_POLL_SECONDS = 30;

/**
 * kured's alert gate around each phase of a rollout (issue 21): before a phase, a matching alert
 * firing holds it (`alerts-before-<phase>-<hop>`) until the alert clears or the operator approves the
 * gate; after a phase, one firing halts the rollout (`alerts-after-<phase>-<hop>`) until the operator
 * approves it or aborts. A Prometheus that cannot be asked holds like a firing alert: the gate fails
 * closed. The judgement is rules/readiness/operator-signals.ts's; this class only asks and waits.
 */
export class AlertGate {
  /** False once the activity said the cluster has no `alerts:` block: not asked again in this run. */
  #configured = true;
  /** Acknowledged alerts already noted (once per run, not at every phase). */
  readonly #noted = new Set<string>();

  constructor(private readonly host: AlertGateHost) {}

  /** Waits while a matching alert fires; returns at once when none does (or no alerts are configured). */
  async beforePhase(phase: string, hop: string): Promise<void> {
    if (!patched(PATCH.alertGate)) return;
    let reading = await this.read('before-phase', phase, hop);
    if (!reading || reading.go) return;
    const gate = this.open(gateName('before', phase, hop), reading.reason, 'to start it while they fire');
    const since = Date.now();
    while (!this.settled(gate)) {
      await Promise.race([sleep(reading.pollSeconds * 1000), condition(() => this.settled(gate))]);
      if (this.settled(gate)) break;
      reading = (await this.read('before-phase', phase, hop)) ?? { go: true, reason: '', pollSeconds: 0 };
      if (reading.go) {
        gate.approvedBy = 'alerts cleared';
        this.host.note(`alerts cleared: ${phaseOfHop(phase, hop)} starts`);
      }
    }
    this.closed(gate, since);
  }

  /** Halts the rollout while a matching alert fires after the phase, until the operator approves or aborts. */
  async afterPhase(phase: string, hop: string): Promise<'clear' | 'held'> {
    if (!patched(PATCH.alertGate)) return 'clear';
    const reading = await this.read('after-phase', phase, hop);
    if (!reading || reading.go) return 'clear';
    const gate = this.open(gateName('after', phase, hop), reading.reason, 'to go on');
    const since = Date.now();
    await condition(() => this.settled(gate));
    this.closed(gate, since);
    // Went on by the operator's approval (or aborted): never taken for a clear reading (a trial's auto-commit).
    return 'held';
  }

  private settled(gate: GateState): boolean {
    return gate.approvedBy !== undefined || this.host.aborted() !== undefined;
  }

  private open(name: string, reason: string, approveTo: string): GateState {
    const gate: GateState = { name };
    this.host.status.gates.push(gate);
    this.host.note(`${reason}; skewless approve ${this.host.cluster} --gate ${name} --by NAME ${approveTo}, or abort`);
    this.host.updateMemo();
    return gate;
  }

  private closed(gate: GateState, since: number): void {
    recordGateWait(this.host.cluster, gate.name, 'alerts', (Date.now() - since) / 1000);
    this.host.updateMemo();
  }

  /** One ask; an unreachable Prometheus (its retries spent) holds, naming why. */
  private async read(moment: SignalMoment, phase: string, hop: string): Promise<Reading | undefined> {
    if (!this.#configured) return undefined;
    let result;
    try {
      result = await a.checkAlerts({ cluster: this.host.cluster });
    } catch (err) {
      if (!(err instanceof ActivityFailure)) throw err;
      const why = err.cause?.message ?? err.message;
      const doing = moment === 'before-phase' ? `${phaseOfHop(phase, hop)} waits` : `halted after ${phaseOfHop(phase, hop)}`;
      return { go: false, reason: `${doing}: cannot ask Prometheus: ${why}`, pollSeconds: DEFAULT_POLL_SECONDS };
    }
    if (!result.configured) {
      this.#configured = false;
      return undefined;
    }
    const verdict = judgeOperatorSignals({ moment, hop, phase, alerts: result.firing, probes: [], acknowledged: this.host.acknowledged });
    for (const f of verdict.acknowledged) {
      if (this.#noted.has(f.what)) continue;
      this.#noted.add(f.what);
      this.host.note(`${f.what}: acknowledged (${f.ack}), the rollout goes on`);
    }
    return { go: verdict.verdict === 'proceed', reason: verdict.reason, pollSeconds: result.pollSeconds ?? DEFAULT_POLL_SECONDS };
  }
}
