import {
  ActivityFailure,
  ApplicationFailure,
  allHandlersFinished,
  condition,
  setHandler,
  upsertMemo,
  upsertSearchAttributes,
  workflowInfo,
} from '@temporalio/workflow';
import { activities as a } from './activities-proxy.js';
import { WORKFLOW_FAILURE } from '../contracts/failure-types.js';
import { handleApprovals } from './approvals.js';
import { restoreStatusQuery, type MemberState, type RestoreInput, type RestorePhase, type RestoreStatus } from './restore-messages.js';
import { SEARCH_ATTRIBUTES } from './search-attributes.js';
import { abortSignal, pauseSignal, resumeSignal, type GateState } from './upgrade-messages.js';

/**
 * Restores the control plane of a stacked-etcd kubeadm cluster from an etcd snapshot (workflow id
 * `restore/<cluster>`): plan (the snapshot's record, every member from its etcd manifest), check the
 * snapshot on every control plane, then an approval gate, because everything written since the
 * snapshot is lost; then, as etcd's disaster-recovery guide orders it, every control plane's static
 * pods stopped, every member restored into a fresh data dir and swapped in, every control plane
 * started again, and the result verified: etcd answers at the restored revision, the apiserver is ready.
 *
 * Abort: before the gate nothing was touched; while the static pods are being stopped, the ones
 * stopped start again on their old data. Once a data dir has been swapped there is no way back but
 * forward: abort is refused (noted) and the restore completes. A failed step fails the workflow
 * with a message that says where each control plane was left (docs/restore.md: finishing by hand).
 */
