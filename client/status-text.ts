import { runSpan, windowPhaseLabel } from '../rules/index.js';
import type { BlueGreenStatus } from '../workflows/bluegreen-messages.js';
import type { MaintenanceStatus } from '../workflows/maintenance-messages.js';
import type { RestoreStatus } from '../workflows/restore-messages.js';
import type { TrialState, UpgradeStatus } from '../workflows/rollout-messages.js';
import { blockText, haltLines, resolveHint } from './block-text.js';
import type { CommandIo } from './cli-support.js';

/** `skewless status` as text: one printer per kind of run, and one for what Temporal holds without a worker. */

/** What the run moves, as its header says it (rules/run-progress.ts): a finishing run's `1.32.4 → 1.33.7`. */
export function upgradeSpan(s: UpgradeStatus): string {
  const { from, to } = runSpan(s);
  return `${from} → ${to}`;
}

/** `skewless status NAME`: the upgrade's versions, hop, phase, every node, gates, snapshots and how it ended. */
export function printUpgrade(io: CommandIo, cluster: string, s: UpgradeStatus): void {
  io.out(`${cluster}: ${upgradeSpan(s)}, hop ${s.hop ?? '-'} (${s.hops.join(' → ')}), ${s.phase}${s.paused ? ', paused' : ''}`);
  for (const [node, n] of Object.entries(s.nodes)) {
    const round = n.drainRound ? ` (round ${n.drainRound.index}/${n.drainRound.of}, order ${n.drainRound.order})` : '';
    io.out(`  ${node.padEnd(16)} ${(n.stage ?? '').padEnd(14)} ${n.phase}${round}${n.blocked ? `: ${blockText(n.blocked)}` : ''}`);
    if (n.phase === 'blocked' && n.blocked) io.out(`    ${resolveHint(cluster, node, n.blocked)}`);
  }
  if (s.halted) for (const line of haltLines(cluster, s.halted)) io.out(`  ${line}`);
  if (s.waiting) io.out(`  ${windowPhaseLabel(s.waiting.phase, s.waiting.hop)}: ${waitingText(s.waiting)}`);
  for (const g of s.gates) io.out(`  gate ${g.name}: ${g.approvedBy ? `approved by ${g.approvedBy}` : 'waiting'}`);
  if (s.trial) io.out(`  ${trialLine(cluster, s.trial)}`);
  for (const snap of s.snapshots)
    io.out(`  etcd snapshot ${snap.hop}: ${snap.localPath} (${snap.sizeBytes} bytes, sha256 ${snap.sha256}, revision ${snap.revision})`);
  if (s.outcome) io.out(`  ${s.outcome}`);
}

/** `skewless status NAME --workflow restore`: the restore's phase, each control plane's step, its gate and snapshot. */
export function printRestore(io: CommandIo, cluster: string, s: RestoreStatus): void {
  io.out(
    `${cluster}: restore ${s.phase}${s.paused ? ', paused' : ''}${s.revision !== undefined ? `, etcd at revision ${s.revision}` : ''}`,
  );
  if (s.snapshot)
    io.out(
      `  snapshot ${s.snapshot.remotePath} (revision ${s.snapshot.revision}, sha256 ${s.snapshot.sha256}${s.snapshot.takenAt ? `, taken ${s.snapshot.takenAt}` : ''})`,
    );
  for (const m of s.members)
    io.out(
      `  ${m.node.padEnd(16)} member ${m.name.padEnd(16)} ${m.phase}${m.previousDataDir ? ` (old data in ${m.previousDataDir})` : ''}`,
    );
  for (const g of s.gates)
    io.out(
      `  gate ${g.name}: ${g.approvedBy ? `approved by ${g.approvedBy}` : `waiting; approving it loses ${s.loses ?? 'everything written since the snapshot'}`}`,
    );
  if (s.outcome) io.out(`  ${s.outcome}`);
}

/** `skewless status` of an OS maintenance run: what it takes, each node, and what it waits for. */
export function printMaintenance(io: CommandIo, cluster: string, s: MaintenanceStatus): void {
  const target = `${cluster} --workflow maintain`;
  const done = Object.values(s.nodes).filter((n) => n.phase === 'done').length;
  io.out(
    `${cluster}: OS maintenance of ${s.selector ?? s.requested?.join(', ') ?? '?'}, ${done}/${Object.keys(s.nodes).length} nodes done, ${s.phase}${s.paused ? ', paused' : ''}`,
  );
  for (const [node, n] of Object.entries(s.nodes)) {
    const round = n.drainRound ? ` (round ${n.drainRound.index}/${n.drainRound.of}, order ${n.drainRound.order})` : '';
    io.out(`  ${node.padEnd(16)} ${(n.stage ?? '').padEnd(14)} ${n.phase}${round}${n.blocked ? `: ${blockText(n.blocked)}` : ''}`);
    if (n.phase === 'blocked' && n.blocked) io.out(`    ${resolveHint(target, node, n.blocked)}`);
  }
  if (s.halted) for (const line of haltLines(target, s.halted)) io.out(`  ${line}`);
  if (s.waiting) io.out(`  ${s.waiting.phase}: ${waitingText(s.waiting)}`);
  for (const g of s.gates) io.out(`  gate ${g.name}: ${g.approvedBy ? `approved by ${g.approvedBy}` : 'waiting'}`);
  if (s.outcome) io.out(`  ${s.outcome}`);
}

