// A reversible hop (issue 36, docs/reversible-hops.md): the control planes run the hop's binaries
// emulating the minor below (trial), the run waits at gate `commit-<hop>`, then either commits (the
// emulation removed by kubeadm, control plane by control plane, then the hop goes on as any other:
// the kubelets move) or rolls back (`skewless rollback`: every control plane back to its N manifests
// and its kubeadm package back to N, in reverse order, with no etcd restore). An abort at the gate
// rolls back too: a trial is never left behind by a run that ends.
import { ActivityFailure, CancellationScope, patched, setHandler } from '@temporalio/workflow';
import { activities as a } from './activities-proxy.js';
import { byWhom } from './by-whom.js';
import { PATCH } from './patches.js';
import type { Rollout } from './rollout.js';
import { rollbackTrialUpdate, type OperatorAction, type TrialState, type UpgradeStatus } from './rollout-messages.js';

export type TrialOutcome = 'committed' | 'rolled-back';

export interface ReversibleHopInput {
  cluster: string;
  hop: string;
  /** The minor the trial emulates, `1.32`. */
  emulates: string;
  /** The control planes in the hop's order (the first runs `kubeadm upgrade apply`). */
  controlPlanes: readonly string[];
  /** Each control plane's apiserver version before the trial: what a rollback puts back. */
  from: Record<string, string>;
  /** Seconds to watch the trial before the gate waits for the operator (the control plane's soak). */
  soakSeconds: number;
  verifySeconds: number;
  /**
   * `--auto-commit`: a trial whose soak passes (the alert gate clear, the probes passing again after
   * it) commits without the approval of gate commit-<hop>. Absent: the gate waits for the operator.
   */
  autoCommit?: boolean;
}

/**
 * The operator's `rollbackTrial` update: taken only while a trial waits at its commit gate (the
 * validator refuses it otherwise, before anything is written), with who and why in the events.
 */
export function handleTrialRollback(status: UpgradeStatus, note: (event: string) => void): void {
  setHandler(
    rollbackTrialUpdate,
    (p: OperatorAction) => {
      const trial = status.trial as TrialState;
      trial.rollbackBy = p.by;
      if (p.reason) trial.rollbackReason = p.reason;
      note(`rollback of the trial of ${trial.hop} asked by ${byWhom(p)}`);
      return trial;
    },
    {
      validator: (p: OperatorAction) => {
        if (!p.by) throw new Error('a rollback needs a "by"');
        const t = status.trial;
        if (t?.state !== 'trial' || t.rollbackBy !== undefined)
          throw new Error(
            t?.state === 'committed'
              ? `the trial of ${t.hop} is committed: the way back is the etcd snapshot (skewless restore)`
              : 'no trial is waiting for its commit',
          );
      },
    },
  );
}

/** One reversible hop's trial, gate, and commit or rollback, on the rollout core. */
export class ReversibleHop {
  /** Each control plane's package holds before the trial's kubeadm install, put back after a rollback's downgrade. */
  private readonly held: Record<string, Awaited<ReturnType<typeof a.readPackageHolds>>['held']> = {};
  /** The control planes the trial has started on (their repository may point at the hop): what a failed trial rolls back. */
  private readonly started: string[] = [];
  /** The control plane whose trial steps run now; undefined once all ran (the checks after them are the cluster's). */
  private current: string | undefined;

  constructor(
    private readonly r: Rollout<UpgradeStatus>,
    private readonly status: UpgradeStatus,
    private readonly input: ReversibleHopInput,
  ) {}

  async run(): Promise<TrialOutcome> {
    const { hop, emulates, from } = this.input;
    const first = this.input.controlPlanes[0] as string;
    this.status.trial = { hop, emulates, from: from[first] ?? '', state: 'trial' };
    try {
      await this.trial();
    } catch (err) {
      // A trial step failing for good half-way: the control planes it moved go back, as `rollback` would.
      if (!(err instanceof ActivityFailure) || !patched(PATCH.trialFailureRollback)) throw err;
      await CancellationScope.nonCancellable(() => this.rollbackFailedTrial(err));
      return 'rolled-back';
    }
    const gate = await this.gate();
    if (gate === 'commit') {
      await this.commit();
      return 'committed';
    }
    await CancellationScope.nonCancellable(() => this.rollback());
    return 'rolled-back';
  }

  /** Every control plane to the hop's binaries emulating N, one at a time, its kubeadm installed first. */
  private async trial(): Promise<void> {
    const { cluster, hop, emulates } = this.input;
    this.r.setPhase('control-plane');
    for (const node of this.input.controlPlanes) {
      this.started.push(node);
      this.current = node;
      await a.pointPackageRepository({ cluster, node, version: hop });
      this.held[node] = (await a.readPackageHolds({ cluster, node })).held;
      await a.installPackages({ cluster, node, version: hop, packages: ['kubeadm'] });
      await a.trialControlPlane({ cluster, node, version: hop, emulates });
      this.r.note(`trial: ${node} runs ${hop} emulating ${emulates} (etcd, kubelets, addons and kubeadm-config stay)`);
    }
    this.current = undefined;
    await a.checkApiserver({ cluster });
    await this.r.checkProbes('trial', hop, this.input.verifySeconds);
  }