export async function restoreWorkflow(input: RestoreInput): Promise<RestoreStatus> {
  const { cluster } = input;
  const status: RestoreStatus = { cluster, phase: 'planning', paused: false, members: [], gates: [], events: [] };
  const note = (text: string) => status.events.push(text);
  let aborted: string | undefined;

  const setPhase = (phase: RestorePhase) => {
    status.phase = phase;
    upsertSearchAttributes([{ key: SEARCH_ATTRIBUTES.phase, value: phase }]);
    upsertMemo({ flow: 'restore', phase, snapshot: status.snapshot?.hop ?? status.snapshot?.remotePath ?? null, paused: status.paused });
  };
  /** The point of no return: a member's data dir has been swapped. */
  const swapped = () => status.members.some((m) => m.phase === 'restored' || m.phase === 'started');

  setHandler(restoreStatusQuery, () => status);
  setHandler(pauseSignal, (p) => {
    status.paused = true;
    note(`paused by ${p.by}${p.reason ? `: ${p.reason}` : ''}`);
  });
  setHandler(resumeSignal, (p) => {
    status.paused = false;
    note(`resumed by ${p.by}`);
  });
  setHandler(abortSignal, (p) => {
    const who = `${p.by}${p.reason ? `: ${p.reason}` : ''}`;
    if (swapped()) {
      note(
        `abort by ${who} refused: etcd data has been restored on ${status.members
          .filter((m) => m.phase !== 'stopped')
          .map((m) => m.node)
          .join(', ')}; the restore completes`,
      );
      return;
    }
    aborted ??= `aborted by ${who}`;
    note(aborted);
  });
  handleApprovals(status.gates, note);
  upsertSearchAttributes([{ key: SEARCH_ATTRIBUTES.cluster, value: cluster }]);
  setPhase('planning');

  const running = await a.findRunningRollout({ cluster, ignore: [workflowInfo().workflowId] });
  if (running.running)
    throw ApplicationFailure.nonRetryable(
      `refusing to restore ${cluster}: ${running.workflowId ?? 'another rollout'} is running (abort it first)`,
      WORKFLOW_FAILURE.RolloutRunning,
    );
  const plan = await a.planRestore({
    cluster,
    ...(input.hop !== undefined ? { hop: input.hop } : {}),
    ...(input.snapshotPath !== undefined ? { snapshotPath: input.snapshotPath } : {}),
    ...(input.controlPlanes ? { controlPlanes: input.controlPlanes } : {}),
  });
  status.snapshot = plan.snapshot;
  status.members = plan.members.map((m): MemberState => ({ ...m, phase: 'pending' }));
  const minRevision = plan.snapshot.revision + plan.bumpRevision;
  status.loses =
    `everything written to ${cluster} after the snapshot${plan.snapshot.takenAt ? ` of ${plan.snapshot.takenAt}` : ''} (etcd revisions above ${plan.snapshot.revision}): ` +
    'objects created, changed or deleted since then are lost; the control plane is down while etcd is restored';
  note(
    `restore ${plan.snapshot.remotePath} (revision ${plan.snapshot.revision}, sha256 ${plan.snapshot.sha256}) to ${plan.members.map((m) => `${m.node} as ${m.name}`).join(', ')}`,
  );

  /** Runs `step` on each control plane in turn, paused between them; stops early on an abort if `abortable`. */
  const eachMember = async (phase: RestorePhase, abortable: boolean, step: (m: MemberState) => Promise<void>) => {
    setPhase(phase);
    for (const m of status.members) {
      await condition(() => !status.paused || (abortable && aborted !== undefined));
      if (abortable && aborted) return;
      await step(m);
    }
  };
  /** Failure after retries: where each control plane was left, and the type the caller can branch on. */
  const failed = async (err: unknown): Promise<never> => {
    const cause = err instanceof ActivityFailure && err.cause instanceof ApplicationFailure ? err.cause : undefined;
    const during = status.phase;
    if (!swapped()) {
      // Nothing restored yet: what was stopped starts again on its old data.
      for (const m of status.members.filter((x) => x.phase === 'stopped')) {
        await a.startStaticPods({ cluster, node: m.node }).then(
          () => {
            m.phase = 'checked';
          },
          () => note(`could not start the static pods on ${m.node} again`),
        );
      }
    }
    const where = status.members.map((m) => `${m.node} ${m.phase}`).join(', ');
    setPhase('failed');
    status.outcome = `restore failed while ${during}: ${cause?.message ?? (err as Error).message}; control planes: ${where}`;
    throw ApplicationFailure.create({
      message: status.outcome,
      type: swapped() ? 'RestoreIncomplete' : 'RestoreFailed',
      nonRetryable: true,
      details: [{ members: status.members, snapshot: status.snapshot }],
      ...(cause ? { cause } : {}),
    });
  };

  try {
    await eachMember('checking', true, async (m) => {
      // The upgrade's snapshot is on the first control plane only: the others get the worker's copy.
      if (plan.snapshot.hop !== undefined && plan.snapshot.localPath !== undefined && input.snapshotPath === undefined) {
        const placed = await a.placeSnapshot({ cluster, node: m.node, hop: plan.snapshot.hop });
        if (placed.placed) note(`${m.node}: snapshot copied to ${placed.remotePath}`);
      }
      await a.checkRestoreSnapshot({
        cluster,
        node: m.node,
        remotePath: plan.snapshot.remotePath,
        sha256: plan.snapshot.sha256,
        revision: plan.snapshot.revision,
      });
      m.phase = 'checked';
    });
    if (!aborted) {
      const gate: GateState = { name: `restore-${plan.tag}` };
      status.gates.push(gate);
      setPhase('gate');
      note(`waiting for approval of gate ${gate.name}: ${status.loses}`);
      await condition(() => gate.approvedBy !== undefined || aborted !== undefined);
    }
    if (!aborted) {
      await eachMember('stopping', true, async (m) => {
        await a.stopStaticPods({
          cluster,
          node: m.node,
          ...(input.stopTimeoutSeconds ? { timeoutSeconds: input.stopTimeoutSeconds } : {}),
        });
        m.phase = 'stopped';
      });
    }
    if (aborted) {
      for (const m of status.members.filter((x) => x.phase === 'stopped')) {
        await a.startStaticPods({ cluster, node: m.node });
        m.phase = 'checked';
      }
      setPhase('aborted');
      status.outcome = `${aborted}; nothing was restored, the control planes run on their old data`;
      await condition(allHandlersFinished);
      return status;
    }
    await eachMember('restoring', false, async (m) => {
      const r = await a.restoreEtcdMember({
        cluster,
        node: m.node,
        member: { node: m.node, name: m.name, peerUrl: m.peerUrl, dataDir: m.dataDir },
        remotePath: plan.snapshot.remotePath,
        initialCluster: plan.initialCluster,
        bumpRevision: plan.bumpRevision,
        tag: plan.tag,
      });
      Object.assign(m, { phase: 'restored', previousDataDir: r.previousDataDir });
      note(`${m.node}: ${m.dataDir} restored (the old one kept as ${r.previousDataDir})`);
    });
    await eachMember('starting', false, async (m) => {
      await a.startStaticPods({ cluster, node: m.node });
      m.phase = 'started';
    });
    // Every member answers on its control plane at the restored revision (or above: writes since the start).
    await eachMember('verifying', false, async (m) => {
      const verified = await a.verifyEtcdRestore({
        cluster,
        node: m.node,
        minRevision,
        ...(input.verifyTimeoutSeconds ? { timeoutSeconds: input.verifyTimeoutSeconds } : {}),
      });
      status.revision = Math.max(status.revision ?? 0, verified.revision);
    });
    await a.verifyRestoredApiserver({ cluster, ...(input.verifyTimeoutSeconds ? { timeoutSeconds: input.verifyTimeoutSeconds } : {}) });
  } catch (err) {
    return failed(err);
  }
  setPhase('done');
  status.outcome = `restored ${cluster} to the snapshot ${plan.snapshot.hop ? `before ${plan.snapshot.hop}` : plan.snapshot.remotePath} (revision ${plan.snapshot.revision}; etcd now at ${status.revision ?? '?'})`;
  note(status.outcome);
  await condition(allHandlersFinished);
  return status;
}
