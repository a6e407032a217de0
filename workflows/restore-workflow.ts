import type { RestoreInput, RestoreStatus } from './restore-messages.js';
import { RestoreRun } from './restore-run.js';

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
  const run = new RestoreRun(input);
  run.registerHandlers();
  await run.plan();
  try {
    await run.checkSnapshot();
    if (!run.aborted) await run.waitForApproval();
    if (!run.aborted) await run.stopControlPlanes();
    if (run.aborted) return await run.endAborted();
    await run.restoreMembers();
    await run.startControlPlanes();
    await run.verify();
  } catch (err) {
    return run.fail(err);
  }
  return run.done();
}