  /** The soak, then the wait for `approve --gate commit-<hop>`, `rollback`, or an abort (which rolls back). */
  private async gate(): Promise<'commit' | 'rollback'> {
    const { hop, cluster } = this.input;
    const trial = this.status.trial as TrialState;
    await this.r.gate(`soak-trial-${hop}`, false, this.input.soakSeconds);
    const alerts = this.r.aborted() === undefined ? await this.r.alerts.afterPhase('trial', hop) : 'held';
    const name = `commit-${hop}`;
    if (this.input.autoCommit && patched(PATCH.reversibleAutoCommit) && (await this.autoCommits(name, alerts))) return 'commit';
    this.r.note(
      `trial of ${hop} waits: skewless approve ${cluster} --gate ${name} commits it; skewless rollback ${cluster} takes the control planes back to ${trial.from} (no etcd restore)`,
    );
    if (this.r.aborted() === undefined) await this.r.gate(name, true, 0, () => trial.rollbackBy !== undefined);
    const g = this.status.gates.find((x) => x.name === name);
    if (g?.approvedBy !== undefined && trial.rollbackBy === undefined && this.r.aborted() === undefined) return 'commit';
    trial.rollbackBy ??= this.r.aborted() ?? 'abort';
    return 'rollback';
  }

  /**
   * `--auto-commit`: after the soak, with the alert gate clear, the probes once more; passing, the gate
   * commit-<hop> is recorded approved by `auto-commit` and the trial commits. An alert that held the
   * trial (even one the operator then let go), a rollback asked during the soak or an abort leave the
   * decision to the operator at the gate, as without auto-commit.
   */
  private async autoCommits(name: string, alerts: 'clear' | 'held'): Promise<boolean> {
    const { hop, cluster, soakSeconds } = this.input;
    const trial = this.status.trial as TrialState;
    const asked = () => this.r.aborted() !== undefined || trial.rollbackBy !== undefined;
    if (asked()) return false;
    if (alerts === 'held') {
      this.r.note(`auto-commit of ${hop} withheld: the alert gate held the trial; skewless approve ${cluster} --gate ${name} commits it`);
      return false;
    }
    await this.r.checkProbes('trial', hop, this.input.verifySeconds);
    if (asked()) return false;
    const why = `soak of ${soakSeconds} s passed, alerts clear, probes passing`;
    this.status.gates.push({ name, approvedBy: 'auto-commit', comment: why });
    trial.autoCommittedAfterSeconds = soakSeconds;
    this.r.note(`trial of ${hop} commits automatically (--auto-commit): ${why}`);
    return true;
  }

  /** The emulation removed in the hop's order: `upgrade apply` on the first, `upgrade node` on the others. */
  private async commit(): Promise<void> {
    const { cluster, hop } = this.input;
    const trial = this.status.trial as TrialState;
    this.r.setPhase('control-plane');
    for (const [i, node] of this.input.controlPlanes.entries()) {
      await a.commitControlPlane({ cluster, node, version: hop, first: i === 0 });
      await a.checkControlPlane({ cluster, node, version: hop, waitSeconds: this.input.verifySeconds });
    }
    trial.state = 'committed';
    const auto = trial.autoCommittedAfterSeconds === undefined ? '' : ` automatically after a soak of ${trial.autoCommittedAfterSeconds} s`;
    this.r.note(
      `trial of ${hop} committed${auto}: no control plane emulates; from here the way back is the etcd snapshot (skewless restore)`,
    );
  }

  /** In reverse: each control plane's N manifests back, its repository and kubeadm back to N, its holds as they were. */
  private async rollback(nodes: readonly string[] = this.input.controlPlanes): Promise<void> {
    const { cluster, hop } = this.input;
    const trial = this.status.trial as TrialState;
    this.r.setPhase('control-plane');
    for (const node of [...nodes].reverse()) {
      const version = this.input.from[node] ?? trial.from;
      const back = await a.rollbackControlPlane({ cluster, node, version });
      await a.pointPackageRepository({ cluster, node, version });
      await a.downgradePackages({ cluster, node, version, packages: ['kubeadm'] });
      const holds = await a.restorePackageHolds({ cluster, node, held: this.held[node] ?? [] });
      this.r.note(
        `rollback: ${node} back at ${version}${back.ran ? ` (${back.restored.join(', ')} from ${back.backup ?? 'the backup'})` : ''}; kubeadm ${version}${holds.putBack.length ? `; holds put back: ${holds.putBack.join(' ')}` : ''}`,
      );
    }
    await a.checkApiserver({ cluster });
    trial.state = 'rolled-back';
    const why = trial.rollbackReason ? ` (${trial.rollbackReason})` : '';
    const by = trial.rollbackBy ?? 'the operator';
    this.r.abort(
      trial.failedOn
        ? `trial of ${hop} failed on ${trial.failedOn}${why}: rolled back to ${trial.from} by ${by}: no etcd restore`
        : `trial of ${hop} rolled back to ${trial.from} by ${by}${why}: no etcd restore`,
    );
  }

  /**
   * The trial failed for good on the last control plane it started on: that one and those before it
   * go back (the ones after were never touched). Should the rollback itself fail, the run fails on
   * that error (the trial's is in the events): `skewless restore` is then the way back.
   */
  private async rollbackFailedTrial(err: ActivityFailure): Promise<void> {
    const trial = this.status.trial as TrialState;
    const cause = err.cause?.message ?? err.message;
    trial.failedOn = this.current ?? 'the cluster';
    trial.rollbackBy = 'the run';
    trial.rollbackReason = `${err.activityType ?? 'a step'}: ${cause}`;
    this.r.note(
      `trial of ${this.input.hop} failed on ${trial.failedOn} (${trial.rollbackReason}): the run rolls back ${[...this.started].reverse().join(', ')}`,
    );
    await this.rollback(this.started);
  }
}