/** `skewless status` of a blue/green run: the pools, each blue node's drain, what it waits for, and whether it can still roll back. */
export function printBlueGreen(io: CommandIo, cluster: string, s: BlueGreenStatus): void {
  const target = `${cluster} --workflow bluegreen`;
  const drained = s.blue.nodes.filter((n) => s.nodes[n]?.phase === 'done').length;
  io.out(
    `${cluster}: blue/green, pool ${s.blue.pool} → pool ${s.green.pool} at ${s.version}, ${s.step}${s.paused ? ', paused' : ''}: ` +
      `${drained}/${s.blue.nodes.length} blue drained, ${s.green.joined.length}/${s.green.nodes.length} green joined`,
  );
  if (s.controlPlane?.upgrade)
    io.out(`  control plane from ${s.controlPlane.from} by ${s.controlPlane.upgrade} (skewless status ${cluster} --workflow upgrade)`);
  for (const [node, n] of Object.entries(s.nodes)) {
    const round = n.drainRound ? ` (round ${n.drainRound.index}/${n.drainRound.of}, order ${n.drainRound.order})` : '';
    io.out(`  ${node.padEnd(16)} ${(n.stage ?? '').padEnd(14)} ${n.phase}${round}${n.blocked ? `: ${blockText(n.blocked)}` : ''}`);
    if (n.phase === 'blocked' && n.blocked) io.out(`    ${resolveHint(target, node, n.blocked)}`);
  }
  if (s.halted) for (const line of haltLines(target, s.halted)) io.out(`  ${line}`);
  for (const g of s.gates)
    io.out(`  gate ${g.name}: ${g.approvedBy ? `approved by ${g.approvedBy}` : `waiting: skewless approve ${target} --gate ${g.name}`}`);
  io.out(`  rollback: ${s.rollback.available ? s.rollback.how : `none: ${s.rollback.how}`}`);
  if (s.outcome) io.out(`  ${s.outcome}`);
}

/**
 * What Temporal holds of a run whose worker did not answer: the run's state and the memo the workflow
 * keeps for the UI (versions, hop, phase, progress, blocked and skipped nodes). Only the keys shown here
 * are read from it.
 */
export function printRecorded(
  io: CommandIo,
  cluster: string,
  run: { workflowId: string; state: string },
  memo: Record<string, unknown>,
): void {
  io.out(`${cluster}: ${recordedLine(run, memo)}`);
}

/** The run's state and what its memo last recorded, on one line (`upgrade/lab running; as last recorded: …`). */
export function recordedLine(run: { workflowId: string; state: string }, memo: Record<string, unknown>): string {
  const text = (key: string) => (typeof memo[key] === 'string' && memo[key] !== '' ? (memo[key] as string) : undefined);
  const names = (key: string) => (Array.isArray(memo[key]) ? (memo[key] as unknown[]).filter((x) => typeof x === 'string') : []);
  const versions = text('from') && text('to') ? `${text('from')} → ${text('to')}` : undefined;
  const facts = [
    versions,
    text('hop') ? `hop ${text('hop')}` : undefined,
    text('phase'),
    memo.paused === true ? 'paused' : undefined,
    text('progress'),
    names('blocked').length ? `blocked: ${names('blocked').join(', ')}` : undefined,
    names('skipped').length ? `skipped: ${names('skipped').join(', ')}` : undefined,
    names('quarantined').length ? `quarantined: ${names('quarantined').join(', ')}` : undefined,
  ].filter((x) => x !== undefined);
  const recorded = facts.length ? `; as last recorded: ${facts.join(', ')}` : '; not yet started by a worker';
  return `${run.workflowId} ${run.state.toLowerCase()}${recorded}`;
}

/** What a held phase waits for, and until when: a maintenance window, or the end of a blackout date and why. */
function waitingText(w: { for: string; opensAt: string; reason?: string }): string {
  return w.for === 'exclusion'
    ? `waiting for the end of the exclusion ${w.reason ?? ''}: until ${w.opensAt}`
    : `waiting for the maintenance window: opens ${w.opensAt}`;
}

/** A reversible hop's trial, and which way back exists now (issue 36). */
function trialLine(cluster: string, t: TrialState): string {
  const what = `trial of ${t.hop} (emulating ${t.emulates})`;
  if (t.state === 'trial') return `${what}: way back: skewless rollback ${cluster} (to ${t.from}, no etcd restore)`;
  if (t.state === 'committed') {
    const auto = t.autoCommittedAfterSeconds === undefined ? '' : ` automatically after a soak of ${t.autoCommittedAfterSeconds} s`;
    return `${what} committed${auto}: the way back is the etcd snapshot (skewless restore ${cluster})`;
  }
  const failed = t.failedOn ? ` after it failed on ${t.failedOn}` : '';
  return `${what} rolled back to ${t.from} by ${t.rollbackBy ?? 'the operator'}${failed}: nothing restored from etcd`;
}
